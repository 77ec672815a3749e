"""JPEG decode on the run's device (``decode: device``): the loader workers only read each file's
bytes; the batch is decoded where the model runs, by ``torchvision.io.decode_jpeg`` (nvJPEG on a
GPU, a whole batch in one call; libjpeg-turbo in the main process on a CPU), then cropped,
flipped and resized there, as MLPerf's and NVIDIA's ImageNet pipelines decode on the GPU. On a
GPU the loader workers are then no longer the limit of real data; on a CPU it moves the decode
from the workers into the training process.

A file that cannot be decoded is an InputError naming it (the batch carries its files' paths).
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch
from torch.utils.data import DataLoader
from torchvision.io import ImageReadMode, decode_jpeg
from torchvision.transforms import v2

from benchlib.data.imagefolder import IMAGE_ERRORS, ImageFolder, sharded_loader, unreadable_image
from benchlib.data.shard import Rank

#: The files a folder decoded on the device lists (decode_jpeg reads JPEG only).
JPEG_SUFFIXES = (".jpg", ".jpeg")
#: torchvision 0.29 says its decoders will move to TorchCodec; its nvJPEG path is the one both
#: the CI's torchvision 0.29 and a GPU node's older torch have (docs/measuring.md), so the
#: notice is not repeated for every batch of every run.
MOVING = "The image decoding and encoding capabilities of TorchVision are deprecated"


def is_jpeg(path: str) -> bool:
    """Whether ``path`` is listed for decoding on the device: its name ends in .jpg / .jpeg."""
    return path.lower().endswith(JPEG_SUFFIXES)


def _decode(data: list[torch.Tensor] | torch.Tensor, device: torch.device):
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=MOVING, category=DeprecationWarning)
        return decode_jpeg(data, mode=ImageReadMode.RGB, device=device)


@dataclass
class EncodedBatch:
    """A batch of encoded JPEGs (1-D uint8 tensors) and their files, with the transform the
    run's step needs: random resized crop and flip for training, resize and centre crop for
    evaluation, to ``image_size``."""

    data: list[torch.Tensor]
    paths: list[str]
    image_size: int
    train: bool

    def pin_memory(self) -> EncodedBatch:
        """The batch with its bytes in pinned memory (the DataLoader's ``pin_memory``)."""
        return EncodedBatch([d.pin_memory() for d in self.data], self.paths, self.image_size,
                            self.train)

    def decode(self, device: torch.device) -> torch.Tensor:
        """The images decoded and transformed on ``device``: uint8 NCHW, ``image_size`` square
        (normalised later, as a loader's batch is)."""
        try:
            images = _decode(self.data, device)
        except (RuntimeError, *IMAGE_ERRORS) as error:
            raise self._unreadable(device, error) from error
        transform = _transform(self.image_size, self.train)
        return torch.stack([transform(image) for image in images])

    def _unreadable(self, device: torch.device, error: BaseException) -> Exception:
        """The error naming the batch's first file that does not decode alone."""
        for data, path in zip(self.data, self.paths, strict=True):
            try:
                _decode(data, device)
            except (RuntimeError, *IMAGE_ERRORS) as single:
                if "Not a JPEG" in str(single):
                    return unreadable_image(path, ValueError(
                        "not a JPEG file (decode: device decodes JPEG only; decode: loader reads "
                        "any image)"))
                return unreadable_image(path, ValueError(str(single).rsplit(", ", 1)[-1]))
        return unreadable_image(", ".join(self.paths[:3]), error)


@functools.cache
def _transform(image_size: int, train: bool) -> v2.Compose:
    """The train or eval transform of :mod:`benchlib.data.imagefolder` on uint8 tensors (any
    device)."""
    if train:
        return v2.Compose([v2.RandomResizedCrop(image_size, antialias=True),
                           v2.RandomHorizontalFlip()])
    return v2.Compose([v2.Resize(round(image_size * 256 / 224), antialias=True),
                       v2.CenterCrop(image_size)])


class EncodedFolder(ImageFolder):
    """An ImageNet-layout folder of JPEG files (:func:`is_jpeg`) whose items are each file's
    bytes, not yet decoded."""

    def __init__(self, root: str | Path) -> None:
        super().__init__(root, is_valid_file=is_jpeg)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int, str]:
        path, target = self.samples[index]
        try:
            data = Path(path).read_bytes()
        except OSError as error:
            raise unreadable_image(path, error) from error
        if not data:
            raise unreadable_image(path, ValueError("the file is empty"))
        return torch.frombuffer(bytearray(data), dtype=torch.uint8), target, path


def collate(items: Sequence[tuple[torch.Tensor, int, str]], image_size: int, train: bool
            ) -> tuple[EncodedBatch, torch.Tensor]:
    """The loader's batch: the encoded images with their files, and the labels."""
    return (EncodedBatch([i[0] for i in items], [i[2] for i in items], image_size, train),
            torch.tensor([i[1] for i in items]))


def encoded_folder_loader(data_dir: str | Path, image_size: int, batch_size: int,
                          num_workers: int, train: bool, pin_memory: bool,
                          shard: Rank | None = None, seed: int = 0) -> DataLoader:
    """A DataLoader whose ``num_workers`` processes read the folder's files and hand over their
    bytes (:class:`EncodedBatch`), sharded as :func:`~benchlib.data.imagefolder.sharded_loader`
    shards; the run's step decodes each batch on its device."""
    root = Path(data_dir)
    if not root.is_dir():
        raise FileNotFoundError(f"data_dir {str(root)!r} is not a directory")
    try:
        dataset = EncodedFolder(root)
    except FileNotFoundError as error:
        raise FileNotFoundError(f"data_dir {str(root)!r} is not an ImageNet-layout folder "
                                f"(<class>/<image>.jpg): {error}") from error
    return sharded_loader(dataset, batch_size, num_workers, train, pin_memory, shard, seed,
                          collate_fn=functools.partial(collate, image_size=image_size,
                                                       train=train))
