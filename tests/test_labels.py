"""Column names and units for people come from one table: a record column's from its schema
entry (records.columns: its label and unit), a column analysis adds from its entry in
records.derived; formatting keeps no list of its own."""

from __future__ import annotations

from benchlib import formatting
from benchlib.records import derived, schema


def _exact_columns() -> set[str]:
    return {c.name for c in schema.every_column() if "{" not in c.name}


def test_derived_columns_are_described_once_and_are_no_record_column():
    names = [c.name for c in derived.DERIVED]
    assert len(names) == len(set(names))
    assert set(names) & _exact_columns() == set()
    assert {c.role for c in derived.DERIVED} == {"derived"}
    for left in ("NAMES", "UNITS", "RATIO_COLUMNS", "PERCENT_COLUMNS", "PERCENT_POINTS",
                 "TFLOPS_COLUMNS", "IN_THROUGHPUT_UNIT"):
        assert not hasattr(formatting, left), left  # one table, no list beside it
    assert not hasattr(schema, "LABELS")
    assert formatting.column_label("hours") == "hours (h)"
    assert formatting.column_label("mfu") == "MFU of the datasheet"
    assert formatting.formatter("efficiency")(0.5) == "50.0 %"
    assert formatting.formatter("speedup")(1.934) == "1.93x"
    assert formatting.formatter("gpu_util_mean")(96.4) == "96.4 %"  # already 0-100
    assert formatting.formatter("achieved_tflops_per_device")(312) == "312 TFLOP/s"


def test_every_label_names_a_described_column():
    labelled = [c for c in (*schema.every_column(), *derived.DERIVED) if c.label]
    assert len(labelled) > 40
    assert all(schema.label(c.name) == c.label for c in labelled)


def test_measured_columns_show_the_schema_unit():
    # "unit" and "unit/J": the record's throughput unit (per joule), given by the table
    shown = {c.name: formatting.column_label(c.name) for c in schema.every_column()
             if "{" not in c.name and c.dtype == "float" and c.unit not in ("", "unit", "unit/J")
             and formatting.kind(c.name) == "plain"}
    assert shown, "no measured column with a unit: the check looks at nothing"
    wrong = {name: label for name, label in shown.items()
             if not label.endswith(f"({schema.column(name).unit})")}
    assert wrong == {}


def test_labels_read_as_words():
    assert formatting.column_label("power_mean_w") == "mean power (W)"
    assert formatting.column_label("joules_per_sample") == "energy per sample (J/sample)"
    assert formatting.column_label("memory_GBps") == "memory (GB/s)"
    assert formatting.column_label("h2d_pinned_GBps") == "h2d pinned (GB/s)"
    assert formatting.column_label("image_size") == "image size (px)"
    assert formatting.column_label("num_devices") == "devices"  # a count: no unit
    assert formatting.column_label("gpu_util_mean") == "GPU utilization"  # values carry %
    assert formatting.column_label("time_data_s") == "data wait (ms)"
    assert formatting.column_label("throughput", "images/s") == "throughput (images/s)"
    # in the unit of the run's throughput (its kind's): tokens/s for a language model
    assert formatting.column_label("demand_per_device", "tokens/s") == "model takes per device (tokens/s)"
    assert formatting.column_label("demand_per_device") == "model takes per device"
    assert formatting.column_label("result_parameters") == "network parameters"
    assert formatting.column_label("not_a_column") == "not a column"


def test_energy_efficiency_is_named_with_the_per_joule_unit_it_is_given():
    assert formatting.column_label("samples_per_joule", "tokens/J") == "energy efficiency (tokens/J)"
    assert formatting.column_label("samples_per_joule") == "energy efficiency"


def test_a_share_that_would_round_to_zero_says_how_small_it_is() -> None:
    """An MFU of 0.004 % is not "0.0 %" (a CPU run against a GPU datasheet)."""
    from benchlib import formatting

    assert formatting.percent(0.00004) == "0.004 %"
    assert formatting.percent(0.043) == "4.3 %" and formatting.percent(0) == "0.0 %"
    assert formatting.percent(1.5) == "150 %"
