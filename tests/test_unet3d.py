"""3D U-Net: shapes, volumes, targets, training, and blockwise prediction that stitches exactly."""

import math
from pathlib import Path

import numpy as np
import pytest
import torch

from benchlib.analysis import lab_units
from benchlib.cli import main
from benchlib.errors import ShapeError, VolumeError
from benchlib.inputs.config import describe_validation_error
from benchlib.kinds.record import make_record
from benchlib.kinds.unet3d import workload as unet3d
from benchlib.kinds.unet3d import workload_blockwise as blockwise
from benchlib.kinds.unet3d.config import UNet3DPredictConfig, UNet3DTrainConfig
from benchlib.kinds.unet3d.data import (
    LABEL_KEY,
    RAW_KEY,
    array_keys,
    check_volume,
    create_dataset,
    open_volume,
    read_padded,
)
from benchlib.kinds.unet3d.data_patches import affinities, augment, boundaries
from benchlib.kinds.unet3d.data_writer import write_em_volume
from benchlib.kinds.unet3d.model import UNet3D
from benchlib.kinds.unet3d.model_geometry import UNetGeometry

#: A network small enough for CPU tests: 2 levels, pooling (1, 2, 2), 4 -> 8 -> 16 features.
TINY_NET = {"depth": 2, "pooling": [1, 2, 2], "base_features": 4, "growth": 2, "device": "cpu",
            "num_workers": 1}
VOLUME_SHAPE = (23, 52, 52)  # not a multiple of the blocks below: edge blocks are partial


@pytest.fixture(scope="module")
def volume(tmp_path_factory):
    path = tmp_path_factory.mktemp("em") / "em.h5"
    write_em_volume(path, VOLUME_SHAPE, cell=(4, 12, 12), chunks=(4, 16, 16), progress=False)
    return path


def test_geometry_of_the_reference_network():
    geometry = UNetGeometry(((1, 3, 3), (1, 3, 3), (3, 3, 3)))
    assert geometry.output_shape((84, 268, 268)) == (48, 56, 56)
    assert geometry.downsampling == (3, 27, 27)
    assert geometry.valid_halo == (18, 106, 106)
    with pytest.raises(ShapeError, match=r"along y: 260 is not a valid input size; nearest that "
                                         r"fit: 241, 268, 295"):
        geometry.output_shape((84, 260, 268))
    same = UNetGeometry(((1, 2, 2), (1, 2, 2)), "same")
    assert same.output_shape((5, 16, 24)) == (5, 16, 24)
    with pytest.raises(ShapeError, match="along x"):
        same.output_shape((5, 16, 18))


@pytest.mark.parametrize("padding", ["valid", "same"])
def test_model_output_matches_its_geometry(padding):
    model = UNet3D(1, 3, 2, 2, ((1, 2, 2), (2, 2, 2)), padding, "group")
    shape = (26, 44, 44) if padding == "valid" else (8, 16, 24)
    out = model(torch.rand(1, 1, *shape))
    assert tuple(out.shape) == (1, 3, *model.geometry.output_shape(shape))


@pytest.mark.parametrize("suffix", [".h5", ".zarr"])
def test_em_volume_looks_like_cells_with_membranes(tmp_path, suffix):
    path = tmp_path / f"v{suffix}"
    write_em_volume(path, (8, 48, 48), cell=(4, 16, 16), chunks=(4, 16, 16), progress=False)
    assert array_keys(path) == [LABEL_KEY, RAW_KEY]
    with open_volume(path, RAW_KEY) as raw, open_volume(path, LABEL_KEY) as labels:
        raw, labels = raw[:], labels[:]
    assert raw.dtype == np.uint8 and labels.shape == (8, 48, 48)
    assert len(np.unique(labels)) >= 10  # many cells, not one uniform region
    edges = boundaries(labels)[0].astype(bool)
    assert raw[edges].mean() < raw[~edges].mean() - 40  # dark membranes between bright cells


def test_em_volume_does_not_depend_on_the_number_of_workers(tmp_path):
    volumes = []
    for workers in (1, 2):
        path = tmp_path / f"w{workers}.h5"
        write_em_volume(path, (12, 32, 32), chunks=(4, 32, 32), progress=False, workers=workers)
        with open_volume(path, RAW_KEY) as raw:
            volumes.append(raw[:])
    np.testing.assert_array_equal(*volumes)


def test_volume_errors_name_what_exists(volume, tmp_path):
    with pytest.raises(VolumeError, match="does not exist"):
        check_volume(tmp_path / "missing.h5", RAW_KEY)
    with pytest.raises(VolumeError, match=r"no dataset 'volumes/x'; datasets there: "
                                          r"volumes/labels/neuron_ids, volumes/raw"):
        check_volume(volume, "volumes/x")
    with pytest.raises(VolumeError, match=r"unknown suffix '.tif'; allowed: .h5"):
        check_volume(tmp_path / "v.tif", RAW_KEY)


def test_read_padded_is_zero_outside_the_volume():
    array = np.arange(2 * 3 * 4).reshape(2, 3, 4) + 1
    block = read_padded(array, (-1, 1, 2), (3, 3, 3))
    assert block.shape == (3, 3, 3)
    assert (block[0] == 0).all() and (block[:, 2] == 0).all() and (block[:, :, 2] == 0).all()
    np.testing.assert_array_equal(block[1:, :2, :2], array[:, 1:3, 2:4])


def test_affinities_and_boundaries_by_hand():
    labels = np.ones((1, 2, 3), dtype=np.uint64)
    labels[0, :, 2] = 2
    aff = affinities(labels)
    assert aff.shape == (3, 1, 2, 3)
    np.testing.assert_array_equal(aff[2, 0], [[1, 1, 0], [1, 1, 0]])  # x: 2 differs from 1
    assert aff[0].all() and aff[1].all()
    np.testing.assert_array_equal(boundaries(labels)[0, 0], [[0, 1, 1], [0, 1, 1]])


def test_augmentation_keeps_raw_and_labels_aligned():
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 5, (4, 6, 6))
    raw = np.pad(labels, 2) * 10  # raw patch with a 2-voxel halo around the label crop
    for _ in range(10):
        a_raw, a_labels = augment(raw, labels, rng)
        np.testing.assert_array_equal(a_raw[2:-2, 2:-2, 2:-2], a_labels * 10)


def test_block_plan_tiles_the_volume_exactly_once():
    shape, block = (7, 10, 9), (3, 4, 4)
    seen = np.zeros(shape, dtype=int)
    for start in blockwise.block_plan(shape, block):
        seen[tuple(slice(s, s + b) for s, b in zip(start, block, strict=True))] += 1
    assert (seen == 1).all()


def _predict_config(volume, tmp_path, **extra) -> UNet3DPredictConfig:
    values = {"volume": str(volume), "block_shape": [10, 20, 20], "batch_size": 2,
              "output": str(tmp_path / "pred.h5"), "output_dtype": "float32", **TINY_NET}
    return UNet3DPredictConfig(**{**values, **extra})


def test_prediction_writes_every_voxel_exactly_once(volume, tmp_path, monkeypatch):
    config = _predict_config(volume, tmp_path)
    writes = np.zeros(VOLUME_SHAPE, dtype=int)
    real_write = blockwise.write_block

    def counting(array, start, block):
        written = real_write(array, start, block)
        extent = [min(b, n - s) for b, n, s in zip(block.shape[1:], VOLUME_SHAPE, start,
                                                   strict=True)]
        writes[tuple(slice(s, s + e) for s, e in zip(start, extent, strict=True))] += 1
        return written

    monkeypatch.setattr(blockwise, "write_block", counting)
    result = unet3d.predict(config)
    assert (writes == 1).all()
    with open_volume(config.output, config.output_key) as out:
        out = out[:]
    assert out.shape == (3, *VOLUME_SHAPE)
    assert not np.isnan(out).any()  # the output starts poisoned with NaN: nothing was left out
    assert result.samples == result.extras["voxels_written"] == math.prod(VOLUME_SHAPE)
    assert result.extras["blocks"] == 3 * 3 * 3 and result.iterations == 14  # batches of 2
    phases = set(result.per_iteration.columns)
    assert {"read", "h2d", "forward", "d2h", "write"} <= phases


@pytest.mark.parametrize("output", ["pred.h5", "pred.zarr"])
def test_blockwise_prediction_equals_one_whole_volume_forward_pass(volume, tmp_path, output):
    config = _predict_config(volume, tmp_path, output=str(tmp_path / output))
    unet3d.predict(config)
    with open_volume(config.output, config.output_key) as out:
        stitched = out[:]
    torch.manual_seed(config.seed)
    model = unet3d.build_model(config).eval()
    halo = config.resolved_halo
    with open_volume(volume, RAW_KEY) as raw:
        padded = np.pad(raw[:], [(h, h) for h in halo])  # zero context, as the blocks read
    with torch.no_grad():
        whole = torch.sigmoid(model(torch.from_numpy(padded)[None, None].float() / 255))[0]
    assert whole.shape[1:] == VOLUME_SHAPE
    np.testing.assert_allclose(stitched, whole.numpy(), rtol=0, atol=1e-5)


def test_predict_iterations_and_uint8_output(volume, tmp_path):
    config = _predict_config(volume, tmp_path, output_dtype="uint8", iterations=2, batch_size=1)
    result = unet3d.predict(config)
    assert result.iterations == 2 and result.extras["blocks"] == 2
    with open_volume(config.output, config.output_key) as out:
        assert out.dtype == np.uint8 and out[:, :10, :20, :40].any()


def test_plain_forward_runs_the_same_blocks_without_io(volume, tmp_path):
    config = _predict_config(volume, tmp_path, warmup=1)
    result = unet3d.plain_forward(config, blocks=4)
    assert result.iterations == 2 and result.extras["blocks"] == 4
    assert result.samples == 4 * 10 * 20 * 20


@pytest.mark.parametrize("dataset", ["real", "synthetic"])
def test_training_counts_iterations_voxels_and_phases(volume, dataset):
    config = UNet3DTrainConfig(volume=str(volume), dataset=dataset, patch_shape=[21, 48, 48],
                               iterations=3, warmup=1, batch_size=2, **TINY_NET)
    assert config.output_shape == (1, 8, 8)
    result = unet3d.train(config)
    assert result.iterations == 3 and result.samples == 3 * 2 * 8 * 8
    assert result.unit == "voxels/s" and result.extras["final_loss"] > 0
    timings = result.per_iteration
    phases = ["data", "h2d", "forward", "backward", "optimizer"]
    np.testing.assert_allclose(timings[phases].sum(axis=1), timings["iteration"], rtol=0.02)
    record = make_record(config, result, {})
    assert (record["benchmark"], record["model"], record["patch_shape"]) == (
        "unet3d_train", "unet3d", "21x48x48")
    units = lab_units.lab_units(record)
    assert units["days_to_100k"] == pytest.approx(1e5 * record["time_iteration_s"] / 86400)


def test_predict_record_and_lab_units(volume, tmp_path):
    config = _predict_config(volume, tmp_path)
    record = make_record(config, unet3d.predict(config), {})
    assert (record["block_shape"], record["halo"], record["dataset"]) == ("10x20x20", "10x20x20",
                                                                          "real")
    units = lab_units.lab_units(record)
    assert units["hours_per_teravoxel"] == pytest.approx(1e12 / record["throughput"] / 3600)
    summary = unet3d.network_summary(config)
    assert summary["input_block"] == "30x60x60" and summary["compute_efficiency"] == 1.0


def _errors(config_class, **values) -> list[str]:
    with pytest.raises(ValueError) as info:
        config_class(**values)
    return describe_validation_error(info.value, fields=config_class.model_fields)


def test_bad_input_is_named_before_any_work(volume, tmp_path):
    predict = {"volume": str(volume), **TINY_NET}
    assert _errors(UNet3DPredictConfig, **{**predict, "volume": str(tmp_path / "no.h5")})[0] \
        .startswith("volume: volume ") and "does not exist" in \
        _errors(UNet3DPredictConfig, **{**predict, "volume": str(tmp_path / "no.h5")})[0]
    assert _errors(UNet3DPredictConfig, **predict, raw_key="raw")[0].startswith(
        "raw_key: volume ")
    assert _errors(UNet3DTrainConfig, **{**predict, "dataset": "real"}, label_key="x")[0] \
        .startswith("label_key: ")
    small = _errors(UNet3DPredictConfig, **predict, block_shape=[4, 8, 8])
    assert small == ["block_shape: block_shape [4, 8, 8] is smaller than the halo [10, 20, 20] "
                     "along an axis: each pass would read more context than it writes"]
    grid = _errors(UNet3DPredictConfig, **predict, block_shape=[10, 22, 20])
    assert "not a multiple of the network's downsampling [1, 4, 4]" in grid[0]
    patch = _errors(UNet3DTrainConfig, **TINY_NET, patch_shape=[21, 35, 36])
    assert patch[0].startswith("patch_shape: patch_shape [21, 35, 36] does not fit the "
                               "network's downsampling [1, 4, 4] (valid convolutions) along y")


def test_cli_writes_a_volume_and_rejects_a_bad_suffix(tmp_path, capsys):
    assert main(["data", "volume", str(tmp_path / "v.zarr"), "--shape", "4", "16", "16",
                 "--quiet"]) == 0
    assert check_volume(tmp_path / "v.zarr", RAW_KEY) == (4, 16, 16)
    assert main(["data", "volume", str(tmp_path / "v.tif"), "--shape", "4", "16", "16"]) == 2
    assert "allowed: .h5, .hdf, .hdf5, .zarr" in capsys.readouterr().err
    assert not (tmp_path / "v.tif").exists()


def test_create_dataset_replaces_an_existing_one(tmp_path):
    path = tmp_path / "o.h5"
    for fill in (1.0, 2.0):
        with create_dataset(path, "a/b", (2, 3, 3), (2, 3, 3), np.float32, fill_value=fill) as a:
            a[0, 0, 0] = 0
    with open_volume(path, "a/b") as array:
        assert array[1, 1, 1] == 2.0


UNET_SWEEP = {
    "campaign": "unet", "notebook": ["unet3d_train", {"unet3d_predict": {"iterations": "epoch"}}],
    "base": {**TINY_NET, "volume": "em.h5", "patch_shape": [21, 48, 48],
             "block_shape": [15, 20, 20], "iterations": 2, "warmup": 1},
    "grid": {"dataset": ["real"], "batch_size": [2]},
}


def _sweep_file(tmp_path: Path, spec: dict) -> Path:
    import yaml

    path = tmp_path / "unet.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def test_sweep_gives_each_unet_notebook_its_parameters(tmp_path, monkeypatch):
    from benchlib.inputs.params import load_sweep

    write_em_volume(tmp_path / "em.h5", (30, 60, 60), progress=False)
    monkeypatch.chdir(tmp_path)  # the volume path is relative to where the sweep starts
    sweep = load_sweep(_sweep_file(tmp_path, UNET_SWEEP))
    train, predict = sweep.points
    assert (train.notebook, train.parameters["iterations"]) == ("unet3d_train", 2)
    assert (predict.notebook, predict.parameters["iterations"]) == ("unet3d_predict", "epoch")
    assert "dataset" not in predict.parameters and "patch_shape" not in predict.parameters


@pytest.mark.parametrize(("change", "expected"), [
    ({"notebook": ["unet3d_train", {"unet3d_predict": {"patch_shape": [1, 2, 3]}}]},
     "notebook.unet3d_predict.patch_shape: unknown parameter of unet3d_predict"),
    ({"notebook": ["unet3d_train", {"unet3d_predict": {"iterations": 0}}]},
     "notebook.unet3d_predict.iterations: bad value 0"),
    ({"base": {**UNET_SWEEP["base"], "volume": "missing.h5"}}, "base.volume: volume '"),
    ({"base": {**UNET_SWEEP["base"], "block_shape": [6, 8, 8]}},
     "base.block_shape: block_shape [6, 8, 8] is smaller than the halo [10, 20, 20]"),
])
def test_bad_unet_sweeps_stop_before_anything_runs(tmp_path, monkeypatch, capsys, change,
                                                   expected):
    write_em_volume(tmp_path / "em.h5", (30, 60, 60), progress=False)
    monkeypatch.chdir(tmp_path)
    path = _sweep_file(tmp_path, {**UNET_SWEEP, **change})
    assert main(["sweep", str(path), "--outputs", str(tmp_path / "out")]) == 2
    assert expected in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_unet_sweep_runs_both_notebooks_through_papermill(tmp_path, monkeypatch):
    from benchlib.records.results import load

    write_em_volume(tmp_path / "em.h5", (30, 60, 60), progress=False)
    monkeypatch.chdir(tmp_path)
    assert main(["sweep", str(_sweep_file(tmp_path, UNET_SWEEP)), "--outputs", "out", "--quiet",
                 "--strict"]) == 0
    frame = load(tmp_path / "out" / "unet").set_index("benchmark")
    train, predict = frame.loc["unet3d_train"], frame.loc["unet3d_predict"]
    assert (train["iterations"], train["samples"], train["unit"]) == (2, 2 * 2 * 8 * 8, "voxels/s")
    assert predict["samples"] == 30 * 60 * 60 and predict["result_blocks"] == 2 * 3 * 3
    assert predict["iterations"] == 9 and predict["status"] == "ok"
    assert predict["time_read_s"] >= 0 and predict["time_forward_s"] > 0


@pytest.mark.gpu
def test_blockwise_prediction_on_cuda_matches_the_cpu(volume, tmp_path):
    outputs = []
    for device in ("cpu", "cuda"):
        config = _predict_config(volume, tmp_path, device=device,
                                 output=str(tmp_path / f"{device}.h5"))
        result = unet3d.predict(config)
        assert result.samples == math.prod(VOLUME_SHAPE)
        with open_volume(config.output, config.output_key) as out:
            outputs.append(out[:])
    np.testing.assert_allclose(outputs[1], outputs[0], rtol=0, atol=1e-3)


def test_a_short_last_batch_of_blocks_is_padded_to_one_shape(volume, tmp_path, monkeypatch):
    """27 blocks in batches of 2: the last holds one block. Every forward (warm-up and timed)
    sees 2 blocks, the zero block's output is dropped, and the record counts it."""
    shapes = []
    real_predict = unet3d.PredictStep.predict

    def recording(self, raw):
        shapes.append(raw.shape[0])
        return real_predict(self, raw)

    monkeypatch.setattr(unet3d.PredictStep, "predict", recording)
    result = unet3d.predict(_predict_config(volume, tmp_path))
    assert set(shapes) == {2} and result.extras["padded_blocks"] == 1
    assert result.samples == math.prod(VOLUME_SHAPE)  # the padding is not counted


def test_the_headline_states_a_slow_run_in_readable_megavoxels():
    """A CPU run's few thousand voxels/s: ``0.00412 megavoxels/s``, never ``0.000``; the same
    figure the summary pages give (formatting.number)."""
    import pandas as pd
    import torch

    from benchlib import kinds
    from benchlib.workloads.result import RunResult

    result = RunResult(device=torch.device("cpu"), iterations=3, warmup=1, samples=412_000,
                       wall_time_s=100.0, unit="voxels/s",
                       per_iteration=pd.DataFrame({"iteration": [30.0, 33.0, 36.0]}),
                       extras={"voxels_written": 412_000, "blocks": 3})
    kind = kinds.kind_named("unet3d_predict")
    assert kind.headline(None, result).startswith("0.00412 megavoxels/s: 412,000 voxels in 3 blocks")
    trained = kinds.kind_named("unet3d_train").headline(
        None, RunResult(**{**result.__dict__, "extras": {}}))
    assert trained.startswith("1.8 iterations/minute (median iteration), 0.00412 megavoxels/s")
