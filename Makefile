# Two entry points (see README): `make demo` and `make test`. Both set up .venv first.
VENV ?= .venv
PY := $(VENV)/bin/python
BENCHLIB := $(VENV)/bin/benchlib
STAMP := $(VENV)/.benchlib-installed
DEMO_DATA := data/demo-images
DEMO_VOLUME := data/em-demo.h5

.PHONY: setup demo test test-fast lint notebooks facade docs clean-demo bench gpu-check

$(STAMP): pyproject.toml tools/jupyter_kernel.py
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e ".[test]"
	$(PY) tools/jupyter_kernel.py install >/dev/null  # the kernel the notebooks name (one source of truth)
	touch $(STAMP)

setup: $(STAMP)

$(DEMO_DATA): | $(STAMP)
	$(BENCHLIB) data imagefolder $(DEMO_DATA) --classes 4 --images 24 --size 160

$(DEMO_VOLUME): | $(STAMP)
	$(BENCHLIB) data volume $(DEMO_VOLUME) --shape 45 200 200 --quiet

demo: setup $(DEMO_DATA) $(DEMO_VOLUME)
	$(BENCHLIB) sweep params/demo.yaml
	$(BENCHLIB) sweep params/demo-unet3d.yaml
	$(BENCHLIB) sweep params/demo-lm.yaml
	$(BENCHLIB) sweep params/demo-scaling.yaml
	$(BENCHLIB) sweep params/demo-node.yaml
	$(BENCHLIB) results outputs/demo
	$(BENCHLIB) report outputs/demo

# The tests keep their compiled bytecode (and pytest its rewritten asserts) in __pycache__, even
# where the environment says not to (PYTHONDONTWRITEBYTECODE): each worker then collects in
# about 8 s, not 13 s (docs/measurements.md).
KEEP_BYTECODE = env -u PYTHONDONTWRITEBYTECODE

test: setup
	$(VENV)/bin/ruff check .
	$(KEEP_BYTECODE) $(VENV)/bin/pytest

test-fast: setup
	$(VENV)/bin/ruff check .
	$(KEEP_BYTECODE) BENCHLIB_TEST_FAST=1 $(VENV)/bin/pytest -m "not slow" -q

docs: setup
	$(PY) -m benchlib.records.schema > docs/record.md
	$(PY) tools/make_kind_table.py

bench: demo
	$(PY) benchmarks/harness.py --repeats 8

# Every CUDA path on this node's GPU, checked and packed (docs/gpu-check.md); on a CPU the plan.
# In an existing PyTorch environment (no .venv): make gpu-check PYTHON=python3
gpu-check:
ifdef PYTHON
	$(PYTHON) tools/gpu_check.py
else
	$(MAKE) setup
	$(PY) tools/gpu_check.py
endif

lint: setup
	$(VENV)/bin/ruff check .

notebooks: setup
	$(PY) tools/make_notebooks.py

facade: setup
	$(PY) tools/make_facade.py

clean-demo:
	rm -rf outputs/demo $(DEMO_DATA) $(DEMO_VOLUME)
