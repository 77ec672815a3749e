"""Train, inference and smooth-inference (randomized smoothing) benchmarks of torchvision models."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator

import torch
import torchvision
from torch import nn
from torch.utils.data import DataLoader, DistributedSampler

from benchlib.data.device_decode import EncodedBatch, encoded_folder_loader
from benchlib.data.imagefolder import image_folder_loader, normalize, partial_batch
from benchlib.data.memory_folder import memory_folder_loader
from benchlib.kinds.classification.config import ClassificationBenchmark, ClassificationConfig
from benchlib.kinds.classification.data import device_batches, loader_batches
from benchlib.workloads import distributed, step
from benchlib.workloads.loop import Timer, next_batch
from benchlib.workloads.result import RunResult
from benchlib.workloads.runtime import autocast

#: Images a synthetic loader can give under ``iterations: auto`` (made on access, never stored).
AUTO_SAMPLES = 1 << 30
AUX_LOSS_WEIGHT = 0.4  #: weight of auxiliary classifier losses (inception_v3, googlenet)


def build_model(config: ClassificationConfig) -> nn.Module:
    """A randomly initialised torchvision classification model (aux logits kept where they exist)."""
    kwargs: dict[str, object] = {"weights": None, "num_classes": config.num_classes}
    if config.model in ("inception_v3", "googlenet"):
        kwargs.update(aux_logits=True, init_weights=False)
    return torchvision.models.get_model(config.model, **kwargs)


def batches(config: ClassificationConfig, device: torch.device,
            step_class: type[ImageStep]) -> Iterable:
    """This rank's input batches for steps of ``step_class``: device tensors, a CPU tensor loader,
    or a JPEG folder loader (training's augmentation for a training step).

    Under torchrun each rank gets its own share: a disjoint part of the image folder and
    its own random seed for synthetic data. An epoch leaves out its last, partial batch
    (:func:`benchlib.data.imagefolder.partial_batch`: timed batches keep one shape), decided
    before it starts; the count is the loader's ``extras`` (the record's
    ``result_images_dropped_per_epoch``).
    """
    rank = distributed.current()
    batch = step_class.images_per_batch(config)
    size = config.resolved_image_size
    pin = device.type == "cuda"
    epoch = config.iterations == "epoch"
    seed = rank.seed(config.seed)
    if config.dataset == "real":
        make = (memory_folder_loader if config.data_source == "memory" else
                encoded_folder_loader if config.decode == "device" else image_folder_loader)
        loader = make(
            config.data_dir, size, batch, config.num_workers, train=step_class.training,
            pin_memory=pin, shard=rank, seed=config.seed,
        )
        return loader if epoch else Epochs(loader)
    if config.iterations == "auto":  # as many as the time budget takes
        if config.synthetic_kind == "loader":
            return loader_batches(batch, size, config.num_classes, AUTO_SAMPLES,
                                  config.num_workers, pin, seed=seed)
        return device_batches(batch, size, config.num_classes, device, count=None, seed=seed)
    total = config.warmup + (0 if epoch else config.iterations)
    length = len(rank.shard(range(config.synthetic_samples))) if epoch else total * batch
    if config.synthetic_kind == "loader":
        dropped = partial_batch(length, batch) if epoch else 0
        loader = loader_batches(batch, size, config.num_classes, length - dropped,
                                config.num_workers, pin, seed=seed)
        loader.extras = {"images_dropped_per_epoch": dropped} if dropped else {}
        return loader
    count = -(-length // batch)
    return device_batches(batch, size, config.num_classes, device, count=count, seed=seed)


class Epochs:
    """Passes over ``loader`` again and again (for a fixed iteration count), reshuffling a
    distributed sampler for each pass; its ``extras`` are the loader's. It counts the batches
    it gave and where each pass began (:attr:`starts`), so the run can say how many epoch
    boundaries fell inside its timed span (:meth:`boundaries_within`)."""

    def __init__(self, loader: DataLoader) -> None:
        self.loader = loader
        self.extras: dict[str, object] = getattr(loader, "extras", {})
        self.taken = 0  #: batches given so far
        self.starts: list[int] = []  #: the index of each pass's first batch (0 first)

    def __iter__(self) -> Iterator:
        for epoch in itertools.count():
            if isinstance(self.loader.sampler, DistributedSampler):
                self.loader.sampler.set_epoch(epoch)
            self.starts.append(self.taken)
            for batch in self.loader:
                self.taken += 1
                yield batch

    def boundaries_within(self, first: int, count: int) -> int:
        """The passes after the first that began at one of the ``count`` batches from index
        ``first`` (the timed ones): each such boundary drained the loader's workers and made
        a timed step wait for a new pass's first batch."""
        return sum(1 for start in self.starts[1:] if first <= start < first + count)


def _to_device(images: torch.Tensor | EncodedBatch, labels: torch.Tensor, device: torch.device,
               channels_last: bool, timer: Timer) -> tuple[torch.Tensor, torch.Tensor]:
    """Copy a batch to the device (lap ``h2d``); uint8 images from an image folder are then
    normalised there (lap ``preprocess``); encoded JPEGs (``decode: device``) are decoded,
    cropped and normalised there (lap ``preprocess``, their bytes' copy included)."""
    labels = labels.to(device, non_blocking=True)
    if isinstance(images, EncodedBatch):
        timer.lap("h2d")
        images = normalize(images.decode(device))
        if channels_last:
            images = images.contiguous(memory_format=torch.channels_last)
        timer.lap("preprocess")
        return images, labels
    images = images.to(device, non_blocking=True)
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


class ImageStep(step.Step):
    """A step on classification batches: images and labels, counted in images."""

    @classmethod
    def images_per_batch(cls, config: ClassificationConfig) -> int:
        """Images per batch the step takes."""
        return config.device_batch_size

    def to_device(self, batch: tuple[torch.Tensor, torch.Tensor],
                  timer: Timer) -> tuple[torch.Tensor, torch.Tensor]:
        return _to_device(*batch, self.device, self.config.channels_last, timer)


class TrainStep(ImageStep, step.TrainStep):
    """One SGD step: data, h2d, forward (+loss), backward, optimizer."""

    def make_optimizer(self, parameters: Iterable[nn.Parameter]) -> torch.optim.Optimizer:
        return torch.optim.SGD(parameters, lr=0.01, momentum=0.9, weight_decay=1e-4,
                               fused=step.fused(self.device))

    def loss_of(self, outputs: torch.Tensor | tuple, labels: torch.Tensor) -> torch.Tensor:
        return classification_loss(outputs, labels)


class InferenceStep(ImageStep, step.InferenceStep):
    """One eval-mode forward pass without gradients: data, h2d, forward."""


class SmoothInferenceStep(ImageStep):
    """Randomized smoothing of one input image: ``noise_samples`` Gaussian copies classified in
    chunks of ``batch_size``, class votes counted on the device.

    Phases: data (next image), h2d, preprocess (making the noisy copies), forward (classifying
    them and counting votes).
    """

    def __init__(self, model: nn.Module, config: ClassificationConfig, device: torch.device):
        super().__init__(model, config, device)
        self.votes: list[torch.Tensor] = []

    @classmethod
    def images_per_batch(cls, config: ClassificationConfig) -> int:
        return 1  # one input image; its noisy copies are the batches

    @torch.no_grad()
    def __call__(self, iterator: Iterator, timer: Timer) -> int | None:
        batch = next_batch(iterator, timer)
        if batch is None:
            return None
        cfg = self.config
        images, _ = _to_device(*batch, self.device, False, timer)
        counts = torch.zeros(cfg.num_classes, dtype=torch.long, device=self.device)
        ones = torch.ones(cfg.batch_size, dtype=torch.long, device=self.device)
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
                # index_add_ stays on the device (bincount on CUDA reads its size back: a sync)
                counts.index_add_(0, logits.argmax(dim=1), ones[:n])
                timer.lap("forward")
        self.votes.append(counts)
        timer.stop()
        return images.shape[0]

    def finish(self) -> dict[str, object]:
        votes = torch.stack(self.votes).cpu() if self.votes else torch.zeros(0, 1)
        top = votes.max(dim=1).values.float() / self.config.noise_samples if len(votes) else votes
        return {"top_class_share_median": float(top.median()) if len(votes) else None}


#: The step of each benchmark: the one place the workload tells its benchmarks apart.
STEPS: dict[ClassificationBenchmark, type[ImageStep]] = {
    "train": TrainStep, "inference": InferenceStep, "smooth_inference": SmoothInferenceStep}


def run(config: ClassificationConfig) -> RunResult:
    """Run the configured benchmark and return its timings (samples counted in images)."""
    step_class = STEPS[config.benchmark]
    return step.timed_run(config, lambda: build_model(config), step_class,
                          lambda device: batches(config, device, step_class), "images/s",
                          config.channels_last)
