"""The ``benchlib`` command: sweep, data, results, report."""

from __future__ import annotations

import argparse
import logging
import sys
import traceback
from pathlib import Path

from benchlib.errors import (
    EXIT_BAD_INPUT,
    EXIT_FAILURE,
    BenchlibError,
    describe_os_error,
)
from benchlib.inputs.config import ConfigError
from benchlib.inputs.yaml_input import MAX_POINTS
from benchlib.vocabulary import CheckVerdict, PointState


def _sweep(args: argparse.Namespace) -> int:
    from benchlib.execute.sweep import point_status, run_sweep, summarize_outcomes
    from benchlib.inputs.executors import apply_overrides
    from benchlib.inputs.params import load_sweep

    sweep = load_sweep(args.params, max_points=args.max_points)
    outputs = Path(args.outputs)
    slurm_options = {"partition": args.partition, "account": args.account, "qos": args.qos,
                     "time_min": args.time_min, "cpus_per_device": args.cpus_per_device}
    kind = args.executor or sweep.spec.executor.kind
    if kind != "slurm" and any(v is not None for v in slurm_options.values()):
        raise ConfigError("--partition, --account, --qos, --time-min and --cpus-per-device need "
                          "the slurm executor "
                          "(executor: {kind: slurm} in the params file, or --executor slurm)")
    executor = apply_overrides(sweep.spec.executor, args.executor, **slurm_options)
    if args.dry_run:
        print(f"campaign {sweep.campaign}: {len(sweep.points)} points -> {outputs / sweep.campaign}")
        for point in sweep.points:
            status = point_status(outputs / sweep.campaign / f"{point.name}.ipynb")
            changed = {k: v for k, v in point.parameters.items() if k in sweep.spec.grid}
            print(f"  {status:8} {point.name}  {changed}")
        return 0
    if executor.kind == "slurm":
        return _submit(sweep, executor, outputs, args)
    outcomes = run_sweep(sweep, outputs, force=args.force, retry_failed=args.retry_failed,
                         progress=not args.quiet)
    print(summarize_outcomes(outcomes))
    for outcome in outcomes:
        if outcome.status == PointState.FAILED:
            print(f"  failed {outcome.point.name}: {outcome.error}")
    print(f"executed notebooks and records in {outputs / sweep.campaign}")
    return 1 if args.strict and any(o.status == PointState.FAILED for o in outcomes) else 0


def _submit(sweep, executor, outputs: Path, args: argparse.Namespace) -> int:
    from benchlib.execute.campaign import format_status, wait
    from benchlib.execute.slurm_sweep import RequestTooLarge, SubmissionError, submit_sweep

    campaign_dir = (outputs / sweep.campaign).resolve()
    try:
        submission = submit_sweep(sweep, executor, outputs, force=args.force,
                                  retry_failed=args.retry_failed)
    except RequestTooLarge as error:
        print(f"error: no node of the partition can run these points; nothing was submitted:\n"
              f"{error}", file=sys.stderr)
        return 2
    except SubmissionError as error:
        print(f"error: sbatch refused the job array; nothing was submitted:\n{error}",
              file=sys.stderr)
        return 2
    skipped = {}
    for reason in submission.skipped.values():
        skipped[reason] = skipped.get(reason, 0) + 1
    left = "; ".join(f"{n} {reason}" for reason, n in skipped.items())
    arrays = f"job array{'s' if len(submission.arrays) > 1 else ''} {', '.join(submission.arrays)}"
    print(f"submitted {len(submission.jobs)} of {len(submission.points)} points"
          + (f" as {arrays}" if submission.arrays else "")
          + (f" to partition {executor.partition}" if executor.partition and submission.arrays else "")
          + (f"; left alone: {left}" if left else ""))
    if not args.wait:
        print(f"follow with: benchlib status {campaign_dir}")
        return 0
    table = wait(campaign_dir, [p.name for p in submission.points], poll_s=executor.poll_s,
                 progress=not args.quiet)
    print(format_status(campaign_dir, table))
    return 1 if args.strict and any(p.status == PointState.FAILED for p in table) else 0


def _status(args: argparse.Namespace) -> int:
    from benchlib.execute.campaign import campaign_status, format_status

    campaign_dir = Path(args.campaign_dir)
    table = campaign_status(campaign_dir)
    if not table:
        print(f"{campaign_dir}: no points (run benchlib sweep first)")
        return 1
    print(format_status(campaign_dir, table))
    return 0


def _data_imagefolder(args: argparse.Namespace) -> int:
    from benchlib.data.generate import write_imagefolder

    root = write_imagefolder(args.dir, classes=args.classes, images_per_class=args.images,
                             size=args.size, seed=args.seed)
    print(f"wrote {args.classes} x {args.images} JPEG images (~{args.size} px) to {root}")
    return 0


def _data_volume(args: argparse.Namespace) -> int:
    import math

    from benchlib.data.em_volume import write_em_volume
    from benchlib.data.volumes import LABEL_KEY, RAW_KEY, VolumeError, volume_format

    try:
        volume_format(args.path)
    except VolumeError as error:
        raise ConfigError(str(error)) from None
    if min(args.shape) < 1 or min(args.cell) < 1 or min(args.chunks) < 1:
        raise ConfigError("--shape, --cell and --chunks take three positive sizes (z y x)")
    shape = write_em_volume(args.path, args.shape, args.cell, args.chunks, args.seed,
                            "gzip" if args.compression == "gzip" else None,
                            progress=not args.quiet)
    print(f"wrote {RAW_KEY} (uint8) and {LABEL_KEY} (uint64), shape {list(shape)} "
          f"({math.prod(shape):,} voxels), to {args.path}")
    return 0


def _show(text: str) -> None:
    """Print record text; what the output's encoding cannot hold (a lone surrogate) as ``?``."""
    encoding = getattr(sys.stdout, "encoding", None) or "utf-8"
    print(text.encode(encoding, errors="replace").decode(encoding, errors="replace"))


def _results(args: argparse.Namespace) -> int:
    import pandas as pd

    from benchlib.records.csv_export import write_csv
    from benchlib.records.paths import check_output_file, load_records
    from benchlib.records.run_table import RunTable, readable

    check_output_file("--csv", args.csv)
    frame = RunTable(load_records(args.path))
    with pd.option_context("display.width", 200, "display.max_rows", 500,
                           "display.float_format", readable):
        _show(frame.tidy().to_string(index=False))
    _show(frame.note("--csv FILE writes every column"))
    if args.csv:
        write_csv(args.csv, frame)
        print(f"wrote {len(frame)} records to {args.csv}")
    return 0


def _report(args: argparse.Namespace) -> int:
    from benchlib.publish.report.build import ReportError, build_report

    try:
        index = build_report(args.campaign_dir, progress=not args.quiet,
                             baseline=args.baseline, references=args.references)
    except ReportError as error:
        print(f"error: report failed in {error}", file=sys.stderr)
        return 1
    print(f"report: {index}")
    return 0


def _check(args: argparse.Namespace) -> int:
    import pandas as pd

    from benchlib.analysis import junit, references
    from benchlib.records.paths import check_output_file, check_results_path, load_records

    check_output_file("--junit", args.junit)
    check_results_path(args.results)
    refs = (references.load_references(args.references) if args.references
            else references.shipped())
    frame = load_records(args.results)
    checked = references.check(frame, refs)
    shown = ["run", "configuration", "metric", "measured", "expected", "low", "high", "verdict",
             "reference", "flags"]
    with pd.option_context("display.width", 200, "display.max_rows", 1000,
                           "display.max_colwidth", 60):
        _show(checked[shown].to_string(index=False, na_rep=""))
    counts = checked["verdict"].value_counts()
    print(", ".join(f"{n} {verdict}" for verdict, n in counts.items()))
    for row in references.failed(checked).itertuples():
        _show(f"FAIL {row.run}: {row.message}")
    for row in checked[checked["verdict"] == CheckVerdict.UNRELIABLE].itertuples():
        _show(f"CANNOT CERTIFY {row.run}: {row.message}")
    if args.junit:
        print(f"JUnit XML: {junit.write(args.junit, 'benchlib check', references.junit_cases(checked))}")
    return references.exit_code(checked)


def _compare(args: argparse.Namespace) -> int:
    import pandas as pd

    from benchlib.analysis import junit, regression
    from benchlib.analysis.metrics import check_metric
    from benchlib.errors import InputError
    from benchlib.records.paths import check_output_file, check_results_path, load_records

    if not 0 <= args.threshold < 1:
        raise InputError(f"--threshold {args.threshold}: give a fraction from 0 to 1 (0.05 = 5 %)")
    check_output_file("--junit", args.junit)
    for path in (args.base, args.new):
        check_results_path(path)
    base, new = load_records(args.base), load_records(args.new)
    check_metric(args.metric, {args.base: base, args.new: new})
    compared = regression.compare(base, new, metric=args.metric, threshold=args.threshold)
    for warning in compared.attrs["warnings"]:
        _show(f"warning: {warning}")
    shown = [c for c in ("configuration", "base", "new", "ratio", "low", "high", "verdict",
                         "base_runs", "new_runs", "flags") if c in compared]
    print("NEW / BASE speed per configuration; low-high: 95 % interval from the repeats "
          "(Welch t over each side's runs); a within-run interval never decides")
    with pd.option_context("display.width", 200, "display.max_rows", 1000,
                           "display.max_colwidth", 70):
        _show(compared[shown].to_string(index=False, na_rep=""))
    for line in regression.summary(compared, args.threshold):
        _show(line)
    if args.junit:
        cases = regression.junit_cases(compared)
        print(f"JUnit XML: {junit.write(args.junit, 'benchlib compare', cases)}")
    return regression.exit_code(compared["verdict"]) if len(compared) else 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every subcommand."""
    parser = argparse.ArgumentParser(prog="benchlib", description=__doc__)
    parser.add_argument("--debug", action="store_true", help="show the traceback of an error")
    sub = parser.add_subparsers(dest="command", required=True)

    sweep = sub.add_parser("sweep", help="run a params file: one papermill notebook per point")
    sweep.add_argument("params", help="params YAML (see params/demo.yaml)")
    sweep.add_argument("--outputs", default="outputs", help="results root (default: outputs)")
    sweep.add_argument("--force", action="store_true", help="re-run points already done")
    sweep.add_argument("--retry-failed", action="store_true", help="re-run failed points only")
    sweep.add_argument("--dry-run", action="store_true", help="list the points and their status")
    sweep.add_argument("--strict", action="store_true", help="exit 1 if any point failed")
    sweep.add_argument("--quiet", action="store_true", help="no progress bar")
    sweep.add_argument("--executor", choices=["local", "slurm"],
                       help="override the params file's executor kind")
    sweep.add_argument("--partition", help="SLURM partition (slurm executor)")
    sweep.add_argument("--account", help="SLURM account (slurm executor)")
    sweep.add_argument("--qos", help="SLURM quality of service (slurm executor)")
    sweep.add_argument("--time-min", type=int, help="SLURM time limit per point in minutes")
    sweep.add_argument("--cpus-per-device", type=int, help="SLURM cores per device (default 8)")
    sweep.add_argument("--max-points", type=int, default=MAX_POINTS,
                       help=f"refuse a params file of more points (default {MAX_POINTS:,})")
    sweep.add_argument("--wait", action="store_true",
                       help="slurm executor: wait for the jobs, then print the status table")
    sweep.set_defaults(func=_sweep)

    status = sub.add_parser("status", help="done / running / pending / failed per point")
    status.add_argument("campaign_dir", help="outputs/<campaign>")
    status.set_defaults(func=_status)
    from benchlib.publish.diagnose_cli import add_parser  # argparse only: nothing heavy
    add_parser(sub)

    data = sub.add_parser("data", help="write sample data sets").add_subparsers(
        dest="kind", required=True)
    folder = data.add_parser("imagefolder", help="ImageNet-layout JPEG folder")
    folder.add_argument("dir")
    folder.add_argument("--classes", type=int, default=4)
    folder.add_argument("--images", type=int, default=16, help="images per class")
    folder.add_argument("--size", type=int, default=256, help="short side in px")
    folder.add_argument("--seed", type=int, default=0)
    folder.set_defaults(func=_data_imagefolder)

    volume = data.add_parser("volume", help="EM-like CREMI-layout volume (HDF5 .h5 or .zarr)")
    volume.add_argument("path", help="file.h5 / file.hdf5 (HDF5) or dir.zarr (zarr)")
    volume.add_argument("--shape", type=int, nargs=3, required=True, metavar=("Z", "Y", "X"))
    volume.add_argument("--cell", type=int, nargs=3, default=[6, 40, 40], metavar=("Z", "Y", "X"),
                        help="mean cell size in voxels (default: 6 40 40)")
    volume.add_argument("--chunks", type=int, nargs=3, default=[8, 128, 128],
                        metavar=("Z", "Y", "X"), help="storage chunks (default: 8 128 128)")
    volume.add_argument("--compression", choices=["none", "gzip"], default="none")
    volume.add_argument("--seed", type=int, default=0)
    volume.add_argument("--quiet", action="store_true", help="no progress bar")
    volume.set_defaults(func=_data_volume)

    results = sub.add_parser("results", help="print the records under a folder")
    results.add_argument("path")
    results.add_argument("--csv", help="also write every column to this CSV file (text that "
                         "starts like a spreadsheet formula gets a leading ')")
    results.set_defaults(func=_results)
    report = sub.add_parser("report", help="run the summary notebooks and export HTML")
    report.add_argument("campaign_dir", help="outputs/<campaign>")
    report.add_argument("--quiet", action="store_true", help="no progress bar")
    report.add_argument("--baseline", help="a baseline campaign folder: adds a page comparing "
                        "this campaign with it (regression / improvement / no change)")
    report.add_argument("--references", help="references YAML for the acceptance page "
                        "(default: the shipped published figures and datasheet ceilings)")
    report.set_defaults(func=_report)

    check = sub.add_parser(
        "check", help="check runs against references with tolerances (exit 1 when any fails)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="exit status:\n"
               "  0  every run with a reference was judged and none failed\n"
               "  1  a run failed its reference (or failed to run)\n"
               "  2  bad input (the results folder, the references file)\n"
               "  3  nothing failed, but some runs cannot be certified: they were contended\n"
               "     or throttled (the CANNOT CERTIFY lines say which and how to re-run)")
    check.add_argument("results", help="a results folder (outputs/<campaign>) or notebook")
    check.add_argument("--references", help="references YAML (default: the shipped published "
                       "figures and datasheet ceilings)")
    check.add_argument("--junit", help="also write the checks as JUnit XML to this file")
    check.set_defaults(func=_check)

    compare = sub.add_parser(
        "compare", help="NEW against BASE per configuration "
                        "(exit 1 on a significant regression beyond the threshold)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Pairs runs by configuration and gives NEW's speed relative to BASE with a "
                    "95 % interval made from each side's repeats (separate runs), never from "
                    "one run's own iterations.",
        epilog="verdicts: regression, improvement, no change; unknown (fewer than 2 runs a\n"
               "side: set repeats: 3); unreliable (a run was contended or throttled).\n\n"
               "exit status:\n"
               "  0  every configuration was judged and none regressed\n"
               "  1  a configuration of reliable runs regressed\n"
               "  2  bad input (folders, --metric, --threshold)\n"
               "  3  nothing regressed, but some configurations cannot be certified (unknown\n"
               "     or unreliable: the CANNOT CERTIFY lines say which, why and how to re-run)")
    compare.add_argument("base", help="the baseline results folder")
    compare.add_argument("new", help="the results folder to judge")
    compare.add_argument("--threshold", type=float, default=0.05,
                         help="smallest slowdown that counts as a regression (default 0.05)")
    compare.add_argument("--metric", default="throughput",
                         help="numeric measurement column compared (default throughput; "
                              "time_* columns count lower as better)")
    compare.add_argument("--junit", help="also write the verdicts as JUnit XML to this file")
    compare.set_defaults(func=_compare)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``benchlib`` console script.

    Exit codes: 0 success, 1 a failure while working (a point could not be written, the
    campaign is in use, ``--strict`` with failed points), 2 bad input (params file, paths,
    options), 3 ``check`` / ``compare``: nothing failed but some runs cannot be certified, 130
    interrupted. Errors print one message; ``--debug`` adds the traceback."""
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s: %(message)s")
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except BenchlibError as error:
        return _fail(args, str(error), error.exit_code)
    except FileNotFoundError as error:
        return _fail(args, str(error), EXIT_BAD_INPUT)
    except OSError as error:
        return _fail(args, describe_os_error(error), EXIT_FAILURE)
    except KeyboardInterrupt:
        return _fail(args, "interrupted", 130)
    except Exception as error:  # a bug: one line, the traceback with --debug
        return _fail(args, f"unexpected {type(error).__name__}: {error} (run again as "
                     "`benchlib --debug ...` for the traceback, and report it)", EXIT_FAILURE)


def _fail(args: argparse.Namespace, message: str, code: int) -> int:
    if getattr(args, "debug", False):
        traceback.print_exc()
    for line in message.splitlines() or [""]:
        print(f"error: {line}", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
