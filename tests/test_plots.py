"""Every plot the summary notebooks draw, on record tables shaped as ``results.load`` makes them."""

import matplotlib.pyplot as plt
import pandas as pd
import pytest

from benchlib.analysis import comparisons, lab_units
from benchlib.publish.pages import axes, phase_plots, plots, summary

BATCHES = (8, 16, 32, 64, 128, 256, 512)


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def seven_batch_sizes() -> pd.DataFrame:
    """Training runs over 7 batch sizes and 2 device counts, counts as nullable Int64."""
    rows = [{"benchmark": "train", "model": "resnet50", "dataset": "synthetic", "gpu": "H100",
             "precision": "fp32", "unit": "images/s", "status": "ok", "batch_size": batch,
             "num_devices": devices, "throughput": 100.0 * devices * (1 + i / 10),
             "time_iteration_s": 0.1, "time_data_s": 0.01, "time_forward_s": 0.03}
            for i, batch in enumerate(BATCHES) for devices in (1, 2)]
    frame = pd.DataFrame(rows)
    return frame.astype({"batch_size": "Int64", "num_devices": "Int64"})


@pytest.mark.slow  # the edit loop's slowest (make test runs it)
def test_seven_nullable_batch_sizes_through_every_plot():
    df = seven_batch_sizes()
    figure = plots.scaling_plot(comparisons.scaling(df))
    labels = {t.get_text() for t in figure.axes[2].get_legend().get_texts()}  # one legend, right
    assert {f"batch {b}" for b in BATCHES} <= labels  # one legend entry per batch size, not a range
    for comparison in summary.comparisons(df):
        plots.ratio_plot(comparison.pairs, comparison.title).canvas.draw()
    table = comparisons.breakdown(df)
    phase_plots.breakdown_plot(table, summary.varying(table)).canvas.draw()
    projected = lab_units.derived_units(comparisons.extrapolate(df, iterations=1000))
    plots.hours_plot(projected, summary.varying(projected)).canvas.draw()
    figure.canvas.draw()


def test_a_unit_that_looks_like_mathtext_is_drawn_literally():
    # found by test_summary_properties: the scaling plot's y label carried the unit unescaped
    df = seven_batch_sizes().assign(unit="$\\frac{1}{$")
    figure = plots.scaling_plot(comparisons.scaling(df))
    figure.canvas.draw()
    assert figure.axes[0].get_ylabel() == "throughput (\\$\\frac{1}{\\$)"


def test_values_over_a_decade_get_a_log_axis_or_panels():
    from benchlib import reference

    table = comparisons.breakdown(reference.breakdown_records())  # 0.1 s beside 7 s iterations
    figure = phase_plots.breakdown_plot(table, summary.varying(table), "Reference breakdown")
    time_axis, share_axis = figure.axes[:2]
    assert time_axis.get_xscale() == "log" and share_axis.get_xlim() == (0.0, 1.0)
    assert time_axis.get_yticklabels()[0].get_text().startswith("TN, V100")
    assert share_axis.get_legend() is not None  # beside the panel, not over the bars
    narrow = comparisons.breakdown(seven_batch_sizes())
    assert len(phase_plots.breakdown_plot(narrow, summary.varying(narrow)).axes) == 1
    hours = pd.DataFrame({"model": ["a", "b"], "hours": [0.5, 30.0]})
    assert plots.hours_plot(hours, ["model"]).axes[0].get_xscale() == "log"
    assert axes.spans_decades([1.0, 9.0]) is False and axes.spans_decades([1.0, 11.0, None])


def test_a_log_axis_over_one_or_two_decades_reads_more_than_one_label():
    """Projections of 15 to 90 h labelled 20 and 50 as well as 10 (before: one label, '10');
    over more than three decades, one label a decade (not 21 crowded ones)."""
    def labels(values: list[float]) -> list[str]:
        figure, ax = plt.subplots()
        ax.barh(["a", "b"], values)
        axes.log_axis(ax)
        figure.canvas.draw()
        low, high = ax.get_xlim()
        shown = [t.get_text() for t, at in zip(ax.get_xticklabels(), ax.get_xticks(), strict=True)
                 if t.get_text() and low <= at <= high]
        plt.close(figure)
        return shown

    assert labels([15.0, 90.0]) == ["20", "50"]
    assert labels([0.01, 3000.0]) == ["0.01", "0.1", "1", "10", "100", "1,000"]


@pytest.mark.slow  # the edit loop's slowest (make test runs it)
def test_every_summary_plot_has_a_phone_rendering_whose_labels_stay_10_px_at_390():
    """Item 12: at 390 px a plot 8-13 inches wide shrank to 3-6 px labels. Each figure's phone
    rendering is one column at most ``narrow.MAX_PIXELS`` wide, no text under 10 pt: on the
    364 px of a 390 px page a 10 pt label (13.9 px in the PNG) stays at 10 px or more."""
    import io

    from PIL import Image

    from benchlib import reference
    from benchlib.publish.pages import narrow

    df = seven_batch_sizes()
    table = comparisons.breakdown(reference.breakdown_records())
    projected = lab_units.derived_units(comparisons.extrapolate(df, iterations=1000))
    figures = {"scaling": plots.scaling_plot(comparisons.scaling(df)),
               "breakdown": phase_plots.breakdown_plot(table, summary.varying(table)),
               "projection": plots.hours_plot(projected, summary.varying(projected)),
               **{f"ratio {c.title}": plots.ratio_plot(c.pairs, c.title)
                  for c in summary.comparisons(df)}}
    for name, figure in figures.items():
        png = narrow.render(figure)
        assert png is not None, name
        width, _ = Image.open(io.BytesIO(png)).size
        assert width <= narrow.MAX_PIXELS, (name, width)
        sizes = [t.get_fontsize() for t in figure.findobj(plt.Text) if t.get_text().strip()]
        assert min(sizes) >= narrow.MIN_POINTS, name
        assert {ax.get_subplotspec().colspan.start for ax in figure.axes
                if ax.get_subplotspec() is not None} == {0}, name  # one column
    assert 364 * narrow.MIN_POINTS * narrow.DPI / 72 / narrow.MAX_PIXELS >= 10


def test_a_figure_with_a_colour_bar_gets_its_phone_rendering_too():
    """nightly3's acceptance page stopped the report: 'Colorbar layout of new layout engine not
    compatible with old engine' from the phone rendering of a heat map."""
    import seaborn as sns

    from benchlib.publish.pages import narrow

    figure, ax = plt.subplots(figsize=(9, 3))
    sns.heatmap(pd.DataFrame([[1.0, 0.9], [0.95, 1.02]], columns=["a", "b"]), ax=ax)
    figure.tight_layout()
    assert narrow.render(figure)
