"""Params files are data, never code: strict YAML, JSON-typed values, bounded size, clear errors."""

from __future__ import annotations

import keyword
import os
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from papermill.translators import PythonTranslator

from benchlib.cli import main
from benchlib.errors import ConfigError, InputError
from benchlib.inputs.params import Point, load_sweep, papermill_parameters
from benchlib.inputs.yaml_input import MAX_ALIASES, parse_yaml

from .conftest import examples

BASE = ("campaign: unit\nnotebook: train\n"
        "base: {model: resnet18, image_size: 32, num_classes: 10, iterations: 2, warmup: 1,\n"
        "       num_workers: 0, device: cpu}\n")


def _write(tmp_path: Path, text: str | bytes) -> Path:
    path = tmp_path / "params.yaml"
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


def _sweep_cli(tmp_path: Path, text: str | bytes, capsys, *extra: str) -> tuple[int, str]:
    outputs = tmp_path / "outputs"
    code = main(["sweep", str(_write(tmp_path, text)), "--outputs", str(outputs), "--dry-run",
                 *extra])
    return code, capsys.readouterr().err


def test_binary_tagged_value_is_refused_with_its_field(tmp_path, capsys):
    payload = "!!binary X19pbXBvcnRfXygnb3MnKS5zeXN0ZW0oJ3RvdWNoIC90bXAvcHduZWQnKQ=="
    code, err = _sweep_cli(tmp_path, BASE + f"grid: {{cluster: [{payload}]}}\n", capsys)
    assert code == 2
    assert "grid.cluster[0]: binary data (!!binary) is not allowed" in err
    assert not (tmp_path / "outputs").exists()


@pytest.mark.parametrize(("value", "expected"), [
    ("2024-05-01", "a date value is not allowed"),
    ("!!set {a, b}", "a set (!!set) is not allowed"),
    (".nan", "nan is not a finite number"),
])
def test_non_json_values_are_refused(tmp_path, capsys, value, expected):
    code, err = _sweep_cli(tmp_path, BASE.replace("device: cpu}", f"device: cpu, cluster: {value}}}"),
                           capsys)
    assert code == 2 and f"base.cluster: {expected}" in err, err


def test_python_tags_are_not_constructed(tmp_path, capsys):
    code, err = _sweep_cli(tmp_path, BASE + "grid: {cluster: [!!python/object/apply:os.system "
                           "['touch /tmp/pwned']]}\n", capsys)
    assert code == 2 and "not valid YAML" in err and "python/object" in err


def test_duplicate_keys_are_refused_with_both_lines(tmp_path, capsys):
    code, err = _sweep_cli(tmp_path, BASE + "repeats: 1\nrepeats: 3\n", capsys)
    assert code == 2 and "line 6: duplicate key 'repeats' (first at line 5)" in err, err


def test_alias_bomb_is_refused_before_it_expands(tmp_path, capsys):
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for level in range(1, 9):
        refs = ", ".join([f"*a{level - 1}"] * 9)
        lines.append(f"a{level}: &a{level} [{refs}]")
    bomb = "\n".join(lines) + "\n" + BASE.replace("device: cpu}", "device: cpu, cluster: *a8}")
    code, err = _sweep_cli(tmp_path, bomb, capsys)
    assert code == 2 and "values once aliases are expanded" in err, err
    many = "x: &x 1\ny: [" + ", ".join(["*x"] * (MAX_ALIASES + 1)) + "]\n"
    with pytest.raises(InputError, match=f"more than {MAX_ALIASES} aliases"):
        parse_yaml(many)


def test_plain_aliases_and_merge_keys_still_work():
    data = parse_yaml("common: &c {a: 1}\nuse: {<<: *c, b: 2}\nagain: *c\n")
    assert data["use"] == {"a": 1, "b": 2} and data["again"] == {"a": 1}


def test_non_utf8_file_is_refused_with_the_line(tmp_path, capsys):
    code, err = _sweep_cli(tmp_path, BASE.encode() + b"# caf\xe9\n", capsys)
    assert code == 2 and "not UTF-8 text (byte 0xe9 on line 5)" in err, err


def test_point_count_is_capped_with_the_option_named(tmp_path, capsys):
    grid = "grid: {batch_size: [" + ", ".join(map(str, range(1, 201))) + "], " \
           "seed: [" + ", ".join(map(str, range(100))) + "]}\n"
    code, err = _sweep_cli(tmp_path, BASE + grid, capsys)
    assert code == 2
    assert "grid: 20,000 points (1 notebooks x 200 batch_size x 100 seed x 1 repeats)" in err
    assert "--max-points 20000" in err
    small = BASE + "grid: {batch_size: [1, 2, 3]}\n"
    with pytest.raises(ConfigError, match=r"3 points .* more than the limit of 2"):
        load_sweep(_write(tmp_path, small), max_points=2)
    assert len(load_sweep(_write(tmp_path, small), max_points=3).points) == 3


def test_params_folder_and_missing_file_are_input_errors(tmp_path, capsys):
    assert main(["sweep", str(tmp_path)]) == 2
    assert "is a folder, not a params file" in capsys.readouterr().err


def test_papermill_gets_the_validated_dump_not_the_raw_values(tmp_path):
    point = Point("train", {"model": "resnet18", "batch_size": 8, "sigma": 1, "campaign": "c"},
                  0, "p")
    parameters = papermill_parameters(point, tmp_path)
    assert parameters == {"model": "resnet18", "batch_size": 8, "sigma": 1.0, "campaign": "c"}
    assert type(parameters["sigma"]) is float  # the config's type, not the YAML's


@pytest.mark.parametrize(("value", "expected"), [
    ("batch_size: true", "base.batch_size: bad value True: Input should be a valid integer"),
    ("seed: '3'", "base.seed: bad value '3': Input should be a valid integer"),
    ("channels_last: 1", "base.channels_last: bad value 1: Input should be a valid boolean"),
    ("cluster: 5", "base.cluster: bad value 5: Input should be a valid string"),
])
def test_values_of_the_wrong_type_are_refused_not_coerced(tmp_path, capsys, value, expected):
    code, err = _sweep_cli(tmp_path, BASE.replace("device: cpu}", f"device: cpu, {value}}}"),
                           capsys)
    assert code == 2 and expected in err, err


@pytest.mark.parametrize(("text", "expected"), [
    (rb'grid: {cluster: ["\ud800"]}', "grid.cluster[0]: not valid Unicode text"),
    (b"grid: {cluster: [a\x00b]}", "not valid YAML: line 5"),
    (b"grid: {cluster: [unclosed}", "not valid YAML: line 5, column"),
])
def test_undecodable_text_and_syntax_errors_are_one_line_input_errors(tmp_path, capsys, text,
                                                                      expected):
    code, err = _sweep_cli(tmp_path, BASE.encode() + text + b"\n", capsys)
    assert code == 2 and expected in err, err
    assert err.count("\n") == 1, err


def test_special_files_are_refused_before_reading(tmp_path, capsys):
    assert main(["sweep", "/dev/zero", "--dry-run"]) == 2
    assert "not a regular file" in capsys.readouterr().err
    fifo = tmp_path / "params.fifo"
    os.mkfifo(fifo)
    assert main(["sweep", str(fifo), "--dry-run"]) == 2  # would block forever if opened
    assert "not a regular file" in capsys.readouterr().err


@pytest.mark.parametrize(("name", "expected"), [
    ("report", "'report' is the name of the report folder"),
    ("c" * 101, "cannot name a campaign's folder: use ASCII letters, digits"),
    ("../up", "at most 100 characters"),
])
def test_campaign_names_that_would_vanish_or_not_fit_are_refused(tmp_path, capsys, name,
                                                                 expected):
    code, err = _sweep_cli(tmp_path, BASE.replace("campaign: unit", f"campaign: {name}"), capsys)
    assert code == 2 and expected in err, err


JSON_SCALARS = st.one_of(st.text(), st.integers(-2**63, 2**63), st.booleans(), st.none(),
                         st.floats(allow_nan=False, allow_infinity=False))
JSON_VALUES = st.recursive(JSON_SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)),
    max_leaves=12)


NAMES = st.from_regex(r"[a-z_][a-z0-9_]{0,10}", fullmatch=True).filter(
    lambda name: not keyword.iskeyword(name))


@settings(max_examples=examples(200), deadline=None)
@given(st.dictionaries(NAMES, JSON_VALUES, max_size=5))
def test_any_json_value_reaches_the_notebook_as_data(values):
    """What papermill writes into the parameters cell evaluates back to exactly the values:
    no text, however crafted, becomes code."""
    point = Point("custom", values, 0, "p")  # no config class: JSON values pass as they are
    parameters = papermill_parameters(point, Path("/nowhere"))
    namespace: dict = {}
    exec(PythonTranslator.codify(parameters), {}, namespace)  # the cell papermill injects
    assert namespace == parameters == values


@pytest.mark.parametrize("name", ["if", "a b", "x=1;y"])
def test_parameter_names_that_are_not_python_names_are_refused(name):
    with pytest.raises(ConfigError, match="parameter names must be Python names"):
        papermill_parameters(Point("custom", {name: 1}, 0, "p"), Path("/nowhere"))


def test_hostile_yaml_strings_stay_strings(tmp_path):
    hostile = ['"; import os; os.system("x") #', "\\\" + __import__('os').getcwd() + \"",
               "line\nbreak", "'''", '"""', "\\", "\x00nul", "{{ jinja }}"]
    text = BASE + "grid: {cluster: " + yaml.safe_dump(hostile, default_flow_style=True) + "}\n"
    sweep = load_sweep(_write(tmp_path, text))
    for point in sweep.points:
        parameters = papermill_parameters(point, tmp_path)
        namespace: dict = {}
        exec(PythonTranslator.codify(parameters), {}, namespace)
        assert namespace["cluster"] == point.parameters["cluster"]
    assert sorted(p.parameters["cluster"] for p in sweep.points) == sorted(hostile)
