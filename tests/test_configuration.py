"""One rule for "does this column vary" (benchlib.records.configuration): missing values are
left aside, numbers compare as numbers, other values as their text; no code elsewhere in
benchlib/ asks it another way (a ``nunique()`` compared with 1 or 2). One label of a
configuration (``label``, its words ``written``) and one pairing rule (``pair``), used by every
page and command: no module writes a configuration's short words or pairs columns on its own."""

from __future__ import annotations

import ast

import numpy as np
import pandas as pd

from benchlib.records.configuration import label, pair, varies, varying, written

from .test_layers import MODULES

#: ``nunique()`` tests kept on purpose: (module, column) -> why.
ALLOWED = {("benchlib.publish.pages.present", "unit"):
           "the one unit a table's caption names: the units present, missing ones aside"}


def test_missing_values_are_left_aside_and_lists_compare_as_text():
    assert not varies(pd.Series([None, np.nan, "", pd.NA], dtype=object))
    assert not varies(pd.Series(["a", None, "a"]))
    assert not varies(pd.Series(["a", "a", np.nan], dtype="str"))
    assert varies(pd.Series(["a", "b", None]))
    assert varies(pd.Series(["", "contended"]), missing_too=True)  # a blank that says something
    assert varies(pd.Series([1.0, np.nan]), missing_too=True)
    assert not varies(pd.Series([[1, 2], [1, 2]]))
    assert varies(pd.Series([[1, 2], [1, 3]]))
    assert not varies(pd.Series([1.0, 1.0]))
    assert not varies(pd.Series([1.0, np.nan]))
    assert not varies(pd.Series([1, 1, None], dtype="Int64"))
    assert not varies(pd.Series(["x"]))
    assert not varies(pd.Series([1, 1.0, np.int64(1)], dtype=object))  # numbers as numbers
    assert varies(pd.Series([True, 1], dtype=object))
    assert varying(pd.DataFrame({"a": [1, 2], "b": [3, 3]}), ["b", "a", "gone"]) == ["a"]


def _column(call: ast.Call) -> str:
    target = call.func.value if isinstance(call.func, ast.Attribute) else None
    if isinstance(target, ast.Subscript) and isinstance(target.slice, ast.Constant):
        return str(target.slice.value)
    return ""


def _counted(side: ast.AST) -> ast.Call | None:
    """The call counting distinct values in ``side``: ``s.nunique()``, or ``len(s.unique())``."""
    if isinstance(side, ast.Call) and getattr(side.func, "attr", "") == "nunique":
        return side
    if isinstance(side, ast.Call) and getattr(side.func, "id", "") == "len" and side.args \
            and isinstance(side.args[0], ast.Call) \
            and getattr(side.args[0].func, "attr", "") == "unique":
        return side.args[0]
    return None


def test_no_module_asks_whether_a_column_varies_another_way():
    found = set()
    for name, path in MODULES.items():
        if name == "benchlib.records.configuration":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Compare):
                continue
            for side in (node.left, *node.comparators):
                counted = _counted(side)
                if counted is not None and any(isinstance(c, ast.Constant) and c.value in (1, 2)
                                               for c in (node.left, *node.comparators)) \
                        and (name, _column(counted)) not in ALLOWED:
                    found.add(f"{name}:{node.lineno}")
    assert found == set()


def test_a_label_names_what_varies_within_each_benchmark_long_or_short():
    runs = pd.DataFrame({"benchmark": ["train", "train", "lm_train", "train"],
                         "model": ["resnet50", "resnet50", "gpt2", "resnet50"],
                         "batch_size": [32, 64, 8, 32.0], "num_devices": [2, 2, 1, 2],
                         "sequence_length": [None, None, 1024, None]})
    keys = list(runs.columns)
    assert label(runs, keys).tolist() == ["benchmark=train, batch_size=32",
                                          "benchmark=train, batch_size=64",
                                          "benchmark=lm_train",
                                          "benchmark=train, batch_size=32"]  # 32.0 is 32
    assert label(runs, keys, short=True).tolist() == ["train, batch 32", "train, batch 64",
                                                      "lm_train", "train, batch 32"]
    one = runs.iloc[:1]
    assert label(one, keys).tolist() == ["benchmark=train, model=resnet50"]  # what names it
    assert label(one, ["batch_size"]).tolist() == ["all runs"]
    assert written(runs.iloc[:1], ["num_devices", "sequence_length"], short=True).tolist() == \
        ["2 dev"]
    failed = pd.concat([runs.iloc[:2].assign(status="ok"),
                        pd.DataFrame([{"status": "failed"}])], ignore_index=True)
    assert label(failed, keys).tolist() == ["batch_size=32", "batch_size=64", ""]
    # a run that failed before writing its settings makes no column vary


def test_pairing_keeps_one_sided_columns_apart_and_names_the_difference():
    base = pd.DataFrame({"batch_size": [32, 64], "precision": ["fp32", "fp32"],
                         "synthetic_kind": [None, None], "compile": ["", ""]})
    new = pd.DataFrame({"batch_size": [32.0, 64.0], "precision": ["bf16", "bf16"],
                        "synthetic_kind": ["random", "random"], "compile": ["", ""]})
    pairing = pair(base, new, base.columns)
    assert pairing.on == ("batch_size", "precision")  # 32 and 32.0 are one value
    assert pairing.differing == ("precision",)
    assert pairing.keys == ["batch_size"]
    assert (pairing.only_base, pairing.only_new) == ((), ("synthetic_kind",))
    from benchlib.compare.comparable import distinct  # its messages: the same rule, as text

    assert distinct(new["batch_size"]) == distinct(base["batch_size"]) == {"32", "64"}
    assert written(pd.DataFrame({"batch_size": [float("inf")]}), ["batch_size"],
                   short=True).tolist() == ["batch inf"]  # no whole-number test of infinity


def test_no_module_writes_a_configurations_words_or_pairs_columns_on_its_own():
    """The short words (``formatting.short_labels``) are written by ``configuration.written``
    only; the pairing helpers of compare and comparisons ask ``configuration.pair``."""
    own = {"benchlib.records.configuration", "benchlib.formatting"}
    found = set()
    for name, path in MODULES.items():
        if name in own:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            called = getattr(node, "attr", None) or getattr(node, "id", None)
            if called in ("short_labels", "configuration_labels"):
                found.add(f"{name}:{node.lineno} {called}")
    assert found == set()
    for module in ("benchlib.compare.comparable", "benchlib.analysis.comparisons"):
        assert "configuration.pair(" in MODULES[module].read_text(), module
