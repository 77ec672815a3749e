"""``benchlib data volume``: the 3D U-Net's sample data set, an EM-like volume in CREMI's layout
(HDF5 or zarr), added to ``benchlib data`` (:mod:`benchlib.cli.data` finds it through
:mod:`benchlib.discovery`)."""

from __future__ import annotations

import argparse
import stat
from typing import Any

from benchlib.errors import ConfigError, OutputError, VolumeError
from benchlib.inputs import node_limits
from benchlib.inputs.node_limits import size_text

#: Bytes per pixel of one plane while it is drawn (float32 distances, int64 labels, float64
#: noise and image): a plane must fit in memory.
PLANE_BYTES_PER_PIXEL = 48


def add_data_arguments(kinds: Any) -> None:
    """Add ``volume`` to ``benchlib data``'s sub-commands (``kinds``: its subparsers)."""
    volume = kinds.add_parser("volume", help="EM-like CREMI-layout volume (HDF5 .h5 or .zarr)")
    volume.add_argument("path", help="file.h5 / file.hdf5 (HDF5) or dir.zarr (zarr)")
    volume.add_argument("--shape", type=int, nargs=3, required=True, metavar=("Z", "Y", "X"))
    volume.add_argument("--cell", type=int, nargs=3, default=[6, 40, 40], metavar=("Z", "Y", "X"),
                        help="mean cell size in voxels (default: 6 40 40)")
    volume.add_argument("--chunks", type=int, nargs=3, default=[8, 128, 128],
                        metavar=("Z", "Y", "X"), help="storage chunks (default: 8 128 128)")
    volume.add_argument("--compression", choices=["none", "gzip"], default="none")
    volume.add_argument("--seed", type=int, default=0)
    volume.add_argument("--quiet", action="store_true", help="no progress bar")
    volume.set_defaults(write=_volume)


def _volume(args: argparse.Namespace) -> None:
    import math

    from benchlib.kinds.unet3d.data import LABEL_KEY, RAW_KEY, volume_format
    from benchlib.kinds.unet3d.data_writer import write_em_volume

    try:
        volume_format(args.path)
    except VolumeError as error:
        raise ConfigError(str(error)) from None
    if min(args.shape) < 1 or min(args.cell) < 1 or min(args.chunks) < 1:
        raise ConfigError("--shape, --cell and --chunks take three positive sizes (z y x)")
    _volume_target(args.path, volume_format(args.path))
    _volume_fits(args.path, args.shape, "gzip" if args.compression == "gzip" else None)
    shape = write_em_volume(args.path, args.shape, args.cell, args.chunks, args.seed,
                            "gzip" if args.compression == "gzip" else None,
                            progress=not args.quiet)
    print(f"wrote {RAW_KEY} (uint8) and {LABEL_KEY} (uint64), shape {list(shape)} "
          f"({math.prod(shape):,} voxels), to {args.path}")


def _volume_target(path: str, form: str) -> None:
    """ConfigError naming ``path`` when what is there is not a volume of ``form`` to replace
    (an HDF5 file, a zarr volume): a folder of other files, a FIFO, a device is never replaced."""
    from benchlib.kinds.unet3d.data import is_zarr_volume
    from benchlib.records.store import existing_mode, what_is

    mode = existing_mode("data volume", path)
    if mode is None or (stat.S_ISREG(mode) if form == "hdf5" else is_zarr_volume(path)):
        return
    volume = "an HDF5 file" if form == "hdf5" else "a zarr volume"
    what = ("a folder that is not a zarr volume" if form == "zarr" and stat.S_ISDIR(mode)
            else f"{what_is(mode)}, not {volume}")
    raise ConfigError(f"data volume {path}: is {what}; nothing replaced (give a new path, or "
                      f"{volume} to replace)")


def _volume_fits(path: str, shape: list[int], compression: str | None) -> None:
    """ConfigError naming ``--shape`` when the volume cannot fit: its bytes on disk (the
    writer's own estimate and free-space check, :mod:`benchlib.data.space`) against the free
    space where it goes, one plane against this node's memory."""
    from benchlib.data.space import check_free_space
    from benchlib.kinds.unet3d.data_writer import estimated_bytes

    given = f"--shape {' '.join(map(str, shape))}"
    try:
        check_free_space(path, estimated_bytes(shape, compression))
    except OutputError as error:
        raise ConfigError(f"{given}: {error}") from None
    plane = shape[1] * shape[2] * PLANE_BYTES_PER_PIXEL
    if plane > node_limits.host_memory():
        raise ConfigError(f"{given}: one {shape[1]} x {shape[2]} plane takes about "
                          f"{size_text(plane)} while it is drawn, more than this node's "
                          f"{size_text(node_limits.host_memory())} of memory")
