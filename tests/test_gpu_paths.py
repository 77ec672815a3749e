"""The GPU paths: no synchronisation in the timed loops, fused optimizers, contiguous pinned
token batches, probes on the device's clock. What only CUDA shows is marked ``gpu`` (skipped
without one; ``make gpu-check`` runs them on a GPU node)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

from benchlib.kinds.classification import workload as classification
from benchlib.kinds.classification.config import ClassificationConfig
from benchlib.kinds.language_model import workload as language_model
from benchlib.kinds.language_model.config import LanguageModelConfig
from benchlib.kinds.language_model.data import file_batch
from benchlib.kinds.unet3d import workload as unet3d
from benchlib.kinds.unet3d.config import UNet3DPredictConfig, UNet3DTrainConfig
from benchlib.kinds.unet3d.data_writer import write_em_volume
from benchlib.measure import sync_watch
from benchlib.measure.sync_watch import SYNC_WARNING, SyncWatch
from benchlib.measure.timing import device_seconds
from benchlib.workloads import step

CUDA = torch.device("cuda")
CPU = torch.device("cpu")


@pytest.fixture
def modes(monkeypatch):
    """The sync debug modes SyncWatch sets, recorded (no CUDA needed)."""
    seen: list[str] = []
    monkeypatch.setattr(SyncWatch, "_mode", lambda self, mode: seen.append(mode))
    return seen


def test_the_watch_counts_synchronisations_in_the_loop_and_not_in_a_pause(modes):
    with warnings.catch_warnings(record=True) as outside:
        warnings.simplefilter("always")
        with SyncWatch(CUDA, enabled=True) as watch:
            warnings.warn(f"{SYNC_WARNING}", UserWarning, stacklevel=1)
            with watch.paused():
                pass  # a deliberate read: the mode is off, nothing would warn
            warnings.warn(f"{SYNC_WARNING}", UserWarning, stacklevel=1)
            warnings.warn("something else", UserWarning, stacklevel=1)
    assert watch.count == 2 and watch.examples and "test_gpu_paths.py" in watch.examples[0]
    assert modes == ["warn", "default", "warn", "default"]
    assert [str(w.message) for w in outside] == ["something else"]  # others still reach the user


def test_nothing_is_watched_on_a_cpu_or_when_not_asked(modes):
    for device, enabled in [(CPU, True), (CUDA, False)]:
        with SyncWatch(device, enabled) as watch, watch.paused():
            pass
        assert watch.count is None
    assert modes == []


def test_a_cpu_run_asked_to_watch_records_no_count(image_dir):
    config = ClassificationConfig(model="resnet18", image_size=32, num_classes=10, batch_size=4,
                                  iterations=2, warmup=1, num_workers=0, device="cpu",
                                  sync_debug=True)
    assert "syncs_in_timed_loop" not in classification.run(config).extras  # not measured


def test_optimizers_are_fused_on_cuda_only():
    assert step.fused(CUDA) is True and step.fused(CPU) is None


def test_token_file_batches_are_contiguous():
    tokens = np.arange(500, dtype=np.uint16)
    inputs, targets = file_batch(tokens, 4, 16, np.random.default_rng(0), vocab_size=1000)
    assert inputs.is_contiguous() and targets.is_contiguous()
    assert torch.equal(inputs[:, 1:], targets[:, :-1])


def test_device_seconds_on_a_cpu_times_the_calls():
    calls = []
    assert device_seconds(lambda: calls.append(1), CPU, calls=5) >= 0 and len(calls) == 5


def test_the_sync_warning_is_pytorchs_own_text():
    """The text SyncWatch counts is the one the installed PyTorch warns with."""
    from pathlib import Path

    lib = Path(torch.__file__).parent / "lib"
    found = [p for p in lib.glob("libc10_cuda*.so*") if SYNC_WARNING.encode() in p.read_bytes()]
    if not list(lib.glob("libc10_cuda*.so*")):
        pytest.skip("this torch build has no CUDA library")
    assert found, sync_watch.__doc__


# ------------------------------------------------------------------ on a GPU


def _syncs(result) -> int:
    return result.extras["syncs_in_timed_loop"]


@pytest.mark.gpu
@pytest.mark.parametrize("kind", ["train", "inference", "smooth_inference"])
@pytest.mark.parametrize("precision", ["fp32", "amp_fp16", "amp_bf16"])
def test_classification_loops_do_not_synchronise(kind, precision, image_dir):
    config = ClassificationConfig(benchmark=kind, model="resnet18", image_size=64,
                                  num_classes=10, batch_size=8, iterations=5, warmup=2,
                                  num_workers=2, dataset="real", data_dir=str(image_dir),
                                  precision=precision, channels_last=precision == "amp_bf16",
                                  device="cuda", sync_debug=True, noise_samples=16)
    assert _syncs(classification.run(config)) == 0


@pytest.mark.gpu
@pytest.mark.parametrize("kind", ["lm_train", "lm_inference"])
def test_language_model_loops_do_not_synchronise(kind, tmp_path):
    from benchlib.kinds.language_model.data import write_tokens

    tokens = write_tokens(tmp_path / "t.bin", 20_000, 500)
    config = LanguageModelConfig(benchmark=kind, size="tiny", sequence_length=64,
                                 batch_size=4, iterations=5, warmup=2, dataset="tokens",
                                 token_file=str(tokens), vocab_size=500,
                                 precision="amp_bf16", device="cuda", sync_debug=True)
    assert _syncs(language_model.run(config)) == 0


@pytest.mark.gpu
def test_unet_loops_do_not_synchronise(tmp_path):
    volume = tmp_path / "em.h5"
    write_em_volume(volume, (24, 96, 96), progress=False)
    net = {"depth": 2, "pooling": [1, 2, 2], "base_features": 4, "growth": 2, "device": "cuda",
           "sync_debug": True, "volume": str(volume)}
    trained = unet3d.train(UNet3DTrainConfig(dataset="real", patch_shape=[21, 48, 48],
                                             iterations=4, warmup=1, batch_size=2, **net))
    predicted = unet3d.predict(UNet3DPredictConfig(
        block_shape=[10, 20, 20], batch_size=2, output=str(tmp_path / "p.h5"), **net))
    assert _syncs(trained) == 0 and _syncs(predicted) == 0


@pytest.mark.gpu
def test_device_seconds_leaves_out_the_launch_gap():
    """A tiny kernel timed on the device's clock takes microseconds, not the host's launch and
    synchronisation overhead that host-clock timing adds to every call."""
    x = torch.ones(1024, device=CUDA)
    seconds = min(device_seconds(lambda: x.add_(1), CUDA) for _ in range(20))
    assert 0 < seconds < 20e-6
