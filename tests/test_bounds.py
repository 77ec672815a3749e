"""Bounds checked before anything runs: sizes the node cannot hold, data a stat or a header read
can tell is unusable, and YAML that would recurse, explode or silently mean something else.
Each refusal is bad input (exit 2) naming the field, the value and the bound."""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np
import pytest

from benchlib.cli import main
from benchlib.diagnosis import data_check as diagnose_data
from benchlib.diagnosis import plan as diagnose_plan
from benchlib.errors import ConfigError, InputError
from benchlib.inputs import node_limits
from benchlib.inputs.params import load_sweep, papermill_parameters
from benchlib.inputs.yaml_input import parse_yaml

from .conftest import examples

BASE = ("campaign: unit\nnotebook: train\n"
        "base: {model: resnet18, image_size: 32, num_classes: 10, iterations: 2, warmup: 1,\n"
        "       num_workers: 0, device: cpu}\n")
LM = ("campaign: unit\nnotebook: lm_train\n"
      "base: {size: tiny, sequence_length: 16, batch_size: 2, iterations: 2, warmup: 1,\n"
      "       device: cpu}\n")


def _write(tmp_path: Path, text: str, name: str = "params.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _refused(tmp_path: Path, text: str) -> str:
    """The message of load_sweep's ConfigError for params ``text`` (what --dry-run prints)."""
    with pytest.raises(ConfigError) as info:
        load_sweep(_write(tmp_path, text), base_dir=tmp_path)
    return str(info.value)


@pytest.fixture
def small_node(monkeypatch):
    """A node of 2 cores, 8 GiB of memory and no GPU in sight."""
    monkeypatch.setattr(node_limits, "cores", lambda: 2)
    monkeypatch.setattr(node_limits, "host_memory", lambda: 8 << 30)
    monkeypatch.setattr(node_limits, "visible_gpus", lambda: None)
    monkeypatch.setattr(node_limits, "gpu_memory", lambda: None)


# -- sizes --------------------------------------------------------------------------------------

def test_a_worker_count_typo_is_refused_with_the_cap(tmp_path, capsys):
    path = _write(tmp_path, BASE.replace("num_workers: 0", "num_workers: 100000"))
    assert main(["sweep", str(path), "--outputs", str(tmp_path / "out"), "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert f"base.num_workers: bad value 100000: Input should be less than or equal to " \
           f"{node_limits.MAX_WORKERS}" in err, err


def test_cpu_processes_beyond_the_cores_are_refused(tmp_path, small_node):
    err = _refused(tmp_path, BASE.replace("device: cpu", "device: cpu, num_devices: 4096"))
    assert "base.num_devices: num_devices 4096" in err and "2 cores" in err, err
    # node_launcher localhost runs every "node" here: all of num_devices count
    err = _refused(tmp_path, BASE.replace(
        "device: cpu", "device: cpu, num_devices: 4, num_nodes: 2, node_launcher: localhost"))
    assert "num_devices 4" in err and "4 processes on this node" in err, err
    assert len(load_sweep(_write(tmp_path, BASE.replace("device: cpu",
                                                        "device: cpu, num_devices: 2")),
                          base_dir=tmp_path).points) == 1


def test_gpu_processes_are_bounded_by_what_is_visible_or_a_cap(tmp_path, small_node, monkeypatch):
    monkeypatch.setattr(node_limits, "visible_gpus", lambda: 2)
    err = _refused(tmp_path, BASE.replace("device: cpu", "device: cuda, num_devices: 4"))
    assert "num_devices 4" in err and "2 GPUs" in err, err
    monkeypatch.setattr(node_limits, "visible_gpus", lambda: None)
    err = _refused(tmp_path, BASE.replace("device: cpu", "device: cuda, num_devices: 4096"))
    assert "num_devices 4096" in err and f"{node_limits.MAX_GPUS_PER_NODE}" in err, err


def test_visible_gpus_follow_cuda_visible_devices(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1,3")
    assert node_limits.visible_gpus() == 3
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert node_limits.visible_gpus() == 0


@pytest.mark.parametrize("seed", [2 ** 64, 2 ** 63, -1])
def test_seeds_torch_and_numpy_cannot_take_are_refused(tmp_path, seed):
    err = _refused(tmp_path, BASE.replace("device: cpu", f"device: cpu, seed: {seed}"))
    assert f"base.seed: bad value {seed}" in err, err
    assert ("9223372036854775808" in err) if seed > 0 else ("greater than or equal to 0" in err)


def test_a_language_model_larger_than_the_memory_is_refused(tmp_path, small_node):
    err = _refused(tmp_path, LM.replace("sequence_length: 16", "sequence_length: 100000000"))
    assert "base.sequence_length: sequence_length 100000000" in err, err
    assert "102.4 GB" in err and "8.0 GiB" in err, err
    custom = LM.replace("size: tiny", "size: custom, layers: 1000, heads: 100, width: 12800")
    err = _refused(tmp_path, custom)
    assert "base.layers: layers 1000 and width 12800" in err and "8.0 GiB" in err, err
    deep = LM.replace("size: tiny", "size: custom, layers: 100000, heads: 2, width: 64")
    assert "layers 100000 and width 64" in _refused(tmp_path, deep)
    assert len(load_sweep(_write(tmp_path, LM), base_dir=tmp_path).points) == 1


def test_a_batch_larger_than_the_memory_is_refused(tmp_path, small_node):
    """The input batch of a classification run and the logits of a language model's are lower
    bounds of what one iteration holds: beyond the device's memory, refused naming batch_size."""
    err = _refused(tmp_path, BASE.replace("image_size: 32", "image_size: 4096, batch_size: 100"))
    assert "base.batch_size: batch_size 100: one batch of 4096 px images" in err, err
    assert "20.1 GB" in err and "8.0 GiB" in err, err
    err = _refused(tmp_path, LM.replace("batch_size: 2", "batch_size: 10000000"))
    assert "base.batch_size: batch_size 10000000: its logits alone" in err, err
    assert len(load_sweep(_write(tmp_path, BASE), base_dir=tmp_path).points) == 1


def test_an_image_side_beyond_the_cap_is_refused_also_by_diagnose(tmp_path):
    err = _refused(tmp_path, BASE.replace("image_size: 32", "image_size: 100000"))
    assert "base.image_size: bad value 100000" in err and str(node_limits.MAX_IMAGE_SIDE) in err
    with pytest.raises(InputError, match=rf"image_size.*100000.*{node_limits.MAX_IMAGE_SIDE}"):
        diagnose_plan.request_from({"image_size": 100000, "device": "cpu"})


def test_the_memory_estimate_counts_training_state():
    from benchlib.kinds.language_model.config import LanguageModelConfig

    train = LanguageModelConfig(size="gpt2", device="cpu")
    infer = LanguageModelConfig(size="gpt2", device="cpu", benchmark="lm_inference")
    assert train.memory_estimate()[0] == 4 * infer.memory_estimate()[0]
    assert 120e6 * 4 < infer.memory_estimate()[0] < 130e6 * 4  # GPT-2 small: 124M parameters


# -- data a stat or a header read can judge ----------------------------------------------------

@pytest.mark.parametrize(("size", "expected"), [
    (0, "is empty"), (33, "33 bytes is not a whole number of uint16 tokens"),
    (20, "10 tokens, fewer than the 18"),
])
def test_token_files_that_cannot_give_a_sequence_are_refused(tmp_path, size, expected):
    (tmp_path / "tokens.bin").write_bytes(b"\x01" * size)
    text = LM.replace("device: cpu", "device: cpu, dataset: tokens, token_file: tokens.bin")
    err = _refused(tmp_path, text)
    assert "base.token_file:" in err and expected in err, err


def test_a_missing_or_dangling_token_file_is_said_to_not_exist(tmp_path):
    (tmp_path / "link.bin").symlink_to(tmp_path / "gone.bin")
    for name, expected in (("absent.bin", "absent.bin' does not exist"),
                           ("link.bin", "gone.bin' does not exist")):  # paths come resolved
        text = LM.replace("device: cpu", f"device: cpu, dataset: tokens, token_file: {name}")
        err = _refused(tmp_path, text)
        assert "base.token_file:" in err and expected in err, err


def test_a_relative_token_file_is_made_absolute(tmp_path):
    (tmp_path / "tokens.bin").write_bytes(np.arange(100, dtype=np.uint16).tobytes())
    text = LM.replace("device: cpu", "device: cpu, dataset: tokens, token_file: tokens.bin")
    sweep = load_sweep(_write(tmp_path, text), base_dir=tmp_path)  # cwd is elsewhere
    given = papermill_parameters(sweep.points[0], tmp_path)
    assert given["token_file"] == str(tmp_path / "tokens.bin")


def test_a_volume_of_text_is_refused_naming_volume_and_raw_key(tmp_path):
    with h5py.File(tmp_path / "text.h5", "w") as f:
        f.create_dataset("volumes/raw", data=np.full((4, 8, 8), b"ab", dtype="S2"))
        f.create_dataset("volumes/labels/neuron_ids", data=np.zeros((4, 8, 8), np.uint64))
    text = ("campaign: unit\nnotebook: unet3d_train\n"
            "base: {volume: text.h5, dataset: real, depth: 2, pooling: [1, 2, 2],\n"
            "       patch_shape: [4, 8, 8], padding: same, device: cpu}\n")
    err = _refused(tmp_path, text)
    assert "base.raw_key:" in err and "text.h5" in err and "'volumes/raw'" in err, err
    assert "|S2" in err or "bytes" in err, err


def test_diagnose_refuses_a_data_dir_without_images_before_planning(tmp_path, capsys):
    (tmp_path / "empty" / "class").mkdir(parents=True)
    (tmp_path / "empty" / "class" / "notes.txt").write_text("x")
    code = main(["diagnose", "--model", "resnet18", "--data-dir", str(tmp_path / "empty"),
                 "--device", "cpu", "--outputs", str(tmp_path / "out"), "--no-report"])
    err = capsys.readouterr().err
    assert code == 2 and "data_dir: " in err and "holds no image file" in err, err
    assert not (tmp_path / "out").exists()
    (tmp_path / "empty" / "class" / "a.JPEG").write_bytes(b"")
    diagnose_data.check_data_dir(tmp_path / "empty")  # one image is enough to plan


def test_diagnose_refuses_a_worker_count_typo(capsys):
    with pytest.raises(InputError, match=rf"num_workers: bad value 10000: .*{node_limits.MAX_WORKERS}"):
        diagnose_plan.request_from({"num_workers": 10000, "device": "cpu"})


# -- YAML ---------------------------------------------------------------------------------------

def test_deeply_nested_yaml_is_bad_input_not_a_crash(tmp_path, capsys):
    deep = "[" * 3000 + "]" * 3000
    path = _write(tmp_path, BASE + f"grid: {{cluster: [{deep}]}}\n")
    assert main(["sweep", str(path), "--outputs", str(tmp_path / "out"), "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert "nested deeper than" in err and "unexpected" not in err, err
    from benchlib.analysis.references import load_references

    refs = _write(tmp_path, f"references: {deep}\n", "refs.yaml")
    with pytest.raises(InputError, match="nested deeper than"):
        load_references(refs)


def test_merge_keys_are_bounded_by_benchlib_not_by_the_pyyaml_version(monkeypatch):
    """A merge-key bomb under the alias limit: PyYAML before 6.0.4 copies every merged pair
    at every level (2**45 here). benchlib merges on its own, deduplicated and counted, so it
    never calls PyYAML's flatten_mapping."""
    import yaml.constructor

    pyyaml_merge = yaml.constructor.SafeConstructor.flatten_mapping
    calls = []

    def counted(self, node):
        calls.append(1)
        return pyyaml_merge(self, node)

    monkeypatch.setattr(yaml.constructor.SafeConstructor, "flatten_mapping", counted)
    lines = ["m0: &m0 {a: 1, b: 2}"]
    lines += [f"m{i}: &m{i} {{<<: [*m{i - 1}, *m{i - 1}], k{i}: {i}}}" for i in range(1, 46)]
    data = parse_yaml("\n".join(lines) + "\n")
    assert data["m45"]["a"] == 1 and len(data["m45"]) == 47
    assert parse_yaml("c: &c {a: 1}\nu: {<<: *c, b: 2}\n")["u"] == {"a": 1, "b": 2}
    assert parse_yaml("c: &c {a: 1}\nd: &d {a: 3}\nu: {<<: [*c, *d], a: 2}\n")["u"] == {"a": 2}
    assert parse_yaml("c: &c {a: 1}\nd: &d {a: 3, b: 4}\nu: {<<: [*c, *d]}\n")["u"] == \
        {"a": 1, "b": 4}
    assert not calls, "PyYAML's own merge ran"


def test_pyyaml_is_pinned_to_what_is_tested():
    import tomllib
    from packaging.requirements import Requirement

    from .conftest import ROOT

    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    pyyaml = next(Requirement(d) for d in deps if d.lower().startswith("pyyaml"))
    assert not pyyaml.specifier.contains("6.0.3") and pyyaml.specifier.contains("6.0.4")
    assert not pyyaml.specifier.contains("7.0")


@pytest.mark.parametrize(("value", "where"), [("[016, 032, 064]", "grid.batch_size[0]"),
                                             ("[1:30]", "grid.batch_size[0]")])
def test_yaml_1_1_integers_are_refused_naming_the_field(tmp_path, value, where):
    err = _refused(tmp_path, BASE + f"grid: {{batch_size: {value}}}\n")
    assert where in err and value.strip("[]").split(",")[0] in err, err


def test_plain_and_quoted_numbers_still_read():
    assert parse_yaml("a: [0, 16, -3, 0x10, 1_000, '016']\n") == {"a": [0, 16, -3, 16, 1000, "016"]}


def test_a_notebook_listed_twice_is_refused(tmp_path):
    text = BASE.replace("notebook: train",
                        "notebook: [{train: {batch_size: 8}}, {train: {batch_size: 16}}]")
    err = _refused(tmp_path, text)
    assert "notebook:" in err and "'train' is listed 2 times" in err, err


def test_one_folder_spelled_two_ways_is_refused(tmp_path, image_dir):
    link = tmp_path / "imgs"
    link.symlink_to(image_dir)
    text = BASE.replace("device: cpu", "device: cpu, dataset: real") + \
        "grid: {data_dir: [imgs, ./imgs]}\n"
    err = _refused(tmp_path, text)
    assert "grid.data_dir: 'imgs' and './imgs' are the same path" in err, err


# -- benchlib data ------------------------------------------------------------------------------

@pytest.mark.parametrize(("args", "expected"), [
    (["--classes", "0"], "--classes 0"), (["--images", "-3"], "--images -3"),
    (["--size", "4"], "--size 4"), (["--size", "100000"], "--size 100000"),
])
def test_imagefolder_sizes_out_of_range_are_bad_input(tmp_path, capsys, args, expected):
    assert main(["data", "imagefolder", str(tmp_path / "imgs"), *args]) == 2
    err = capsys.readouterr().err
    assert expected in err and "unexpected" not in err, err
    assert not (tmp_path / "imgs").exists()


def test_a_volume_larger_than_the_disk_is_bad_input(tmp_path, capsys):
    code = main(["data", "volume", str(tmp_path / "v.h5"), "--shape", "100000", "100000",
                 "100000", "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and "--shape 100000 100000 100000" in err and "free" in err, err
    assert not (tmp_path / "v.h5").exists()


# -- every bounded field, from the schemas themselves (Hypothesis) -----------------------------

def _constraints(annotation: object, metadata: list) -> tuple[list, bool, bool]:
    """(annotated_types bounds, whether the field takes floats, whether a list of them) of a
    field: its own metadata, or an ``Annotated`` member of a union or of a list."""
    import types
    import typing

    import annotated_types

    found = [m for m in metadata if isinstance(m, (annotated_types.Gt, annotated_types.Ge,
                                                   annotated_types.Lt, annotated_types.Le))]
    if found:
        return found, annotation is float or float in typing.get_args(annotation), False
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        inner, *extra = typing.get_args(annotation)
        more = [getattr(m, "metadata", [m]) for m in extra]
        bounds, is_float, _ = _constraints(inner, [c for group in more for c in group])
        return bounds, is_float or inner is float, False
    if origin is list:
        bounds, is_float, _ = _constraints(typing.get_args(annotation)[0], [])
        return bounds, is_float, True
    if origin in (typing.Union, types.UnionType):
        for member in typing.get_args(annotation):
            bounds, is_float, in_list = _constraints(member, [])
            if bounds:
                return bounds, is_float, in_list
    return [], False, False


def _bounded(model) -> dict[str, tuple[list, bool, bool]]:
    """Field name -> its bounds, for every field of ``model`` that has one."""
    found = {}
    for name, info in model.model_fields.items():
        bounds, is_float, in_list = _constraints(info.annotation, info.metadata)
        if bounds:
            found[name] = (bounds, is_float, in_list)
    return found


def _outside(bounds: list, is_float: bool, in_list: bool):
    """A strategy of values outside ``bounds`` (below a lower or above an upper one)."""
    import annotated_types
    from hypothesis import strategies as st

    options = []
    for bound in bounds:
        if isinstance(bound, (annotated_types.Gt, annotated_types.Ge)):
            limit = bound.gt if isinstance(bound, annotated_types.Gt) else bound.ge
            if is_float:
                options.append(st.floats(max_value=limit, exclude_max=isinstance(
                    bound, annotated_types.Ge), min_value=limit - 1e12, allow_nan=False))
            else:
                top = limit if isinstance(bound, annotated_types.Gt) else limit - 1
                options.append(st.integers(min_value=top - 2 ** 70, max_value=top))
        else:
            limit = bound.lt if isinstance(bound, annotated_types.Lt) else bound.le
            if is_float:
                options.append(st.floats(min_value=limit, exclude_min=isinstance(
                    bound, annotated_types.Le), max_value=limit + 1e12, allow_nan=False))
            else:
                low = limit if isinstance(bound, annotated_types.Lt) else limit + 1
                options.append(st.integers(min_value=low, max_value=low + 2 ** 70))
    values = st.one_of(*options)
    return values.map(lambda v: [v]) if in_list else values


def _params_cases() -> list[tuple[str, str, tuple]]:
    """(where the field goes, its name, its bounds) for the params schema: the file's own
    fields, each executor kind's, and each benchmark notebook's config (each field once)."""
    from benchlib.inputs.executors import SETTINGS
    from benchlib.inputs.params import SweepFile, notebook_parameters
    from benchlib.registry import notebook_configs

    cases = [("file", name, spec) for name, spec in _bounded(SweepFile).items()]
    cases += [(f"executor:{kind}", name, spec) for kind, model in SETTINGS.items()
              for name, spec in _bounded(model).items()]
    seen = set()
    for notebook, (config, fixed) in sorted(notebook_configs().items()):
        takes = notebook_parameters(notebook)
        for name, spec in _bounded(config).items():
            if name in takes and name not in fixed and (name, repr(spec)) not in seen:
                seen.add((name, repr(spec)))
                cases.append((f"notebook:{notebook}", name, spec))
    return cases


PARAMS_CASES = _params_cases()


def _params_text(place: str, name: str, value: object) -> tuple[str, str]:
    """A params file (JSON is YAML) with ``name: value`` at ``place``, and the field's name as
    the error must give it."""
    import json

    params: dict = {"campaign": "bounds", "notebook": "train"}
    if place == "file":
        params[name] = value
        where = name
    elif place.startswith("executor:"):
        params["executor"] = {"kind": place.split(":")[1], name: value}
        where = f"executor.{name}"
    else:
        params["notebook"] = place.split(":")[1]
        params["base"] = {name: value}
        where = f"base.{name}"
    return json.dumps(params), where


def test_the_schemas_have_the_bounds_this_change_added():
    names = {name for _, name, _ in PARAMS_CASES}
    assert {"num_workers", "seed", "decode_workers", "repeats", "batch_size"} <= names, names
    assert {"matmul_size", "read_max_bytes", "probe_time_s"} <= names, names  # the node probe


@pytest.mark.parametrize(("place", "name", "spec"), PARAMS_CASES,
                         ids=[f"{place}.{name}" for place, name, _ in PARAMS_CASES])
def test_every_bounded_params_field_refuses_out_of_range_values(tmp_path_factory, place, name,
                                                                spec):
    from hypothesis import HealthCheck, given, settings

    folder = tmp_path_factory.mktemp("bounds")

    @settings(max_examples=examples(3), deadline=None, database=None,
              suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(_outside(*spec))
    def refused(value):
        text, where = _params_text(place, name, value)
        with pytest.raises(ConfigError) as info:
            load_sweep(_write(folder, text), base_dir=folder)
        assert f"{where}: bad value" in str(info.value) or \
            f"{where}.0: bad value" in str(info.value), str(info.value)
        assert not (folder / "outputs").exists()

    refused()


def test_every_bounded_reference_field_refuses_out_of_range_values():
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from benchlib.analysis.reference_file import Reference, parse_references

    cases = list(_bounded(Reference).items())
    assert {name for name, _ in cases} >= {"value", "lower", "upper"}

    @settings(max_examples=examples(30), deadline=None, database=None)
    @given(st.sampled_from(cases).flatmap(
        lambda case: st.tuples(st.just(case[0]), _outside(*case[1]))))
    def refused(case):
        name, value = case
        entry = {"match": {"benchmark": "train"}, "metric": "throughput", "value": 1.0,
                 "source": "test", name: value}
        with pytest.raises(InputError) as info:
            parse_references({"references": [entry]}, "refs.yaml")
        assert f"references.0.{name}: bad value" in str(info.value), str(info.value)

    refused()


def test_benchlib_sweep_dry_run_exits_2_for_an_out_of_range_field(tmp_path):
    from .walk import benchlib

    _write(tmp_path, BASE.replace("num_workers: 0", "num_workers: 257") +
           "grid: {seed: [0, -1]}\n")
    done = benchlib(tmp_path, "sweep", "params.yaml", "--dry-run")
    assert done.returncode == 2, done.stderr
    assert "base.num_workers: bad value 257" in done.stderr and \
        "grid.seed: bad value -1" in done.stderr, done.stderr
    assert not (tmp_path / "outputs").exists() and "unexpected" not in done.stderr


def test_a_volume_plane_larger_than_the_memory_is_bad_input(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(node_limits, "host_memory", lambda: 1 << 20)
    code = main(["data", "volume", str(tmp_path / "v.h5"), "--shape", "1", "1000", "1000",
                 "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and "--shape 1 1000 1000: one 1000 x 1000 plane" in err and "memory" in err
    assert not (tmp_path / "v.h5").exists()


def test_the_size_names_of_the_config_are_the_shapes_it_estimates():
    import typing

    from benchlib.kinds.language_model import model as transformer
    from benchlib.kinds.language_model import model_shapes as lm_shapes
    from benchlib.kinds.language_model.config import LanguageModelSize

    assert set(typing.get_args(LanguageModelSize)) == {*lm_shapes.SIZES, "custom"}
    assert transformer.SIZES is lm_shapes.SIZES  # one table, built and estimated alike


def test_a_negative_zero_padded_number_is_told_its_sign():
    with pytest.raises(InputError, match="write -16, or quote it"):
        parse_yaml("a: -016\n")
