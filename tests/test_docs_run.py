"""The docs are executed: every shell command of README.md and docs/*.md, as written, from a
checkout holding the demo's outputs (the test-sized demo, ``params/demo.yaml`` at test sizes).
What a command needs that this machine lacks is marked beside it, and the marking is checked by
running the command without it:

- ``placeholder``: values that stand for the user's own (a GPU model, a folder): exit 2, said;
- ``needs a GPU`` (or a section "on a GPU node", or docs/gpu-check.md): run on this CPU, exit 2
  saying so (skipped where CUDA is here); ``make`` targets are checked to exist;
- ``needs a Slurm cluster`` (or docs/slurm.md): run without Slurm on PATH, exit 2 saying so;
- docs/measurements.md: the commands behind its figures (minutes each): their script and every
  flag they use exist;
- ``make demo``, ``make test`` and the clone: what CI runs on a fresh clone (``.ci/run``).

Every other command runs as typed and exits 0, or with the status its comment states
(``exit 3``, or ``exit 0 or 3`` where the machine's load decides); ``benchlib diagnose``'s
budget is cut to 90 s (its other words as written)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import ROOT
from .walk import BENCHLIB, DocCommand, checked, doc_commands, make_project

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("docs-run")]

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
#: The demo at test sizes under the demo's own name and file: train on synthetic and real JPEGs.
DEMO = """campaign: demo
notebook: [train]
base: {model: resnet18, image_size: 32, num_classes: 4, batch_size: 4, iterations: 3, warmup: 1,
       num_workers: 0, device: cpu, data_dir: data/demo-images}
grid:
  dataset: [synthetic, real]
"""
STATED_EXIT = re.compile(r"\bexit (\d)(?: or (\d))?\b")
CI_RUNS = ("make demo", "make test", "git clone")


def kind_of(command: DocCommand) -> str:
    """How the command is checked: ci, measured, placeholder, gpu, slurm or run."""
    if command.typed.startswith(CI_RUNS):
        return "ci"
    if command.guide == "measurements.md":
        return "measured"
    if command.marked("placeholder"):
        return "placeholder"
    if command.guide == "gpu-check.md" or command.marked("needs a GPU", "on a GPU node"):
        return "gpu"
    if command.guide == "slurm.md" or command.marked("needs a Slurm cluster"):
        return "slurm"
    return "run"


def commands() -> list[DocCommand]:
    """Every command of the README and docs/, sweeps.md first (it makes what others read)."""
    order = sorted(DOCS, key=lambda p: p.name != "sweeps.md")
    return [c for path in order for c in doc_commands(path)]


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A checkout after the demo: params/, benchmarks/, tools/, the demo's JPEGs and records."""
    root = make_project(tmp_path_factory.mktemp("docs") / "benchlib")
    (root / "params" / "demo.yaml").write_text(DEMO)
    for folder in ("benchmarks", "tools"):
        shutil.copytree(ROOT / folder, root / folder,
                        ignore=shutil.ignore_patterns("__pycache__", "local-*"))
    assert "2 points: 2 done" in checked(root, "sweep", "params/demo.yaml", "--quiet")
    (root / "data" / "imagenet").mkdir()  # the README's step, the user's ImageNet the demo's
    (root / "data" / "imagenet" / "train").symlink_to(root / "data" / "demo-images")
    return root


def _shell(project: Path, typed: str, path: str | None = None) -> subprocess.CompletedProcess:
    """``typed`` in bash from ``project``, benchlib and python the checkout's (its venv's, as
    after ``source .venv/bin/activate``); ``path``: the rest of PATH (the shell's own tools,
    ``date``, ``jq``, always)."""
    tools = project / ".bin"
    tools.mkdir(exist_ok=True)
    for name in ("date", "jq"):
        if not (tools / name).exists() and shutil.which(name):
            (tools / name).symlink_to(shutil.which(name))
    rest = path if path is not None else os.environ["PATH"]
    env = {**os.environ, "PYTHONWARNINGS": "ignore", "MPLBACKEND": "Agg",
           "PATH": os.pathsep.join([str(Path(BENCHLIB).parent), str(tools), rest])}
    for name in ("BENCHLIB_DB", "BENCHLIB_OUTPUTS", "COLUMNS"):
        env.pop(name, None)
    return subprocess.run(["/bin/bash", "-o", "pipefail", "-c", typed], cwd=project, env=env,
                          capture_output=True, text=True, timeout=900)


def _said(done: subprocess.CompletedProcess) -> str:
    return f"exit {done.returncode}\n{done.stdout[-2500:]}\n{done.stderr[-2500:]}"


def _refused(done: subprocess.CompletedProcess, *words: str) -> str:
    """'' when the command exited 2 with an error naming one of ``words``, else what it did."""
    error = done.stderr.lower()
    if done.returncode == 2 and error.startswith("error:") and (
            not words or any(w.lower() in error for w in words)):
        return ""
    return _said(done)


def _check(project: Path, command: DocCommand) -> str:
    """'' when the command does what its marking says, else what it did."""
    typed, kind = command.typed, kind_of(command)
    benchlib = re.match(r"^(\w+=\S+ )*benchlib ", typed) is not None
    if kind == "ci":
        run = (ROOT / ".ci" / "run").read_text()
        return "" if typed.startswith("git clone") or typed in run else ".ci/run does not run it"
    if kind == "measured":
        return _flags_exist(project, typed)
    if kind == "placeholder":
        if not benchlib:
            return ""  # a link to a folder of the user's: the GPU quick start's test makes one
        return _refused(_shell(project, typed.split(" | ")[0]))
    if kind == "gpu":
        if typed.startswith(("make ", "PYTHONPATH=")):
            target = typed.split("make ", 1)[1].split()[0]
            done = subprocess.run(["make", "-n", "-C", str(ROOT), target], capture_output=True,
                                  text=True, timeout=60)
            return "" if done.returncode == 0 else _said(done)
        if " pip " in f" {typed} ":
            wanted = re.findall(r"-r (\S+)", typed)
            return "".join(f"{w} is missing\n" for w in wanted if not (ROOT / w).is_file())
        if typed.startswith("papermill "):
            return _notebook_takes(typed)
        return _refused(_shell(project, typed), "cuda", "gpu-check", "no such", "not exist")
    if kind == "slurm":
        return _refused(_shell(project, typed, path="/usr/local/nothing"), "slurm", "no such",
                        "not exist")
    if typed.startswith("benchlib diagnose"):
        typed += " --budget 90"
    done = _shell(project, typed)
    stated = STATED_EXIT.search(command.comment)  # "exit 3", or "exit 0 or 3" (a machine's load)
    expected = {int(code) for code in stated.groups() if code} if stated else {0}
    return "" if done.returncode in expected else f"expected exit {expected}; " + _said(done)


def _flags_exist(project: Path, typed: str) -> str:
    """'' when the command's script (or benchlib command) exists and takes every flag used."""
    words = typed.split(";")[0].split()
    if words[0] == "python":
        script = project / words[1]
        if not script.is_file():
            return f"{words[1]} does not exist"
        shown = _shell(project, f"python {words[1]} --help")
    else:
        shown = _shell(project, f"benchlib {words[1]} --help")
    if shown.returncode != 0:
        return _said(shown)
    return "".join(f"{flag} unknown\n" for flag in words if flag.startswith("--")
                   and flag not in shown.stdout)


def _notebook_takes(typed: str) -> str:
    """'' when the papermill line's notebook exists and has every ``-p`` name as a parameter."""
    import nbformat

    words = typed.split()
    notebook = ROOT / words[1]
    if not notebook.is_file():
        return f"{words[1]} does not exist"
    cells = nbformat.read(str(notebook), as_version=4).cells
    parameters = next(c.source for c in cells if "parameters" in c.metadata.get("tags", []))
    names = [words[i + 1] for i, w in enumerate(words) if w == "-p"]
    return "".join(f"{n} is not a parameter of {words[1]}\n" for n in names
                   if not re.search(rf"^{n}\s*[:=]", parameters, re.M))


def test_every_command_of_the_docs_runs_as_written_or_as_marked(project: Path):
    if cuda_here():
        pytest.skip("CUDA here: the 'needs a GPU' commands would run, not say so")
    found = commands()
    kinds = [kind_of(c) for c in found]
    assert len(found) >= 60 and kinds.count("run") >= 20, kinds
    failed = []
    for command in found:
        wrong = _check(project, command)
        if wrong:
            failed.append(f"{command.guide}: {command.typed}\n  ({kind_of(command)}) {wrong}")
    counts = {k: kinds.count(k) for k in dict.fromkeys(kinds)}
    print(f"{len(found)} commands of the docs, {len(found) - len(failed)} as documented: {counts}")
    assert not failed, "\n".join(failed)


def cuda_here() -> bool:
    """Whether torch sees a CUDA device on this machine."""
    done = subprocess.run([sys.executable, "-c", "import torch; print(torch.cuda.is_available())"],
                          capture_output=True, text=True, timeout=120)
    return done.stdout.strip() == "True"


def test_a_gpu_sweep_on_a_machine_without_one_is_refused_before_anything_is_written(
        tmp_path: Path):
    """``benchlib sweep params/scaling.yaml`` on a CPU: before, 16 points each failing the same
    way in turn, a failed record each; now exit 2 at once, nothing written. A Slurm sweep
    where no sbatch is: before, 'unexpected RuntimeError: Could not detect "srun"' (exit 1)
    after the campaign folder was made; now exit 2, nothing written."""
    if cuda_here():
        pytest.skip("CUDA here")
    project = make_project(tmp_path / "benchlib")
    (project / "data" / "imagenet").mkdir()
    (project / "data" / "imagenet" / "train").symlink_to(project / "data" / "demo-images")
    done = _shell(project, "benchlib sweep params/scaling.yaml")
    assert done.returncode == 2 and "16 of the 16 points ask for device cuda" in done.stderr, \
        _said(done)
    assert not (project / "outputs").exists()
    done = _shell(project, "benchlib sweep params/scaling.yaml --executor slurm", path="/nowhere")
    assert done.returncode == 2 and "no sbatch on this machine's PATH" in done.stderr, _said(done)
    assert not (project / "outputs").exists()
