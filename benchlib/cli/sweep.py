"""``benchlib sweep``: run a params file, one papermill notebook per point, with its executor."""

from __future__ import annotations

import argparse
from pathlib import Path

from benchlib.cli.base import Command
from benchlib.inputs.yaml_input import MAX_POINTS
from benchlib.vocabulary import PointState


class Sweep(Command):
    name = "sweep"
    help = "run a params file: one papermill notebook per point"

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("params", help="params YAML (see params/demo.yaml)")
        parser.add_argument("--outputs", default="outputs", help="results root (default: outputs)")
        parser.add_argument("--campaign", metavar="NAME", help="the campaign's name (and its "
                            "folder under --outputs) in place of the params file's, e.g. "
                            "nightly-$(date -u +%%F) to name each night")
        parser.add_argument("--force", action="store_true", help="re-run points already done")
        parser.add_argument("--retry-failed", action="store_true",
                            help="re-run failed points only")
        parser.add_argument("--dry-run", action="store_true",
                            help="list the points and their status")
        parser.add_argument("--strict", action="store_true", help="exit 1 if any point failed")
        parser.add_argument("--quiet", action="store_true", help="no progress bar")
        parser.add_argument("--executor", metavar="KIND", help="where the points run, instead "
                            "of the params file's executor: local or slurm")
        parser.add_argument("--partition", help="SLURM partition (slurm executor)")
        parser.add_argument("--account", help="SLURM account (slurm executor)")
        parser.add_argument("--qos", help="SLURM quality of service (slurm executor)")
        parser.add_argument("--time-min", type=int, help="SLURM time limit per point in minutes")
        parser.add_argument("--cpus-per-device", type=int,
                            help="SLURM cores per device (default 8)")
        parser.add_argument("--max-points", type=int, default=MAX_POINTS,
                            help=f"refuse a params file of more points (default {MAX_POINTS:,})")
        parser.add_argument("--wait", action="store_true", help="slurm executor: wait for the "
                            "jobs, then print the status table")

    @classmethod
    def run(cls, args: argparse.Namespace) -> int:
        """List the points (``--dry-run``), or run them with the executor and say how it went."""
        from benchlib.execute.executor import executor_for
        from benchlib.execute.sweep import point_status
        from benchlib.inputs.executors import apply_overrides
        from benchlib.inputs.params import load_sweep

        sweep = load_sweep(args.params, max_points=args.max_points,
                           campaign=campaign_name(args.campaign))
        outputs = Path(args.outputs)
        settings = apply_overrides(
            sweep.spec.executor, args.executor, partition=args.partition, account=args.account,
            qos=args.qos, time_min=args.time_min, cpus_per_device=args.cpus_per_device)
        if args.dry_run:
            print(f"campaign {sweep.campaign}: {len(sweep.points)} points -> "
                  f"{outputs / sweep.campaign}")
            for point in sweep.points:
                status = point_status(outputs / sweep.campaign / f"{point.name}.ipynb")
                changed = {k: v for k, v in point.parameters.items() if k in sweep.spec.grid}
                print(f"  {status:8} {point.name}  {changed}")
            return 0
        from benchlib.catalog import index_quietly

        states = executor_for(settings).submit_and_wait(
            sweep, outputs, force=args.force, retry_failed=args.retry_failed, wait=args.wait,
            progress=not args.quiet)
        index_quietly(outputs / sweep.campaign)  # with $BENCHLIB_DB: the catalog follows
        return 1 if args.strict and PointState.FAILED in (states or []) else 0


def campaign_name(given: str | None) -> str | None:
    """``--campaign``'s name, checked as a params file's campaign is (InputError naming the
    option, exit 2); None when not given (the params file's then)."""
    from benchlib.errors import InputError
    from benchlib.inputs.config import check_campaign

    if given is None:
        return None
    try:
        return check_campaign(given)
    except ValueError as error:
        raise InputError(f"--campaign {error}") from None
