"""The ``benchlib diagnose`` subcommand: its options and its handler (imports nothing heavy until
it runs, so that ``benchlib --help`` stays fast)."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from benchlib.inputs.diagnose_defaults import per_target
from benchlib.vocabulary import Precision

DESCRIPTION = (
    "Why this node is slower than it should be for a model, answered by an experiment: the "
    "node probe, then the model on synthetic data on the device (what the node can do for it), "
    "synthetic data from the host, real data from memory (decode only) and real data from disk "
    "at your worker count and others (on a GPU also other precisions and channels_last), each "
    "with repeats, run as one campaign through the normal sweep. Prints the biggest loss, what "
    "to change and what that change measured here, and the waterfall; writes the report page.")


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Add ``diagnose`` to the ``benchlib`` command's subcommands."""
    parser = sub.add_parser("diagnose", help="why this node is slower than it should be for a "
                            "model: a ladder of runs and its waterfall", description=DESCRIPTION)
    parser.add_argument("--model", default="resnet50", help="torchvision model (default resnet50)")
    parser.add_argument("--data-dir", default="", help="your ImageNet-layout JPEG folder (none: "
                        "synthetic data only)")
    parser.add_argument("--benchmark", choices=["train", "inference"], default="train")
    parser.add_argument("--workers", type=int, help="your loader worker count (default: 4, or "
                        "the cores available when fewer)")
    parser.add_argument("--precision", choices=list(Precision),
                        default=Precision.FP32.value, help="your precision (default fp32)")
    parser.add_argument("--channels-last", action="store_true", help="your runs use channels_last")
    parser.add_argument("--devices", type=int, default=1, help="devices (default 1)")
    parser.add_argument("--batch-size", type=int,
                        help=f"per device (default: {per_target('batch_size')})")
    parser.add_argument("--image-size", type=int,
                        help=f"image side in px (default: {per_target('image_size')})")
    parser.add_argument("--budget", type=float, help="seconds for the whole ladder (default: "
                        f"{per_target('budget_s')}); each run's time budget is sized from it")
    parser.add_argument("--repeats", type=int,
                        help=f"runs per rung (default: {per_target('repeats')})")
    parser.add_argument("--device", choices=["auto", "cuda", "cpu"], default="auto")
    parser.add_argument("--campaign", default="", help="campaign name (default "
                        "diagnose-MODEL-TAG, TAG naming the settings: the same command "
                        "resumes its campaign, other settings get their own)")
    parser.add_argument("--outputs", default="outputs", help="results root (default: outputs)")
    parser.add_argument("--executor", choices=["local", "slurm"], default="local")
    parser.add_argument("--partition", help="SLURM partition (slurm executor)")
    parser.add_argument("--account", help="SLURM account (slurm executor)")
    parser.add_argument("--time-min", type=int, help="SLURM time limit per point in minutes")
    parser.add_argument("--no-report", action="store_true", help="do not build the report page")
    parser.set_defaults(func=run)


def _executor(args: argparse.Namespace):
    from benchlib.inputs.config import ConfigError
    from benchlib.inputs.executors import LocalExecutor, apply_overrides

    slurm = {"partition": args.partition, "account": args.account, "time_min": args.time_min}
    if args.executor != "slurm":
        if any(v is not None for v in slurm.values()):
            raise ConfigError("--partition, --account and --time-min need --executor slurm")
        return None
    return apply_overrides(LocalExecutor(), "slurm", **slurm)


def run(args: argparse.Namespace) -> int:
    """Plan, run and analyse the ladder; print the answer and where the page is."""
    from benchlib.publish.diagnose import diagnose

    options = {"benchmark": args.benchmark, "num_workers": args.workers,
               "precision": args.precision, "channels_last": args.channels_last,
               "num_devices": args.devices, "batch_size": args.batch_size,
               "image_size": args.image_size, "budget_s": args.budget, "repeats": args.repeats,
               "device": args.device, "campaign": args.campaign}
    start = time.perf_counter()
    result = diagnose(args.model, args.data_dir, args.outputs, _executor(args),
                      report=not args.no_report,
                      **{k: v for k, v in options.items() if v is not None})
    print()
    print(result)
    where = Path(args.outputs) / result.campaign_dir.name
    print(f"\nruns in {where}; took {time.perf_counter() - start:.0f} s")
    if result.page is not None:
        print(f"page: {where / 'report' / result.page.name}")
    return 0
