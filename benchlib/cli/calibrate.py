"""``benchlib calibrate``: an A/A calibration: the same params file run as several campaigns
back to back, indexed into the catalog, and each configuration's noise between campaigns on
this node, which ``benchlib compare`` then reads from the catalog."""

from __future__ import annotations

import argparse
from pathlib import Path

from benchlib.cli import options
from benchlib.cli.base import Command, show, wrapped
from benchlib.cli.documents import add_option
from benchlib.errors import InputError

#: The most rounds one calibration runs.
MAX_ROUNDS = 50


class Calibrate(Command):
    name = "calibrate"
    help = ("run a params file as several campaigns (A/A) and store each configuration's noise "
            "between campaigns in the catalog")
    description = ("Runs PARAMS --rounds times, one campaign after another (named "
                   "<campaign>-aa<stamp>-<round>), indexes them into the catalog (--db, else "
                   "$BENCHLIB_DB, else outputs/catalog.sqlite) and prints, per configuration and "
                   "node, the noise between campaigns: how much a whole campaign moves (clocks, "
                   "caches, thermal state, what ran before), which runs inside one campaign do "
                   "not show. benchlib compare reads it from the catalog to judge one campaign "
                   "against another (docs/acceptance.md).")
    epilog = ("exit status:\n"
              "  0  every round ran and the noise is printed\n"
              "  1  a point failed (the noise is printed from the campaigns that ran)\n"
              "  2  bad input (params file, --rounds, --db)\n"
              "  3  nothing calibrated: no configuration had enough campaigns with an\n"
              "     undisturbed speed (NOTHING CALIBRATED)")

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:

        parser.add_argument("params", help="params YAML (see params/demo.yaml)")
        parser.add_argument("--rounds", type=int, default=5,
                            help=f"campaigns to run, 3 to {MAX_ROUNDS} (default 5)")
        parser.add_argument("--outputs", default="outputs", help="results root (default: outputs)")
        options.add_db(parser, "the catalog the campaigns are indexed into")
        parser.add_argument("--quiet", action="store_true", help="no progress bar")
        add_option(parser)

    @classmethod
    def run(cls, args: argparse.Namespace) -> int:
        """Run the rounds, index them, print the noise per configuration and node."""
        import time

        from benchlib.analysis import gate
        from benchlib.analysis.campaign_noise import MIN_CAMPAIGNS
        from benchlib.catalog import database, ingest
        from benchlib.execute.executor import executor_for
        from benchlib.inputs.params import load_sweep
        from benchlib.vocabulary import PointState

        if not MIN_CAMPAIGNS <= args.rounds <= MAX_ROUNDS:
            raise InputError(f"--rounds {args.rounds}: give {MIN_CAMPAIGNS} to {MAX_ROUNDS} "
                             f"(the noise between campaigns needs at least {MIN_CAMPAIGNS})")
        sweep = load_sweep(args.params)
        outputs = Path(args.outputs)
        if outputs.exists() and not outputs.is_dir():
            raise InputError(f"--outputs {args.outputs}: a file, not a folder (give the results "
                             "root the campaigns are written under)")
        catalog = database.resolve(args.db)
        ingest.index([], catalog, say=lambda _: None)  # usable before hours of rounds, or exit 2
        stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
        names = [f"{sweep.campaign[:40]}-aa{stamp}-{i}" for i in range(1, args.rounds + 1)]
        failed = False
        for number, name in enumerate(names, 1):
            print(f"calibrate: round {number} of {args.rounds}: campaign {name}", flush=True)
            round_sweep = load_sweep(args.params, campaign=name)
            states = executor_for(round_sweep.spec.executor).submit_and_wait(
                round_sweep, outputs, progress=not args.quiet)
            failed |= PointState.FAILED in (states or [])
        folders = [outputs / name for name in names]
        summary = ingest.index(folders, catalog, say=lambda _: None)
        show(summary.line(catalog))
        noise = noise_rows(folders)
        lines, measured = noise_lines(noise)
        for line in lines:
            show(wrapped(line, indent="      "))
        if not measured:
            show(wrapped("NOTHING CALIBRATED: no configuration has the campaigns with an "
                         "undisturbed speed that a noise between campaigns needs; compare "
                         "reads nothing from these rounds (calibrate on an idle node)",
                         indent="      "))
        said = [gate.MEASURED if measured else gate.NOTHING_JUDGED,
                *([gate.POINT_FAILED] if failed else [])]
        code = gate.exit_code("calibrate", said)
        if args.json:
            from benchlib.cli.documents import render

            render.write(args, render.calibrate(
                folders, catalog.shown, summary.line(catalog), failed, noise or [], code))
        return code


def noise_rows(folders: list[Path]) -> list[dict[str, object]] | None:
    """Per configuration and node of the campaigns in ``folders``: the noise between them
    (``sd``, over ``campaigns``; None: too few campaigns with an undisturbed speed) and the
    half-width of the 95 % interval of one campaign against another that it makes
    (``half_width``), its ``runs`` and the ``disturbed`` ones left out; None where no run
    finished."""
    import pandas as pd

    import benchlib
    from benchlib.analysis import campaign_noise, comparisons, intervals
    from benchlib.history.series import series

    runs = comparisons.benchmarks(pd.concat([benchlib.load(f) for f in folders],
                                            ignore_index=True))
    if runs.empty or "throughput" not in runs:
        return None
    found = []
    for (name, node), group in series(runs).groupby(["configuration", "node"], sort=False):
        noise = campaign_noise.from_history(group, "throughput", [node], node_column="node")
        found.append({"configuration": name, "node": node, "runs": len(group),
                      "disturbed": int(group["disturbed"].sum()),
                      "sd": None if noise is None else noise.sd,
                      "campaigns": None if noise is None else noise.campaigns,
                      "half_width": None if noise is None else
                      intervals.t_quantile(0.95, noise.dof) * 2 ** 0.5 * noise.sd})
    return found


def noise_lines(found: list[dict[str, object]] | None) -> tuple[list[str], int]:
    """:func:`noise_rows` in words, one line per configuration and node; and how many
    configuration x node noises were measured (0: nothing calibrated)."""
    if found is None:
        return ["no finished runs: nothing to calibrate"], 0
    lines = ["noise between campaigns per configuration and node (the standard deviation of a "
             "campaign's mean speed), and the 95 % interval of one campaign against another "
             "it makes:"]
    for row in found:
        where, disturbed = f"  {row['configuration']} on {row['node']}", row["disturbed"]
        left = (f" ({disturbed} of {row['runs']} runs contended or throttled, left out: "
                "calibrate on an idle node)" if disturbed else "")
        if row["sd"] is None:
            lines.append(f"{where}: too few campaigns with an undisturbed speed{left}")
        else:
            lines.append(f"{where}: {row['sd']:.1%} over {row['campaigns']} campaigns; "
                         f"one campaign against another: +-{row['half_width']:.1%}{left}")
    return lines, sum(row["sd"] is not None for row in found)
