"""Flags: why a number should not be taken at face value, as names in one ``flags`` column and
as sentences a user can act on.

A record's flags come from its own columns (:func:`record_flags`); analysis adds the ones that
need several runs (``superlinear`` in :func:`benchlib.analysis.comparisons.scaling`, ``mfu_over_100`` in the
verdict). In Python a run's flags are a list of names (:func:`of` reads them from a record, a
row or a stored value); files (sidecar, CSV) and tables hold them comma-separated
(:func:`join`), '' when none.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping

import pandas as pd

from benchlib.measure.contention import RULE as CONTENTION_RULE
from benchlib.measure.contention import reasons
from benchlib.measure.timing import NOISY_SPREAD
from benchlib.vocabulary import RecordStatus

#: A timed loop shorter than this (seconds) or with fewer iterations is ``short``.
SHORT_SECONDS = 1.0
SHORT_ITERATIONS = 10
#: Scaling efficiency above this is ``superlinear`` (more than 10 % better than linear).
SUPERLINEAR_EFFICIENCY = 1.10
#: A run whose clocks were held down in at least this share of the samples is ``throttled``.
THROTTLED_SHARE = 0.10

#: The mean power a run's device may draw (W, per device): under the first, nothing ran on it;
#: over the second, no GPU or CPU package of today draws it (a B200's limit is 1,000 W).
POWER_PER_DEVICE_W = (1.0, 2000.0)
#: More samples per joule than this no workload gives (a sample costs more than a nanojoule).
MAX_SAMPLES_PER_JOULE = 1e9

#: Every flag, what it means and what to do, in the order pages list them.
FLAGS: dict[str, str] = {
    "contended": (f"{CONTENTION_RULE}: the number is what was left to the run, below what the "
                  "idle node gives; re-run on an idle node (or an exclusive allocation)"),
    "superlinear": (f"more than {SUPERLINEAR_EFFICIENCY - 1:.0%} faster than linear scaling "
                    "from the fewest devices: usually the baseline run was slowed (contention, "
                    "noise, a cold cache); re-run the baseline before trusting the speedup"),
    "throttled": (f"GPU clocks were held down (power or thermal) in at least "
                  f"{THROTTLED_SHARE:.0%} of the samples: the number is below the GPU's "
                  "capability; check cooling and power limits"),
    "noisy": (f"iteration times spread more than {NOISY_SPREAD:.0%} (IQR / median): compare with "
              "care, or run more iterations (iterations: auto)"),
    "short": (f"the timed loop ran under {SHORT_SECONDS:g} s or fewer than {SHORT_ITERATIONS} "
              "iterations: too short to trust; raise iterations (with iterations: auto, raise "
              "max_time_s)"),
    "energy_implausible": ("the energy efficiency (samples per joule) is beyond what the run's "
                           "devices could give (a mean power under "
                           f"{POWER_PER_DEVICE_W[0]:g} W or over {POWER_PER_DEVICE_W[1]:,.0f} W "
                           "a device, or more than "
                           f"{MAX_SAMPLES_PER_JOULE:.0e} samples per joule): an energy counter "
                           "that wrapped or read wrong; the figure is not shown, re-run"),
    "mfu_over_100": ("model FLOPs utilization above 100 % of what the node probe reached (its "
                     "best matmul in the run's precision): the probe did not find the device's "
                     "ceiling; re-run the node probe with a larger matmul_size or probe_time_s"),
}


#: Flags that make a run's number unfit to decide a comparison: the verdict is ``unreliable``.
DISTURBED = ("contended", "throttled")
#: What to do about a disturbed comparison.
RERUN_ADVICE = ("re-run both sides on an idle node (an exclusive allocation; nothing else "
                "running), with repeats: 3")


def disturbed(texts: Iterable[object]) -> list[str]:
    """The :data:`DISTURBED` flags among ``texts`` (flag strings), once each, in order."""
    found = [name for text in texts for name in of(text) if name in DISTURBED]
    return list(dict.fromkeys(found))


def count_disturbed(texts: Iterable[object]) -> int:
    """How many of ``texts`` (one flag string per run or pair) hold a :data:`DISTURBED` flag."""
    return sum(1 for text in texts if disturbed([text]))


def number(value: object) -> float | None:
    """``value`` as a float; None for missing, NaN or non-numeric values."""
    try:
        found = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return None if math.isnan(found) else found


def record_flags(record: Mapping[str, object]) -> list[str]:
    """The flags one finished run's own columns call for (none for failed runs)."""
    if record.get("status", RecordStatus.OK) != RecordStatus.OK:
        return []
    found = []
    if record.get("contended") is True:
        found.append("contended")
    throttled = number(record.get("throttled_share"))
    if throttled is not None and throttled >= THROTTLED_SHARE:
        found.append("throttled")
    if record.get("noisy") is True:
        found.append("noisy")
    seconds, iterations = number(record.get("wall_time_s")), number(record.get("iterations"))
    # a timed loop's record has seconds per iteration; a probe's figures are repetitions' means
    timed_loop = number(record.get("time_iteration_s")) is not None
    if timed_loop and ((seconds is not None and seconds < SHORT_SECONDS)
                       or (iterations is not None and iterations < SHORT_ITERATIONS)):
        found.append("short")
    if energy_implausible(record):
        found.append("energy_implausible")
    return found


#: The record columns :func:`energy_implausible` reads.
ENERGY_READS = ("samples_per_joule", "samples", "energy_j", "throughput", "time_iteration_s",
                "num_devices")


def energy_implausible(record: Mapping[str, object]) -> bool:
    """Whether a run's energy efficiency (``samples_per_joule``, else samples / ``energy_j``)
    is beyond what its devices could give: above :data:`MAX_SAMPLES_PER_JOULE`, or, for a
    timed loop with a throughput, a mean power (throughput / samples per joule) outside
    :data:`POWER_PER_DEVICE_W` times its devices."""
    per_joule = number(record.get("samples_per_joule"))
    if per_joule is None:
        samples, energy = number(record.get("samples")), number(record.get("energy_j"))
        per_joule = samples / energy if samples and energy and energy > 0 else None
    if per_joule is None or per_joule <= 0:
        return False
    if math.isinf(per_joule) or per_joule > MAX_SAMPLES_PER_JOULE:
        return True
    throughput = number(record.get("throughput"))
    if number(record.get("time_iteration_s")) is None or not throughput or throughput <= 0:
        return False
    devices = max(1.0, number(record.get("num_devices")) or 1.0)
    power = throughput / per_joule
    return not POWER_PER_DEVICE_W[0] * devices <= power <= POWER_PER_DEVICE_W[1] * devices


def of(value: object) -> list[str]:
    """The flags of ``value`` as a list of names: a record or row (its ``flags``), the stored
    comma string (``"a,b"`` -> ``["a", "b"]``) or a list of names; '' / NaN / None -> []."""
    if isinstance(value, Mapping | pd.Series):
        value = value.get("flags")
    if isinstance(value, list | tuple):
        return [str(name) for name in value if name]
    if not isinstance(value, str) or not value:
        return []
    return [name for name in value.split(",") if name]


#: The former name of :func:`of` (stored values only).
split = of


def join(names: Iterable[str]) -> str:
    """Names in :data:`FLAGS` order, once each, comma-separated."""
    chosen = set(names)
    ordered = [n for n in FLAGS if n in chosen] + sorted(chosen - set(FLAGS))
    return ",".join(ordered)


def with_flags(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with a ``flags`` column: each row's own flags (from its columns) plus any it
    already carried."""
    out = df.copy()
    if out.empty:
        out["flags"] = pd.Series(dtype=object)
        return out
    carried = out["flags"] if "flags" in out else pd.Series("", index=out.index)
    out["flags"] = [join([*of(old), *record_flags(row)])
                    for old, row in zip(carried, out.to_dict("records"), strict=True)]
    return out


def add_flag(df: pd.DataFrame, mask: pd.Series, name: str) -> pd.DataFrame:
    """Add flag ``name`` to the rows where ``mask`` holds."""
    out = df.copy()
    if "flags" not in out:
        out["flags"] = ""
    out.loc[mask, "flags"] = [join([*of(old), name]) for old in out.loc[mask, "flags"]]
    return out


def marked(label: object, flags: object) -> str:
    """A table or plot label with a visible marker when the row is flagged: ``label ⚠``."""
    return f"{label} ⚠" if of(flags) else str(label)


def warned(value: object) -> str:
    """A row's flags as a table shows them: ``⚠ contended, short``; '' when none."""
    names = of(value)
    return f"⚠ {', '.join(names)}" if names else ""


def union(values: Iterable[object]) -> str:
    """Every flag among ``values`` (the flags of the runs a table row stands for), once each
    in order, as the stored comma string."""
    return join(list(dict.fromkeys(name for value in values for name in of(value))))


def flag_counts(df: pd.DataFrame) -> dict[str, int]:
    """How many rows carry each flag, in :data:`FLAGS` order."""
    counts: dict[str, int] = {}
    for text in df.get("flags", pd.Series(dtype=object)):
        for name in of(text):
            counts[name] = counts.get(name, 0) + 1
    return {n: counts[n] for n in [*FLAGS, *sorted(set(counts) - set(FLAGS))] if n in counts}


def explain(df: pd.DataFrame, which: Callable[[pd.DataFrame], str] | None = None) -> list[str]:
    """One sentence per flag present: how many runs (and, with ``which``, the text it gives
    for the flagged rows: their names), what it means, what to do."""
    lines = []
    total = len(df)
    marked = [of(f) for f in df["flags"]] if "flags" in df else []
    for name, count in flag_counts(df).items():
        meaning = FLAGS.get(name, "see the run's record")
        named = f": {which(df[[name in m for m in marked]])}" if which and marked else ""
        lines.append(f"**{name}** ({count} of {total} runs{named}): {meaning}.")
    return lines


def _percent(value: object) -> str:
    share = number(value)
    return f"{share:.0%}" if share is not None else "an unknown share"


def _why_contended(record: Mapping[str, object]) -> str:
    """`` (what made ``record`` contended)``, in words
    (:func:`benchlib.measure.contention.reasons`); '' where its record does not say."""
    said = ", ".join(reasons(record))
    return f" ({said})" if said else ""


def explain_superlinear(scaled: pd.DataFrame) -> list[str]:
    """For each ``superlinear`` row of :func:`benchlib.analysis.comparisons.scaling`'s output, a sentence
    naming the speedup and what was wrong with its baseline, e.g. "2 devices 14.0x faster than
    1: the 1-device run was contended (others took 63 % of the CPU time); re-run it"."""
    lines = []
    if "flags" not in scaled or "baseline_devices" not in scaled:
        return lines
    for _, row in scaled[[("superlinear" in of(f)) for f in scaled["flags"]]].iterrows():
        base_n = int(row["baseline_devices"])
        base = scaled[(scaled["baseline_key"] == row["baseline_key"])
                      & (scaled["num_devices"] == base_n)]
        head = (f"{int(row['num_devices'])} devices {row['speedup']:.1f}x faster than {base_n} "
                f"(efficiency {row['efficiency']:.0%})")
        said = []
        for _, b in base.iterrows():
            names = of(b)
            if "contended" in names:
                said.append(f"the {base_n}-device run was contended{_why_contended(b)}")
            elif "noisy" in names:
                said.append(f"the {base_n}-device run was noisy (spread "
                            f"{_percent(b.get('spread_iteration'))})")
        if said:
            lines.append(f"{head}: {'; '.join(dict.fromkeys(said))}; re-run it.")
        else:
            lines.append(f"{head}: the baseline shows no contention or noise; check that the "
                         "runs did the same work per sample, then re-run the baseline.")
        if "contended" in of(row):
            lines[-1] += (f" The {int(row['num_devices'])}-device run was contended too"
                          f"{_why_contended(row)}.")
    return lines
