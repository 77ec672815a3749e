import pandas as pd
import pytest

from benchlib.analysis import comparisons
from benchlib.publish.pages import summary

from .fakes import campaign


@pytest.fixture(scope="module")
def fake(tmp_path_factory):
    return summary.load_results(campaign(tmp_path_factory.mktemp("fake")))


def test_loading_a_campaign_keeps_failed_runs_apart(fake):
    assert len(fake) == 13
    assert len(comparisons.ok(fake)) == 12
    failed = comparisons.failed(fake)
    assert len(failed) == 1 and "CUDA out of memory" in failed["error"].iloc[0]


def test_missing_names_what_the_data_cannot_show(fake):
    notes = summary.missing(fake)
    assert any(n.startswith("One gpu only (H100)") for n in notes)
    assert not any("multi-device" in n for n in notes)
    cpu_only = pd.DataFrame({"num_devices": [1], "dataset": ["synthetic"], "gpu": ["cpu"],
                             "batch_size": [8], "status": ["ok"]})
    text = " ".join(summary.missing(cpu_only))
    assert "No multi-device runs" in text and "No real-data runs" in text
    assert "CPU-only runs" in text
    # a probe's row has no batch size: the note names the runs' one batch size, not <NA>
    with_probe = pd.DataFrame({"benchmark": ["probe_node", "train"], "batch_size": [None, 8],
                               "status": ["ok", "ok"]}).astype({"batch_size": "Int64"})
    assert "One batch size only (8)" in " ".join(summary.missing(with_probe))


def test_comparisons_found_in_the_data(fake):
    found = {c.factor: c for c in summary.comparisons(fake)}
    assert set(found) == {"dataset", "batch_size"}
    assert (found["dataset"].a, found["dataset"].b) == ("synthetic", "real")
    assert found["dataset"].headline == pytest.approx(1 / 0.7)
    assert (found["batch_size"].a, found["batch_size"].b) == (64, 32)
    assert found["batch_size"].headline == pytest.approx(1.1)
    assert len(found["dataset"].pairs) == 6  # 3 device counts x 2 batch sizes


def test_scaling_of_the_fake_campaign(fake):
    table = comparisons.scaling_table(comparisons.ok(fake), value="efficiency")
    assert table.loc[4, "median"] == pytest.approx(0.95 ** 3)
    assert table.loc[1].tolist() == [1.0] * 5
