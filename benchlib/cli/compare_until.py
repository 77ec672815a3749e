"""``benchlib compare BASE NEW --until-decided PARAMS``: the campaigns of NEW that an undecided
comparison asks for, each PARAMS swept once more into NEW's folder (its own campaign name)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

from benchlib.errors import InputError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``--until-decided PARAMS`` and ``--max-campaigns N``."""
    from benchlib.analysis.until_decided import MAX_CAMPAIGNS

    parser.add_argument("--until-decided", metavar="PARAMS", help="while a configuration is "
                        "undecided, sweep PARAMS (NEW's params file) once more into NEW's "
                        "folder as one more campaign of NEW and judge again")
    parser.add_argument("--base-params", metavar="PARAMS", help="--until-decided: BASE's "
                        "params file, swept into BASE's folder where more campaigns of each "
                        "side would tell (only where BASE can run here again: a setting, not "
                        "older code)")
    parser.add_argument("--max-campaigns", type=int, default=5, metavar="N",
                        help=f"--until-decided: most campaigns added (default 5, 1 to "
                        f"{MAX_CAMPAIGNS})")


Campaigns = Callable[[int], pd.DataFrame]


def campaigns_of(args: argparse.Namespace) -> tuple[Campaigns | None, Campaigns | None]:
    """The k-th further campaign of NEW, and of BASE (``--base-params``), each swept into its
    side's folder and loaded ((None, None) without --until-decided); the params files and the
    options checked before anything runs."""
    from benchlib.analysis.until_decided import MAX_CAMPAIGNS

    if args.until_decided is None:
        if args.base_params is not None:
            raise InputError("--base-params: give it with --until-decided")
        return None, None
    if args.base_selection is not None or args.new_selection is not None:
        raise InputError("--until-decided: give two folders (BASE NEW): further campaigns of "
                         "NEW are swept into NEW's folder")
    if not 1 <= args.max_campaigns <= MAX_CAMPAIGNS:
        raise InputError(f"--max-campaigns {args.max_campaigns}: give 1 to {MAX_CAMPAIGNS}")
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S")
    return (_sweeps(args.until_decided, Path(args.new), stamp),
            _sweeps(args.base_params, Path(args.base), stamp) if args.base_params else None)


def _sweeps(params: str, folder: Path, stamp: str) -> Campaigns:
    """The k-th campaign of ``params`` swept into ``folder`` (``<campaign>-more<stamp>-<k>``)
    and its records; the params file read now (a bad one: exit 2 before any campaign)."""
    from benchlib.execute.executor import executor_for
    from benchlib.inputs.params import load_sweep
    from benchlib.records.results import load

    first = load_sweep(params)

    def more(k: int) -> pd.DataFrame:
        sweep = load_sweep(params, campaign=f"{first.campaign}-more{stamp}-{k}")
        executor_for(sweep.spec.executor).submit_and_wait(sweep, folder, progress=False)
        return load(folder / sweep.campaign)

    return more


def said(added: int, undecided_left: int) -> str:
    """What the added campaigns came to, in one line."""
    runs = f"{added} more campaign{'' if added == 1 else 's'} of NEW"
    if undecided_left:
        return (f"--until-decided: {runs} (the most asked for) and {undecided_left} "
                f"configuration{'' if undecided_left == 1 else 's'} still undecided")
    return f"--until-decided: decided after {runs}" if added else \
        "--until-decided: decided without another campaign"
