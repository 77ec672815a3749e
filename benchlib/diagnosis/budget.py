"""How ``benchlib diagnose`` spends its budget: how many runs, how long each, and when to stop
repeating.

Sequential repeats: every rung first runs :data:`INITIAL_REPEATS` times (three, so that Welch's
t has two to four degrees of freedom per step, four when the two rungs' spreads are alike, a
95 % quantile of 2.8 to 4.3: with two runs a side it has one or two, and its quantile of 4.3 to
12.7 made intervals span a factor of 8 on a shared CPU). Then rounds
of extra repeats run the rungs of the steps whose 95 % interval is still wider than
:data:`TARGET_FACTOR` (high over low of the step's ratio), until none is or the runs the budget
holds are spent. Half the budget (after the probe) is planned for the initial round, half for
the extra rounds (:data:`EXTRA_SHARE`); each run's time is sized from that, and the number of
runs the budget holds from the run's time. ``--repeats N`` fixes N runs per rung instead (no
extra rounds; each run's time sized so that they fill the budget).
"""

from __future__ import annotations

import math
from typing import NamedTuple

#: Seconds a point costs besides its timed loop (kernel start, imports, model, warm-up, record).
OVERHEAD_S = {"cpu": 15.0, "cuda": 20.0}
#: Seconds the time-budgeted node probe takes.
PROBE_S = {"cpu": 25.0, "cuda": 90.0}
#: Runs per rung in the initial round of sequential repeats.
INITIAL_REPEATS = 3
#: A step is decided when the high end of its 95 % interval (of its ratio of speeds) is at most
#: this many times its low end.
TARGET_FACTOR = 1.25
#: The budget after the probe is planned as this many initial rounds: one, and as much again
#: for the extra rounds.
EXTRA_SHARE = 2.0
#: Each run's time budget in seconds, at least and at most.
MIN_RUN_S, MAX_RUN_S = 2.0, 60.0


class Sizing(NamedTuple):
    """Runs per rung first (``repeats``), the most benchmark runs in all (``max_runs``) and
    each run's time budget (``run_time_s``)."""

    repeats: int
    max_runs: int
    run_time_s: float


def size(budget_s: float, target: str, rungs: int, fixed: int | None = None) -> Sizing:
    """How ``rungs`` benchmark rungs spend ``budget_s`` seconds on ``target`` (``cpu`` or
    ``cuda``): sequential repeats, or ``fixed`` runs per rung. When the budget cannot hold the
    initial round at the shortest run time, the initial round runs anyway (and nothing more)."""
    room = budget_s - PROBE_S[target]
    repeats = fixed or INITIAL_REPEATS
    first = repeats * rungs
    planned = first if fixed else EXTRA_SHARE * first
    run_time = round(min(MAX_RUN_S, max(MIN_RUN_S, room / planned - OVERHEAD_S[target])), 1)
    held = math.floor(room / (OVERHEAD_S[target] + run_time)) if room > 0 else 0
    return Sizing(repeats, first if fixed else max(first, held), run_time)


def estimate_s(target: str, runs: int, run_time_s: float, probe: bool = True) -> float:
    """Seconds ``runs`` benchmark runs of ``run_time_s`` (and the probe, with ``probe``) are
    expected to take."""
    return (PROBE_S[target] if probe else 0.0) + runs * (OVERHEAD_S[target] + run_time_s)
