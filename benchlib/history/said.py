"""What ``benchlib history`` prints of :class:`~benchlib.history.series.ChangePoints`: one line
per change point, the notes (runs dated after now, outliers, too early, shifts not listed), the
summary of what was looked at and left out, and NOTHING JUDGED where no history could be."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from benchlib.records.values import one_line
from benchlib.vocabulary import CompareVerdict

if TYPE_CHECKING:
    from benchlib.history.series import ChangePoints


def _percent(ratio: float) -> str:
    return f"{(ratio - 1) * 100:+.0f} %"


def change(row: dict[str, object]) -> str:
    """The change at a change point in words: ``-12 % (-14 % to -10 %)`` (after / before,
    its 95 % interval), ``(interval unknown)`` without one."""
    ratio, low, high = (float(row[k]) for k in ("ratio", "low", "high"))
    interval = (f" ({_percent(low)} to {_percent(high)})" if np.isfinite(low) and np.isfinite(high)
                else " (interval unknown)")
    return f"{_percent(ratio)}{interval}"


def line(row: dict[str, object], metric: str = "throughput", unit: str = "") -> str:
    """``throughput -12 % (-14 % to -10 %) on node017 from 2026-09-26: 812 -> 715 images/s
    (regression; batch_size=64; 25 + 15 campaigns, 75 + 45 runs, p = 1e-21); changed then:
    driver 580.65 -> 580.82``."""
    when = _day(row["time"])
    changed = row["changed"] or "nothing recorded"
    return one_line(
        f"{metric} {change(row)} on {row['node']} from {when}: "
        f"{float(row['before']):.4g} -> {float(row['after']):.4g}{' ' + unit if unit else ''} "
        f"({row['verdict']}; {row['configuration']}; {row['campaigns_before']} + "
        f"{row['campaigns_after']} campaigns, {row['runs_before']} + {row['runs_after']} runs, "
        f"p = {float(row['pvalue']):.1g}); changed then: {changed}")


def _day(time: object) -> str:
    return pd.Timestamp(time).strftime("%Y-%m-%d") if pd.notna(time) else "?"


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def notes(found: ChangePoints) -> list[str]:
    """What was left out or is not yet a change, one line each: runs dated after now (named),
    outlier campaigns (named), the newest campaigns too few to tell, changes counted but not
    listed."""
    metric, threshold = found.metric, found.threshold
    out = [drift_line(row, metric) for row in found.drifts]
    for row in found.future[:5]:
        out.append(f"{_plural(row['runs'], 'run')} dated {_day(row['time'])} on {row['node']}, "
                   "after now (a wrong clock?): left out")
    if len(found.future) > 5:
        more = sum(row["runs"] for row in found.future[5:])
        out.append(f"{_plural(more, 'more run')} dated after now on other nodes or days: left out")
    for row in found.early:
        out.append(one_line(
            f"too early to tell: {metric} {_percent(row['ratio'])} on {row['node']} in the "
            f"newest {_plural(row['campaigns'], 'campaign')} (from {_day(row['time'])}; "
            f"{row['configuration']}); a change needs {found.min_size} "
            "campaigns after it"))
    odd = found.outliers
    if odd:
        shown = "; ".join(f"{row['node']} {_day(row['time'])} {_percent(row['ratio'])} "
                          f"({row['configuration']})" for row in odd[:5])
        out.append(one_line(
            f"{_plural(len(odd), 'outlier campaign')} left out (one odd campaign makes no "
            f"change point and moves none): {shown}{' ...' if len(odd) > 5 else ''}"))
    small, uncertain = found.small, found.uncertain
    if small:
        out.append(f"{_plural(small, 'shift')} under {threshold:.0%} not listed")
    if uncertain:
        out.append(f"{_plural(uncertain, 'possible shift')} not listed: the 95 % interval over "
                   f"the campaigns either side does not clear {threshold:.0%}")
    return out


def drift_line(row: dict[str, object], metric: str = "throughput") -> str:
    """``throughput drifts -0.3 % a week (-0.4 % to -0.2 %) on node007 since 2026-10-02: -4 %
    so far (-5 % to -3 %) over 58 campaigns (drift; ...; p = 1e-9)``: one finding, not a
    staircase of steps."""
    week = (f"{float(row['per_week']) * 100:+.2f} % a week ({float(row['low']) * 100:+.2f} % to "
            f"{float(row['high']) * 100:+.2f} %)")
    return one_line(
        f"{metric} drifts {week} on {row['node']} since {_day(row['time'])}: "
        f"{_percent(1 + float(row['so_far']))} so far ({_percent(1 + float(row['so_far_low']))} "
        f"to {_percent(1 + float(row['so_far_high']))}) over {row['campaigns']} campaigns "
        f"({row['verdict']}; {row['configuration']}; p = {float(row['pvalue']):.1g})")


def lines(found: ChangePoints) -> list[str]:
    """One :func:`line` per change point, :func:`notes`, then what was looked at and left
    out."""
    table, metric = found.table, found.metric
    out = [line(row, metric, found.unit) for row in table.to_dict("records")]
    out += notes(found)
    disturbed, failed = found.disturbed, found.failed
    regressions = int((table["verdict"] == CompareVerdict.REGRESSION).sum())
    histories = found.series
    out.append(f"{_plural(len(table), 'change point')} ({_plural(regressions, 'regression')}) in "
               f"{histories} configuration x node histor{'y' if histories == 1 else 'ies'} of "
               f"{_plural(found.campaigns, 'campaign')} ("
               + (f"{found.points} points, one per campaign in each history; "
                  if found.points != found.campaigns else "")
               + f"{_plural(found.runs, 'run')} in all; "
               f"{_plural(disturbed, 'disturbed run')} (contended, throttled) left out"
               + (f"; {_plural(failed, 'failed run')} (failed, or {metric} 0, negative or "
                  "missing) left out" if failed else "")
               + f"); {found.ordered_by}")
    if not found.judged:
        out.append(nothing_judged(found))
    return out


def nothing_judged(found: ChangePoints) -> str:
    """Why no history could be judged (none has the ``2 * min_size`` undisturbed campaigns a
    change point needs): the line that makes ``benchlib history`` exit 3, not 0."""
    left = [f"{_plural(count, f'{what} run')} left out" for count, what in
            ((found.disturbed, "disturbed"), (found.failed, "failed"),
             (sum(row["runs"] for row in found.future), "future-dated")) if count]
    return one_line(
        f"NOTHING JUDGED: no configuration x node history has the {2 * found.min_size} "
        "campaigns of finished, undisturbed runs a change point needs"
        + (f" ({', '.join(left)})" if left else "")
        + "; no regression is ruled out: run more campaigns, on an idle node")
