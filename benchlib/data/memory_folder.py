"""An ImageNet-layout JPEG folder read once into memory before timing (``data_source: memory``).

The loader workers then only decode (and crop and flip) encoded bytes held in memory: the same
transforms as :mod:`benchlib.data.imagefolder`, without the file system. Set beside a run that
reads the folder as it goes, it separates the file system's cost from the decoder's. A folder
larger than :data:`MEMORY_LIMIT_BYTES` is represented by an evenly spaced subset of its images
whose real sizes add up to at most the limit (every image costs about the same to decode, so
the speed does not depend on which); an image larger than the limit is never read.
"""

from __future__ import annotations

import io
from pathlib import Path

import torch
from PIL import Image
from torch.utils.data import DataLoader, Dataset

from benchlib.data.imagefolder import (
    IMAGE_ERRORS,
    eval_transform,
    image_folder,
    sharded_loader,
    train_transform,
    unreadable_image,
)
from benchlib.data.shard import Rank
from benchlib.errors import InputError

#: At most this many bytes of encoded images are held in memory.
MEMORY_LIMIT_BYTES = 1 << 30


def choose_samples(sizes: list[int], limit_bytes: int) -> list[int]:
    """Indices of an evenly spaced subset of files of ``sizes`` bytes whose sizes add up to at
    most ``limit_bytes`` (all of them when they fit; files over the limit never)."""
    if sum(sizes) <= limit_bytes:
        return list(range(len(sizes)))
    fitting = [i for i, size in enumerate(sizes) if size <= limit_bytes]
    if not fitting:
        return []
    mean = max(1, sum(sizes[i] for i in fitting) // len(fitting))
    keep = max(1, min(len(fitting), limit_bytes // mean))
    step = len(fitting) / keep
    chosen, total = [], 0
    for i in range(keep):
        index = fitting[int(i * step)]
        if total + sizes[index] <= limit_bytes:
            chosen.append(index)
            total += sizes[index]
    return chosen


def read_samples(samples: list[tuple[str, int]], limit_bytes: int = MEMORY_LIMIT_BYTES,
                 where: str = "") -> list[tuple[str, bytes, int]]:
    """The path, encoded bytes and class of ``samples`` (path, class), read once: all of them,
    or when they exceed ``limit_bytes`` an evenly spaced subset that fits
    (:func:`choose_samples`); InputError naming ``where`` (the data_dir), the limit and the
    smallest file when no file fits."""
    if not samples:
        return []
    sizes = [Path(path).stat().st_size for path, _ in samples]
    chosen = choose_samples(sizes, limit_bytes)
    if not chosen:
        raise InputError(f"data_dir {where!r}: data_source 'memory' holds at most "
                         f"{limit_bytes:,} bytes of images and the smallest image there is "
                         f"{min(sizes):,} bytes; read it from disk (data_source: disk)")
    items = []
    for index in chosen:
        path, target = samples[index]
        with open(path, "rb") as file:  # at most the size chosen, should the file have grown
            items.append((path, file.read(sizes[index]), target))
    return items


class MemoryImages(Dataset):
    """Encoded images held in memory (path, bytes, class), decoded and transformed on access;
    an image that cannot be decoded is an InputError naming its file."""

    def __init__(self, items: list[tuple[str, bytes, int]], transform) -> None:
        self.items, self.transform = items, transform

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        path, data, target = self.items[index]
        try:
            with Image.open(io.BytesIO(data)) as image:
                return self.transform(image.convert("RGB")), target
        except IMAGE_ERRORS as error:
            raise unreadable_image(path, error) from error


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
    items = read_samples(folder.samples, limit_bytes, where=str(data_dir))
    return sharded_loader(MemoryImages(items, transform), batch_size, num_workers, train,
                          pin_memory, shard, seed)
