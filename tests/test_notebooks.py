import json
import subprocess
import sys

import pytest

from benchlib.inputs.params import NOTEBOOK_DIR, notebook_parameters
from benchlib.kinds.classification.config import ClassificationConfig
from benchlib.kinds.unet3d.config import UNet3DPredictConfig, UNet3DTrainConfig

from .conftest import ROOT

BENCHMARKS = ["train", "inference", "smooth_inference"]


@pytest.mark.parametrize("name", BENCHMARKS)
def test_committed_notebooks_are_clean_and_parameterised(name):
    nb = json.loads((NOTEBOOK_DIR / f"{name}.ipynb").read_text())
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert all(not c["outputs"] and c["execution_count"] is None for c in code)
    assert code[0]["metadata"]["tags"] == ["parameters"]
    assert nb["metadata"]["benchlib"] == {"kind": "benchmark", "benchmark": name}
    parameters = notebook_parameters(name)
    fields = set(ClassificationConfig.model_fields) - {"benchmark"}
    expected = fields if name == "smooth_inference" else fields - {"noise_samples", "sigma"}
    assert set(parameters) == expected
    assert "import" not in "".join(code[0]["source"])  # a parameters cell holds values only


@pytest.mark.parametrize(("name", "config_class"), [("unet3d_train", UNet3DTrainConfig),
                                                    ("unet3d_predict", UNet3DPredictConfig)])
def test_unet_notebooks_take_every_config_field(name, config_class):
    nb = json.loads((NOTEBOOK_DIR / f"{name}.ipynb").read_text())
    assert all(not c["outputs"] for c in nb["cells"] if c["cell_type"] == "code")
    assert nb["metadata"]["benchlib"] == {"kind": "benchmark", "benchmark": name}
    parameters = notebook_parameters(name)
    assert set(parameters) == set(config_class.model_fields) - {"benchmark"}
    defaults = config_class.model_construct()
    assert parameters["iterations"] == repr(defaults.iterations)


def test_notebooks_match_their_generator():
    result = subprocess.run([sys.executable, str(ROOT / "tools" / "make_notebooks.py"), "--check"],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout

