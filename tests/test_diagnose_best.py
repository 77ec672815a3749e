"""The diagnosis never calls a rung slower than the user's setting its best."""

from __future__ import annotations

from benchlib.analysis import diagnose as analysis
from benchlib.publish.pages.waterfall import waterfall_plot
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
