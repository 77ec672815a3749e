"""Campaign against campaign (``benchlib compare``; campaigns over time, one against the one
before: :mod:`benchlib.analysis.campaign_history`).

Runs are paired by configuration: the configuration columns of
:func:`benchlib.analysis.comparisons.config_columns`, less where the runs were made (``campaign``,
``cluster``, ``host``) and less any column that holds one value in each campaign but not the
same one (a new GPU model, say): what is compared, named in a warning. Repeats are pooled.

Per configuration NEW relative to BASE (NEW / BASE where higher is better, BASE / NEW where
lower is, as the record schema says: above 1 is always better) is the ratio of geometric means,
with a 95 % interval in which the campaign is the unit of noise
(:mod:`benchlib.analysis.campaign_noise`: runs of one campaign move together; one campaign each
and no history of the configuration: a Welch interval over the runs, judged only beyond a 15 %
floor). A run's within-run interval never enters.

Verdicts, with ``threshold`` t (default 0.05), in this order:

- ``regression`` at 0x when a new run measured a throughput of 0, whatever its flags:
  contention can slow a run, not stop it;
- ``unreliable``: a run of either side was ``contended`` or ``throttled`` (the reason says
  which): no verdict is given from disturbed runs;
- ``unknown``: fewer than two runs on a side ("one run each: set repeats: 3 to know");
- ``regression``: the whole interval is below 1 - t: the slowdown is known to be more than t;
- ``improvement``: the whole interval is above 1 + t;
- ``no change``: the whole interval lies within 1 -+ t: no change of the threshold's size;
- ``undecided``: the interval holds both no change and a change of the threshold's size (it
  crosses 1 - t or 1 + t; or, where the noise between campaigns is unknown, it lies beyond
  1 -+ t but not beyond the floor): ``decides`` says how many more campaigns would tell
  (:func:`benchlib.analysis.campaign_noise.to_decide`), or how to know the noise, and
  ``decides_base_too`` whether BASE needs more campaigns as well.

- ``only in base`` / ``only in new``: nothing to pair with. (The interval must clear the
  threshold, not only 1.0: the A/A tests of docs/measurements.md.)

Campaigns of different benchmarks or units (:data:`NOT_COMPARABLE`) are not compared, nor a
campaign with itself (a run on both sides: the same notebook file, through a link or not):
both are bad input (:class:`~benchlib.errors.InputError`, exit 2).

The commands' exit status from the verdicts: :func:`benchlib.analysis.gate.exit_code`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

import benchlib.analysis.campaign_noise as campaign_noise
import benchlib.analysis.intervals as intervals
import benchlib.analysis.signed_effect as signed_effect
from benchlib.analysis.gate import Weight, junit_outcome, with_weight
from benchlib.analysis.metrics import require_fraction, require_metric, require_tables
from benchlib.analysis.tables import ok
from benchlib.compare.comparable import (
    INCOMPARABLE,
    distinct,
    incomparable,
    not_comparable,
    nothing_in_common,
    pairing_columns,
    same_runs,
)
from benchlib.errors import InputError
from benchlib.records import configuration, flags, schema
from benchlib.records.runs import copies_said, once
from benchlib.vocabulary import DEFAULT_THRESHOLD, CompareVerdict


def higher_is_better(metric: str) -> bool:
    """Whether a higher ``metric`` is better (the record schema's ``Column.better``)."""
    return schema.better(metric) != "lower"


def ratio_name(metric: str) -> str:
    """How the ratio of ``metric`` is taken so that above 1 is better: ``new / base`` where
    higher is better, ``base / new`` where lower is (a time, memory, energy per sample),
    ``1 + change / |base|`` where it may be negative (:mod:`~benchlib.analysis.signed_effect`)."""
    if schema.signed(metric):
        return "1 + change / |base|"
    return "new / base" if higher_is_better(metric) else "base / new"


def _speeds(runs: pd.DataFrame, metric: str) -> np.ndarray:
    """One speed per run (higher is faster: ``time_*`` values inverted)."""
    values = pd.to_numeric(runs[metric], errors="coerce").to_numpy(dtype=float)
    values = values[np.isfinite(values) & (values > 0)]
    return values if higher_is_better(metric) else 1.0 / values


def _stalled(runs: pd.DataFrame, metric: str) -> int:
    """How many ``runs`` measured a throughput-like ``metric`` of 0: they did no work."""
    if not higher_is_better(metric):
        return 0
    return int((pd.to_numeric(runs[metric], errors="coerce") == 0).sum())


def judge(base_runs: pd.DataFrame, new_runs: pd.DataFrame, metric: str,
          threshold: float = DEFAULT_THRESHOLD, noise: campaign_noise.Noise | None = None
          ) -> tuple[dict[str, object], str, str]:
    """The effect of NEW against BASE for one configuration (speed ratio new / base with the
    campaigns as units: :func:`benchlib.analysis.campaign_noise.effect`, ``noise`` the
    configuration's between-campaign noise where known), its verdict, and the reason when it is
    ``unknown`` or ``unreliable``."""
    if schema.signed(metric):  # may be negative: its values, not their logarithm
        return _judge_signed(base_runs, new_runs, metric, threshold)
    found = campaign_noise.effect(campaign_noise.per_campaign(new_runs, _speeds, metric),
                                  campaign_noise.per_campaign(base_runs, _speeds, metric), noise)
    stalled = _stalled(new_runs, metric)
    if stalled and len(_speeds(base_runs, metric)):  # whatever the flags: slowed, not stopped
        said = f"{stalled} of {len(new_runs)} new runs did no work ({metric} 0)"
        return ({**found, intervals.HEADLINE: 0.0, "low": 0.0, "high": 0.0, "pairs": stalled,
                 "known": True, "significant": True, "method": said},
                CompareVerdict.REGRESSION.value, said)
    for side, runs in (("base", base_runs), ("new", new_runs)):  # a time of 0: no ratio to it
        if len(runs) and not len(_speeds(runs, metric)):
            return found, CompareVerdict.UNKNOWN.value, f"no {side} run has a {metric} above 0"
    disturbed = _disturbed(base_runs, new_runs)
    if disturbed:
        return found, CompareVerdict.UNRELIABLE.value, disturbed
    judged = verdict(found, threshold)
    return found, judged, str(found["method"]) if judged == CompareVerdict.UNKNOWN else ""


def _disturbed(base_runs: pd.DataFrame, new_runs: pd.DataFrame) -> str:
    """Why a comparison is unreliable: each side's disturbing flags and how many of its runs
    carry one, and what to do ('' when neither side was disturbed)."""
    said = [f"{side}: {' and '.join(names)} "
            f"({flags.count_disturbed(runs['flags'])} of {len(runs)} runs)"
            for side, runs in (("base", base_runs), ("new", new_runs))
            if (names := flags.disturbed(runs.get("flags", pd.Series(dtype=object))))]
    return f"{'; '.join(said)}; {flags.RERUN_ADVICE}" if said else ""


def _values(runs: pd.DataFrame, metric: str) -> np.ndarray:
    return pd.to_numeric(runs[metric], errors="coerce").to_numpy(dtype=float)


def _judge_signed(base_runs: pd.DataFrame, new_runs: pd.DataFrame, metric: str,
                  threshold: float) -> tuple[dict[str, object], str, str]:
    """:func:`judge` for a measurement that may be negative
    (:mod:`benchlib.analysis.signed_effect`); a value that is not a number is named as left
    out in the reason."""
    found = signed_effect.effect(campaign_noise.per_campaign(new_runs, _values, metric),
                                 campaign_noise.per_campaign(base_runs, _values, metric),
                                 higher_is_better(metric))
    unusable = [f"{int((~np.isfinite(_values(runs, metric))).sum())} {side}"
                for side, runs in (("base", base_runs), ("new", new_runs))
                if len(runs) and (~np.isfinite(_values(runs, metric))).any()]
    left_out = (f" ({' and '.join(unusable)} run(s) without a finite {metric}: left out)"
                if unusable else "")
    disturbed = _disturbed(base_runs, new_runs)
    if disturbed:
        return found, CompareVerdict.UNRELIABLE.value, disturbed
    if left_out:
        found = {**found, "method": f"{found['method']}{left_out}"}
    judged = verdict(found, threshold)
    return found, judged, str(found["method"]) if judged == CompareVerdict.UNKNOWN else ""


def side_value(runs: pd.DataFrame, metric: str) -> float:
    """A side's typical ``metric``: the geometric mean of its runs, the mean where the metric
    may be negative."""
    values = pd.to_numeric(runs[metric], errors="coerce")
    if schema.signed(metric):
        finite = values[np.isfinite(values.to_numpy(dtype=float))]
        return float(finite.mean()) if len(finite) else float("nan")
    return intervals.geometric_mean(values)


def verdict(found: dict[str, object], threshold: float = DEFAULT_THRESHOLD) -> str:
    """``regression`` / ``improvement`` / ``no change`` / ``unknown`` for an effect of
    reliable runs (see the module docstring; ``unreliable`` is :func:`judge`'s)."""
    if not found["pairs"] or not found["known"]:
        return CompareVerdict.UNKNOWN.value
    low, high = float(found["low"]), float(found["high"])
    band = max(threshold, float(found.get("floor") or 0.0))  # noise between campaigns unknown
    if high < 1 - band:
        return CompareVerdict.REGRESSION.value
    if low > 1 + band:
        return CompareVerdict.IMPROVEMENT.value
    if low >= 1 - threshold and high <= 1 + threshold:  # no change of the threshold's size
        return CompareVerdict.NO_CHANGE.value
    return CompareVerdict.UNDECIDED.value


def joined_flags(runs: pd.DataFrame) -> str:
    """The flags of ``runs`` once each, comma-separated."""
    return flags.join(name for text in runs.get("flags", pd.Series(dtype=object))
                      for name in flags.of(text))


@dataclass(frozen=True)
class Comparison:
    """What :func:`compare` found: ``table``, one row per configuration (``configuration``, the
    pairing columns, ``base``, ``new``, ``ratio``, ``low``, ``high``, ``verdict``, ...); the
    ``warnings`` about settings that make the campaigns incomparable; the ``pairing`` columns
    runs were paired on; the ``metric`` and ``threshold`` it judged."""

    table: pd.DataFrame
    warnings: tuple[str, ...] = ()
    pairing: tuple[str, ...] = ()
    metric: str = "throughput"
    threshold: float = field(default=DEFAULT_THRESHOLD)


def compare(base: pd.DataFrame, new: pd.DataFrame, metric: str = "throughput",
            threshold: float = DEFAULT_THRESHOLD, history: pd.DataFrame | None = None
            ) -> Comparison:
    """NEW against BASE per configuration (:class:`Comparison`): its ``table`` has one row per
    configuration: ``configuration`` (a label of the pairing columns that vary), the pairing
    columns, ``base`` and ``new`` (geometric mean of ``metric`` over each side's runs, the
    values the ratio is made of), ``ratio`` (speed new / base) with ``low`` / ``high`` and
    ``interval`` (what they are made from), ``pairs``, ``base_runs``, ``new_runs``,
    ``verdict``, ``reason`` (why unknown or unreliable), ``effect`` (in words),
    ``base_flags`` / ``new_flags``, ``flags``, ``base_campaigns`` / ``new_campaigns``; its
    ``warnings`` say what makes the campaigns incomparable. ``history``: earlier runs whose
    campaigns give each configuration's noise between campaigns on its nodes."""
    require_fraction(threshold, "compare")
    require_tables("compare", base=base, new=new, history=history)
    same_runs(base, new)
    base, new = ok(base), ok(new)
    copies = []
    for name, frame in (("base", base), ("new", new)):
        kept = once(frame)
        if len(kept) < len(frame):
            copies.append(copies_said(name, len(frame) - len(kept), len(frame)))
        base, new = (kept, new) if name == "base" else (base, kept)
    for name, frame in (("base", base), ("new", new)):
        if frame.empty:
            raise InputError(f"compare: {name} holds no finished run (nothing to compare)")
        require_metric(frame, metric, "compare", judged=True, table=name)
    keys, differing = pairing_columns(base, new)
    not_comparable(base, new, differing)
    warnings = copies + incomparable(base, new)
    warnings += [f"{c} differs between the campaigns ({', '.join(sorted(distinct(base[c])))} vs "
                 f"{', '.join(sorted(distinct(new[c])))}); runs were paired across it"
                 for c in differing if c not in INCOMPARABLE]
    both = pd.concat([base.assign(side="base"), new.assign(side="new")], ignore_index=True)
    rows = []
    earlier = campaign_noise.earlier_runs(history, keys, new)
    grouped = both.groupby(keys, dropna=False, sort=False) if keys else [((), both)]
    for key, group in grouped:
        key = key if isinstance(key, tuple) else (key,)
        a, b = group[group["side"] == "base"], group[group["side"] == "new"]
        nodes = sorted(set(group["host"].dropna().astype(str))) if "host" in group else []
        noise = (campaign_noise.from_history(earlier[key], metric, nodes) if key in earlier
                 else None)
        found, judged, reason = judge(a, b, metric, threshold, noise)
        if not len(a) or not len(b):
            judged = CompareVerdict.ONLY_IN_NEW if not len(a) else CompareVerdict.ONLY_IN_BASE
            judged, reason = judged.value, ""
        described = intervals.describe_effect(found)
        if judged == CompareVerdict.UNRELIABLE:
            described = f"{found[intervals.HEADLINE]:.2f}x, unreliable: {reason}"
        rows.append({**dict(zip(keys, key, strict=True)),
                     "base": side_value(a, metric), "new": side_value(b, metric),
                     "ratio": found[intervals.HEADLINE], "low": found["low"], "high": found["high"],
                     "pairs": found["pairs"], "base_runs": len(a), "new_runs": len(b),
                     "base_campaigns": found.get("campaigns_b", 0),
                     "new_campaigns": found.get("campaigns_a", 0),
                     "verdict": judged, "reason": reason, "interval": found["method"],
                     "decides": (campaign_noise.to_decide(found, threshold)
                                 if judged == CompareVerdict.UNDECIDED else ""),
                     "decides_base_too": (judged == CompareVerdict.UNDECIDED and
                                          campaign_noise.more_campaigns(found, threshold)[1]),
                     "effect": described,
                     "base_flags": joined_flags(a), "new_flags": joined_flags(b),
                     "flags": flags.join([*flags.of(joined_flags(a)), *flags.of(joined_flags(b))])})
    table = pd.DataFrame(rows)
    if len(table):
        table.insert(0, "configuration", configuration.label(table, keys))
    return Comparison(table, tuple(warnings), tuple(keys), metric, threshold)


def regressions(compared: pd.DataFrame) -> pd.DataFrame:
    """The rows of :func:`compare` judged ``regression``."""
    return compared if compared.empty else compared[compared["verdict"] == CompareVerdict.REGRESSION]


#: Verdicts that leave a configuration unjudged: the comparison cannot certify it.
UNJUDGED = with_weight("compare", Weight.UNCERTAIN)
#: Verdicts of a configuration that only one campaign ran.
ONLY_ONE_SIDE = with_weight("compare", Weight.ASIDE)
#: Verdicts of a configuration that was judged: what a comparison certifies.
JUDGED = (*with_weight("compare", Weight.FAILS), *with_weight("compare", Weight.PASSES))


def _change(ratio: float, metric: str) -> str:  # the judged ratio: above 1 is better
    """How far the new runs' ``metric`` moved, in words."""
    moved = ratio if higher_is_better(metric) else 1 / ratio
    return f"{abs(moved - 1):.0%} {'higher' if moved > 1 else 'lower'} than the base's"


def summary(comparison: Comparison) -> list[str]:
    """Counts per verdict, one line per regression with its size and interval, then what could
    not be judged, why, and how to re-run."""
    compared, threshold = comparison.table, comparison.threshold
    if compared.empty:
        return ["NOTHING CERTIFIED: no ok runs to compare"]
    counts = compared["verdict"].value_counts()
    lines = [", ".join(f"{n} {v}" for v, n in counts.items())]
    metric = comparison.metric
    for row in regressions(compared).itertuples():
        if schema.signed(metric):
            size = (f"{metric} {row.base:.4g} -> {row.new:.4g} (1 + change / |base| "
                    f"{row.ratio:.2f}, {row.low:.2f}-{row.high:.2f}, 95 %, {row.interval}), "
                    f"{'higher' if higher_is_better(metric) else 'lower'} is better")
        elif metric == "throughput":
            size = (f"new runs at {row.ratio:.2f}x the base speed ({row.low:.2f}-{row.high:.2f}, "
                    f"95 %, {row.interval}), {1 - row.ratio:.0%} slower")
        else:  # base / new where lower is better: 0.63 = the new runs' figure is 1.6x the base's
            size = (f"{metric} {ratio_name(metric)} {row.ratio:.2f} ({row.low:.2f}-{row.high:.2f}, "
                    f"95 %, {row.interval}), {'higher' if higher_is_better(metric) else 'lower'} "
                    f"is better: the new runs' {metric} is {_change(row.ratio, metric)}")
        lines.append(f"REGRESSION {row.configuration}: {size}")
    for row in compared[compared["verdict"] == CompareVerdict.UNDECIDED].itertuples():
        beyond = row.high < 1 - threshold or row.low > 1 + threshold  # only within the floor
        holds = (f"lies beyond {threshold:.0%} but within the {campaign_noise.UNKNOWN_FLOOR:.0%} "
                 "one campaign can move while the noise between campaigns is unknown" if beyond
                 else f"holds both no change and a {threshold:.0%} change")
        lines.append(f"UNDECIDED {row.configuration}: {row.ratio:.2f}x ({row.low:.2f}-"
                     f"{row.high:.2f}, 95 %) {holds}; {row.decides}")
    undecided = int((compared["verdict"] == CompareVerdict.UNDECIDED).sum())
    unjudged = compared[compared["verdict"].isin(UNJUDGED) &
                        (compared["verdict"] != CompareVerdict.UNDECIDED)]
    for (judged, reason), rows in unjudged.groupby(["verdict", "reason"], sort=False):
        count = len(rows)
        lines.append(f"CANNOT CERTIFY {count} configuration{'' if count == 1 else 's'} "
                     f"({judged}): {reason}")
        lines += [f"  - {name}" for name in rows["configuration"]]
    judged = int(compared["verdict"].isin(JUDGED).sum())
    lines += campaign_noise.floor_lines(compared["interval"])
    if not judged:
        why = (nothing_in_common(compared, comparison.pairing)
               if not len(unjudged) and not undecided else
               "every configuration in common is undecided or could not be judged (above)")
        lines.append(f"NOTHING CERTIFIED: {why}; no configuration was judged")
    elif not len(regressions(compared)):
        note = campaign_noise.floor_note(compared["interval"])
        lines.append(f"no significant regression beyond {threshold:.0%}{note} among the {judged} "
                     f"configuration{'' if judged == 1 else 's'} judged"
                     + (f"; {len(unjudged)} could not be judged (above)" if len(unjudged) else "")
                     + (f"; {undecided} undecided (above)" if undecided else ""))
    return lines


def junit_cases(compared: pd.DataFrame, metric: str = "throughput") -> list:
    """One JUnit case per configuration: regression -> failure; unknown / unpaired -> skipped;
    a metric other than throughput is named with how its ratio is taken."""
    from benchlib.analysis.junit import Case

    named = "" if metric == "throughput" else f" ({metric}, {ratio_name(metric)})"
    cases = []
    for row in compared.to_dict("records"):
        outcome = junit_outcome("compare", row["verdict"])
        message = f"{row['verdict']}: {row['effect']}{named}"
        cases.append(Case("benchlib.compare", str(row["configuration"]), outcome,
                          message, f"{message}\nflags: {row['flags'] or '-'}"))
    return cases
