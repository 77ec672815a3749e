"""The report's front page: the answers first, each linked to the page that shows it, then the
pages, then the runs grouped by benchmark.

Per campaign: how fast the node is per benchmark and model (the best configuration, its
throughput with unit and 95 % interval, and its energy efficiency beside it: images/J, ...,
"unknown" where energy was not measured), how it scales (efficiency at the most devices), which
factors matter (paired effects with intervals), what holds the runs back (the verdicts), and
what is flagged: each answer as the summary page that computes it computed it
(:mod:`benchlib.publish.pages.answers`), computed here only where that page is not in the
report. The page, its style, its sections, their lines and the run tables come from
``templates/pages/`` (``index.html.j2`` and ``index.css``, ``section.html.j2``, the macros of
``answers.html.j2``, ``runs.html.j2``) with autoescape.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
from markupsafe import Markup

import benchlib.analysis.energy as energy
from benchlib import formatting
from benchlib.publish import templating
from benchlib.publish.pages import answers as answer_data
from benchlib.publish.pages import catalog as pages_catalog
from benchlib.publish.pages import summary
from benchlib.publish.pages.catalog import SummaryPage
from benchlib.publish.templating import render as render_template
from benchlib.records import configuration, flags
from benchlib.vocabulary import RecordStatus

CSS = templating.TEMPLATES / "offline" / "page.css"


@dataclass(frozen=True)
class Link:
    """A page of the report: file name (``summary_scaling.html``), title and what it answers."""

    href: str
    title: str
    answers: str = ""


class RunLinks(dict):
    """Each run's page by its notebook's resolved path: a record's ``source``, absolute or
    relative to ``folder`` (the campaign's, where the summary pages' kernels ran and whence the
    answers they carry name their runs), finds its page; a bare name finds none (two folders
    may hold notebooks of one name)."""

    def __init__(self, runs: Mapping[str, str], folder: Path) -> None:
        super().__init__({str(Path(source).resolve()): page for source, page in runs.items()})
        self.folder = folder

    def get(self, source: object, default: str | None = None) -> str | None:  # type: ignore[override]
        if not source:
            return default
        path = Path(str(source))
        return super().get(str((path if path.is_absolute() else self.folder / path).resolve()),
                           default)


_line = answer_data.line  # one answer line (the macros of answers.html.j2)


def _link(pages: Mapping[str, Link], to: SummaryPage, text: str = "details") -> Link | None:
    """The link to summary page ``to`` with ``text`` (None when the report has no such page)."""
    page = pages.get(to.name)
    return Link(page.href, text) if page else None


def _stem(row: pd.Series) -> str:
    return Path(str(row.get("source", ""))).stem


def run_page(row: pd.Series, runs: Mapping[str, str]) -> str | None:
    """The page of the run behind ``row`` (:func:`benchlib.publish.pages.answers.run_page` of
    its ``source``)."""
    return answer_data.run_page(str(row.get("source", "")), runs)


def fastest(done: pd.DataFrame, runs: Mapping[str, str]) -> list[Markup]:
    """One line per benchmark and model: the best configuration, its throughput and its
    energy efficiency (:func:`benchlib.publish.pages.answers.fastest`), linked to ``runs``."""
    return answer_data.lines("fastest", answer_data.fastest(done), runs)


def scaling(done: pd.DataFrame, linked: Mapping[str, str] | None = None) -> list[Markup]:
    """Per benchmark, model and unit with several device counts: efficiency at the most
    devices (:func:`benchlib.publish.pages.answers.scaling`)."""
    return answer_data.lines("scaling", answer_data.scaling(done), linked or {})


def factors(done: pd.DataFrame) -> list[Markup]:
    """One line per paired comparison, significant effects first."""
    return answer_data.lines("factors", answer_data.factors(done), {})


def bottlenecks(done: pd.DataFrame, runs: Mapping[str, str] | None = None) -> list[Markup]:
    """How many runs each verdict covers and which, with the typical data wait or MFU."""
    return answer_data.lines("bottlenecks", answer_data.bottlenecks(done), runs or {})


def flagged(done: pd.DataFrame, runs: Mapping[str, str] | None = None) -> list[Markup]:
    """One line per flag present: how many runs and which, what it means, what to do."""
    return answer_data.lines("flagged", answer_data.flagged(done), runs or {})


def stands(done: pd.DataFrame, refs: Sequence[object]) -> list[Markup]:
    """One line per benchmark (and model) against its matching reference, failures marked."""
    return answer_data.lines("stands", answer_data.stands(done, refs), {})


def compared_counts(item: Mapping[str, object], baseline: str,
                    pages: Mapping[str, Link]) -> Markup:
    """The compare verdict counts against ``baseline``, linked to the compare page (``item``:
    :func:`benchlib.compare.tables.index_item`, as the compare page carried it)."""
    if not item.get("counts"):
        items = [_line("nothing_compared")]
    else:
        items = [_line("compare_counts", item["counts"])]
        items += [_line("regression", *regression) for regression in item["regressions"]]
        items += [_line("uncertified", *uncertified) for uncertified in item["uncertified"]]
    return _section(f"Compared with {baseline}", items, "",
                    _link(pages, pages_catalog.COMPARED, "compare page"))


def _section(title: str, items: list[Markup], empty: str, link: Link | None) -> Markup:
    """One answer from ``templates/pages/section.html.j2``; ``items`` are its lines, rendered
    from ``answers.html.j2``."""
    return Markup(render_template("section.html.j2", title=title, link=link, empty=empty,
                                  items=items))


#: Each answer on the index (in :data:`~benchlib.publish.pages.answers.ANSWERS`' order): what
#: it says where it has no line, and its link's text (to the page that computes it; none: the
#: answer is explained on the index itself).
SECTIONS: dict[str, tuple[str, str]] = {
    "fastest": ("No benchmark run with a throughput.", "details"),
    "scaling": ("No configuration ran on more than one device count.", "scaling sheet"),
    "factors": ("No factor has two values that pair: nothing to compare.", "details"),
    "bottlenecks": ("No finished benchmark run to judge.", "details"),
    "stands": ("No finished run to check.", "acceptance"),
    "flagged": ("Nothing: no run was contended, throttled, noisy or too short.", ""),
}
#: The page that computes each answer (the page the index links it to).
COMPUTED_BY = {a: page for page in pages_catalog.SUMMARY_PAGES for a in page.computes}


def answers(records: pd.DataFrame, pages: Mapping[str, Link], runs: Mapping[str, str],
            refs: Sequence[object] = (),
            computed: Mapping[str, Mapping[str, list]] | None = None) -> Markup:
    """The answers for every campaign in ``records`` (against ``refs`` when given), as HTML:
    each as its page computed it (``computed``: :func:`benchlib.publish.pages.carried.from_pages`
    of the executed pages), else computed here."""
    computed = computed or {}
    campaigns = answer_data.by_campaign(records)
    several = configuration.varies(records["campaign"].fillna("").astype(str), missing_too=True) \
        if "campaign" in records else False
    per = {name: computed.get(name) or answer_data.compute(name, records, refs)
           for name in answer_data.ANSWERS if name != "stands" or refs}
    parts = []
    for campaign, done in campaigns.items():
        if several:
            parts.append(_line("campaign", campaign or "(unnamed)"))
        if done.empty:
            parts.append(_line("no_finished_run"))
            continue
        for name, items in per.items():
            empty, text = SECTIONS[name]
            parts.append(_section(answer_data.ANSWERS[name].title,
                                  answer_data.lines(name, items.get(campaign, []), runs), empty,
                                  _link(pages, COMPUTED_BY[name], text) if text else None))
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
           compared: Mapping[str, object] | None = None, baseline: str = "",
           diagnosis: str = "", computed: Mapping[str, Mapping[str, list]] | None = None) -> str:
    """The whole index page, under the report's navigation bar (:mod:`benchlib.report.navigation`,
    from ``pages``): with ``refs``, each benchmark against its reference; with ``compared``
    (:func:`benchlib.compare.tables.index_item` against ``baseline``), the verdicts; with
    ``computed``, the answers as the executed pages computed them."""
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
                  answers=answers(records, by_key, runs, refs, computed),
                  compared=(compared_counts(compared, baseline, by_key) if compared is not None
                            else ""),
                  runs=run_list(records, runs),
                  skipped=Markup(skipped))  # rendered from skipped.html.j2 (escaped)
