"""``benchlib check``: runs against references with tolerances."""

from __future__ import annotations

import argparse

from benchlib.cli.base import Command, show, show_table, wrapped
from benchlib.cli.documents import add_option
from benchlib.vocabulary import CheckVerdict


class Check(Command):
    name = "check"
    help = "check runs against references with tolerances (exit 1 when any fails)"
    epilog = ("exit status:\n"
              "  0  every run with a reference was judged and none failed\n"
              "  1  a run failed its reference (or failed to run)\n"
              "  2  bad input (the results folder, the references file)\n"
              "  3  nothing failed, but some runs cannot be certified: they were contended\n"
              "     or throttled (the CANNOT CERTIFY lines say which and how to re-run), or\n"
              "     none was judged (no reference applies: NOTHING CERTIFIED)")

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("results", help="a results folder (outputs/<campaign>) or notebook")
        parser.add_argument("--references", help="references YAML (default: the shipped "
                            "published figures and datasheet ceilings)")
        parser.add_argument("--junit", help="also write the checks as JUnit XML to this file")
        add_option(parser)

    @classmethod
    def run(cls, args: argparse.Namespace) -> int:
        """Print every check and its verdict; the exit status the epilog lists."""
        import pandas as pd

        from benchlib import formatting
        from benchlib.analysis import gate, junit, references
        from benchlib.records.paths import check_output_file, check_results_path, load_records

        check_output_file("--junit", args.junit)
        check_results_path(args.results)
        refs = (references.load_references(args.references) if args.references
                else references.shipped())
        checked = references.check(load_records(args.results), refs)
        written = args.junit and junit.write(args.junit, "benchlib check",
                                             references.junit_cases(checked))  # before any print
        shown = ["run", "verdict", "measured", "expected", "low", "high", "metric", "ref", "flags",
                 "configuration"]  # fitted to the terminal: the text last, wrapped
        number = formatting.or_blank(lambda v: "none" if abs(v) == float("inf")  # unbounded
                                     else formatting.number(v))
        judged = checked[checked["verdict"] != CheckVerdict.NO_REFERENCE]
        table = judged.assign(ref=judged["reference_index"].map(
            lambda i: "" if pd.isna(i) else f"#{int(i)}"), **{  # figures as every table says them
            c: judged[c].map(number) for c in ("measured", "expected", "low", "high")})
        if len(table):
            with pd.option_context("display.max_rows", 1000, "display.max_colwidth", 40):
                show_table(table[shown], "configuration", fold=(
                    "verdict", "metric", "ref", "flags", "measured", "expected", "low", "high"))
        used = checked.dropna(subset=["reference_index"]).drop_duplicates("reference_index")
        for row in used.sort_values("reference_index").itertuples():  # the refs, once each
            show(wrapped(f"#{int(row.reference_index)}: {row.reference}"))
        unjudged = checked.loc[checked["verdict"] == CheckVerdict.NO_REFERENCE, "run"]
        if len(unjudged):  # named, not a table row each: nothing to show beside them
            show(wrapped(f"no reference ({len(unjudged)} run{'' if len(unjudged) == 1 else 's'}"
                         f"): {', '.join(unjudged)}"))
        counts = checked["verdict"].value_counts()
        print(", ".join(f"{n} {verdict}" for verdict, n in counts.items()))
        for row in references.failed(checked).itertuples():
            show(wrapped(f"FAIL {row.run}: {row.message}"))
        for row in checked[checked["verdict"] == CheckVerdict.UNRELIABLE].itertuples():
            show(wrapped(f"CANNOT CERTIFY {row.run}: {row.message}"))
        if not (checked["verdict"] == CheckVerdict.PASS).any() and not len(
                references.failed(checked)):
            show(wrapped("NOTHING CERTIFIED: no run was judged against a reference (give "
                         "references for this hardware and configuration with --references "
                         "FILE: docs/acceptance.md)"))
        if written:
            print(f"JUnit XML: {written}")
        code = gate.exit_code("check", checked["verdict"])
        if args.json:
            from benchlib.cli.documents import render

            render.write(args, render.check(
                checked, args.results, args.references, args.junit, code))
        return code
