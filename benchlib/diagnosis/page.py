"""The diagnose page (``summary_diagnose``, in the report of a ``benchlib diagnose`` campaign):
the recommendation on top, the waterfall from the best speed on this node down to the user's
setting, the worker counts, the node against published figures, and the node's ceilings."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from benchlib.diagnosis import against_published, analysis, text
from benchlib.diagnosis.plan import read_plan
from benchlib.diagnosis.rounds import rounds_text
from benchlib.diagnosis.rung_speeds import BESIDE, beside_table
from benchlib.diagnosis.waterfall import waterfall_plot
from benchlib.measure.contention import RULE as CONTENTION_RULE
from benchlib.publish.pages import Call, Page, carried, node, note, plots, present, show


def answer(df: pd.DataFrame, results_dir: str | Path) -> analysis.Diagnosis | None:
    """The recommendation: the user's speed against the best here, the verdict, the biggest
    loss, what to change and what that change measured here."""
    plan = read_plan(results_dir)
    if plan is None:
        note("Not a `benchlib diagnose` campaign: no plan in this folder.")
        return None
    found = analysis.diagnose(df, plan)
    said = analysis.recommendation(found)
    carried.carry("diagnosis", {"text": said}, f"**{said}**")  # the index reads it here
    if found.notes:
        note("\n".join(f"- {n}" for n in found.notes))
    return found


def waterfall(found: analysis.Diagnosis | None) -> None:
    """The waterfall as a plot and a table."""
    if found is None or not len(found.steps):
        note("Fewer than two rungs finished: no waterfall.")
        return
    plots.show(waterfall_plot(found))
    show(present.table(text.steps_frame(found.steps), "Each step of the waterfall: the speed before "
                       f"and after it ({text.UNIT}, geometric mean of each rung's runs), the "
                       "loss, the change in % of the speed before it with its 95 % interval "
                       "(Welch t over the repeats of the two rungs), and the verdict "
                       "(unreliable: a contended or throttled run)",
                       keep=("verdict",), say_constant=False))
    repeats = rounds_text(found.steps, found.workers, found.plan, found.runs, found.gpu_decode)
    if repeats:
        note(repeats)


def workers(found: analysis.Diagnosis | None) -> None:
    """The user's data path at every worker count, against the user's count."""
    if found is None or not len(found.workers):
        note("No worker counts to compare.")
        return
    table = found.workers.assign(
        against_yours=[text.worker_change(r._asdict()) for r in found.workers.itertuples()]
    ).drop(columns=["ratio", "low", "high"])
    show(present.table(table, f"Speed ({text.UNIT}, geometric mean of each count's runs) at "
                       "each loader worker count, and the change against your count with its "
                       "95 % interval (Welch t over the repeats)", say_constant=False))
    if found.gpu_decode is not None:
        decoded = found.gpu_decode
        workers = found.plan.num_workers
        note(f"Decoded on the GPU (decode: device) with your {workers} loader "
             f"worker{'s' if workers != 1 else ''} only reading: {decoded['speed']:,.1f} {text.UNIT}, "
             f"{text.switch_change(decoded)} against your setting ({decoded['verdict']}).")


def others(df: pd.DataFrame, found: analysis.Diagnosis | None) -> None:
    """The node against shipped published figures of the same work on other GPUs."""
    import benchlib.analysis.references as references

    if found is None:
        return
    refs = references.shipped()
    compared = against_published.against_references(df, found.plan, refs)
    if compared.empty:
        note(against_published.unmatched_text(found.plan, refs))
        return
    note("\n".join(f"- **{r.rung}**: {r.text} (source: {r.source})"
                   for r in compared.itertuples()))


def rungs(df: pd.DataFrame, found: analysis.Diagnosis | None) -> None:
    """Every rung of the ladder: its finished runs, speed and range, and disturbed flags."""
    if found is None:
        return
    show(present.table(analysis.rungs_table(df, found.plan), "The ladder's rungs: the runs "
                       f"judged, speed ({text.UNIT}, geometric mean of the runs), the slowest "
                       "and fastest run, and the runs disturbed (contended or throttled; none: "
                       "no run was; left out: runs that were, not counted once two calm runs "
                       "of the rung exist)", say_constant=False,
                       keep=("runs", "speed", "slowest", "fastest", "disturbed"),
                       missing_reason="no finished run"))
    show(present.table(beside_table(df, found.plan), "What each rung's runs measured beside "
                       "them, the most of any run (runs left out too): other processes' "
                       "share of the CPU time and the rate they read from the local disks (a "
                       "run is contended when "
                       f"{CONTENTION_RULE}), and the share of the time some task on the node "
                       "waited for a CPU or for I/O (pressure stalls: the runs' own waits too, "
                       "so never judged alone)", keep=list(BESIDE),
                       say_constant=False, missing_reason="not measured (Linux's /proc only)"))


PAGE = Page(
    "Diagnosis: why this node is slower than it should be",
    "A `benchlib diagnose` campaign: the model run as a ladder, from synthetic data already on "
    "the device (what the node can do for it) through synthetic data from the host, real data "
    "from memory (decode only) to real data from disk as you read it, each rung with repeats. "
    "The waterfall goes from the best speed down to yours; each step's loss has a 95 % interval "
    "from the repeats (Welch t); a rung's contended or throttled runs are left out once two "
    "calm runs of it exist and the rung is run again, and a step still judged on a disturbed "
    "run is unreliable and gets no verdict.",
    (
        "## What to change",
        Call(answer, "df, results_dir", "found"),
        "## From the best speed on this node down to yours",
        Call(waterfall, "found"),
        "## Loader workers",
        Call(workers, "found"),
        "## Against others\n\nThe same work on other GPUs (shipped published figures), scaled "
        "by the datasheets.",
        Call(others, "df, found"),
        "## The node's ceilings",
        Call(node.ceilings, "df"),
        Call(node.loader, "df"),
        "## The rungs",
        Call(rungs, "df, found"),
    ),
)
