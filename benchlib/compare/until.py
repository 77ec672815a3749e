"""``benchlib compare BASE NEW --until-decided PARAMS``: the campaigns an undecided comparison
asks for, each PARAMS swept once more into NEW's folder (and ``--base-params`` into BASE's)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

from benchlib.errors import InputError

Campaigns = Callable[[int], pd.DataFrame]
#: Rounds ``--until-decided`` runs unless ``--max-campaigns`` says otherwise.
DEFAULT_ROUNDS = 5


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``--until-decided PARAMS``, ``--base-params PARAMS`` and ``--max-campaigns N``."""
    from benchlib.compare.until_decided import MAX_CAMPAIGNS

    parser.add_argument("--until-decided", metavar="PARAMS", help="while a configuration is "
                        "undecided, sweep PARAMS (the params file NEW was swept from) once more "
                        "into NEW's folder as one more campaign of NEW and judge again")
    parser.add_argument("--base-params", metavar="PARAMS", help="--until-decided: BASE's "
                        "params file, swept into BASE's folder where more campaigns of each "
                        "side would tell (only where BASE can run here again: a setting, not "
                        "older code)")
    parser.add_argument("--max-campaigns", type=int, metavar="N",
                        help=f"--until-decided: most rounds, each a campaign of NEW (and one "
                        f"of BASE where asked) (default {DEFAULT_ROUNDS}, 1 to {MAX_CAMPAIGNS})")


def check_options(args: argparse.Namespace) -> None:
    """The options checked before anything is read (exit 2 naming the option)."""
    from benchlib.compare.until_decided import MAX_CAMPAIGNS

    if args.until_decided is None:
        for given, name in ((args.base_params, "--base-params"),
                            (args.max_campaigns, "--max-campaigns")):
            if given is not None:
                raise InputError(f"{name}: give it with --until-decided")
        return
    if args.base_selection is not None or args.new_selection is not None:
        raise InputError("--until-decided: give two folders (BASE NEW): further campaigns of "
                         "NEW are swept into NEW's folder")
    args.max_campaigns = DEFAULT_ROUNDS if args.max_campaigns is None else args.max_campaigns
    if not 1 <= args.max_campaigns <= MAX_CAMPAIGNS:
        raise InputError(f"--max-campaigns {args.max_campaigns}: give 1 to {MAX_CAMPAIGNS}")


def campaigns_of(args: argparse.Namespace, base: pd.DataFrame, new: pd.DataFrame,
                 added: list[str]) -> tuple[Campaigns | None, Campaigns | None]:
    """The k-th further campaign of NEW, and of BASE (``--base-params``), each swept into its
    side's folder, named in ``added`` (``new/<campaign>``) and loaded ((None, None) without
    --until-decided); the params files (the campaigns NEW and BASE hold) and the machine
    checked before anything runs."""
    if args.until_decided is None:
        return None, None
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S")
    return (_sweeps("--until-decided", args.until_decided, new, Path(args.new), stamp, added),
            _sweeps("--base-params", args.base_params, base, Path(args.base), stamp, added)
            if args.base_params else None)


def _sweeps(option: str, params: str, side: pd.DataFrame, folder: Path, stamp: str,
            added: list[str]) -> Campaigns:
    """The k-th campaign of ``params`` swept into ``folder`` (``<campaign>-more<stamp>-<k>``),
    indexed where $BENCHLIB_DB says, and its records. Refused now (exit 2, nothing run) when
    the params file is not the one the side's campaigns came from, or this machine cannot run
    it (no CUDA for device cuda, no sbatch for a Slurm executor)."""
    from benchlib.catalog import index_quietly
    from benchlib.execute.executor import executor_for
    from benchlib.inputs.params import load_sweep
    from benchlib.records.results import load

    first = load_sweep(params)
    held = sorted(set(side.get("campaign", pd.Series(dtype=object)).dropna().astype(str)))
    if not any(c == first.campaign or c.startswith(f"{first.campaign}-more") for c in held):
        raise InputError(f"{option} {params}: its campaign {first.campaign!r} is none of "
                         f"{folder}'s ({', '.join(held[:5]) or 'none'}): give the params file "
                         "that folder's runs were swept from, so that its campaigns pair with "
                         "them")
    executor_for(first.spec.executor).check_runnable(first, folder)

    def more(k: int) -> pd.DataFrame:
        sweep = load_sweep(params, campaign=f"{first.campaign}-more{stamp}-{k}")
        added.append(f"{'base' if option == '--base-params' else 'new'}/{sweep.campaign}")
        executor_for(sweep.spec.executor).submit_and_wait(sweep, folder, progress=False)
        index_quietly(folder / sweep.campaign)
        return load(folder / sweep.campaign)

    return more


def said(added: int, undecided_left: int) -> str:
    """What the rounds of added campaigns came to, in one line."""
    rounds = f"{added} round{'' if added == 1 else 's'} of campaigns"
    if undecided_left:
        return (f"--until-decided: {rounds} (--max-campaigns) and {undecided_left} "
                f"configuration{'' if undecided_left == 1 else 's'} still undecided")
    if added:
        return f"--until-decided: no configuration undecided after {rounds}"
    return "--until-decided: no configuration undecided: no campaign added"
