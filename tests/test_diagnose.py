"""benchlib diagnose: the plan, the waterfall on fake campaigns, the page, and the CLI end to end."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from benchlib.diagnosis import analysis
from benchlib.diagnosis import plan as diagnose_plan
from benchlib.diagnosis.rung_speeds import beside_table
from benchlib.errors import InputError
from benchlib.records.results import load
from tests.fakes import write_record_notebook

ROOT = Path(__file__).resolve().parent.parent


def _plan(tmp_path: Path, data: bool = True, workers: int = 1, repeats: int | None = 3,
          campaign: str = "dg") -> diagnose_plan.Plan:
    folder = tmp_path / "jpegs"
    folder.mkdir(exist_ok=True)
    request = diagnose_plan.request_from({
        "model": "resnet18", "data_dir": str(folder) if data else "", "num_workers": workers,
        "device": "cpu", "cores": 2, "campaign": campaign,
        **({"repeats": repeats} if repeats else {})})
    return diagnose_plan.plan(request)


def _campaign(tmp_path: Path, plan: diagnose_plan.Plan, speeds: dict[str, float],
              data_share: dict[str, float] | None = None, disturbed: str = "",
              disturbed_runs: int = 2) -> Path:
    """Fake records: every point of ``plan`` but the probe (named and identified as the sweep
    names them), at ``speeds`` (rung name -> images/s, 2 % apart), waiting ``data_share`` of
    each iteration; ``disturbed`` names a rung whose first ``disturbed_runs`` runs were
    contended."""
    root = tmp_path / plan.campaign
    rng = np.random.default_rng(0)
    rungs = {rung.name: rung for rung in plan.rungs}
    for name, point in plan.points()[1:]:
        rung, repeat = rungs[name], point.repeat
        speed = speeds[rung.name] * (1 + 0.02 * rng.standard_normal())
        iteration = plan.batch_size / speed
        share = (data_share or {}).get(rung.name, 0.01)
        record = {"schema_version": 1, "campaign": plan.campaign, "benchmark": plan.benchmark,
                  "model": plan.model, "num_devices": 1, "batch_size": plan.batch_size,
                  "image_size": plan.image_size, "unit": "images/s", "status": "ok",
                  "error": "", "throughput": speed, "time_iteration_s": iteration,
                  "time_data_s": iteration * share, "synthetic_kind": "", "data_source": "",
                  "flags": "contended" if rung.name == disturbed and repeat < disturbed_runs
                  else "",
                  "point_id": point.point_id, **rung.match}
        if rung.name == disturbed:  # a reader beside it: 120 MiB/s, 1 % of the CPU time
            busy = repeat < disturbed_runs
            record.update(wall_time_s=5.0, contention_cpu_share=0.01,
                          contention_read_bytes=600 * 2**20 if busy else 4096,
                          contention_read_rate=120 * 2**20 if busy else 800,
                          pressure_cpu_share=0.3, pressure_io_share=0.04 if busy else 0.0)
        write_record_notebook(root / f"{point.name}.ipynb", record)
    diagnose_plan.write_plan(plan, root)
    return root


def _found(root: Path) -> analysis.Diagnosis:
    return analysis.diagnose(load(root), diagnose_plan.read_plan(root))


SLOW_DATA = {"device-fp32": 100.0, "host-w1": 95.0, "memory-w1": 40.0, "disk-w1": 36.0,
             "disk-w2": 62.0}


def test_slow_data_path_is_data_bound_with_decode_the_biggest_loss(tmp_path):
    plan = _plan(tmp_path)
    root = _campaign(tmp_path, plan, SLOW_DATA, {"disk-w1": 0.6, "disk-w2": 0.3,
                                                  "memory-w1": 0.55})
    found = _found(root)
    assert list(found.steps["step"]) == ["host copy", "decode", "filesystem"]
    assert found.verdict == "data-bound"
    assert found.biggest["step"] == "decode"
    decode = found.steps.set_index("step").loc["decode"]
    assert decode["loss_low"] < decode["loss"] < decode["loss_high"]
    assert decode["loss"] == pytest.approx(found.steps.iloc[1]["upper_speed"]
                                           - found.steps.iloc[1]["lower_speed"])
    text = analysis.recommendation(found)
    assert "data-bound" in text and "JPEG decode" in text
    assert "with 2 workers instead of 1" in text


def test_synthetic_only_is_compute_bound(tmp_path):
    plan = _plan(tmp_path, data=False)
    assert [r.kind for r in plan.rungs] == ["probe", "device", "host", "host"]
    root = _campaign(tmp_path, plan, {"device-fp32": 100.0, "host-w1": 99.0, "host-w2": 99.5})
    found = _found(root)
    assert found.verdict == "compute-bound"
    assert found.biggest is None
    assert "No step that could be judged is a significant loss" in analysis.recommendation(found)


def test_a_contended_step_is_unreliable_and_never_the_biggest_loss(tmp_path):
    plan = _plan(tmp_path)
    root = _campaign(tmp_path, plan, SLOW_DATA, {"disk-w1": 0.6}, disturbed="memory-w1")
    found = _found(root)
    steps = found.steps.set_index("step")
    assert steps.loc["decode", "verdict"] == "unreliable"
    assert steps.loc["filesystem", "verdict"] == "unreliable"  # memory is its upper rung
    assert "contended" in steps.loc["decode", "unreliable"]
    assert found.biggest is None or found.biggest["step"] not in ("decode", "filesystem")
    assert "Unreliable, so not judged: decode, filesystem" in analysis.recommendation(found)


def test_one_contended_run_is_left_out_and_the_step_judged_on_the_calm_ones(tmp_path):
    """Two calm runs of three: the contended one is left out of the rung's speed (the rungs
    table says so) and the steps get their verdicts; rounds run an unreliable step's rungs
    again first."""
    from benchlib.diagnosis import rounds

    plan = _plan(tmp_path)
    root = _campaign(tmp_path, plan, SLOW_DATA, {"disk-w1": 0.6}, disturbed="memory-w1",
                     disturbed_runs=1)
    found = _found(root)
    steps = found.steps.set_index("step")
    assert steps.loc["decode", "verdict"] == "loss"
    assert steps.loc["decode", "runs_lower"] == 2
    table = analysis.rungs_table(load(root), plan).set_index("rung")
    assert table.loc["memory-w1", "disturbed"] == "1 contended left out"
    assert table.loc["memory-w1", "runs"] == 2
    beside = "others: CPU 1 %, disk reads 120.0 MiB/s; stalls: CPU 30 %, I/O 4 %"
    figures = beside_table(load(root), plan).set_index("rung")
    assert figures.loc["memory-w1"].tolist() == pytest.approx([0.01, 120.0, 0.30, 0.04])
    assert figures.loc["host-w1"].isna().all()  # nothing measured beside it
    assert f"Beside the ladder (the most of any run): {beside}" in analysis.answer_text(found)
    assert found.biggest["step"] == "decode"
    unreliable = _found(_campaign(tmp_path / "two", plan, SLOW_DATA, {"disk-w1": 0.6},
                                  disturbed="memory-w1"))
    chosen = rounds.next_round(unreliable.steps, unreliable.workers, plan, runs_left=3)
    assert "memory-w1" in chosen and set(chosen) <= {"host-w1", "memory-w1", "disk-w1"}
    # the next round's rungs are those of the unreliable steps (decode, filesystem)


def test_plan_is_typed_values_and_fits_the_cpu_budget(tmp_path):
    plan = _plan(tmp_path, workers=1, repeats=None)
    assert plan.worker_counts == [1, 2]
    assert plan.adaptive and plan.repeats == 3 and plan.max_runs > plan.initial_runs == 15
    assert plan.estimate_s <= plan.budget_s == 540  # every run the budget holds, at most
    sweep = diagnose_plan.sweep(plan, tmp_path / "plan.json")
    assert sweep.points[0].notebook == "node_probe"
    assert [p.repeat for p in sweep.points[1:]] == [0] * 5 + [1] * 5 + [2] * 5  # interleaved
    with pytest.raises(InputError, match="model"):
        diagnose_plan.plan(diagnose_plan.request_from({"model": "resnet9000", "device": "cpu"}))
    with pytest.raises(InputError, match="num_workers"):
        diagnose_plan.request_from({"num_workers": -1})


def test_against_others_scales_a_published_figure_by_the_datasheets(tmp_path):
    """An A40 running the DeepLearningExamples A100 TF32 configuration: its speed over the
    published 938 images/s, beside the A40/A100 tf32 datasheet ratio (74.8 / 156)."""
    from benchlib.analysis import references
    from benchlib.diagnosis import against_published as diagnose_others

    folder = tmp_path / "jpegs"
    folder.mkdir()
    plan = diagnose_plan.plan(diagnose_plan.request_from({
        "model": "resnet50", "data_dir": str(folder), "num_workers": 8, "precision": "tf32",
        "batch_size": 256, "image_size": 224, "device": "cuda", "cores": 16}))
    speeds = {rung.name: 400.0 for rung in plan.rungs[1:]}
    root = _campaign(tmp_path, plan, speeds)
    df = load(root).assign(gpu="A40", device_name="NVIDIA A40", channels_last=False)
    compared = diagnose_others.against_references(df, plan, references.shipped())
    row = compared[compared["rung"] == "real data from disk, 8 workers"].iloc[0]
    assert row["published"] == 938
    assert row["expected"] == pytest.approx(74.8 / 156)
    assert row["slower"] == pytest.approx((74.8 / 156) / (row["measured"] / 938))
    assert "expected from the datasheets: 0.48x" in row["text"]
    assert "DeepLearningExamples" in row["source"]
    assert "No shipped published figure matches" in diagnose_others.unmatched_text(
        _plan(tmp_path), references.shipped())


def test_waterfall_plot_hatches_unreliable_steps_and_labels_losses(tmp_path):
    from benchlib.diagnosis.waterfall import waterfall_plot

    plan = _plan(tmp_path)
    found = _found(_campaign(tmp_path, plan, SLOW_DATA, {"disk-w1": 0.6},
                             disturbed="memory-w1"))
    fig = waterfall_plot(found)
    ax = fig.axes[0]
    hatched = [p for p in ax.patches if p.get_hatch()]
    assert len(hatched) == 2  # decode and filesystem
    texts = [t.get_text() for t in ax.texts]
    assert sum("unreliable (contended runs)" in t for t in texts) == 2
    assert any(t.strip().startswith("-") and "images/s" in t for t in texts)  # host copy's loss
    answer = analysis.answer_text(found)
    assert "Waterfall" in answer and "Worker counts: 1:" in answer


def test_memory_folder_reads_once_and_caps_the_bytes(tmp_path):
    from pydantic import ValidationError

    from benchlib.data.generate import write_imagefolder
    from benchlib.data.memory_folder import memory_folder_loader, read_samples
    from benchlib.kinds.classification.config import ClassificationConfig

    root = write_imagefolder(tmp_path / "jpegs", classes=2, images_per_class=4, size=48, seed=0)
    paths = sorted(str(p) for p in Path(root).rglob("*") if p.is_file())
    one = Path(paths[0]).stat().st_size
    kept = read_samples([(p, 0) for p in paths], limit_bytes=3 * one)
    assert 1 <= len(kept) < len(paths)
    loader = memory_folder_loader(root, 32, 4, 0, train=True, pin_memory=False)
    for path in paths:
        os.remove(path)  # read once, before any batch
    images, _ = next(iter(loader))
    assert images.shape == (4, 3, 32, 32) and images.dtype.is_floating_point is False
    with pytest.raises(ValidationError, match="data_source 'memory'"):
        ClassificationConfig(data_source="memory")


@pytest.mark.slow
def test_diagnose_as_a_user_runs_it(tmp_path):
    """The command a user types, with relative paths and a tiny budget: progress per point,
    the answer, and the page in the campaign's report."""
    done = subprocess.run(
        [str(Path(sys.executable).with_name("benchlib")), "diagnose", "--model", "resnet18",
         "--device", "cpu", "--workers", "1", "--budget", "20", "--repeats", "2",
         "--outputs", "out"],  # fixed repeats, the fewest: the rounds are tested on fakes
        cwd=tmp_path, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "[1/7] node_probe: ok" in done.stdout  # the probe, then 3 rungs twice (the least)
    assert "resnet18 train on this node:" in done.stdout
    [campaign] = (tmp_path / "out").glob("diagnose-resnet18-*")  # its tag names the settings
    assert f"page: out/{campaign.name}/report/summary_diagnose.html" in done.stdout
    page = campaign / "report" / "summary_diagnose.html"
    assert "From the best speed on this node down to yours" in page.read_text()
    index = (page.parent / "index.html").read_text()
    assert "Why it is slower than it should be" in index
    bad = subprocess.run(
        [str(Path(sys.executable).with_name("benchlib")), "diagnose", "--model", "resnet9000",
         "--device", "cpu"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert bad.returncode == 2 and "model" in bad.stderr


def test_page_puts_the_recommendation_first_then_the_waterfall(tmp_path, monkeypatch):
    import IPython.display

    from benchlib.diagnosis import page

    seen: list[object] = []
    monkeypatch.setattr(IPython.display, "display", lambda *values, **_: seen.extend(values))
    plan = _plan(tmp_path)
    root = _campaign(tmp_path, plan, SLOW_DATA, {"disk-w1": 0.6, "memory-w1": 0.55})
    df = load(root)
    found = page.answer(df, root)
    page.waterfall(found)
    page.workers(found)
    page.others(df, found)
    page.rungs(df, found)
    text = [v.get("text/markdown", "") if isinstance(v, dict) else getattr(v, "data", "")
            for v in seen]
    assert text[0].startswith("**resnet18 train on this node") and "JPEG decode" in text[0]
    assert seen[0]["application/vnd.benchlib.answers+json"]["diagnosis"][""][0]["text"] in text[0]
    assert any(isinstance(v, dict) and "image/png" in v for v in seen)  # the plot
    assert any("No shipped published figure matches" in str(t) for t in text)
    assert any(str(t).startswith("Repeats: every step's 95 % interval") for t in text)
    assert page.answer(df, tmp_path) is None  # not a diagnose campaign: says so


def _gpu_plan(tmp_path: Path, campaign: str) -> diagnose_plan.Plan:
    """A GPU plan (planted on this CPU machine) with a data folder and one worker."""
    folder = tmp_path / "jpegs"
    folder.mkdir()
    request = diagnose_plan.request_from({"model": "resnet18", "data_dir": str(folder),
                                          "num_workers": 1, "device": "cuda", "cores": 2,
                                          "campaign": campaign, "repeats": 3})
    return diagnose_plan.plan(request, runs_here=False)


def test_on_a_gpu_the_ladder_tries_decoding_on_the_gpu_and_says_so_when_decode_is_the_loss(
        tmp_path, monkeypatch):
    """A GPU plan with a data folder gets a rung of the user's setting with the JPEGs decoded
    on the GPU (decode: device); where decode is the biggest loss and that rung is faster, the
    recommendation says to decode on the GPU, with what it measured."""
    plan = _gpu_plan(tmp_path, "gpu")
    decoded = [r for r in plan.rungs if r.kind == "gpu_decode"]
    assert [r.name for r in decoded] == ["disk-gpu-w1"]
    assert plan.parameters["disk-gpu-w1"]["decode"] == "device"
    assert plan.rungs[-1].kind == "disk"  # the ladder still ends at the user's data path
    speeds = {r.name: {"device": 100.0, "host": 95.0, "memory": 40.0, "gpu_decode": 90.0}.get(
        r.kind, 36.0 if r.name == "disk-w1" else 38.0) for r in plan.rungs[1:]}
    found = _found(_campaign(tmp_path, plan, speeds, {"disk-w1": 0.6, "memory-w1": 0.55}))
    assert found.biggest["step"] == "decode"
    assert found.gpu_decode["verdict"] == "faster" and found.gpu_decode["ratio"] > 2
    text = analysis.recommendation(found)
    assert "What to change: decode the JPEGs on the GPU (decode: device" in text
    import IPython.display

    from benchlib.diagnosis import page

    seen: list[object] = []
    monkeypatch.setattr(IPython.display, "display", lambda *values, **_: seen.extend(values))
    page.workers(found)  # the worker-count section says it too
    assert any("Decoded on the GPU (decode: device)" in str(getattr(v, "data", "")) for v in seen)
    cpu_plan = _plan(tmp_path)
    assert all(r.kind != "gpu_decode" for r in cpu_plan.rungs)  # a CPU has no GPU to decode on


def test_decoding_on_the_gpu_measured_slower_is_said_and_not_advised(tmp_path):
    """Where the GPU-decode rung measured slower than the user's, "what to change" does not
    send the user there: it says what it measured; the rounds count that comparison too."""
    from benchlib.diagnosis import rounds

    plan = _gpu_plan(tmp_path, "slowgpu")
    speeds = {r.name: {"device": 100.0, "host": 95.0, "memory": 40.0, "gpu_decode": 20.0}.get(
        r.kind, 36.0 if r.name == "disk-w1" else 36.5) for r in plan.rungs[1:]}
    found = _found(_campaign(tmp_path, plan, speeds, {"disk-w1": 0.6, "memory-w1": 0.55}))
    assert found.gpu_decode["verdict"] == "slower"
    text = analysis.recommendation(found)
    assert "decode the JPEGs on the GPU" not in text
    assert "Decoding on the GPU (decode: device) measured -4" in text and "(slower)" in text
    table = rounds.comparisons(found.steps, found.workers, plan, found.gpu_decode)
    assert "decode on the GPU" in set(table["comparison"])
    assert analysis.against_yours("small loss") == "faster by less than the threshold"
    assert analysis.against_yours("cannot tell") == "cannot tell"


def test_a_ladder_whose_every_run_failed_says_so_and_does_not_crash(tmp_path):
    """Failed records carry no throughput column at all: the diagnosis says there is nothing to
    diagnose and which rungs have no finished run."""
    plan = _plan(tmp_path)
    root = tmp_path / plan.campaign
    rungs = {rung.name: rung for rung in plan.rungs}
    for name, point in plan.points()[1:]:
        record = {"schema_version": 1, "campaign": plan.campaign, "benchmark": plan.benchmark,
                  "model": plan.model, "num_devices": 1, "batch_size": plan.batch_size,
                  "image_size": plan.image_size, "status": "failed",
                  "error": "ImportError: planted", "point_id": point.point_id,
                  **rungs[name].match}
        write_record_notebook(root / f"{point.name}.ipynb", record)
    diagnose_plan.write_plan(plan, root)
    text = analysis.answer_text(_found(root))
    assert "No finished run of this model in the campaign" in text
    assert "no finished run of: synthetic on the device" in text


FLAT = {"device-fp32": 100.0, "host-w1": 100.0, "memory-w1": 100.0, "disk-w1": 100.0,
        "disk-w2": 100.0}


def test_no_loss_is_what_the_node_can_do_only_when_no_step_was_left_unjudged(tmp_path):
    plan = _plan(tmp_path)
    calm = analysis.recommendation(_found(_campaign(tmp_path / "calm", plan, FLAT)))
    assert "No step that could be judged is a significant loss: the setting gets what this " \
           "node can do" in calm
    shaken = analysis.recommendation(_found(_campaign(tmp_path / "shaken", plan, FLAT,
                                                      disturbed="memory-w1")))
    assert "but the disturbed runs leave that open: not yet what this node can do" in shaken
    assert "the setting gets what this node can do" not in shaken
    assert "Unreliable, so not judged: decode, filesystem" in shaken
    assert "with a new --campaign NAME" in shaken  # what to type: the same command runs nothing
