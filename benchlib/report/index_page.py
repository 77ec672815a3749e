"""The report's front page: the answers first, each linked to the page that shows it, then the
pages, then the runs grouped by benchmark.

Per campaign: how fast the node is per benchmark and model (the best configuration, its
throughput with unit and 95 % interval, and its energy efficiency beside it: images/J, ...,
"unknown" where energy was not measured), how it scales (efficiency at the most devices), which
factors matter (paired effects with intervals), what holds the runs back (the verdicts), and
what is flagged. The page, its style, its sections, their lines and the run tables come from
``templates/pages/`` (``index.html.j2`` and ``index.css``, ``section.html.j2``, the macros of
``answers.html.j2``, ``runs.html.j2``) with autoescape: this module computes what they say.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
from markupsafe import Markup

import benchlib.analysis.comparisons as comparisons
import benchlib.analysis.energy as energy
from benchlib import formatting
from benchlib.analysis.intervals import HEADLINE_NAME
from benchlib.compare import tables as compare_tables
from benchlib.publish import templating
from benchlib.publish.pages import catalog as pages_catalog
from benchlib.publish.pages import summary
from benchlib.publish.pages.catalog import SummaryPage
from benchlib.publish.templating import macro
from benchlib.publish.templating import render as render_template
from benchlib.records import configuration, flags, schema
from benchlib.vocabulary import CompareVerdict, RecordStatus

#: Settings that describe a configuration on the front page (those that vary are shown): the
#: schema's, but benchmark and model, by which its lines are grouped.
DESCRIBE = tuple(c for c in schema.describing() if c not in ("benchmark", "model"))
CSS = templating.TEMPLATES / "offline" / "page.css"


@dataclass(frozen=True)
class Link:
    """A page of the report: file name (``summary_scaling.html``), title and what it answers."""

    href: str
    title: str
    answers: str = ""


def _line(name: str, /, *values: object) -> Markup:
    """One answer line: macro ``name`` of ``templates/pages/answers.html.j2`` (record text in
    ``values`` escaped, Markup passed as it is)."""
    return macro("answers.html.j2", name)(*values)


def _link(pages: Mapping[str, Link], to: SummaryPage, text: str = "details") -> Link | None:
    """The link to summary page ``to`` with ``text`` (None when the report has no such page)."""
    page = pages.get(to.name)
    return Link(page.href, text) if page else None


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


def _runs(configurations: int, repeats: pd.Series, setting: str) -> str:
    """Where the figure comes from and which configuration won ('' when there was one
    configuration: the interval text says it)."""
    if configurations <= 1:
        return ""  # one run, or one configuration's repeats: the interval text says so
    what = " (median of its repeats)" if len(repeats) > 1 else ""
    won = f": the fastest is {setting}" if setting else ""
    return f"best of {configurations} configurations{won}{what}"


def named_runs(rows: pd.DataFrame, runs: Mapping[str, str]) -> Markup:
    """HTML naming ``rows``' runs, each linked to its page: ``train-3, train-7 and 4 more``."""
    names = [_line("run_link", _stem(row) or "(unnamed run)", run_page(row, runs))
             for _, row in rows.head(summary.NAMED_RUNS).iterrows()]
    more = len(rows) - summary.NAMED_RUNS
    if more > 0:
        return Markup("{} and {} more").format(Markup(", ").join(names), more)
    if len(names) > 1:
        return Markup("{} and {}").format(Markup(", ").join(names[:-1]), names[-1])
    return Markup("").join(names)


def _best_configuration(rows: pd.DataFrame) -> tuple[pd.Series, pd.Series, int]:
    """The configuration with the highest median throughput over its repeats: its run nearest
    that median, the throughputs of its repeats, and how many configurations there were."""
    keys = [c for c in comparisons.config_columns(rows) if rows[c].notna().any()]
    groups = rows.groupby(keys, dropna=False, sort=False) if keys else [((), rows)]
    medians = [(float(g["throughput"].astype(float).median()), g) for _, g in groups]
    median, group = max(medians, key=lambda item: item[0])
    values = group["throughput"].astype(float)
    return group.loc[(values - median).abs().idxmin()], values, len(medians)


def _stem(row: pd.Series) -> str:
    return Path(str(row.get("source", ""))).stem


def run_page(row: pd.Series, runs: Mapping[str, str]) -> str | None:
    """The page of the run behind ``row``: ``runs`` maps each record's ``source`` (or, for a
    caller that names runs so, its notebook's stem) to its page."""
    source = str(row.get("source", ""))
    return runs.get(source) or runs.get(Path(source).stem)


def fastest(done: pd.DataFrame, runs: Mapping[str, str]) -> list[Markup]:
    """One line per benchmark and model: the best configuration, its throughput and, beside it,
    its energy efficiency (median images/J, ... over its repeats; unknown where not measured)."""
    lines = []
    work = energy.with_per_joule(comparisons.benchmarks(done).dropna(subset=["throughput"]))
    keys = [c for c in ("benchmark", "model", "unit") if c in work]
    for key, rows in work.groupby(keys, dropna=False, sort=True):
        benchmark, model, unit = (*key, "", "", "")[:3]
        best, repeats, configurations = _best_configuration(rows)
        per_joule = energy.per_joule_unit(benchmark, unit)
        efficiency = (energy.said(rows.loc[repeats.index, energy.COLUMN].median(), per_joule)
                      if per_joule else "")
        varying = [c for c in configuration.varying(rows, DESCRIBE) if not formatting.missing(best[c])]
        setting = configuration.written(best.to_frame().T, varying, short=True).iloc[0] if varying else ""
        lines.append(_line("fastest", benchmark, model, formatting.number(float(repeats.median())),
                           unit, _interval(best, repeats), efficiency,
                           _runs(configurations, repeats, setting),
                           _stem(best), run_page(best, runs),
                           best["flags"] if flags.of(best.get("flags")) else ""))
    return lines


def scaling(done: pd.DataFrame, linked: Mapping[str, str] | None = None) -> list[Markup]:
    """Per benchmark, model and unit with several device counts: efficiency at the most
    devices (median over configurations, with their range and the runs at its ends)."""
    runs = summary.scalable(comparisons.benchmarks(done))
    if runs.empty or not configuration.varies(runs["num_devices"]):
        return []
    scaled = comparisons.scaling(runs)
    lines = []
    keys = [c for c in ("benchmark", "model", "unit") if c in scaled]
    for key, rows in scaled.groupby(keys, dropna=False, sort=True):
        if not configuration.varies(rows["num_devices"]):
            continue
        most = int(rows["num_devices"].max())
        base = int(rows["baseline_devices"].min())
        top = rows[rows["num_devices"] == most]
        efficiency, speedup = top["efficiency"].median(), top["speedup"].median()
        low, high = top.loc[top["efficiency"].idxmin()], top.loc[top["efficiency"].idxmax()]
        ends = [(formatting.percent(end["efficiency"]), named_runs(end.to_frame().T, linked or {}))
                for end in (low, high)]
        spread = len(top) > 1 and ends[0][0] != ends[1][0]  # the range and its runs, said
        # a flagged run behind the figure (superlinear included) is said where it is read: a
        # run of the configurations measured at the most devices, never one that scaled not
        behind = rows[rows["baseline_key"].isin(top["baseline_key"])]
        marked = behind[[bool(flags.of(f)) for f in behind.get("flags", [""] * len(behind))]]
        names = flags.join(n for f in marked.get("flags", []) for n in flags.of(f))
        name = " ".join(str(k) for k in (key if isinstance(key, tuple) else (key,))[:2])
        lines.append(_line("scaling", name, most, formatting.ratio(speedup), base,
                           formatting.percent(efficiency), ends if spread else None, len(top),
                           names, named_runs(marked, linked or {}) if names else ""))
    return lines


def factors(done: pd.DataFrame) -> list[Markup]:
    """One line per paired comparison, significant effects first."""
    found = sorted(summary.comparisons(done), key=lambda c: not c.effect["significant"])
    lines = []
    for comparison in found:
        effect = comparison.effect
        css = "flag" if effect.get("unreliable") else "significant" if effect["significant"] else ""
        lines.append(_line("factor", css, comparison.factor.replace("_", " "), comparison.a,
                           comparison.b, summary.describe_effect(effect), HEADLINE_NAME,
                           effect["pairs"], comparison.benchmark))
    return lines


def bottlenecks(done: pd.DataFrame, runs: Mapping[str, str] | None = None) -> list[Markup]:
    """How many runs each verdict covers, which (the first ``summary.NAMED_RUNS``, those waiting
    longest for data first), with the typical data wait or MFU."""
    import benchlib.analysis.verdict as verdict

    judged = verdict.verdicts(done)
    if judged.empty:
        return []
    lines = []
    for name, rows in judged.groupby("verdict", sort=False):
        detail = ""
        rows = rows.sort_values("data_wait_share", ascending=False, na_position="last")
        waits = rows["data_wait_share"].dropna()
        mfu = {name: rows[column].dropna() for column, name in (
            ("mfu", "of the datasheet"), ("mfu_achievable", "of what the node reaches"))
            if column in rows}
        if name == "data-bound" and len(waits) == 1:
            detail = (f": it waited {formatting.percent(waits.iloc[0])} of each iteration for "
                      "the next batch")
        elif name == "data-bound" and len(waits):
            low, high = formatting.percent(waits.min()), formatting.percent(waits.max())
            detail = (f": they waited {low} to {high}" if low != high else f": each waited {low}")
            detail += " of each iteration for the next batch"
        elif name == "compute-bound" and any(len(v) for v in mfu.values()):
            detail = ": median MFU " + ", ".join(
                f"{formatting.percent(values.median())} {words}"
                for words, values in mfu.items() if len(values))
        elif name == "compute-bound":
            detail = ": no FLOPs peak to compare with (no node probe or datasheet)"
        if name == "compute-bound" and (unknown := verdict.unknown_reach(rows)):
            detail = (f"{detail}; of" if detail.startswith(": median") else ": MFU of") + \
                f" what the node reaches {unknown}"
        elif name == "contended":
            detail = (": others used the node while they ran, so no bottleneck is named for "
                      "them (run them again on a quiet node)")
        lines.append(_line("bottleneck", len(rows), len(judged), name, named_runs(rows, runs or {}),
                           detail))
    return lines


def flagged(done: pd.DataFrame, runs: Mapping[str, str] | None = None) -> list[Markup]:
    """One line per flag present: how many runs and which, what it means, what to do."""
    total = len(done)
    marked = [flags.of(f) for f in done.get("flags", pd.Series("", index=done.index))]
    return [_line("flagged", name, count, total,
                  named_runs(done[[name in m for m in marked]], runs or {}),
                  flags.FLAGS.get(name, "see the run record"))
            for name, count in flags.flag_counts(done).items()]


def stands(done: pd.DataFrame, refs: Sequence[object]) -> list[Markup]:
    """One line per benchmark (and model) against its matching reference
    (:func:`benchlib.publish.pages.acceptance_tables.stands_lines`), failures marked."""
    from benchlib.publish.pages import acceptance_tables

    return [_line("stands", "slower than it should be" in line, *line.partition(": ")[::2])
            for line in acceptance_tables.stands_lines(done, list(refs))]


def compared_counts(compared: pd.DataFrame, baseline: str, pages: Mapping[str, Link]) -> Markup:
    """The compare verdict counts against ``baseline``, linked to the compare page."""
    import benchlib.compare.regression as regression

    if compared.empty:
        items = [_line("nothing_compared")]
    else:
        counts = compared["verdict"].value_counts()
        items = [_line("compare_counts", ", ".join(f"{n} {v}" for v, n in counts.items()))]
        labels = compare_tables.compare_labels(compared)
        items += [_line("regression", labels[i], row.ratio, row.low, row.high)
                  for i, row in regression.regressions(compared).iterrows()]
        for verdict, said in ((CompareVerdict.UNRELIABLE, compare_tables.UNRELIABLE),
                              (CompareVerdict.UNKNOWN, compare_tables.UNKNOWN)):
            if verdict in counts:
                items.append(_line("uncertified", counts[verdict], said))
    return _section(f"Compared with {baseline}", items, "",
                    _link(pages, pages_catalog.COMPARED, "compare page"))


def _section(title: str, items: list[Markup], empty: str, link: Link | None) -> Markup:
    """One answer from ``templates/pages/section.html.j2``; ``items`` are its lines, rendered
    from ``answers.html.j2``."""
    return Markup(render_template("section.html.j2", title=title, link=link, empty=empty,
                                  items=items))


def answers(records: pd.DataFrame, pages: Mapping[str, Link], runs: Mapping[str, str],
            refs: Sequence[object] = ()) -> Markup:
    """The answers for every campaign in ``records`` (against ``refs`` when given), as HTML."""
    records = flags.with_flags(summary.with_core_columns(records))
    parts = []
    campaigns = records["campaign"].fillna("").astype(str)
    for campaign in sorted(campaigns.unique()):
        done = comparisons.ok(records[campaigns == campaign])
        if configuration.varies(campaigns, missing_too=True):
            parts.append(_line("campaign", campaign or "(unnamed)"))
        if done.empty:
            parts.append(_line("no_finished_run"))
            continue
        parts.append(_section("How fast", fastest(done, runs),
                              "No benchmark run with a throughput.", _link(pages, pages_catalog.SCALING)))
        parts.append(_section("How it scales", scaling(done, runs),
                              "No configuration ran on more than one device count.",
                              _link(pages, pages_catalog.SCALING, "scaling sheet")))
        parts.append(_section("Which factors matter", factors(done),
                              "No factor has two values that pair: nothing to compare.",
                              _link(pages, pages_catalog.COMPARISONS)))
        parts.append(_section("What holds it back", bottlenecks(done, runs),
                              "No finished benchmark run to judge.", _link(pages, pages_catalog.NODE)))
        if refs:
            parts.append(_section("How it stands against the matching reference",
                                  stands(done, refs), "No finished run to check.",
                                  _link(pages, pages_catalog.ACCEPTANCE, "acceptance")))
        parts.append(_section("What is flagged", flagged(done, runs),
                              "Nothing: no run was contended, throttled, noisy or too short.",
                              None))  # explained here: the pages link to this answer
    return Markup("").join(parts)


RUN_COLUMNS = ("model", "dataset", "synthetic_kind", "batch_size", "precision", "gpu",
               "num_devices", "num_workers", "image_size", "noise_samples", "patch_shape",
               "block_shape")


def run_list(records: pd.DataFrame, runs: Mapping[str, str]) -> Markup:
    """The runs grouped by benchmark: the settings that vary in the group, throughput,
    iteration time, energy efficiency (where the kind has a per-joule unit), flags and status,
    each linked to its page."""
    records = flags.with_flags(summary.with_core_columns(records))
    sources = records["source"].dropna().astype(str) if "source" in records else pd.Series(dtype=str)
    stems = sources.map(lambda s: Path(s).stem)
    shared = set(stems.index[stems.duplicated(keep=False)])  # rows whose notebooks share a name
    out, noted = [], False  # what "unknown" means: said under the first table that shows it
    benchmark = records["benchmark"].fillna("(failed before it started)").astype(str)
    for name, rows in records.groupby(benchmark, sort=True):
        rows = rows.sort_values([c for c in ("model", "num_devices", "batch_size") if c in rows],
                                na_position="last")
        shown = configuration.varying(rows, RUN_COLUMNS) or [c for c in ("model",) if c in rows]
        units = rows["unit"].dropna().unique()
        unit = units[0] if len(units) == 1 else ""
        per_joule = energy.frame_unit(rows)  # images/J, ... (none for the probes)
        rows = energy.with_per_joule(rows) if per_joule else rows
        # the measurement right after the run's name: on a phone it is in the first view
        head = ["run", formatting.column_label("throughput", unit or None), "iteration (ms)",
                *([formatting.column_label(energy.COLUMN, per_joule)] if per_joule else []),
                *(formatting.column_label(c) for c in shown), "flags", "status"]
        numeric = {1, 2, 3} if per_joule else {1, 2}
        body = []
        for _, row in rows.iterrows():
            stem = _stem(row)
            if row.name in shared:  # same-named notebooks in different folders: say which
                stem = f"{Path(str(row['source'])).parent.name}/{stem}"
            throughput = formatting.formatter("throughput")(row.get("throughput"))
            if not unit and not formatting.missing(row.get("unit")):
                throughput += f" {row['unit']}"
            status = str(row.get("status") or RecordStatus.OK)
            if status != RecordStatus.OK:
                status += f": {str(row.get('error') or '')[:120]}"
            body.append({"stem": stem, "page": run_page(row, runs), "flags": row.get("flags") or "",
                         "status": status,
                         "cells": [throughput, formatting.formatter("time_iteration_s")(
                                        row.get("time_iteration_s")),
                                    *([formatting.formatter(energy.COLUMN)(row.get(energy.COLUMN))]
                                      if per_joule else []),
                                    *(formatting.formatter(c)(row.get(c)) for c in shown)]})
        caption = (f"{len(rows)} {name} run{'' if len(rows) == 1 else 's'}; – = not recorded for "
                   "that run" + (f"; {energy.UNKNOWN_NOTE}" if per_joule and not noted else "") +
                   ". Each run links to its page.")
        noted = noted or bool(per_joule)
        out.append(Markup(render_template("runs.html.j2", name=name, caption=caption, head=head,
                                 numeric=numeric, rows=body)))
    return Markup("").join(out)


def diagnosis_section(text: str, pages: Mapping[str, Link]) -> Markup:
    """A diagnose campaign's recommendation, linked to its page ('' without one)."""
    if not text:
        return Markup("")
    return _section("Why it is slower than it should be", [_line("line", text)], "",
                    _link(pages, pages_catalog.DIAGNOSIS, "diagnosis"))


def render(campaign: str, records: pd.DataFrame, pages: Sequence[Link],
           runs: Mapping[str, str], skipped: str = "", refs: Sequence[object] = (),
           compared: pd.DataFrame | None = None, baseline: str = "",
           diagnosis: str = "") -> str:
    """The whole index page, under the report's navigation bar (:mod:`benchlib.report.navigation`,
    from ``pages``): with ``refs``, each benchmark against its reference; with ``compared``
    (:func:`benchlib.compare.regression.compare` against ``baseline``), the verdicts."""
    from benchlib.report import navigation

    by_key = {Path(p.href).stem: p for p in pages}
    done = int((records["status"].fillna(RecordStatus.OK) == RecordStatus.OK).sum()) if "status" in records \
        else len(records)
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return render_template("index.html.j2", campaign=campaign, stamp=stamp, total=len(records), done=done,
                  failed=len(records) - done, pages=pages,
                  nav=Markup(navigation.bar(pages, navigation.INDEX)),
                  css=Markup(CSS.read_text(encoding="utf-8")),  # ours, not records'
                  diagnosis=diagnosis_section(diagnosis, by_key),
                  answers=answers(records, by_key, runs, refs),
                  compared=(compared_counts(compared, baseline, by_key) if compared is not None
                            else ""),
                  runs=run_list(records, runs),
                  skipped=Markup(skipped))  # rendered from skipped.html.j2 (escaped)
