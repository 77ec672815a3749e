"""Synthetic classification data: tensors made once on the device, or made by a CPU loader."""

from __future__ import annotations

from collections.abc import Iterator

import torch
from torch.utils.data import DataLoader, Dataset


def device_batches(
    batch_size: int, image_size: int, num_classes: int, device: torch.device,
    count: int | None = None, seed: int = 0,
) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """Yield one batch made once on ``device``, ``count`` times (forever if None): pure compute."""
    generator = torch.Generator().manual_seed(seed)
    images = torch.randn(batch_size, 3, image_size, image_size, generator=generator).to(device)
    labels = torch.randint(0, num_classes, (batch_size,), generator=generator).to(device)
    produced = 0
    while count is None or produced < count:
        produced += 1
        yield images, labels


class RandomImages(Dataset):
    """``length`` random normalised images made on the CPU on access (loader cost, no decoding)."""

    def __init__(self, length: int, image_size: int, num_classes: int, seed: int = 0) -> None:
        self.length, self.image_size, self.num_classes, self.seed = (
            length, image_size, num_classes, seed,
        )

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        generator = torch.Generator().manual_seed(self.seed * 1_000_003 + index)
        image = torch.randn(3, self.image_size, self.image_size, generator=generator)
        return image, index % self.num_classes


def loader_batches(
    batch_size: int, image_size: int, num_classes: int, length: int, num_workers: int,
    pin_memory: bool, shuffle: bool = False, seed: int = 0,
) -> DataLoader:
    """A DataLoader over :class:`RandomImages` with ``num_workers`` worker processes."""
    return DataLoader(
        RandomImages(length, image_size, num_classes, seed),
        batch_size=batch_size, shuffle=shuffle, num_workers=num_workers,
        pin_memory=pin_memory, persistent_workers=False, drop_last=False,
    )
