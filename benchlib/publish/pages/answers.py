"""The report's answers, each computed once: by the summary page that declares it
(:attr:`~benchlib.publish.pages.catalog.SummaryPage.computes`), which shows its lines and
carries them in its executed notebook (:mod:`benchlib.publish.pages.carried`), from where the
index reads them. The index computes an answer itself only when its page is not in the report.

An answer is, per campaign, a list of items: plain JSON values (text, numbers) and the runs
behind a line as their ``source`` (the first :data:`~benchlib.publish.pages.summary.NAMED_RUNS`
and how many in all), which the index links to their pages (:func:`lines`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
from markupsafe import Markup
from typing_extensions import TypedDict  # pydantic reads it on Python 3.11

import benchlib.analysis.comparisons as comparisons
import benchlib.analysis.energy as energy
from benchlib import formatting
from benchlib.analysis.intervals import HEADLINE_NAME
from benchlib.publish.pages import summary
from benchlib.publish.templating import macro
from benchlib.records import configuration, flags, schema

#: Settings that describe a configuration in an answer (those that vary are shown): the
#: schema's, but benchmark and model, by which the answers' lines are grouped.
DESCRIBE = tuple(c for c in schema.describing() if c not in ("benchmark", "model"))
#: The runs behind a line: their sources (the first few) and how many in all.
Runs = dict[str, object]
Item = dict[str, object]


def line(name: str, /, *values: object) -> Markup:
    """One answer line: macro ``name`` of ``templates/pages/answers.html.j2`` (record text in
    ``values`` escaped, Markup passed as it is)."""
    return macro("answers.html.j2", name)(*values)


def _source(row: pd.Series) -> str:
    source = row.get("source", "")
    return "" if formatting.missing(source) else str(source)


def runs_of(rows: pd.DataFrame) -> Runs:
    """The runs behind a line: the first :data:`summary.NAMED_RUNS` sources, and the count."""
    return {"sources": [_source(row) for _, row in rows.head(summary.NAMED_RUNS).iterrows()],
            "count": len(rows)}


def run_page(source: str, pages: Mapping[str, str]) -> str | None:
    """The page of the run whose record came from ``source``: ``pages`` maps each source (or,
    for a caller that names runs so, its notebook's stem) to its page."""
    return pages.get(source) or pages.get(Path(source).stem) if source else None


def named_runs(runs: Runs, pages: Mapping[str, str]) -> Markup:
    """HTML naming the runs, each linked to its page: ``train-3, train-7 and 4 more``."""
    sources = [str(s) for s in runs.get("sources", [])]  # type: ignore[union-attr]
    names = [line("run_link", Path(s).stem or "(unnamed run)", run_page(s, pages)) for s in sources]
    more = int(runs.get("count", len(names))) - len(names)  # type: ignore[call-overload]
    if more > 0:
        return Markup("{} and {} more").format(Markup(", ").join(names), more)
    if len(names) > 1:
        return Markup("{} and {}").format(Markup(", ").join(names[:-1]), names[-1])
    return Markup("").join(names)


def _interval(row: pd.Series, repeats: pd.Series) -> str:
    """Between-run spread when the configuration has repeats, else the within-run interval,
    named as such."""
    values = pd.to_numeric(repeats, errors="coerce").dropna()
    if len(values) >= 2:
        return (f" (runs of this configuration: {formatting.number(float(values.min()))}–"
                f"{formatting.number(float(values.max()))}, {len(values)} repeats)")
    low, high = row.get("throughput_low"), row.get("throughput_high")
    if formatting.missing(low) or formatting.missing(high):
        return ""
    return (f" (one run; within-run 95 %: {formatting.number(float(low))}–"
            f"{formatting.number(float(high))})")


def _came(configurations: int, repeats: pd.Series, setting: str) -> str:
    """Where the figure comes from and which configuration won ('' when there was one
    configuration: the interval text says it)."""
    if configurations <= 1:
        return ""
    what = " (median of its repeats)" if len(repeats) > 1 else ""
    won = f": the fastest is {setting}" if setting else ""
    return f"best of {configurations} configurations{won}{what}"


def _best_configuration(rows: pd.DataFrame) -> tuple[pd.Series, pd.Series, int]:
    """The configuration with the highest median throughput over its repeats: its run nearest
    that median, the throughputs of its repeats, and how many configurations there were."""
    keys = [c for c in comparisons.config_columns(rows) if rows[c].notna().any()]
    groups = rows.groupby(keys, dropna=False, sort=False) if keys else [((), rows)]
    medians = [(float(g["throughput"].astype(float).median()), g) for _, g in groups]
    median, group = max(medians, key=lambda item: item[0])
    values = group["throughput"].astype(float)
    return group.loc[(values - median).abs().idxmin()], values, len(medians)


def fastest(done: pd.DataFrame) -> list[Item]:
    """Per benchmark and model: the best configuration, its throughput and, beside it, its
    energy efficiency (median images/J, ... over its repeats; unknown where not measured)."""
    items = []
    work = energy.with_per_joule(comparisons.benchmarks(done).dropna(subset=["throughput"]))
    keys = [c for c in ("benchmark", "model", "unit") if c in work]
    for key, rows in work.groupby(keys, dropna=False, sort=True):
        benchmark, model, unit = (*key, "", "", "")[:3]
        best, repeats, configurations = _best_configuration(rows)
        per_joule = energy.per_joule_unit(benchmark, unit)
        efficiency = (energy.said(rows.loc[repeats.index, energy.COLUMN].median(), per_joule)
                      if per_joule else "")
        varying = [c for c in configuration.varying(rows, DESCRIBE)
                   if not formatting.missing(best[c])]
        setting = (configuration.written(best.to_frame().T, varying, short=True).iloc[0]
                   if varying else "")
        items.append({"benchmark": str(benchmark), "model": str(model),
                      "value": formatting.number(float(repeats.median())), "unit": str(unit),
                      "interval": _interval(best, repeats), "energy": efficiency,
                      "came": _came(configurations, repeats, setting), "source": _source(best),
                      "flags": str(best["flags"]) if flags.of(best.get("flags")) else ""})
    return items


def scaling(done: pd.DataFrame) -> list[Item]:
    """Per benchmark, model and unit with several device counts: efficiency at the most
    devices (median over configurations, with their range and the runs at its ends)."""
    runs = summary.scalable(comparisons.benchmarks(done))
    if runs.empty or not configuration.varies(runs["num_devices"]):
        return []
    scaled = comparisons.scaling(runs)
    items = []
    keys = [c for c in ("benchmark", "model", "unit") if c in scaled]
    for key, rows in scaled.groupby(keys, dropna=False, sort=True):
        if not configuration.varies(rows["num_devices"]):
            continue
        most = int(rows["num_devices"].max())
        top = rows[rows["num_devices"] == most]
        low, high = top.loc[top["efficiency"].idxmin()], top.loc[top["efficiency"].idxmax()]
        ends = [[formatting.percent(end["efficiency"]), runs_of(end.to_frame().T)]
                for end in (low, high)]
        spread = len(top) > 1 and ends[0][0] != ends[1][0]  # the range and its runs, said
        # a flagged run behind the figure (superlinear included) is said where it is read: a
        # run of the configurations measured at the most devices, never one that scaled not
        behind = rows[rows["baseline_key"].isin(top["baseline_key"])]
        marked = behind[[bool(flags.of(f)) for f in behind.get("flags", [""] * len(behind))]]
        names = flags.join(n for f in marked.get("flags", []) for n in flags.of(f))
        items.append({"name": " ".join(str(k) for k in (key if isinstance(key, tuple)
                                                        else (key,))[:2]),
                      "most": most, "speedup": formatting.ratio(top["speedup"].median()),
                      "base": int(rows["baseline_devices"].min()),
                      "efficiency": formatting.percent(top["efficiency"].median()),
                      "ends": ends if spread else None, "over": len(top), "flags": names,
                      "flagged": runs_of(marked)})
    return items


def factors(done: pd.DataFrame) -> list[Item]:
    """One item per paired comparison, significant effects first."""
    found = sorted(summary.comparisons(done), key=lambda c: not c.effect["significant"])
    return [{"css": "flag" if c.effect.get("unreliable") else
             "significant" if c.effect["significant"] else "",
             "factor": c.factor.replace("_", " "), "a": str(c.a), "b": str(c.b),
             "effect": summary.describe_effect(c.effect), "pairs": int(c.effect["pairs"]),
             "benchmark": str(c.benchmark)} for c in found]


def _verdict_detail(name: str, rows: pd.DataFrame) -> str:
    """What a verdict's runs have in common: the data wait, the MFU, or why none is named."""
    import benchlib.analysis.verdict as verdict

    waits = rows["data_wait_share"].dropna()
    mfu = {name: rows[column].dropna() for column, name in (
        ("mfu", "of the datasheet"), ("mfu_achievable", "of what the node reaches"))
        if column in rows}
    detail = ""
    if name == "data-bound" and len(waits) == 1:
        detail = f": it waited {formatting.percent(waits.iloc[0])} of each iteration for the next batch"
    elif name == "data-bound" and len(waits):
        low, high = formatting.percent(waits.min()), formatting.percent(waits.max())
        detail = (f": they waited {low} to {high}" if low != high else f": each waited {low}")
        detail += " of each iteration for the next batch"
    elif name == "compute-bound" and any(len(v) for v in mfu.values()):
        detail = ": median MFU " + ", ".join(f"{formatting.percent(values.median())} {words}"
                                             for words, values in mfu.items() if len(values))
    elif name == "compute-bound":
        detail = ": no FLOPs peak to compare with (no node probe or datasheet)"
    if name == "compute-bound" and (unknown := verdict.unknown_reach(rows)):
        detail = (f"{detail}; of" if detail.startswith(": median") else ": MFU of") + \
            f" what the node reaches {unknown}"
    elif name == "contended":
        detail = (": others used the node while they ran, so no bottleneck is named for them "
                  "(run them again on a quiet node)")
    return detail


def bottlenecks(done: pd.DataFrame) -> list[Item]:
    """How many runs each verdict covers, which (those waiting longest for data first), with
    the typical data wait or MFU."""
    import benchlib.analysis.verdict as verdict

    judged = verdict.verdicts(done)
    items = []
    for name, rows in ([] if judged.empty else judged.groupby("verdict", sort=False)):
        rows = rows.sort_values("data_wait_share", ascending=False, na_position="last")
        items.append({"count": len(rows), "total": len(judged), "verdict": str(name),
                      "runs": runs_of(rows), "detail": _verdict_detail(str(name), rows)})
    return items


def flagged(done: pd.DataFrame) -> list[Item]:
    """One item per flag present: how many runs and which, what it means, what to do."""
    marked = [flags.of(f) for f in done.get("flags", pd.Series("", index=done.index))]
    return [{"name": name, "count": int(count), "total": len(done),
             "runs": runs_of(done[[name in m for m in marked]]),
             "meaning": flags.FLAGS.get(name, "see the run record")}
            for name, count in flags.flag_counts(done).items()]


def stands(done: pd.DataFrame, refs: Sequence[object] = ()) -> list[Item]:
    """One item per benchmark (and model) against its matching reference
    (:func:`benchlib.publish.pages.acceptance_tables.stands_lines`), failures marked."""
    from benchlib.publish.pages import acceptance_tables

    return [{"failed": "slower than it should be" in line, "name": line.partition(": ")[0],
             "rest": line.partition(": ")[2]}
            for line in acceptance_tables.stands_lines(done, list(refs))]


class NamedRuns(TypedDict):
    """The runs behind a line (:func:`runs_of`)."""

    sources: list[str]
    count: int


class Fastest(TypedDict):
    benchmark: str
    model: str
    value: str
    unit: str
    interval: str
    energy: str
    came: str
    source: str
    flags: str


class Scaling(TypedDict):
    name: str
    most: int
    speedup: str
    base: int
    efficiency: str
    ends: list[tuple[str, NamedRuns]] | None
    over: int
    flags: str
    flagged: NamedRuns


class Factor(TypedDict):
    css: str
    factor: str
    a: str
    b: str
    effect: str
    pairs: int
    benchmark: str


class Bottleneck(TypedDict):
    count: int
    total: int
    verdict: str
    runs: NamedRuns
    detail: str


class Stands(TypedDict):
    failed: bool
    name: str
    rest: str


class Flagged(TypedDict):
    name: str
    count: int
    total: int
    runs: NamedRuns
    meaning: str


@dataclass(frozen=True)
class Answer:
    """One answer: its question (the title it has on the index and its page), what computes
    its items from one campaign's finished runs, and the shape of each item (what a page's
    carried answer must be to be read)."""

    title: str
    compute: Callable[..., list[Item]]
    shape: type


#: Every answer, in the index's order.
ANSWERS: dict[str, Answer] = {
    "fastest": Answer("How fast", fastest, Fastest),
    "scaling": Answer("How it scales", scaling, Scaling),
    "factors": Answer("Which factors matter", factors, Factor),
    "bottlenecks": Answer("What holds it back", bottlenecks, Bottleneck),
    "stands": Answer("How it stands against the matching reference", stands, Stands),
    "flagged": Answer("What is flagged", flagged, Flagged),
}


def lines(answer: str, items: Iterable[Item], pages: Mapping[str, str]) -> list[Markup]:
    """An answer's items as HTML lines (``answers.html.j2``), their runs linked to ``pages``
    (a source to its run page; none: the runs named, unlinked)."""
    out = []
    for item in items:
        v = item.get
        if answer == "fastest":
            source = str(v("source") or "")
            out.append(line("fastest", v("benchmark"), v("model"), v("value"), v("unit"),
                             v("interval"), v("energy"), v("came"), Path(source).stem,
                             run_page(source, pages), v("flags")))
        elif answer == "scaling":
            ends = v("ends")
            out.append(line("scaling", v("name"), v("most"), v("speedup"), v("base"),
                             v("efficiency"),
                             [(pct, named_runs(runs, pages)) for pct, runs in ends] if ends else None,
                             v("over"), v("flags"),
                             named_runs(v("flagged"), pages) if v("flags") else ""))
        elif answer == "factors":
            out.append(line("factor", v("css"), v("factor"), v("a"), v("b"), v("effect"),
                             HEADLINE_NAME, v("pairs"), v("benchmark")))
        elif answer in ("bottlenecks", "flagged"):
            named = named_runs(v("runs"), pages)
            out.append(line("bottleneck", v("count"), v("total"), v("verdict"), named, v("detail"))
                       if answer == "bottlenecks" else
                       line("flagged", v("name"), v("count"), v("total"), named, v("meaning")))
        elif answer == "stands":
            out.append(line("stands", v("failed"), v("name"), v("rest")))
    return out


def by_campaign(records: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Each campaign's finished runs (flags and core columns added), by the campaign's name
    ('' for records without one), in name order: what every answer is computed from."""
    records = flags.with_flags(summary.with_core_columns(records))
    campaigns = records["campaign"].fillna("").astype(str)
    return {name: comparisons.ok(records[campaigns == name]) for name in sorted(campaigns.unique())}


def compute(answer: str, records: pd.DataFrame, refs: Sequence[object] = ()
            ) -> dict[str, list[Item]]:
    """Answer ``answer`` for each campaign of ``records`` (its finished runs)."""
    extra = {"refs": refs} if answer == "stands" else {}
    return {name: ANSWERS[answer].compute(done, **extra) if len(done) else []
            for name, done in by_campaign(records).items()}
