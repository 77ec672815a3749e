"""``benchlib compare``: NEW against BASE per configuration, with intervals from the repeats."""

from __future__ import annotations

import argparse
import os

import benchlib.cli.options as options
from benchlib.cli.base import Command, relative, show, wrapped
from benchlib.cli.documents import add_option
from benchlib.compare import until as compare_until
from benchlib.compare.output import energy_compared, show_compared, show_energy
from benchlib.errors import InputError
from benchlib.vocabulary import DEFAULT_THRESHOLD


class Compare(Command):
    name = "compare"
    help = "NEW against BASE per configuration (exit 1 on a significant regression)"
    description = ("Pairs runs by configuration; NEW's speed relative to BASE with a 95 % "
                   "interval in which the campaign is the unit of noise: its noise between "
                   "campaigns from the catalog (--db, $BENCHLIB_DB; benchlib calibrate), else a "
                   "verdict needs the whole interval beyond 15 % (docs/acceptance.md).")
    epilog = ("verdicts: regression, improvement, no change (the interval within 1 -+\n"
              "threshold); undecided (it holds both: the line says how many more campaigns\n"
              "would tell); unknown (fewer than 2 runs a side: set repeats: 3); unreliable\n"
              "(a run was contended or throttled).\n\n"
              "Beside the speed: energy efficiency (samples per joule: images/J, ...) NEW /\n"
              "BASE with the same interval, unknown where energy was not measured; it does\n"
              "not change the exit status.\n\n"
              "--until-decided PARAMS: while a configuration is undecided, PARAMS (the params\n"
              "file NEW was swept from) is swept once more into NEW's folder as a campaign of\n"
              "its own name, with --base-params also BASE's where each side needs more, and\n"
              "judged again, at most --max-campaigns rounds.\n\n"
              "exit status:\n"
              "  0  every configuration in common was judged and none regressed\n"
              "  1  a configuration of reliable runs regressed\n"
              "  2  bad input (folders, selections and their keys, --metric, --threshold;\n"
              "     one campaign twice; campaigns of different benchmarks or units)\n"
              "  3  nothing regressed, but some configurations cannot be certified (undecided,\n"
              "     unknown or unreliable: the UNDECIDED and CANNOT CERTIFY lines say which,\n"
              "     why and what would tell),\n"
              "     or none was judged (no configuration in common: NOTHING CERTIFIED)")

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:

        parser.add_argument("base", nargs="?", help="the baseline results folder")
        parser.add_argument("new", nargs="?", help="the results folder to judge")
        parser.add_argument("--base", dest="base_selection", metavar="SELECTION",
                            help="instead of folders: the baseline's records in the catalog, "
                            "as KEY=VALUE words (\"cluster=jade2 gpu=V100\", \"since=2026-09-"
                            "01 until=2026-09-08\"); KEY a record column (docs/record.md)")
        parser.add_argument("--new", dest="new_selection", metavar="SELECTION",
                            help="the records to judge, as --base")
        options.add_db(parser, "the catalog --base and --new select from")
        parser.add_argument("--threshold", type=float, default=DEFAULT_THRESHOLD,
                            help=f"smallest slowdown counted as a regression (default {DEFAULT_THRESHOLD})")
        parser.add_argument("--metric", default="throughput",
                            help="numeric measurement column compared (default throughput; "
                                 "where lower is better, times and memory, BASE / NEW)")
        parser.add_argument("--junit", help="also write the verdicts as JUnit XML to this file "
                            "(a device or FIFO such as /dev/stdout is written in place)")
        compare_until.add_arguments(parser)
        add_option(parser)

    @classmethod
    def run(cls, args: argparse.Namespace) -> int:
        """Print the comparison and its summary; the exit status the epilog lists."""
        import pandas as pd

        from benchlib.analysis import gate, junit
        from benchlib.analysis.metrics import check_metric
        from benchlib.analysis.selection import comparison_history
        from benchlib.compare import regression
        from benchlib.compare.until_decided import undecided, until_decided
        from benchlib.records.paths import check_output_file, check_results_path, load_records

        if not 0 <= args.threshold < 1:
            raise InputError(f"--threshold {args.threshold}: give a fraction from 0 to 1 (0.05 = 5 %)")
        check_output_file("--junit", args.junit)
        compare_until.check_options(args)
        if args.base_selection is not None or args.new_selection is not None:
            (base_name, base), (new_name, new) = selections(args)
        else:
            if not (args.base and args.new):
                raise InputError("compare: give two results folders (BASE NEW), or two "
                                 "selections of the catalog (--base ... --new ...)")
            for path in (args.base, args.new):
                check_results_path(path)
            if all(map(os.path.exists, (args.base, args.new))) and os.path.samefile(args.base,
                                                                                      args.new):
                raise InputError(f"compare: {args.base} and {args.new} are the same folder: a "
                                 "campaign compared with itself certifies nothing; give the "
                                 "baseline campaign and the campaign to judge")
            (base_name, base), (new_name, new) = ((args.base, load_records(args.base)),
                                                  (args.new, load_records(args.new)))
        check_metric(args.metric, {base_name: base, new_name: new})
        swept: list[str] = []  # the campaigns --until-decided sweeps
        more, more_base = compare_until.campaigns_of(args, base, new, swept)
        history = comparison_history(base, new, args.db)
        if more is None:
            comparison = regression.compare(base, new, metric=args.metric,
                                            threshold=args.threshold, history=history)
        else:
            comparison, added = until_decided(base, new, more, args.max_campaigns,
                                              metric=args.metric, threshold=args.threshold,
                                              history=history, more_base=more_base, say=show)
            show(compare_until.said(added, len(undecided(comparison))))
        compared = comparison.table  # one row per configuration
        written = args.junit and junit.write(args.junit, "benchlib compare", regression.junit_cases(
            compared.assign(configuration=relative(compared["configuration"])), args.metric))
        for warning in comparison.warnings:
            show(wrapped(f"warning: {warning}"))
        show_compared(comparison)
        show("\n".join(wrapped(line, indent="    ") for line in regression.summary(comparison)))
        efficiency = energy_compared(base, new, args.threshold)
        show_energy(base, new, args.threshold, efficiency)
        if written:
            print(f"JUnit XML: {written}")
        code = gate.exit_code("compare", compared.get("verdict", pd.Series(dtype=object)))
        if args.json:
            from benchlib.cli.documents import render

            render.write(args, render.compare(
                comparison, efficiency, (str(base_name), str(new_name)), args.junit, code,
                swept))
        return code


def selections(args: argparse.Namespace) -> list[tuple[str, object]]:
    """``--base`` and ``--new``: each one's name and records (folders as well: bad input)."""
    from benchlib.catalog.select import pair

    if args.base or args.new:
        raise InputError("compare: give two folders or two selections (--base, --new), not "
                         "both")
    return pair(args.db, args.base_selection, args.new_selection)
