"""Uncertainty: what a speed is known to within, and what decides that two speeds differ.

Two different intervals, never mixed up:

- **Within-run** (``throughput_low`` / ``throughput_high`` of a record, made by
  :func:`benchlib.records.run_interval.throughput_interval`):
  a percentile bootstrap of the mean iteration time over one run's own iterations. Those
  iterations drift together and say nothing about the next run in another process, so this
  interval is shown as "within-run" and never decides a verdict.
- **Between runs** (:func:`repeats_effect`, :func:`effect`): the ratio of two speeds with a
  95 % Welch t interval of the difference of mean log speeds, made from the *repeats* of each
  configuration (separate processes: ``repeats:`` in the params file). It assumes the repeats
  of one side are independent draws of a log-normal speed (multiplicative noise), and it
  allows the two sides different spreads. With fewer than two runs on a side nothing is known
  (``known`` False: "one run each: set repeats: 3 to know"); a factor's effect over several
  pairs of configurations is a one-sample t interval of their log ratios (the pairs' own
  spread is the uncertainty). See docs/measuring.md for the method and its A/A calibration.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from benchlib.records import flags

#: An interval whose high end is more than this multiple of its low end tells nothing either way.
INCONCLUSIVE_WIDTH = 1.5


#: Runs a side needs before a between-runs interval exists.
MIN_RUNS = 2
#: What to do when a side has too few runs.
REPEAT_ADVICE = "set repeats: 3 in the params file to know"


def t_quantile(level: float, df: float) -> float:
    from scipy import stats

    return float(stats.t.ppf(0.5 + level / 2, df))


def _logs(values: object) -> np.ndarray:
    """The logs of the positive, finite ``values`` (0, negatives and NaN left out, silently)."""
    found = np.asarray(values, dtype=float)
    found = found[np.isfinite(found) & (found > 0)]
    return np.log(found)


def geometric_mean(values: object) -> float:
    """The geometric mean of the positive, finite ``values`` (NaN when none): the typical speed
    of a side's repeats, as the ratios here see it."""
    logs = _logs(values)
    return float(np.exp(logs.mean())) if logs.size else float("nan")


#: The key of an effect's headline figure: the geometric mean of the ratios a / b (one pair: the
#: ratio of the two sides' geometric mean speeds). Pages, tables, plots, ``benchlib compare``
#: and the API call it :data:`HEADLINE_NAME`.
HEADLINE = "geomean"
#: What people read for :data:`HEADLINE`, on every page, table and plot.
HEADLINE_NAME = "geometric mean ratio"


def _unknown(geomean: float, why: str, pairs: int = 0, runs: tuple[int, int] = (0, 0)) -> dict[str, object]:
    return {HEADLINE: geomean, "low": float("nan"), "high": float("nan"), "pairs": pairs,
            "significant": False, "known": False, "runs_a": runs[0], "runs_b": runs[1],
            "method": why}


def repeats_effect(a: object, b: object, level: float = 0.95, unit: str = "run"
                   ) -> dict[str, object]:
    """The speed ratio of side ``a`` over side ``b`` from each side's repeats (one value per
    run): ``geomean`` (the ratio of geometric means), ``low`` / ``high`` (Welch t interval of the
    log ratio), ``significant`` (the interval excludes 1.0), ``known`` (both sides have at least
    :data:`MIN_RUNS` runs), ``runs_a`` / ``runs_b``, ``pairs`` (1) and ``method`` (in words)."""
    la, lb = _logs(a), _logs(b)
    runs = (int(la.size), int(lb.size))
    if not la.size or not lb.size:
        return _unknown(float("nan"), "nothing to compare", 0, runs)
    geomean = float(np.exp(la.mean() - lb.mean()))
    if min(runs) < MIN_RUNS:
        what = (f"one {unit} each" if runs == (1, 1)
                else f"{runs[0]} {unit}(s) against {runs[1]}")
        return _unknown(geomean, f"{what}: {REPEAT_ADVICE}", 1, runs)
    va, vb = la.var(ddof=1) / la.size, lb.var(ddof=1) / lb.size
    se = math.sqrt(va + vb)
    if se == 0:
        low = high = geomean
    else:
        df = (va + vb) ** 2 / (va ** 2 / (la.size - 1) + vb ** 2 / (lb.size - 1))
        half = t_quantile(level, df) * se
        low, high = geomean * math.exp(-half), geomean * math.exp(half)
    return {HEADLINE: geomean, "low": low, "high": high, "pairs": 1,
            "significant": bool(low > 1.0 or high < 1.0), "known": True,
            "runs_a": runs[0], "runs_b": runs[1],
            "method": f"Welch t interval over {runs[0]} + {runs[1]} {unit}s"}


def effect(pairs: pd.DataFrame, level: float = 0.95) -> dict[str, object]:
    """The ratio a / b over ``pairs`` (from :func:`benchlib.analysis.comparisons.compare`), with
    an interval made from repeats: ``geomean`` (the geometric mean ratio, :data:`HEADLINE`),
    ``low``, ``high``, ``pairs``, ``significant`` (the interval excludes 1.0), ``known``, ``method``.

    One pair: a Welch t interval from each side's repeats (``a_logs`` / ``b_logs``: the log
    speeds of its runs), unknown with fewer than two runs a side. Several pairs: a one-sample t
    interval of the pairs' log ratios.

    A pair with a ``contended`` or ``throttled`` run (its ``flags``) makes the effect
    ``unreliable`` (the reason in words): never significant, whatever the numbers."""
    found = _effect(pairs, level)
    if pairs is not None and len(pairs) and "flags" in pairs:
        bad = flags.disturbed(pairs["flags"])
        if bad:
            count = flags.count_disturbed(pairs["flags"])
            found = {**found, "significant": False,
                     "unreliable": f"{count} of {len(pairs)} pair{'' if len(pairs) == 1 else 's'} "
                                   f"had {' or '.join(bad)} runs; "
                                   f"{flags.RERUN_ADVICE}"}
    return found


def _effect(pairs: pd.DataFrame, level: float) -> dict[str, object]:
    if pairs is None or len(pairs) == 0:
        return _unknown(float("nan"), "nothing paired")
    if len(pairs) == 1:
        row = pairs.iloc[0]
        a_logs, b_logs = row.get("a_logs"), row.get("b_logs")
        if isinstance(a_logs, list | tuple | np.ndarray) and isinstance(b_logs, list | tuple | np.ndarray):
            return repeats_effect(np.exp(np.asarray(a_logs, dtype=float)),
                                  np.exp(np.asarray(b_logs, dtype=float)), level)
        return _unknown(float(row["ratio"]), f"one run each: {REPEAT_ADVICE}", 1, (1, 1))
    logs = _logs(pairs["ratio"])
    geomean = float(np.exp(logs.mean()))
    if logs.size < 2:
        return _unknown(geomean, f"one pair: {REPEAT_ADVICE}", int(logs.size))
    sd = logs.std(ddof=1)
    half = t_quantile(level, logs.size - 1) * sd / math.sqrt(logs.size)
    low, high = geomean * math.exp(-half), geomean * math.exp(half)
    return {HEADLINE: geomean, "low": low, "high": high, "pairs": int(logs.size),
            "significant": bool(low > 1.0 or high < 1.0), "known": True,
            "runs_a": int(logs.size), "runs_b": int(logs.size),
            "method": f"t interval over {logs.size} pairs of configurations"}


def describe_effect(found: dict[str, object]) -> str:
    """``1.02x (0.99-1.05), no significant effect`` / ``1.93x (1.85-2.01), significant`` /
    ``1.09x (0.24-2.69), inconclusive (...)`` when the interval spans more than 1.5x."""
    ratio = found[HEADLINE]
    if not found["pairs"]:
        return "nothing paired"
    if found.get("unreliable"):
        known = (f" ({found['low']:.2f}-{found['high']:.2f}; {found['method']})"
                 if found["known"] else "")
        return f"{ratio:.2f}x{known}, unreliable: {found['unreliable']}"
    if not found["known"]:
        return f"{ratio:.2f}x, unknown ({found.get('method') or REPEAT_ADVICE})"
    if found["significant"]:
        verdict = "significant"
    elif found["high"] / found["low"] > INCONCLUSIVE_WIDTH:
        verdict = "inconclusive (the interval is too wide to tell: repeat on a quiet node)"
    else:
        verdict = "no significant effect"
    made = f"; {found['method']}" if found.get("method") else ""
    return f"{ratio:.2f}x ({found['low']:.2f}-{found['high']:.2f}{made}), {verdict}"
