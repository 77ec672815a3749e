"""An ImageNet-layout JPEG folder read once into memory before timing (``data_source: memory``).

The loader workers then only decode (and crop and flip) encoded bytes held in memory: the same
transforms as :mod:`benchlib.data.imagefolder`, without the file system. Set beside a run that
reads the folder as it goes, it separates the file system's cost from the decoder's. A folder
larger than :data:`MEMORY_LIMIT_BYTES` is represented by an evenly spaced subset of its images
(every image costs about the same to decode, so the speed does not depend on which).
"""

from __future__ import annotations

import io
from pathlib import Path

import torch
from PIL import Image
from torch.utils.data import DataLoader, Dataset

from benchlib.data.imagefolder import eval_transform, image_folder, sharded_loader, train_transform
from benchlib.data.shard import Rank

#: At most this many bytes of encoded images are held in memory.
MEMORY_LIMIT_BYTES = 1 << 30


def read_samples(samples: list[tuple[str, int]],
                 limit_bytes: int = MEMORY_LIMIT_BYTES) -> list[tuple[bytes, int]]:
    """The encoded bytes and class of ``samples`` (path, class), read once; when they exceed
    ``limit_bytes``, an evenly spaced subset that fits (at least one image)."""
    if not samples:
        return []
    sizes = [Path(path).stat().st_size for path, _ in samples]
    mean = max(1, sum(sizes) // len(sizes))
    keep = max(1, min(len(samples), limit_bytes // mean))
    step = len(samples) / keep
    chosen = [samples[int(i * step)] for i in range(keep)]
    return [(Path(path).read_bytes(), target) for path, target in chosen]


class MemoryImages(Dataset):
    """Encoded images held in memory, decoded and transformed on access."""

    def __init__(self, items: list[tuple[bytes, int]], transform) -> None:
        self.items, self.transform = items, transform

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        data, target = self.items[index]
        with Image.open(io.BytesIO(data)) as image:
            return self.transform(image.convert("RGB")), target


def memory_folder_loader(
    data_dir: str | Path, image_size: int, batch_size: int, num_workers: int, train: bool,
    pin_memory: bool, shard: Rank | None = None, seed: int = 0,
    limit_bytes: int = MEMORY_LIMIT_BYTES,
) -> DataLoader:
    """A DataLoader decoding the folder's images from memory in ``num_workers`` processes
    (the files are read here, before any timing); shards over ranks as
    :func:`benchlib.data.imagefolder.image_folder_loader` does."""
    folder = image_folder(data_dir, image_size, train)
    transform = train_transform(image_size) if train else eval_transform(image_size)
    dataset: Dataset = MemoryImages(read_samples(folder.samples, limit_bytes), transform)
    return sharded_loader(dataset, batch_size, num_workers, train, pin_memory, shard, seed)
