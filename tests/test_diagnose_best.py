"""The diagnosis never calls a rung slower than the user's setting its best."""

from __future__ import annotations

from benchlib.diagnosis import analysis
from benchlib.diagnosis.waterfall import waterfall_plot
from tests.test_diagnose import SLOW_DATA, _campaign, _found, _plan


def test_a_setting_faster_than_the_best_rung_is_not_called_a_multiple_of_its_best(tmp_path):
    plan = _plan(tmp_path)
    noisy = {**SLOW_DATA, "device-fp32": 9.4, "disk-w1": 13.8}  # as a contended CPU measured
    found = _found(_campaign(tmp_path, plan, noisy))
    text = analysis.recommendation(found)
    assert "its best here" not in text
    assert "x the speed with data made on the device (9." in text
    assert "faster than the rung that should be the fastest here" in text
    figure = waterfall_plot(found)
    said = [t.get_text() for t in figure.axes[0].texts]
    assert not any(s.endswith("x the best)") for s in said)
    slow = _found(_campaign(tmp_path, _plan(tmp_path, campaign="dg2"), SLOW_DATA))
    assert "0.36x its best here (" in analysis.recommendation(slow)


def test_the_paragraph_s_mfu_is_that_of_the_speed_it_states(tmp_path):
    import pandas as pd

    from benchlib.records.results import load

    plan = _plan(tmp_path)
    root = _campaign(tmp_path, plan, SLOW_DATA)
    df = load(root)
    user = df["point_id"].isin(plan.point_ids()["disk-w1"])
    df.loc[user, "throughput"] = [30.9, 7.18, 11.9]  # a contended CPU's three runs
    df["achieved_tflops"] = df["throughput"] * 0.01
    probe = {"benchmark": "probe_node", "status": "ok", "model": "node", "gpu": "cpu",
             "mamf_tflops_fp32": 1.0}
    found = analysis.diagnose(pd.concat([df, pd.DataFrame([probe])], ignore_index=True), plan)
    assert f"{found.user.speed:,.1f} images/s" == "13.8 images/s"
    assert "MFU 13.8 % of what this node reaches" in found.reason, found.reason  # not the 31% of run 1
    assert "MFU 13.8 %" in analysis.recommendation(found)
