"""The notebooks' pages (benchlib.publish.pages): what each cell shows, on small record sets.

Each page function displays what its notebook cell shows; the ``shown`` fixture records every
displayed value (Markdown, tables, figures as PNG) in order instead of a notebook front end.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
import pytest
import torch
from IPython.display import Markdown

from benchlib.compare import page as compare
from benchlib.kinds.classification.config import ClassificationConfig
from benchlib.kinds.probes import layout as probes
from benchlib.kinds.probes.config import AllReduceConfig
from benchlib.kinds.unet3d.config import UNet3DTrainConfig
from benchlib.publish.benchmark_notebook import run
from benchlib.publish.pages import (
    Call,
    Page,
    acceptance,
    breakdown,
    common,
    comparisons,
    modules,
    node,
    projection,
    scaling,
)
from benchlib.publish.pages.catalog import SUMMARY_PAGES
from benchlib.publish.pages.summary import load_results
from benchlib.records.store import RECORD_MIME
from benchlib.workloads.result import RunResult

from .fakes import campaign, write_record_notebook

PAGES = [importlib.import_module(page.module).PAGE for page in SUMMARY_PAGES]


class Shown(list):
    """What was displayed, in order."""

    def markdown(self) -> list[str]:
        return [v.data for v in self if isinstance(v, Markdown)]

    def images(self) -> list[dict]:
        return [v for v in self if isinstance(v, dict) and "image/png" in v]

    def tables(self) -> list[object]:
        return [v for v in self if hasattr(v, "_repr_html_")]

    def html(self) -> str:
        return "\n".join(v._repr_html_() for v in self.tables())


@pytest.fixture
def shown(monkeypatch):
    import IPython.display

    seen = Shown()
    monkeypatch.setattr(IPython.display, "display", lambda *values, **_: seen.extend(values))
    yield seen
    plt.close("all")


@pytest.fixture(scope="module")
def fake_dir(tmp_path_factory):
    return campaign(tmp_path_factory.mktemp("pages") / "fake")


@pytest.fixture(scope="module")
def fake(fake_dir):
    return load_results(fake_dir)


def _done(df: pd.DataFrame) -> pd.DataFrame:
    from benchlib.analysis.comparisons import ok

    return ok(df)


def _numbers(column: pd.Series) -> pd.Series:
    return pd.to_numeric(column.str.replace(",", ""))


def _records(folder, *records: dict) -> pd.DataFrame:
    base = {"schema_version": 1, "campaign": "small", "cluster": "c1", "gpu": "H100",
            "benchmark": "train", "model": "resnet50", "precision": "fp32", "num_nodes": 1,
            "num_devices": 1, "batch_size": 32, "dataset": "synthetic", "unit": "images/s",
            "status": "ok", "error": ""}
    for index, record in enumerate(records):
        write_record_notebook(folder / f"run-{index}.ipynb", {**base, **record})
    return load_results(folder)


# -- the shared head and tail of the summaries ----------------------------------------------


def test_load_returns_every_run_and_the_finished_ones_and_describes_them(fake_dir, shown):
    df, done = common.load(fake_dir)
    assert (len(df), len(done)) == (13, 12)
    assert set(done["status"]) == {"ok"}
    assert shown.markdown()[0].startswith("**13 runs**") and "12 finished, 1 failed" in shown[0].data
    assert not shown.tables()  # the page's answers come next; the overview is at its end
    shown.clear()
    common.overview(df)
    assert shown.tables(), "an overview table"
    assert pd.get_option("display.max_rows") is None  # no table cut with "..."


def test_failed_runs_are_listed_with_their_error(fake, tmp_path, shown):
    common.failed(fake)
    assert "CUDA out of memory" in shown.html()
    shown.clear()
    common.failed(_records(tmp_path, {"throughput": 10.0}))
    assert shown.markdown() == ["No failed runs."]


def test_missing_names_what_the_data_cannot_show(fake, shown):
    common.missing(fake)
    assert "One gpu only" in shown.markdown()[0] and "H100" in shown.markdown()[0]


# -- scaling ----------------------------------------------------------------------------------


def test_scaling_sheet_and_plot_over_device_counts(fake, shown):
    scaling.sheet(_done(fake))
    (sheet,) = shown
    assert sheet and re.search(r">\s*4\s*<", sheet._repr_html_())  # a row for 4 devices
    scaling.plot(_done(fake))
    assert len(shown.images()) == 1


def test_one_device_count_gives_no_scaling(tmp_path, shown):
    done = _done(_records(tmp_path, {"throughput": 10.0}, {"throughput": 12.0, "batch_size": 64}))
    scaling.sheet(done)
    scaling.plot(done)
    assert shown.markdown() == ["No configuration ran on more than one device count: no scaling "
                                "to show."]
    assert not shown.images()


def test_throughput_distributed_and_allreduce_sections(fake, tmp_path, shown):
    scaling.throughput(_done(fake))
    scaling.distributed(_done(fake))
    assert "throughput" in shown.html().lower() and "Runs over several ranks" in shown.html()
    assert not shown.markdown()
    probes_only = _done(_records(tmp_path, {"benchmark": "probe_node", "unit": None}))
    scaling.distributed(probes_only)
    scaling.allreduce(probes_only)
    scaling.throughput(probes_only)
    assert shown.markdown() == ["No run used more than one device.",
                                "No all-reduce probe in these results.",
                                "No finished benchmark run."]


def test_allreduce_curves_become_a_table_and_a_plot(tmp_path, shown):
    probe = {"benchmark": "probe_allreduce", "num_devices": 2, "unit": "GB/s",
             "busbw_1MiB": 10.0, "busbw_64MiB": 40.0}
    scaling.allreduce(_done(_records(tmp_path, probe)))
    assert "Bus bandwidth (GB/s) per message size" in shown.html()
    assert len(shown.images()) == 1


# -- comparisons ------------------------------------------------------------------------------


def test_comparisons_name_the_factors_and_show_each_comparison(fake, shown):
    found = comparisons.which_matter(_done(fake))
    assert {c.factor for c in found} == {"dataset", "batch_size"}
    assert "dataset" in shown.markdown()[0] and len(shown.tables()) == 1
    shown.clear()
    comparisons.every(found)
    headings = [m for m in shown.markdown() if m.startswith("### ")]
    assert len(headings) == len(found) == len(shown.images())
    assert any("synthetic vs real" in h and "over 6 pairs" in h for h in headings)


def test_no_comparison_shows_only_the_sentence(tmp_path, shown):
    found = comparisons.which_matter(_done(_records(tmp_path, {"throughput": 10.0})))
    comparisons.every(found)
    assert found == [] and len(shown) == 1 and not shown.tables()


def test_a_comparison_of_one_run_a_side_is_unknown_in_the_table_never_not_significant(tmp_path):
    """The demo's unet3d_train: '1.31x, unknown (one run each ...)' in the headline, and
    'significant: no' in the table beside it: a verdict nothing judged."""
    from benchlib.publish.pages import summary

    df = _done(_records(tmp_path, {"throughput": 10.0, "dataset": "synthetic"},
                        {"throughput": 13.0, "dataset": "real"}))
    table = summary.headlines(summary.comparisons(df))
    assert list(table["significant"]) == ["unknown"]


# -- breakdown --------------------------------------------------------------------------------


def test_breakdown_of_the_campaign(fake, shown):
    breakdown.phases(_done(fake))
    breakdown.plot(_done(fake))
    html = shown.html().lower()
    assert "forward" in html and "backward" in html
    assert len(shown.images()) == 1


def test_reference_breakdown_only_when_included(shown):
    breakdown.published(False)
    breakdown.expected(False)
    assert shown == []
    breakdown.published(True)
    assert len(shown.tables()) == 1 and len(shown.images()) == 1
    shown.clear()
    breakdown.expected(True)
    captions = [t.caption for t in shown.tables()]
    assert len(captions) == 2 and all("expected speed ratio" in c for c in captions)


# -- projection -------------------------------------------------------------------------------


def test_training_hours_scale_with_the_target(fake, shown):
    projection.training(_done(fake), 1000)
    projection.training(_done(fake), 2000)
    first, second = shown.tables()
    assert "Hours to 1,000 iterations" in first._repr_html_()
    hours = [_numbers(t.cells["hours (h)"]) for t in (first, second)]
    assert (hours[1] / hours[0]).tolist() == pytest.approx([2.0] * 12, rel=0.01)
    assert len(shown.images()) == 2


def test_image_hours_count_epochs_for_training_only(tmp_path, shown):
    done = _done(_records(tmp_path, {"throughput": 100.0},
                          {"benchmark": "inference", "throughput": 100.0}))
    projection.images(done, dataset_samples=360_000, epochs=3)
    (table,) = shown.tables()
    hours = dict(zip(table.cells.iloc[:, 0], _numbers(table.cells["hours (h)"]), strict=True))
    assert hours == {"train": 3.0, "inference": 1.0}


def test_projection_without_runs_says_so(tmp_path, shown):
    done = _done(_records(tmp_path, {"benchmark": "probe_node", "unit": None}))
    projection.training(done, 10)
    projection.images(done, 10, 1)
    projection.unet3d(done, include_reference=False)
    assert shown.markdown() == ["No training run: nothing to project in iterations.",
                                "No image run.", "No 3D U-Net runs."]


def test_unet_runs_beside_the_reference(tmp_path, shown):
    done = _done(_records(tmp_path, {"throughput": 10.0}))  # no 3D U-Net run: the reference's
    projection.unet3d(done, include_reference=True)
    assert "3D U-Net runs in lab units" in shown.html() and len(shown.images()) == 1


# -- node -------------------------------------------------------------------------------------


def test_node_page_without_a_probe(fake, shown):
    node.ceilings(fake)
    node.loader(fake)
    assert "node_probe.ipynb" in shown.markdown()[0]
    assert shown.markdown()[1].startswith("No decode probe")


def test_node_verdicts_count_every_finished_run(fake, shown):
    node.verdicts(fake)
    counts = shown.tables()[0]
    assert pd.to_numeric(counts.cells.iloc[:, -1]).sum() == 12
    assert len(shown.images()) == 1


def test_node_datasheet_of_a_listed_gpu(tmp_path, shown):
    node.datasheets(_records(tmp_path, {"device_name": "NVIDIA H100 80GB HBM3", "throughput": 1.0}))
    assert "H100" in shown.html()
    shown.clear()
    node.datasheets(_records(tmp_path / "cpu", {"device_name": "cpu", "gpu": "cpu"}))
    assert shown.markdown()[0].startswith("No listed GPU")


# -- acceptance and compare -------------------------------------------------------------------


def test_acceptance_with_the_shipped_references(fake, shown):
    refs = acceptance.load("")
    assert refs.given is None and refs.refs
    acceptance.check(fake, refs)
    acceptance.fleet(fake)  # one node: no fleet section
    assert len(shown) >= 1 and not any(m.startswith("## Fleet") for m in shown.markdown())
    shown.clear()
    acceptance.listing(refs)
    assert shown.markdown()[0] == acceptance.SHIPPED and shown.tables()


def test_acceptance_fleet_section_for_several_nodes(tmp_path, shown):
    runs = [{"host": f"n{i}", "throughput": 100.0 if i else 50.0, "batch_size": 32}
            for i in range(4)]
    acceptance.fleet(_records(tmp_path, *runs))
    assert shown.markdown()[0] == "## Fleet: 4 nodes"


def test_compare_with_a_copy_finds_no_change(fake, fake_dir, shown, tmp_path):
    import shutil

    copy = shutil.copytree(fake_dir, tmp_path / "fake")
    compare.verdicts(fake, copy, threshold=0.05)
    assert shown.markdown()[0].startswith("**Against fake**")
    (table,) = shown.tables()
    assert set(table.cells["new / base"]) == {"1.00x"} and len(table.cells) == 12
    assert set(table.cells["verdict"]) <= {"no change", "unknown"}
    assert len(shown.images()) == 1


# -- the benchmark notebooks' sections ----------------------------------------------------------


def _result(num_devices: int = 1) -> RunResult:
    frame = pd.DataFrame({"iteration": [0.2, 0.25, 0.3], "forward": [0.1, 0.1, 0.1]})
    return RunResult(device=torch.device("cpu"), iterations=3, warmup=1, samples=24,
                     wall_time_s=0.75, unit="images/s", per_iteration=frame,
                     num_devices=num_devices)


def test_launch_runs_the_config_and_prints_its_headline(monkeypatch, capsys):
    from benchlib.run import launch

    result = _result()
    monkeypatch.setattr(launch, "run", lambda config: result)
    assert run.launch(ClassificationConfig(benchmark="train")) is result
    assert capsys.readouterr().out.strip() == ("32.00 images/s over 3 timed iterations (0.75 s; 1 "
                                               "warm-up excluded)")


def test_titles_name_what_ran():
    assert run.title(ClassificationConfig(benchmark="inference", model="vit_b_16")).startswith(
        "vit_b_16 inference, batch")
    unet = UNet3DTrainConfig.model_construct()
    assert run.title(unet).startswith("3D U-Net unet3d_train, batch")


def test_run_sections_show_tables_and_figures(shown):
    result = _result()
    config = ClassificationConfig(benchmark="train", device="cpu")
    run.configuration(config)
    assert "resnet50" in shown.html()
    shown.clear()
    run.ranks(result)
    run.telemetry(result)  # no telemetry: no plot, only its summary table
    assert len(shown.tables()) == 2 and not shown.images()
    shown.clear()
    run.timeline(config, result)
    run.phases(result)
    assert len(shown.images()) == 2
    table = shown[-1].cells  # the breakdown table, in milliseconds, for people
    assert list(table["phase"]) == ["iteration", "forward"]
    assert list(table.columns) == ["phase", "median (ms)", "p95 (ms)", "spread (IQR / median)",
                                   "share of the iteration"]


def test_record_is_published_and_returned(shown):
    record = run.record(ClassificationConfig(benchmark="train", device="cpu"), _result())
    (published,) = shown
    assert published[RECORD_MIME]["throughput"] == record["throughput"] == 32.0


def test_probe_loader_without_decode_says_so(capsys, shown):
    class Probe:
        decode = pd.DataFrame()

    probes.loader(Probe())
    assert "decode not probed" in capsys.readouterr().out and shown == []


def test_allreduce_bandwidth_plot(monkeypatch, shown):
    class Result:
        num_devices = 2
        table = pd.DataFrame({"size_bytes": [1024, 2048], "size": ["1KiB", "2KiB"],
                              "busbw_GBps": [1.0, 2.0], "algbw_GBps": [1.0, 2.0]})

    monkeypatch.setattr(probes, "make_record", lambda config, result: {"gpu": "cpu"})
    assert probes.bandwidth(AllReduceConfig(), Result()) == {"gpu": "cpu"}
    assert len(shown.images()) == 1


# -- the pages as the generator assembles them ----------------------------------------------


def _cells(page: Page) -> list:
    return [*page.cells, *common.TAIL]


def test_one_registry_holds_every_summary_page():
    """Each page module's PAGE is named in the catalog once, with its notebook, and each
    parameter the report gives a page is one its notebook takes."""
    import benchlib.publish.pages as package

    from .conftest import ROOT

    names = [p.name for p in SUMMARY_PAGES]
    assert len(set(names)) == len(names) and all(n.startswith("summary_") for n in names)
    tree = Path(package.__file__).parent.parent.parent  # benchlib/: a feature's page too
    with_a_page = {".".join(path.relative_to(tree.parent).with_suffix("").parts)
                   for path in tree.rglob("*.py") if "\nPAGE = Page(" in path.read_text()}
    assert {p.module for p in SUMMARY_PAGES} == with_a_page
    for entry, page in zip(SUMMARY_PAGES, PAGES, strict=True):
        assert isinstance(page, Page), entry.module
        assert (ROOT / "notebooks" / entry.notebook).is_file(), entry.notebook
        assert {name for name, _ in entry.inputs} <= set(page.parameters), entry.name
        assert "{" not in entry.titled("base")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.title.split(":")[0])
def test_every_call_uses_names_defined_before_it(page):
    defined = {"results_dir", *page.parameters, *common.HEAD.assign.split(", ")}
    for cell in _cells(page):
        for call in cell if isinstance(cell, tuple) else (cell,) if isinstance(cell, Call) else ():
            used = {a.split("=")[-1].strip().split(".")[0] for a in call.arguments.split(",")
                    if a.strip() and not a.strip().startswith('"')}  # a literal names nothing
            assert used <= defined, (call.source(), used - defined)
            assert getattr(__import__(call.function.__module__, fromlist=["_"]),
                           call.function.__name__) is call.function
            defined |= {n.strip() for n in call.assign.split(",") if n.strip()}
    assert not set(modules(_cells(page))) & set(page.parameters)  # no parameter hides a module


def test_benchmark_cells_use_names_the_notebook_defines():
    from benchlib.kinds.unet3d import layout as unet3d_layout

    for cells in (run.TIMED_LOOP, run.ONE_RUN, unet3d_layout.unet_cells(unet3d_layout.PREDICT_PHASES),
                  probes.ALLREDUCE, probes.NODE):
        defined = {"config"}
        for call in (c for c in cells if isinstance(c, Call)):
            used = {a.strip() for a in call.arguments.split(",") if a.strip()}
            assert used <= defined, (call.source(), used - defined)
            defined |= {call.assign} if call.assign else set()


def test_a_factor_is_stated_per_benchmark_never_pooled_across_kinds():
    """Three ResNet pairs near 1.05x and one U-Net pair at 4.6x: two statements, each with its
    own ratio; no single "dataset synthetic vs real" pooled over both kinds."""
    from benchlib.publish.pages.summary import comparisons

    rows = []
    for benchmark, ratio, batches in (("train", 1.05, (16, 32, 64)), ("unet3d_train", 4.6, (1,))):
        for batch in batches:
            for dataset, value in (("synthetic", 100.0 * ratio), ("real", 100.0)):
                rows.append({"benchmark": benchmark, "model": "m", "batch_size": batch,
                             "dataset": dataset, "throughput": value, "status": "ok",
                             "num_devices": 1, "flags": ""})
    found = [c for c in comparisons(pd.DataFrame(rows)) if c.factor == "dataset"]
    assert sorted((c.benchmark, round(c.headline, 2)) for c in found) == [
        ("train", 1.05), ("unet3d_train", 4.6)]
    assert all(c.benchmark in c.title for c in found)
