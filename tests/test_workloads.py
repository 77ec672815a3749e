import pytest
import torch

from benchlib.kinds.classification import workload as classification
from benchlib.kinds.classification.config import ClassificationConfig
from benchlib.kinds.classification.workload import build_model, classification_loss


def _run(**kwargs):
    return classification.run(ClassificationConfig(**kwargs))


def test_train_counts_iterations_samples_and_phases(tiny):
    result = _run(benchmark="train", **tiny)
    assert (result.iterations, result.warmup, result.samples) == (3, 1, 12)
    assert list(result.per_iteration.columns) == [
        "iteration", "data", "h2d", "forward", "backward", "optimizer"]
    assert result.throughput == pytest.approx(12 / result.wall_time_s)
    samples = result.per_iteration  # per iteration, the phases add up to the iteration
    phase_sum = samples.drop(columns="iteration").sum(axis=1)
    assert phase_sum.to_numpy() == pytest.approx(samples["iteration"].to_numpy(), rel=0.02)
    assert set(result.breakdown().index) == set(samples.columns)
    assert result.extras["final_loss"] > 0
    assert result.peak_memory_bytes > 0


def test_training_learns_a_fixed_batch(tiny):
    tiny.update(iterations=15, warmup=0)
    result = _run(benchmark="train", **tiny)
    first = _run(benchmark="train", **{**tiny, "iterations": 1})
    assert result.extras["final_loss"] < first.extras["final_loss"]


def test_inference_has_no_backward(tiny):
    result = _run(benchmark="inference", **tiny)
    assert list(result.per_iteration.columns) == ["iteration", "data", "h2d", "forward"]
    assert result.samples == 12


def test_smooth_inference_counts_input_images_and_makes_noisy_copies(tiny):
    result = _run(benchmark="smooth_inference", noise_samples=10, **tiny)
    assert list(result.per_iteration.columns) == [
        "iteration", "data", "h2d", "preprocess", "forward"]
    assert result.samples == 3  # one input image per iteration
    assert 0 < result.extras["top_class_share_median"] <= 1


def test_smooth_inference_votes_stay_on_the_device(tiny, monkeypatch):
    """The votes are counted with index_add_ (bincount on CUDA reads back to the host: a sync
    per chunk in the timed loop); every noisy copy is counted once."""
    def no_bincount(*args, **kwargs):
        raise AssertionError("torch.bincount in the timed loop")

    monkeypatch.setattr(torch, "bincount", no_bincount)
    result = _run(benchmark="smooth_inference", noise_samples=10, **tiny)
    assert 0.1 <= result.extras["top_class_share_median"] <= 1  # a share of 10 votes


def test_normalize_makes_its_constants_once_per_device(monkeypatch):
    """ImageNet's mean and std are made once per device, not per batch (a blocking copy each
    time on a GPU)."""
    from benchlib.data import imagefolder

    images = torch.randint(0, 255, (2, 3, 4, 4), dtype=torch.uint8)
    first = imagefolder.normalize(images)
    made = []
    real = torch.tensor
    monkeypatch.setattr(torch, "tensor", lambda *a, **k: made.append(a) or real(*a, **k))
    again = imagefolder.normalize(images)
    assert made == [] and torch.equal(first, again)
    mean = torch.tensor(imagefolder.IMAGENET_MEAN).view(1, 3, 1, 1)
    std = torch.tensor(imagefolder.IMAGENET_STD).view(1, 3, 1, 1)
    assert torch.allclose(again, (images.float() / 255 - mean) / std)


def test_real_data_cycles_epochs_for_a_fixed_count(tiny, image_dir):
    tiny.update(iterations=6, batch_size=4)  # 18 images: 5 batches per epoch
    result = _run(benchmark="train", dataset="real", data_dir=str(image_dir), **tiny)
    assert result.iterations == 6
    assert result.per_iteration["data"].notna().all()
    # uint8 images are normalised on the device: a preprocess phase between h2d and forward
    assert list(result.per_iteration.columns) == [
        "iteration", "data", "h2d", "preprocess", "forward", "backward", "optimizer"]


def test_one_epoch_of_real_data(tiny, image_dir):
    tiny.update(iterations="epoch", batch_size=4, warmup=1)
    result = _run(benchmark="inference", dataset="real", data_dir=str(image_dir), **tiny)
    assert result.iterations == 3  # 4 whole batches (2 images left out), 1 of them warm-up
    assert result.samples == 16 - 4
    assert result.extras["images_dropped_per_epoch"] == 2


def test_synthetic_loader_with_worker_process(tiny):
    tiny.update(num_workers=1, dataset="synthetic", synthetic_kind="loader")
    result = _run(benchmark="train", **tiny)
    assert result.samples == 12


@pytest.mark.parametrize("precision", ["tf32", "amp_bf16"])
def test_precisions_and_channels_last_run(tiny, precision):
    result = _run(benchmark="train", precision=precision, channels_last=True, **tiny)
    assert result.iterations == 3


@pytest.mark.slow  # the edit loop's slowest (make test runs it)
def test_inception_v3_trains_with_aux_logits(tiny):
    tiny.update(model="inception_v3", image_size=None, batch_size=2, iterations=1, warmup=0)
    model = build_model(ClassificationConfig(**tiny)).train()
    outputs = model(torch.randn(2, 3, 299, 299))
    assert outputs.aux_logits is not None
    labels = torch.tensor([1, 2])
    main_only = torch.nn.functional.cross_entropy(outputs.logits, labels)
    assert classification_loss(outputs, labels) > main_only
    assert _run(benchmark="train", **tiny).iterations == 1


def test_cuda_requested_without_a_gpu_fails_clearly(tiny):
    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    tiny["device"] = "cuda"
    with pytest.raises(RuntimeError, match="no CUDA device"):
        _run(**tiny)


def test_too_much_warmup_for_the_data_is_an_error(tiny, image_dir):
    tiny.update(iterations="epoch", warmup=10)
    with pytest.raises(RuntimeError, match="no timed iteration ran"):
        _run(benchmark="inference", dataset="real", data_dir=str(image_dir), **tiny)


@pytest.mark.gpu
@pytest.mark.parametrize("benchmark", ["train", "inference", "smooth_inference"])
def test_workloads_on_cuda(tiny, benchmark):
    tiny.update(device="cuda", precision="amp_bf16", channels_last=True)
    result = _run(benchmark=benchmark, **tiny)
    assert result.device.type == "cuda" and result.peak_memory_bytes > 0


def test_tf32_is_set_through_one_api(recwarn):
    """TF32 goes through ``fp32_precision`` where torch has it (the legacy ``allow_tf32`` flags
    mixed with it warn, and error under Inductor), and the probe's setting is restored."""
    from benchlib.workloads import runtime

    runtime.configure_precision("tf32", torch.device("cpu"))
    assert runtime.tf32_matmul()
    with runtime.tf32_for_matmul(False):
        assert not runtime.tf32_matmul()
    assert runtime.tf32_matmul()
    runtime.configure_precision("fp32", torch.device("cpu"))
    assert not runtime.tf32_matmul()
    if runtime.NEW_TF32_API:
        assert torch.backends.cuda.matmul.fp32_precision == "ieee"
        assert torch.backends.cudnn.conv.fp32_precision == "ieee"
    assert not [w for w in recwarn if "TF32" in str(w.message) or "tf32" in str(w.message)]
