"""ImageNet-layout JPEG folders (``DIR/<class>/<image>.jpg``) with the usual transforms.

Loader workers decode, crop and flip, and hand over uint8 tensors; the conversion to float and
the ImageNet normalisation run on the device (:func:`normalize`, the ``preprocess`` phase), as
fast ImageNet pipelines do: a quarter of the bytes cross process and host-to-device boundaries
and the CPU workers do less per image.
"""

from __future__ import annotations

from pathlib import Path

import torch
from torch.utils.data import DataLoader, DistributedSampler, Subset
from torchvision import datasets, transforms

from benchlib.data.shard import Rank

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


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


def normalize(images: torch.Tensor) -> torch.Tensor:
    """uint8 NCHW images (on any device) as float, scaled to [0, 1] and ImageNet-normalised."""
    mean = torch.tensor(IMAGENET_MEAN, device=images.device).view(1, 3, 1, 1)
    std = torch.tensor(IMAGENET_STD, device=images.device).view(1, 3, 1, 1)
    return images.float().div_(255).sub_(mean).div_(std)


def image_folder(data_dir: str | Path, image_size: int, train: bool) -> datasets.ImageFolder:
    """The folder as a dataset with the train or eval transform; fails clearly when empty."""
    root = Path(data_dir)
    if not root.is_dir():
        raise FileNotFoundError(f"data_dir {str(root)!r} is not a directory")
    transform = train_transform(image_size) if train else eval_transform(image_size)
    try:
        return datasets.ImageFolder(root, transform=transform)
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
    every rank runs the same number of steps), evaluation through every ``world_size``-th image
    (nothing dropped or repeated).
    """
    dataset = image_folder(data_dir, image_size, train)
    sampler = None
    if shard is not None and shard.distributed:
        if train:
            sampler = DistributedSampler(dataset, num_replicas=shard.world_size, rank=shard.rank,
                                         shuffle=True, seed=seed, drop_last=True)
        else:
            dataset = Subset(dataset, shard.shard(range(len(dataset))))
    return DataLoader(
        dataset, batch_size=batch_size, shuffle=train and sampler is None, sampler=sampler,
        num_workers=num_workers, pin_memory=pin_memory, drop_last=False,
        persistent_workers=num_workers > 0,
    )
