"""``benchlib data``: write a sample data set (an ImageNet-layout JPEG folder; a kind folder's
own, added by its ``command`` module: the 3D U-Net's EM volume)."""

from __future__ import annotations

import argparse
import stat

from benchlib import discovery
from benchlib.cli.base import Command
from benchlib.errors import ConfigError, OutputError
from benchlib.inputs.node_limits import MAX_IMAGE_SIDE


class Data(Command):
    name = "data"
    help = "write sample data sets"

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        kinds = parser.add_subparsers(dest="kind", required=True)
        folder = kinds.add_parser("imagefolder", help="ImageNet-layout JPEG folder")
        folder.add_argument("dir")
        folder.add_argument("--classes", type=int, default=4)
        folder.add_argument("--images", type=int, default=16, help="images per class")
        folder.add_argument("--size", type=int, default=256, help="short side in px")
        folder.add_argument("--seed", type=int, default=0)
        folder.set_defaults(write=_imagefolder)
        for module in discovery.role_modules("command"):  # the kinds' own data sets
            module.add_data_arguments(kinds)

    @classmethod
    def run(cls, args: argparse.Namespace) -> int:
        """Write the data set asked for and say what was written where."""
        args.write(args)
        return 0


def _imagefolder(args: argparse.Namespace) -> None:
    from benchlib.data.generate import check_space, write_imagefolder
    from benchlib.records.store import existing_mode, what_is

    given = f"--classes {args.classes}, --images {args.images}, --size {args.size}"
    if args.classes < 1 or args.images < 1 or not 8 <= args.size <= MAX_IMAGE_SIDE:
        raise ConfigError(f"{given}: classes and images take 1 or more, size 8 to "
                          f"{MAX_IMAGE_SIDE} px")
    mode = existing_mode("data imagefolder", args.dir)
    if mode is not None and not stat.S_ISDIR(mode):
        raise ConfigError(f"data imagefolder {args.dir}: is {what_is(mode)}, not a folder; give "
                          "a new or existing folder")
    try:
        check_space(args.dir, args.classes, args.images, args.size)
    except OutputError as error:
        raise ConfigError(f"{given}: {error}") from None
    root = write_imagefolder(args.dir, classes=args.classes, images_per_class=args.images,
                             size=args.size, seed=args.seed)
    print(f"wrote {args.classes} x {args.images} JPEG images (~{args.size} px) to {root}")
