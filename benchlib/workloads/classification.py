"""Train, inference and smooth-inference (randomized smoothing) benchmarks of torchvision models."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator

import torch
import torchvision
from torch import nn
from torch.utils.data import DataLoader, DistributedSampler

from benchlib.data.imagefolder import image_folder_loader, normalize
from benchlib.data.memory_folder import memory_folder_loader
from benchlib.data.synthetic import device_batches, loader_batches
from benchlib.inputs.config import ClassificationConfig
from benchlib.measure.timing import PhaseTimer
from benchlib.vocabulary import Precision
from benchlib.workloads import distributed
from benchlib.workloads.loop import (
    NoTimer,
    TimeBudget,
    backward_and_step,
    next_batch,
    timed_loop,
)
from benchlib.workloads.result import RunResult
from benchlib.workloads.runtime import (
    autocast,
    peak_memory_bytes,
    reset_peak_memory,
    setup_run,
)

#: Images a synthetic loader can give under ``iterations: auto`` (made on access, never stored).
AUTO_SAMPLES = 1 << 30
AUX_LOSS_WEIGHT = 0.4  #: weight of auxiliary classifier losses (inception_v3, googlenet)


def build_model(config: ClassificationConfig) -> nn.Module:
    """A randomly initialised torchvision classification model (aux logits kept where they exist)."""
    kwargs: dict[str, object] = {"weights": None, "num_classes": config.num_classes}
    if config.model in ("inception_v3", "googlenet"):
        kwargs.update(aux_logits=True, init_weights=False)
    return torchvision.models.get_model(config.model, **kwargs)


def batches(config: ClassificationConfig, device: torch.device) -> Iterable:
    """This rank's input batches: device tensors, a CPU tensor loader, or a JPEG folder loader.

    Under torchrun each rank gets its own share: a disjoint part of the image folder and
    its own random seed for synthetic data.
    """
    rank = distributed.current()
    batch = 1 if config.benchmark == "smooth_inference" else config.device_batch_size
    size = config.resolved_image_size
    pin = device.type == "cuda"
    epoch = config.iterations == "epoch"
    seed = rank.seed(config.seed)
    if config.dataset == "real":
        make = memory_folder_loader if config.data_source == "memory" else image_folder_loader
        loader = make(
            config.data_dir, size, batch, config.num_workers, train=config.benchmark == "train",
            pin_memory=pin, shard=rank, seed=config.seed,
        )
        return loader if epoch else _epochs(loader)
    if config.iterations == "auto":  # as many as the time budget takes
        if config.synthetic_kind == "loader":
            return loader_batches(batch, size, config.num_classes, AUTO_SAMPLES,
                                  config.num_workers, pin, seed=seed)
        return device_batches(batch, size, config.num_classes, device, count=None, seed=seed)
    total = config.warmup + (0 if epoch else config.iterations)
    length = len(rank.shard(range(config.synthetic_samples))) if epoch else total * batch
    if config.synthetic_kind == "loader":
        return loader_batches(batch, size, config.num_classes, length, config.num_workers, pin,
                              seed=seed)
    count = -(-length // batch)
    return device_batches(batch, size, config.num_classes, device, count=count, seed=seed)


def _epochs(loader: DataLoader) -> Iterator:
    """Pass over ``loader`` again and again (for a fixed iteration count), reshuffling a
    distributed sampler for each pass."""
    for epoch in itertools.count():
        if isinstance(loader.sampler, DistributedSampler):
            loader.sampler.set_epoch(epoch)
        yield from loader


def _to_device(images: torch.Tensor, labels: torch.Tensor, device: torch.device,
               channels_last: bool, timer: PhaseTimer | NoTimer) -> tuple[torch.Tensor, torch.Tensor]:
    """Copy a batch to the device (lap ``h2d``); uint8 images from an image folder are then
    normalised there (lap ``preprocess``)."""
    images = images.to(device, non_blocking=True)
    labels = labels.to(device, non_blocking=True)
    if images.dtype == torch.uint8:
        timer.lap("h2d")
        images = normalize(images)
        phase = "preprocess"
    else:
        phase = "h2d"
    if channels_last:
        images = images.contiguous(memory_format=torch.channels_last)
    timer.lap(phase)
    return images, labels


def classification_loss(outputs: torch.Tensor | tuple, labels: torch.Tensor) -> torch.Tensor:
    """Cross entropy of the main logits plus 0.4 x that of any auxiliary logits."""
    if isinstance(outputs, torch.Tensor):
        return nn.functional.cross_entropy(outputs, labels)
    main, *aux = outputs
    loss = nn.functional.cross_entropy(main, labels)
    for logits in aux:
        if logits is not None:
            loss = loss + AUX_LOSS_WEIGHT * nn.functional.cross_entropy(logits, labels)
    return loss


def run(config: ClassificationConfig) -> RunResult:
    """Run the configured benchmark and return its timings."""
    torch.manual_seed(config.seed)
    device, model = setup_run(config, build_model(config), config.channels_last,
                              ddp=config.benchmark == "train")
    data = batches(config, device)
    step = {"train": TrainStep, "inference": InferenceStep,
            "smooth_inference": SmoothInferenceStep}[config.benchmark](model, config, device)
    reset_peak_memory(device)
    limit = config.iterations if isinstance(config.iterations, int) else None
    loop = timed_loop(step, iter(data), device, config.warmup, limit, config.breakdown,
                      telemetry_interval_s=config.telemetry_interval_s,
                      budget=TimeBudget.of(config))
    extras = {**(step.finish() if hasattr(step, "finish") else {}), "loop_stop": loop.stop}
    return RunResult(
        device=device, iterations=len(loop.timer), warmup=loop.warmup, samples=loop.samples,
        wall_time_s=loop.wall_time_s, unit="images/s", per_iteration=loop.timer.samples(),
        peak_memory_bytes=peak_memory_bytes(device), extras=extras, telemetry=loop.telemetry,
        contention=loop.contention,
    )


class TrainStep:
    """One SGD step: data, h2d, forward (+loss), backward, optimizer."""

    def __init__(self, model: nn.Module, config: ClassificationConfig, device: torch.device):
        self.model, self.config, self.device = model.train(), config, device
        self.optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9,
                                         weight_decay=1e-4)
        self.scaler = torch.amp.GradScaler(device.type, enabled=config.precision == Precision.AMP_FP16)
        self.loss: torch.Tensor | None = None

    def __call__(self, iterator: Iterator, timer: PhaseTimer | NoTimer) -> int | None:
        batch = next_batch(iterator, timer)
        if batch is None:
            return None
        images, labels = _to_device(*batch, self.device, self.config.channels_last, timer)
        with autocast(self.config.precision, self.device):
            loss = classification_loss(self.model(images), labels)
        timer.lap("forward")
        backward_and_step(loss, self.scaler, self.optimizer, timer)
        timer.stop()
        self.loss = loss.detach()
        return images.shape[0]

    def finish(self) -> dict[str, object]:
        return {"final_loss": float(self.loss) if self.loss is not None else None}


class InferenceStep:
    """One eval-mode forward pass without gradients: data, h2d, forward."""

    def __init__(self, model: nn.Module, config: ClassificationConfig, device: torch.device):
        self.model, self.config, self.device = model.eval(), config, device

    @torch.no_grad()
    def __call__(self, iterator: Iterator, timer: PhaseTimer | NoTimer) -> int | None:
        batch = next_batch(iterator, timer)
        if batch is None:
            return None
        images, _ = _to_device(*batch, self.device, self.config.channels_last, timer)
        with autocast(self.config.precision, self.device):
            self.model(images)
        timer.lap("forward")
        timer.stop()
        return images.shape[0]


class SmoothInferenceStep:
    """Randomized smoothing of one input image: ``noise_samples`` Gaussian copies classified in
    chunks of ``batch_size``, class votes counted on the device.

    Phases: data (next image), h2d, preprocess (making the noisy copies), forward (classifying
    them and counting votes).
    """

    def __init__(self, model: nn.Module, config: ClassificationConfig, device: torch.device):
        self.model, self.config, self.device = model.eval(), config, device
        self.votes: list[torch.Tensor] = []

    @torch.no_grad()
    def __call__(self, iterator: Iterator, timer: PhaseTimer | NoTimer) -> int | None:
        batch = next_batch(iterator, timer)
        if batch is None:
            return None
        cfg = self.config
        images, _ = _to_device(*batch, self.device, False, timer)
        counts = torch.zeros(cfg.num_classes, dtype=torch.long, device=self.device)
        for image in images:
            remaining = cfg.noise_samples
            while remaining > 0:
                n = min(cfg.batch_size, remaining)
                remaining -= n
                noisy = image.unsqueeze(0) + cfg.sigma * torch.randn(
                    (n, *image.shape), device=self.device, dtype=image.dtype)
                if cfg.channels_last:
                    noisy = noisy.contiguous(memory_format=torch.channels_last)
                timer.lap("preprocess")
                with autocast(cfg.precision, self.device):
                    logits = self.model(noisy)
                counts += torch.bincount(logits.argmax(dim=1), minlength=cfg.num_classes)
                timer.lap("forward")
        self.votes.append(counts)
        timer.stop()
        return images.shape[0]

    def finish(self) -> dict[str, object]:
        votes = torch.stack(self.votes).cpu() if self.votes else torch.zeros(0, 1)
        top = votes.max(dim=1).values.float() / self.config.noise_samples if len(votes) else votes
        return {"top_class_share_median": float(top.median()) if len(votes) else None}
