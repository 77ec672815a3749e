"""Training patches from a CREMI-layout volume: random crops, flips and transposes, and
affinity or boundary targets made from the neuron labels."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Literal

import numpy as np
import torch

from benchlib.kinds.unet3d.data import LazyVolume

Target = Literal["affinities", "boundaries"]
TARGET_CHANNELS = {"affinities": 3, "boundaries": 1}


def affinities(labels: np.ndarray) -> np.ndarray:
    """Nearest-neighbour affinities (z, y, x), float32 (3, *shape): 1 where a voxel and its
    predecessor along the axis share a label (the first slice along each axis counts as its own
    predecessor)."""
    out = np.ones((3, *labels.shape), dtype=np.float32)
    for axis in range(3):
        here = [slice(None)] * 3
        before = [slice(None)] * 3
        here[axis], before[axis] = slice(1, None), slice(None, -1)
        out[axis][tuple(here)] = labels[tuple(here)] == labels[tuple(before)]
    return out


def boundaries(labels: np.ndarray) -> np.ndarray:
    """1 where any of the six neighbours has another label, float32 (1, *shape)."""
    out = np.zeros(labels.shape, dtype=bool)
    for axis in range(3):
        a = [slice(None)] * 3
        b = [slice(None)] * 3
        a[axis], b[axis] = slice(1, None), slice(None, -1)
        differ = labels[tuple(a)] != labels[tuple(b)]
        out[tuple(a)] |= differ
        out[tuple(b)] |= differ
    return out[None].astype(np.float32)


def make_target(labels: np.ndarray, target: Target) -> np.ndarray:
    """The training target of ``labels``."""
    return affinities(labels) if target == "affinities" else boundaries(labels)


def augment(raw: np.ndarray, labels: np.ndarray,
            rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """The same random flips (each axis) and y/x transpose for a raw patch and the centred label
    crop (the transpose only where y and x sizes are equal in both)."""
    for axis in range(3):
        if rng.random() < 0.5:
            raw, labels = np.flip(raw, axis), np.flip(labels, axis)
    if raw.shape[1] == raw.shape[2] and labels.shape[1] == labels.shape[2] and rng.random() < 0.5:
        raw, labels = raw.transpose(0, 2, 1), labels.transpose(0, 2, 1)
    return np.ascontiguousarray(raw), np.ascontiguousarray(labels)


class PatchSampler(torch.utils.data.IterableDataset):
    """Endless random training samples: a uint8 raw patch (1, *patch_shape) and the float32
    target of the centred ``output_shape`` crop of the labels."""

    def __init__(self, volume: str, raw_key: str, label_key: str, patch_shape: Sequence[int],
                 output_shape: Sequence[int], target: Target = "affinities",
                 augment: bool = True, seed: int = 0) -> None:
        self.raw = LazyVolume(volume, raw_key)
        self.labels = LazyVolume(volume, label_key)
        self.patch_shape = tuple(patch_shape)
        self.output_shape = tuple(output_shape)
        self.target, self.augment, self.seed = target, augment, seed

    def __iter__(self) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        info = torch.utils.data.get_worker_info()
        rng = np.random.default_rng([self.seed, info.id if info else 0])
        shape = self.raw.shape
        margin = [(p - o) // 2 for p, o in zip(self.patch_shape, self.output_shape, strict=True)]
        while True:
            start = [int(rng.integers(0, s - p + 1)) for s, p in zip(shape, self.patch_shape,
                                                                      strict=True)]
            raw = self.raw.read(start, self.patch_shape)
            labels = self.labels.read([s + m for s, m in zip(start, margin, strict=True)],
                                      self.output_shape)
            if self.augment:
                raw, labels = augment(raw, labels, rng)
            yield (torch.from_numpy(raw[None].copy()),
                   torch.from_numpy(make_target(labels, self.target)))


def patch_loader(sampler: PatchSampler, batch_size: int, num_workers: int,
                 pin_memory: bool) -> torch.utils.data.DataLoader:
    """Batches of ``sampler`` from ``num_workers`` processes (0: in this process)."""
    return torch.utils.data.DataLoader(
        sampler, batch_size=batch_size, num_workers=num_workers, pin_memory=pin_memory,
        persistent_workers=num_workers > 0, prefetch_factor=4 if num_workers > 0 else None,
    )
