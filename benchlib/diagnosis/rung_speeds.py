"""Each rung's runs of a diagnose campaign and their speeds: the runs picked out of the records
by the rung's columns, in the order they ran, and the disturbed ones (contended, throttled) left
out where :data:`CALM_RUNS` calm runs remain, so a brief disturbance costs a re-run
(:mod:`benchlib.diagnosis.rounds`) rather than the step's verdict."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

import benchlib.analysis.intervals as intervals
from benchlib.analysis.tables import ok
from benchlib.diagnosis.plan import Plan, Rung
from benchlib.records import flags


def _equal(column: pd.Series, value: object) -> pd.Series:
    """Where ``column`` holds ``value`` (booleans, counts and text compared as such)."""
    if isinstance(value, bool):
        return column.map(lambda v: isinstance(v, bool | np.bool_) and bool(v) == value)
    if isinstance(value, int):
        return pd.to_numeric(column, errors="coerce") == value
    return column.fillna("").astype(str) == str(value)


def rung_runs(df: pd.DataFrame, plan: Plan, rung: Rung) -> pd.DataFrame:
    """The finished runs of ``rung`` in ``df``: the runs of this plan's points of that rung
    (their ``point_id``), with the rung's columns (the plan's model and benchmark, or the
    probe)."""
    done = ok(df)
    if "point_id" not in done:
        return done.iloc[0:0]
    done = done[done["point_id"].isin(plan.point_ids().get(rung.name, set()))]
    if rung.kind != "probe":
        match = {"benchmark": plan.benchmark, "model": plan.model, "batch_size": plan.batch_size,
                 "image_size": plan.image_size, "num_devices": plan.num_devices, **rung.match}
    else:
        match = rung.match
    mask = pd.Series(True, index=done.index)
    for column, value in match.items():
        if column not in done:
            return done.iloc[0:0]
        mask &= _equal(done[column], value)
    return done[mask]


#: Calm runs a rung needs before its disturbed runs are left out of its speed (fewer: the rung
#: keeps them, and its steps are unreliable).
CALM_RUNS = 2


@dataclass(frozen=True)
class RungSpeed:
    """The runs of one rung: their speeds, flags and typical (geometric-mean) speed; the
    disturbed runs left out (``left_out``) where :data:`CALM_RUNS` calm ones remain."""

    rung: Rung
    speeds: np.ndarray
    flags: tuple[str, ...]
    left_out: tuple[str, ...] = ()

    @property
    def speed(self) -> float:
        return intervals.geometric_mean(self.speeds)

    @property
    def disturbed(self) -> list[str]:
        return flags.disturbed(self.flags)


def _calm(speeds: np.ndarray, texts: list[str], rung: Rung) -> RungSpeed:
    """A rung's runs with its disturbed ones (contended, throttled) left out where
    :data:`CALM_RUNS` calm runs remain: a run taken beside other work is not the node's speed,
    and ``benchlib diagnose`` runs the rung again (:mod:`benchlib.diagnosis.rounds`)."""
    calm = np.array([not flags.disturbed([t]) for t in texts], dtype=bool)
    if calm.all() or calm.sum() < CALM_RUNS:
        return RungSpeed(rung, speeds, tuple(texts))
    return RungSpeed(rung, speeds[calm], tuple(t for t, c in zip(texts, calm, strict=True) if c),
                     tuple(t for t, c in zip(texts, calm, strict=True) if not c))


def speeds(df: pd.DataFrame, plan: Plan) -> dict[str, RungSpeed]:
    """Each benchmark rung with at least one finished run, by name (its disturbed runs left
    out where enough calm ones remain: :func:`_calm`)."""
    found = {}
    for rung in plan.rungs:
        if rung.kind == "probe":
            continue
        runs = rung_runs(df, plan, rung)
        if "started_at" in runs:  # in the order they ran: the halves of the repeats
            runs = runs.assign(_at=pd.to_datetime(runs["started_at"], utc=True, errors="coerce",
                                                  format="ISO8601")).sort_values(
                "_at", kind="stable")
        values = (pd.to_numeric(runs["throughput"], errors="coerce").dropna()
                  if "throughput" in runs else pd.Series(dtype=float))  # every run failed
        runs = runs.loc[values.index]
        if len(values):
            texts = runs["flags"].fillna("").astype(str).tolist() if "flags" in runs \
                else [""] * len(runs)
            found[rung.name] = _calm(values.to_numpy(dtype=float), texts, rung)
    return found


#: What :func:`beside_figures` measures (derived columns: :mod:`benchlib.records.derived`).
BESIDE = ("others_cpu", "others_disks", "stall_cpu", "stall_io")


def ladder_runs(df: pd.DataFrame, plan: Plan) -> dict[str, pd.DataFrame]:
    """Each benchmark rung's finished runs (:func:`rung_runs`), by name, rungs without any
    left out."""
    return {rung.name: runs for rung in plan.rungs[1:] if len(runs := rung_runs(df, plan, rung))}


def _most(runs: pd.DataFrame, column: str) -> float | None:
    if column not in runs:
        return None
    values = pd.to_numeric(runs[column], errors="coerce")
    values = values[np.isfinite(values)]
    return float(values.max()) if len(values) else None


def beside_figures(runs: pd.DataFrame) -> dict[str, float | None]:
    """What ``runs`` measured beside them, the most of any run (:data:`BESIDE`): others'
    share of the CPU time and the rate they read from the local disks (MiB/s), then the share
    of the time some task waited for a CPU or for I/O (pressure stalls, the runs' own too)."""
    rate = _most(runs, "contention_read_rate")
    return {"others_cpu": _most(runs, "contention_cpu_share"),
            "others_disks": round(rate / 2**20, 1) if rate is not None else None,
            "stall_cpu": _most(runs, "pressure_cpu_share"),
            "stall_io": _most(runs, "pressure_io_share")}


def beside_table(df: pd.DataFrame, plan: Plan) -> pd.DataFrame:
    """One row per rung with finished runs: :func:`beside_figures` of its runs."""
    rows = [{"rung": name, **beside_figures(runs)}
            for name, runs in ladder_runs(df, plan).items()]
    return pd.DataFrame(rows, columns=["rung", *BESIDE])


def beside(runs: pd.DataFrame) -> str | None:
    """:func:`beside_figures` in words: ``others: CPU 2 %, disk reads 0.0 MiB/s; stalls: CPU
    29 %, I/O 3 %``; None when nothing was measured."""
    found = beside_figures(runs)
    words = {"others_cpu": ("CPU {:.0f} %", 100), "others_disks": ("disk reads {:,.1f} MiB/s", 1),
             "stall_cpu": ("CPU {:.0f} %", 100), "stall_io": ("I/O {:.0f} %", 100)}
    said = {key: words[key][0].format(value * words[key][1])
            for key, value in found.items() if value is not None}
    parts = [f"{head}: {', '.join(said[k] for k in keys if k in said)}"
             for head, keys in (("others", ("others_cpu", "others_disks")),
                                ("stalls", ("stall_cpu", "stall_io")))
             if any(k in said for k in keys)]
    return "; ".join(parts) or None
