"""Why this node is slower than it should be for a model: the waterfall of a diagnose campaign.

The rungs of the ladder (:mod:`benchlib.diagnosis.plan`) are picked out of the records by
their columns. The waterfall runs from the model's best speed on this node (synthetic data on
the device, the fastest precision and memory format) down to the user's setting, one step per
rung, each at the user's worker count:

    best ─ precision ─► user's precision ─ host copy ─► synthetic on the host
         ─ decode ─► real data from memory ─ filesystem ─► real data from disk (the user's)

Each step's loss is the speed before it less the speed after it, in samples/s and as a share of
the speed before it. Its 95 % interval is the interval of the step's ratio of speeds from the
repeats (:func:`benchlib.analysis.intervals.repeats_effect`: Welch t over each rung's runs);
in samples/s it is that interval times the speed before the step. A step with a contended or
throttled run is ``unreliable`` (:func:`benchlib.records.flags.disturbed`) and gets no verdict;
a rung's disturbed runs are left out where two calm ones remain
(:mod:`benchlib.diagnosis.rung_speeds`), and rounds run the rungs of unreliable steps again.
:func:`load_diagnosis` reads a campaign folder's diagnosis; :func:`answer_text` is what
``benchlib diagnose`` prints.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

import benchlib.analysis.intervals as intervals
from benchlib.analysis.verdict import judge, probes
from benchlib.diagnosis import agreement
from benchlib.diagnosis import verdict as diagnose_verdict
from benchlib.diagnosis.plan import Plan, read_plan
from benchlib.diagnosis.rounds import rounds_text
from benchlib.diagnosis.rung_speeds import RungSpeed, beside, ladder_runs, rung_runs, speeds
from benchlib.diagnosis.text import (
    ABOVE_BEST_RATIO,
    CHANGE,
    RERUN,
    UNIT,
    WHAT,
    against_best,
    loss_text,
    step_change,
    switch_change,
    worker_change,
)
from benchlib.errors import InputError
from benchlib.records import flags
from benchlib.records.campaign_reader import CampaignReader
from benchlib.records.results import load

#: What each kind of step is, for people.
STEP_NAMES = {"device": "precision", "host": "host copy", "memory": "decode", "disk": "filesystem"}
STEP_COLUMNS = ["step", "upper", "lower", "label", "upper_speed", "lower_speed", "loss",
                "loss_low", "loss_high", "share", "share_low", "share_high", "ratio", "low",
                "high", "known", "verdict", "unreliable", "doubt", "runs_upper", "runs_lower"]



def rungs_table(df: pd.DataFrame, plan: Plan) -> pd.DataFrame:
    """One row per rung: its label, finished runs, speed (geometric mean) and the range of its
    runs, its disturbed flags (``none`` when it has finished runs none of which was; missing
    when it has none)."""
    found = speeds(df, plan)
    rows = []
    for rung in plan.rungs[1:]:
        speed = found.get(rung.name)
        rows.append({"rung": rung.name, "kind": rung.kind, "label": rung.label,
                     "runs": len(speed.speeds) if speed else 0,
                     "speed": speed.speed if speed else None,
                     "slowest": float(speed.speeds.min()) if speed else None,
                     "fastest": float(speed.speeds.max()) if speed else None,
                     "disturbed": _disturbed_said(speed) if speed else None})
    return pd.DataFrame(rows)


def _disturbed_said(speed: RungSpeed) -> str:
    """The rung's disturbed flags, and how many disturbed runs were left out; ``none``."""
    said = ", ".join(speed.disturbed)
    if speed.left_out:
        names = ", ".join(flags.disturbed(speed.left_out))
        said = ", ".join(filter(None, [said, f"{len(speed.left_out)} {names} left out"]))
    return said or "none"


def chain(plan: Plan, found: dict[str, RungSpeed]) -> list[RungSpeed]:
    """The rungs the waterfall walks, best first, the user's setting last (rungs without a
    finished run left out)."""
    devices = [s for s in found.values() if s.rung.kind == "device"]
    names = [max(devices, key=lambda s: s.speed).rung.name] if devices else []
    names.append(f"device-{plan.precision}" + ("-cl" if plan.channels_last else ""))
    names.append(f"host-w{plan.num_workers}")
    if plan.data_dir:
        names += [f"memory-w{plan.num_workers}", f"disk-w{plan.num_workers}"]
    return [found[name] for name in dict.fromkeys(names) if name in found]


def step(upper: RungSpeed, lower: RungSpeed, best: float) -> dict[str, object]:
    """The loss from ``upper`` to ``lower``, its interval from the repeats and its verdict."""
    found = intervals.repeats_effect(upper.speeds, lower.speeds)
    ratio, low, high = (float(found[k]) for k in (intervals.HEADLINE, "low", "high"))
    before, after = upper.speed, lower.speed
    bad = flags.disturbed([*upper.flags, *lower.flags])
    doubt = ""
    if bad:
        verdict = "unreliable"
    elif not found["known"]:
        verdict = "unknown"
    elif low > 1:  # named only where it clears the threshold in both halves of the repeats
        verdict, doubt = agreement.confirmed(upper.speeds, lower.speeds, low)
    elif high < 1:
        verdict = "gain"
    else:
        verdict = "no significant change"

    def share(r: float) -> float:
        return 1 - 1 / r if r and not np.isnan(r) else float("nan")

    return {"step": STEP_NAMES[lower.rung.kind], "upper": upper.rung.name,
            "lower": lower.rung.name, "label": lower.rung.label, "upper_speed": before,
            "lower_speed": after, "loss": before - after, "loss_low": before * share(low),
            "loss_high": before * share(high), "share": share(ratio), "share_low": share(low),
            "share_high": share(high), "of_best": (before - after) / best, "ratio": ratio,
            "low": low, "high": high, "known": bool(found["known"]), "verdict": verdict,
            "unreliable": (f"{' and '.join(bad)} runs: {RERUN}" if bad else ""),
            "doubt": doubt,
            "runs_upper": len(upper.speeds), "runs_lower": len(lower.speeds)}


def waterfall(df: pd.DataFrame, plan: Plan) -> pd.DataFrame:
    """One row per step from the best speed down to the user's setting (see the module
    docstring); empty when fewer than two rungs finished."""
    walked = chain(plan, speeds(df, plan))
    if len(walked) < 2:
        return pd.DataFrame(columns=[*STEP_COLUMNS, "of_best"])
    best = walked[0].speed
    return pd.DataFrame([step(a, b, best) for a, b in itertools.pairwise(walked)])


def workers(df: pd.DataFrame, plan: Plan) -> pd.DataFrame:
    """The user's last rung (disk, or host without data) at every worker count: speed, runs,
    and the speed against the user's count with its interval (``ratio``, ``low``, ``high``,
    ``verdict``)."""
    found = speeds(df, plan)
    kind = "disk" if plan.data_dir else "host"
    user = found.get(f"{kind}-w{plan.num_workers}")
    rows = []
    for count in plan.worker_counts:
        speed = found.get(f"{kind}-w{count}")
        if speed is None:
            continue
        row: dict[str, object] = {"workers": count, "speed": speed.speed,
                                  "runs": len(speed.speeds), "ratio": None, "low": None,
                                  "high": None, "verdict": "yours" if count == plan.num_workers
                                  else ""}
        if user is not None and count != plan.num_workers:
            against = step(speed, user, speed.speed)
            row.update(ratio=against["ratio"], low=against["low"], high=against["high"],
                       verdict=against_yours(against["verdict"]))
        rows.append(row)
    return pd.DataFrame(rows, columns=["workers", "speed", "runs", "ratio", "low", "high",
                                       "verdict"])


@dataclass(repr=False)
class Diagnosis:
    """What a diagnose campaign found: the waterfall, the worker counts, the user's verdict."""

    plan: Plan
    steps: pd.DataFrame
    workers: pd.DataFrame
    best: RungSpeed | None
    user: RungSpeed | None
    verdict: str = ""
    reason: str = ""
    notes: list[str] = field(default_factory=list)
    runs: int = 0  #: benchmark runs of the plan that ran (finished or failed)
    #: the user's disk rung with its JPEGs decoded on the GPU against the user's (a GPU plan
    #: with a data folder): ``ratio``, ``low``, ``high`` and ``verdict`` (faster, slower, ...)
    gpu_decode: dict[str, object] | None = None
    #: what the plan's runs measured beside them, the most of any (:func:`rung_speeds.beside`)
    beside: str | None = None

    def __str__(self) -> str:
        return recommendation(self)

    def __repr__(self) -> str:
        biggest = self.biggest
        return (f"<Diagnosis {self.plan.campaign}: {self.plan.model} {self.plan.benchmark}, "
                f"{len(self.steps)} steps, biggest loss: "
                f"{biggest['step'] if biggest is not None else 'none'}>")

    @property
    def biggest(self) -> pd.Series | None:
        """The largest reliable, significant loss (None when there is none)."""
        losses = self.steps[self.steps["verdict"] == "loss"] if len(self.steps) else self.steps
        return losses.loc[losses["loss"].idxmax()] if len(losses) else None


def user_verdict(df: pd.DataFrame, plan: Plan, user: RungSpeed | None) -> tuple[str, str]:
    """The bottleneck verdict (:func:`benchlib.analysis.verdict.judge`) most of the user's runs
    got, and the reason of the one of them nearest the rung's geometric-mean speed, judged at
    that speed (its MFU scaled to it), so the paragraph's MFU is that of the speed it states."""
    if user is None:
        return "", ""
    probe_runs = probes(df)
    probe = probe_runs.iloc[-1] if len(probe_runs) else None
    runs = [run for _, run in rung_runs(df, plan, user.rung).iterrows()
            if not (user.left_out and flags.disturbed([run.get("flags")]))]  # its calm runs
    judged = [judge(run, probe) for run in runs]
    if not judged:
        return "", ""
    common = Counter(j["verdict"] for j in judged).most_common(1)[0][0]
    alike = [run for run, j in zip(runs, judged, strict=True) if j["verdict"] == common]
    run = min(alike, key=lambda r: abs(math.log(_positive(r.get("throughput")) / user.speed)))
    scale = user.speed / _positive(run.get("throughput"))
    at_mean = run.copy()
    at_mean["throughput"] = user.speed
    if pd.notna(pd.to_numeric(run.get("achieved_tflops"), errors="coerce")):
        at_mean["achieved_tflops"] = float(run["achieved_tflops"]) * scale
    return str(common), str(judge(at_mean, probe)["reason"])


def _positive(value: object) -> float:
    number = pd.to_numeric(value, errors="coerce")
    return float(number) if pd.notna(number) and number > 0 else 1e-12


def diagnose(df: pd.DataFrame, plan: Plan) -> Diagnosis:
    """The waterfall, the worker counts and the verdict of ``df`` (the campaign's records)."""
    found = speeds(df, plan)
    walked = chain(plan, found)
    steps = waterfall(df, plan)
    verdict, reason = diagnose_verdict.agreed(
        *user_verdict(df, plan, walked[-1] if walked else None), steps, plan)
    missing = [r.label for r in plan.rungs[1:] if r.name not in found]
    notes = [f"no finished run of: {', '.join(missing)} (see the failed runs)"] if missing else []
    ids = set().union(*(ids for name, ids in plan.point_ids().items() if name != "probe"))
    runs = int(df["point_id"].isin(ids).sum()) if "point_id" in df else 0
    ladder = pd.concat([df.iloc[0:0], *ladder_runs(df, plan).values()])
    return Diagnosis(plan, steps, workers(df, plan), walked[0] if walked else None,
                     walked[-1] if walked else None, verdict, reason, notes, runs,
                     gpu_decode(found, plan), beside(ladder))


def gpu_decode(found: dict[str, RungSpeed], plan: Plan) -> dict[str, object] | None:
    """The user's disk rung decoded on the GPU against the user's own (None: no such rung ran):
    its speed over the user's with the interval, and ``verdict`` faster or slower where the
    interval says so."""
    decoded = found.get(f"disk-gpu-w{plan.num_workers}")
    user = found.get(f"disk-w{plan.num_workers}")
    if decoded is None or user is None:
        return None
    against = step(decoded, user, decoded.speed)
    return {"speed": decoded.speed, "ratio": against["ratio"], "low": against["low"],
            "high": against["high"], "verdict": against_yours(against["verdict"])}


#: A step's verdict from another setting down to the user's, as that setting against the
#: user's: its "loss" is the other setting's being faster.
AGAINST_YOURS = {"loss": "faster", "small loss": "faster by less than the threshold",
                 "gain": "slower"}


def against_yours(verdict: object) -> str:
    """``verdict`` of :func:`step` (another setting over the user's) in words about that
    setting: faster, faster by less than the threshold, slower, or as the step said (cannot
    tell, unknown, unreliable, no significant change)."""
    return AGAINST_YOURS.get(str(verdict), str(verdict))


def faster_workers(found: Diagnosis) -> pd.Series | None:
    """The worker count that was significantly faster than the user's by the most (or None)."""
    table = found.workers
    faster = table[table["verdict"] == "faster"] if len(table) else table
    return faster.loc[faster["ratio"].astype(float).idxmax()] if len(faster) else None


def _change(found: Diagnosis, biggest: pd.Series) -> str:
    """What to change for the biggest loss, with what that change measured here."""
    plan, kind = found.plan, str(biggest["step"])
    if kind == "precision":
        return (f"What to change: {found.best.rung.label.split(', ', 1)[1]} instead of "
                f"{plan.precision}{', channels_last' if plan.channels_last else ''}: on data "
                f"already on the device it measured {switch_change(biggest)}.")
    more = faster_workers(found)
    text = ""
    decoded = found.gpu_decode
    if kind == "decode" and decoded is not None and decoded["verdict"] == "faster":
        text = (f"What to change: decode the JPEGs on the GPU (decode: device, nvJPEG; the "
                f"loader workers then only read the files): with your {plan.num_workers} "
                f"worker{'s' if plan.num_workers != 1 else ''} this node measured "
                f"{switch_change(decoded)}.")
        if more is not None:
            text += (f" Also: with {int(more['workers'])} workers decoding on the CPU it "
                     f"measured {switch_change(more)}.")
        return text
    if more is not None:
        text = (f"What to change: too few loader workers: with {int(more['workers'])} workers "
                f"instead of {plan.num_workers} this node measured {switch_change(more)}.")
    if kind == "filesystem":
        text += (f" {'Also' if text else 'What to change:'} {CHANGE['filesystem']}; the same "
                 f"images from memory measured {switch_change(biggest)}.")
    elif more is None:
        tried = ", ".join(map(str, plan.worker_counts))
        text = f"What to change: {CHANGE[kind]} (worker counts tried: {tried})."
    if kind == "decode" and decoded is not None:
        text += (f" Decoding on the GPU (decode: device) measured {switch_change(decoded)} "
                 f"here ({decoded['verdict']}).")
    elif kind == "decode" and plan.target == "cuda":
        text += " On this GPU, try decoding there: decode: device (nvJPEG)."
    return text.strip()


def runs_text(speed: RungSpeed) -> str:
    """Which statistic a rung's speed is: ``geometric mean of 2 runs``."""
    count = len(speed.speeds)
    return f"geometric mean of {count} runs" if count != 1 else "1 run"


def recommendation(found: Diagnosis) -> str:
    """One paragraph: the user's speed against the best here, the verdict, the biggest loss,
    what it is, what to change and what that change measured here."""
    plan = found.plan
    if found.best is None or found.user is None:
        return ("No finished run of this model in the campaign: nothing to diagnose (see the "
                "failed runs).")
    unit = UNIT
    best, user = found.best, found.user
    parts = [f"{plan.model} {plan.benchmark} on this node: {user.speed:,.1f} {unit} "
             f"({runs_text(user)}) with your setting ({user.rung.label}, {plan.precision}"
             f"{', channels_last' if plan.channels_last else ''}), "
             + against_best(user.speed / best.speed, f"{best.speed:,.1f} {unit}, "
                            f"{runs_text(best)}: {best.rung.label}") + "."]
    if found.verdict:
        parts.append(f"Your runs are {found.verdict}: {found.reason}.")
    biggest = found.biggest
    unsure = agreement.cannot_tell_text(found.steps, biggest)
    if unsure:  # never a cause a step that cannot tell may outweigh
        parts.append(unsure)
    elif biggest is not None:
        parts.append(f"The biggest loss is {WHAT[str(biggest['step'])]}: "
                     f"{float(biggest['loss']):,.1f} {unit}, a change of "
                     f"{step_change(biggest)} of the speed before it.")
        parts.append(_change(found, biggest))
    bad = found.steps[found.steps["verdict"] == "unreliable"] if len(found.steps) else found.steps
    if not unsure and biggest is None and (found.steps["verdict"].isin(
            ["gain", "no significant change", "small loss"])).any():
        parts.append("No step that could be judged is a significant loss" + (
            ": the setting gets what this node can do for the model, within the intervals of "
            "the repeats." if not len(bad) and user.speed <= best.speed * ABOVE_BEST_RATIO else
            ", but the disturbed runs leave that open: not yet what this node can do for the "
            "model."))
    elif not unsure and biggest is None and len(found.steps):
        parts.append("No step could be judged (see below): nothing to name yet.")
    if len(bad):
        parts.append(f"Unreliable, so not judged: {', '.join(bad['step'])} "
                     f"({bad['unreliable'].iloc[0]}).")
    return " ".join(parts)


def answer_text(found: Diagnosis) -> str:
    """What ``benchlib diagnose`` prints at the end: the paragraph and the waterfall table."""
    lines = [recommendation(found), ""]
    if found.best is not None:
        lines.append(f"Waterfall ({UNIT}; each step's change, and in % of the speed before it "
                     "with its 95 % interval, Welch t over the repeats):")
        lines.append(f"  best here: {found.best.speed:,.1f} ({found.best.rung.label})")
        for _, row in found.steps.iterrows():
            lines.append(f"  {row['step']:>10}: {loss_text(row)} -> {row['lower_speed']:,.1f} "
                         f"({row['label']})")
        lines.append(f"  yours: {found.user.speed:,.1f} ({found.user.rung.label})")
    if len(found.workers) > 1:
        lines.append("Worker counts: " + "; ".join(
            f"{int(r.workers)}: {r.speed:,.1f}" + (f" ({worker_change(r._asdict())} against "
                                                    f"yours, {r.verdict})"
                                                    if pd.notna(r.ratio) else " (yours)")
            for r in found.workers.itertuples()))
    repeats = rounds_text(found.steps, found.workers, found.plan, found.runs, found.gpu_decode)
    lines += [repeats] if repeats else []
    lines += [f"Beside the ladder (the most of any run): {found.beside}"] if found.beside else []
    lines += [f"Note: {note}" for note in found.notes]
    return "\n".join(lines)


def load_diagnosis(campaign_dir: str | Path, reader: CampaignReader | None = None) -> Diagnosis:
    """The diagnosis of a finished diagnose campaign folder (InputError when it is not one);
    with ``reader`` (a :class:`~benchlib.records.campaign_reader.CampaignReader` of that
    folder, kept between rounds) only the records new since its last read are parsed."""
    plan = read_plan(campaign_dir)
    if plan is None:
        raise InputError(f"{campaign_dir}: not a diagnose campaign (no plan in it)")
    return diagnose(reader.read() if reader is not None else load(campaign_dir), plan)
