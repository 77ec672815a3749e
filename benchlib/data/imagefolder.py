"""ImageNet-layout JPEG folders (``DIR/<class>/<image>.jpg``) with the usual transforms.

Loader workers decode, crop and flip, and hand over uint8 tensors; the conversion to float and
the ImageNet normalisation run on the device (:func:`normalize`, the ``preprocess`` phase), as
fast ImageNet pipelines do: a quarter of the bytes cross process and host-to-device boundaries
and the CPU workers do less per image.

The folder is listed by :func:`list_samples`, not by torchvision's own walk: it follows symbolic
links as torchvision does, but enters each real directory once per class, so links that loop
(``a/x -> ../b``, ``b/y -> ../a``, a link to an ancestor) cannot make the listing endless, and
it stops with an error past :data:`MAX_ENTRIES` entries. An image that cannot be decoded
(truncated, not an image) is an InputError naming its file, raised where it is read.

A loader leaves out an epoch's last, partial batch (:func:`partial_batch`): every timed batch
has one shape; the loader says so when it is made and the run records the count.
"""

from __future__ import annotations

import functools
import math
import os
import warnings
from collections.abc import Callable
from pathlib import Path

import torch
from PIL import Image
from torch.utils.data import DataLoader, Dataset, DistributedSampler, Subset
from torchvision import datasets, transforms

from benchlib.data.shard import Rank
from benchlib.errors import InputError

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
#: Files and folders a listing of ``data_dir`` may meet (ImageNet-21k has 14 million images).
MAX_ENTRIES = 50_000_000
#: What reading a broken image raises (truncated: OSError; not an image: UnidentifiedImageError,
#: an OSError; a decompression bomb; a bad header: ValueError).
IMAGE_ERRORS = (OSError, ValueError, Image.DecompressionBombError)
#: Batches each loader worker prepares ahead (the DataLoader's ``prefetch_factor``, its default).
PREFETCH_FACTOR = 2
#: The share of images :func:`images_for_span` adds beyond what the run takes.
SPAN_MARGIN = 0.1


def unreadable_image(path: str, error: BaseException) -> InputError:
    """The error for an image of ``data_dir`` that cannot be decoded: its path, then the
    decoder's own message."""
    return InputError(f"data_dir: image {path!r} cannot be read: {error}")


def _walk_class(folder: str, max_entries: int, seen: list[int]) -> list[tuple[str, list[str]]]:
    """(folder, file names) of ``folder`` and every folder under it, links followed, each real
    directory once; ``seen`` counts entries over all classes (InputError past ``max_entries``)."""
    info = os.stat(folder)
    visited = {(info.st_dev, info.st_ino)}
    found = []
    for root, dirs, files in os.walk(folder, followlinks=True):
        kept = []
        for name in dirs:
            try:
                info = os.stat(os.path.join(root, name))
            except OSError:
                continue
            if (info.st_dev, info.st_ino) not in visited:
                visited.add((info.st_dev, info.st_ino))
                kept.append(name)
        dirs[:] = kept
        seen[0] += len(dirs) + len(files)
        if seen[0] > max_entries:
            raise InputError(f"data_dir: more than {max_entries:,} files and folders under the "
                             f"class folders of {os.path.dirname(folder)!r}; is it the "
                             "ImageNet-layout folder (<class>/<image>.jpg)?")
        found.append((root, files))
    return found


def list_samples(directory: str | Path, class_to_idx: dict[str, int],
                 extensions: str | tuple[str, ...] | None = None,
                 is_valid_file: Callable[[str], bool] | None = None, allow_empty: bool = False,
                 max_entries: int = MAX_ENTRIES) -> list[tuple[str, int]]:
    """(path, class index) of every image in torchvision's order (the contract of
    ``DatasetFolder.make_dataset``), listed by the bounded walk of :func:`_walk_class`."""
    def valid(path: str) -> bool:
        if is_valid_file is not None:
            return is_valid_file(path)
        return datasets.folder.has_file_allowed_extension(path, extensions or ())

    samples, seen, found = [], [0], set()
    for name in sorted(class_to_idx):
        folder = os.path.join(os.path.expanduser(directory), name)
        if not os.path.isdir(folder):
            continue
        for root, files in sorted(_walk_class(folder, max_entries, seen)):
            for file in sorted(files):
                path = os.path.join(root, file)
                if valid(path):
                    samples.append((path, class_to_idx[name]))
                    found.add(name)
    empty = sorted(set(class_to_idx) - found)
    if empty and not allow_empty:
        supported = f"; supported extensions: {', '.join(extensions)}" if extensions else ""
        raise FileNotFoundError(f"Found no valid file for the classes {', '.join(empty)}{supported}")
    return samples


class ImageFolder(datasets.ImageFolder):
    """torchvision's ImageFolder, listed by :func:`list_samples` (links that loop end)."""

    @staticmethod
    def make_dataset(directory: str | Path, class_to_idx: dict[str, int],
                     extensions: str | tuple[str, ...] | None = None,
                     is_valid_file: Callable[[str], bool] | None = None,
                     allow_empty: bool = False) -> list[tuple[str, int]]:
        """The samples of ``directory`` (:func:`list_samples`)."""
        return list_samples(directory, class_to_idx, extensions, is_valid_file, allow_empty)

    def __getitem__(self, index: int) -> tuple[object, int]:
        """The transformed image and class of sample ``index``; InputError naming its file when
        it cannot be decoded."""
        try:
            return super().__getitem__(index)
        except IMAGE_ERRORS as error:
            raise unreadable_image(self.samples[index][0], error) from error


def train_transform(image_size: int) -> transforms.Compose:
    """RandomResizedCrop + horizontal flip, as in ImageNet training; uint8 CHW out."""
    return transforms.Compose([
        transforms.RandomResizedCrop(image_size),
        transforms.RandomHorizontalFlip(),
        transforms.PILToTensor(),
    ])


def eval_transform(image_size: int) -> transforms.Compose:
    """Resize to 256/224 of the side, then CenterCrop, as in ImageNet evaluation; uint8 CHW out."""
    return transforms.Compose([
        transforms.Resize(round(image_size * 256 / 224)),
        transforms.CenterCrop(image_size),
        transforms.PILToTensor(),
    ])


@functools.cache
def _imagenet_stats(device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """ImageNet's mean and std on ``device``, made once per device (a tensor made from Python
    numbers on a GPU is a blocking copy: not one per batch in a timed loop)."""
    return (torch.tensor(IMAGENET_MEAN, device=device).view(1, 3, 1, 1),
            torch.tensor(IMAGENET_STD, device=device).view(1, 3, 1, 1))


def normalize(images: torch.Tensor) -> torch.Tensor:
    """uint8 NCHW images (on any device) as float, scaled to [0, 1] and ImageNet-normalised."""
    mean, std = _imagenet_stats(images.device)
    return images.float().div_(255).sub_(mean).div_(std)


def image_folder(data_dir: str | Path, image_size: int, train: bool) -> ImageFolder:
    """The folder as a dataset with the train or eval transform; fails clearly when empty."""
    root = Path(data_dir)
    if not root.is_dir():
        raise FileNotFoundError(f"data_dir {str(root)!r} is not a directory")
    transform = train_transform(image_size) if train else eval_transform(image_size)
    try:
        return ImageFolder(root, transform=transform)
    except FileNotFoundError as error:
        raise FileNotFoundError(
            f"data_dir {str(root)!r} is not an ImageNet-layout folder (<class>/<image>.jpg): {error}"
        ) from error


def image_folder_loader(
    data_dir: str | Path, image_size: int, batch_size: int, num_workers: int, train: bool,
    pin_memory: bool, shard: Rank | None = None, seed: int = 0,
) -> DataLoader:
    """A DataLoader decoding the folder's JPEGs in ``num_workers`` processes.

    With a ``shard`` of several ranks, each rank reads a disjoint part: training through a
    DistributedSampler (shuffled per epoch, the tail that does not split evenly dropped, so
    every rank runs the same number of steps), evaluation through every ``world_size``-th image.
    An epoch's last partial batch is left out (:func:`partial_batch`): timed batches keep one
    shape.
    """
    return sharded_loader(image_folder(data_dir, image_size, train), batch_size, num_workers,
                          train, pin_memory, shard, seed)


def sharded_loader(dataset: Dataset, batch_size: int, num_workers: int, train: bool,
                   pin_memory: bool, shard: Rank | None = None, seed: int = 0,
                   collate_fn: Callable | None = None) -> DataLoader:
    """A DataLoader over ``dataset`` in ``num_workers`` processes, sharded over ranks as
    :func:`image_folder_loader` describes (``collate_fn``: how its items make a batch, else
    the DataLoader's default)."""
    sampler = None
    if shard is not None and shard.distributed:
        if train:
            sampler = DistributedSampler(dataset, num_replicas=shard.world_size, rank=shard.rank,
                                         shuffle=True, seed=seed, drop_last=True)
        else:
            dataset = Subset(dataset, shard.shard(range(len(dataset))))
    length = len(sampler) if sampler is not None else len(dataset)
    dropped = partial_batch(length, batch_size)
    if dropped:
        warnings.warn(f"the last batch of each epoch is left out: {length} images in batches of "
                      f"{batch_size} leave a last batch of {dropped}; every timed batch keeps "
                      "one shape (a smaller one makes cuDNN or compile tune again while the "
                      "clock runs)", stacklevel=2)
    loader = DataLoader(
        dataset, batch_size=batch_size, shuffle=train and sampler is None, sampler=sampler,
        num_workers=num_workers, pin_memory=pin_memory, drop_last=bool(dropped),
        persistent_workers=num_workers > 0,
        prefetch_factor=PREFETCH_FACTOR if num_workers > 0 else None, collate_fn=collate_fn,
    )
    loader.extras = {"images_dropped_per_epoch": dropped} if dropped else {}
    return loader


def partial_batch(length: int, batch_size: int) -> int:
    """Images an epoch of ``length`` images in batches of ``batch_size`` leaves out: its last,
    partial batch, so every timed batch has one shape (a new shape makes cuDNN's benchmark or
    torch.compile tune again inside the timed loop; and BatchNorm in train mode cannot take a
    batch of one); none when the epoch is a single batch."""
    return length % batch_size if length > batch_size else 0


def images_for_span(batches: int, batch_size: int, num_workers: int, ranks: int = 1,
                    margin: float = SPAN_MARGIN) -> int:
    """The images a folder needs so that a run taking ``batches`` batches (warm-up and timed)
    of ``batch_size`` per rank stays inside its first epoch, with every one of ``num_workers``
    loader workers still preparing a batch (:data:`PREFETCH_FACTOR` each) when the last timed
    batch is taken: no epoch boundary, and no drain of the workers at an epoch's end, in the
    timed span. ``margin`` more, in whole batches of every rank."""
    if min(batches, batch_size, ranks) < 1 or num_workers < 0 or margin < 0:
        raise ValueError(f"batches ({batches}), batch_size ({batch_size}) and ranks ({ranks}) "
                         f"must be at least 1, num_workers ({num_workers}) and margin "
                         f"({margin}) at least 0")
    in_flight = num_workers * PREFETCH_FACTOR
    needed = batches + in_flight
    return (needed + math.ceil(needed * margin)) * batch_size * ranks
