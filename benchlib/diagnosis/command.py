"""``benchlib diagnose``: its options, and the answer printed (the work is
:func:`benchlib.diagnosis.api.diagnose`, ``benchlib.diagnose`` from Python)."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from benchlib import registry
from benchlib.cli.base import Command, show_wrapped
from benchlib.cli.documents import add_option
from benchlib.diagnosis.budget import INITIAL_REPEATS, TARGET_FACTOR
from benchlib.diagnosis.defaults import per_target
from benchlib.vocabulary import Precision


class Diagnose(Command):
    name = "diagnose"
    help = "why this node is slower than it should be for a model: a ladder of runs and its waterfall"
    description = (
        "Why this node is slower than it should be for a model, answered by an experiment: the "
        "node probe, then the model on synthetic data on the device (what the node can do for "
        "it), synthetic data from the host, real data from memory (decode only) and real data "
        "from disk at your worker count and others (on a GPU also other precisions and "
        f"channels_last), each run {INITIAL_REPEATS} times, then the rungs of the steps whose "
        f"95 % interval spans more than a factor of {TARGET_FACTOR:g} again in rounds until "
        "none does or the budget is spent, as one campaign through the normal sweep. Prints the "
        "biggest loss, what to change and what that change measured here, and the waterfall; "
        "writes the report page.")

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        add = parser.add_argument
        add("--model", default="resnet50", help="torchvision model (default resnet50)")
        add("--data-dir", default="", help="your ImageNet-layout JPEG folder (none: synthetic "
            "data only)")
        add("--benchmark", choices=registry.DIAGNOSED, default=registry.DIAGNOSED[0])
        add("--workers", type=int, help="your loader worker count (default: 4, or the cores "
            "available when fewer)")
        add("--precision", choices=list(Precision), default=Precision.FP32.value,
            help="your precision (default fp32)")
        add("--channels-last", action="store_true", help="your runs use channels_last")
        add("--devices", type=int, default=1, help="devices (default 1)")
        add("--batch-size", type=int, help=f"per device (default: {per_target('batch_size')})")
        add("--image-size", type=int,
            help=f"image side in px (default: {per_target('image_size')})")
        add("--budget", type=float, help=f"seconds for the whole ladder (default: "
            f"{per_target('budget_s')}): how many runs and each run's time budget are sized "
            "from it, half for the initial round and half for the rounds of extra repeats")
        add("--repeats", type=int, help=f"a fixed number of runs per rung, 2 to 20, and no "
            f"extra rounds (default: {INITIAL_REPEATS} first, then extra rounds until each "
            f"step's interval is within a factor of {TARGET_FACTOR:g} or the budget is spent)")
        add("--device", choices=["auto", "cuda", "cpu"], default="auto")
        add("--campaign", default="", help="campaign name (default diagnose-MODEL-TAG, TAG "
            "naming the settings: the same command resumes its campaign, other settings get "
            "their own)")
        add("--outputs", default="outputs", help="results root (default: outputs)")
        add("--executor", metavar="KIND", default="local",
            help="where the runs go: local (default) or slurm")
        add("--partition", help="SLURM partition (slurm executor)")
        add("--account", help="SLURM account (slurm executor)")
        add("--time-min", type=int, help="SLURM time limit per point in minutes")
        add("--no-report", action="store_true", help="do not build the report page")
        add_option(parser)

    @classmethod
    def run(cls, args: argparse.Namespace) -> int:
        """Plan, run and analyse the ladder; print the answer and where the page is."""
        from benchlib.catalog import index_quietly
        from benchlib.inputs.executors import LocalExecutor, apply_overrides

        executor = apply_overrides(LocalExecutor(), args.executor, partition=args.partition,
                                   account=args.account, time_min=args.time_min)
        options = {"benchmark": args.benchmark, "num_workers": args.workers,
                   "precision": args.precision, "channels_last": args.channels_last,
                   "num_devices": args.devices, "batch_size": args.batch_size,
                   "image_size": args.image_size, "budget_s": args.budget,
                   "repeats": args.repeats, "device": args.device, "campaign": args.campaign}
        from benchlib.diagnosis.api import diagnose

        start = time.perf_counter()
        result = diagnose(args.model, args.data_dir, args.outputs, executor,
                          report=not args.no_report, say=show_wrapped,
                          **{k: v for k, v in options.items() if v is not None})
        print()
        show_wrapped(str(result))
        where = Path(args.outputs) / result.campaign_dir.name
        print(f"\nruns in {where}; took {time.perf_counter() - start:.0f} s")
        if result.page is not None:
            print(f"page: {where / 'report' / result.page.name}")
        index_quietly(result.campaign_dir)  # with $BENCHLIB_DB: the catalog follows
        if args.json:
            from benchlib.cli.documents import render

            render.write(args, render.diagnose(result.diagnosis, where, result.page, 0))
        return 0
