"""How the answers travel from a summary page to the report's index: the page's cell computes
and shows them (:func:`publish`, or a feature's :func:`carry`) and keeps them in its executed
notebook as an output of type :data:`MIME` (the way scrapbook glues a value to a notebook); the
build reads them back (:func:`from_pages`), only in the shape each answer has."""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import pandas as pd
from markupsafe import Markup
from pydantic import TypeAdapter, ValidationError
from typing_extensions import TypedDict  # pydantic reads it on Python 3.11

from benchlib.publish.cells import Call
from benchlib.publish.pages import catalog
from benchlib.publish.pages.answers import ANSWERS, Item, compute, lines

#: The output type a page's answers are kept under in its executed notebook.
MIME = "application/vnd.benchlib.answers+json"
#: Answers a page carries whole, made by its feature (not from one campaign's runs): the
#: diagnose page's recommendation, the compare page's verdict counts against the baseline;
#: each the shape of its one item (under the campaign key '').
class Diagnosis(TypedDict):
    text: str


class Compared(TypedDict):
    counts: str
    regressions: list[tuple[str, float, float, float]]  # label, ratio, low, high
    uncertified: list[tuple[int, str]]  # how many, why


CARRIED: dict[str, type] = {"diagnosis": Diagnosis, "compared": Compared}


def carry(answer: str, item: Item, shown: str) -> None:
    """Show ``shown`` (Markdown) and keep ``item``, answer ``answer`` of :data:`CARRIED`, in
    the notebook for the report's index."""
    from IPython.display import display

    if answer not in CARRIED or _shaped(answer, {"": [item]}) is None:
        fields = CARRIED[answer].__annotations__ if answer in CARRIED else {}
        raise ValueError(f"{answer!r}: a carried answer is one of {', '.join(CARRIED)}, its item "
                         f"holding {', '.join(fields)}")
    display({"text/markdown": shown,
             MIME: json.loads(json.dumps({answer: {"": [item]}}, default=str))}, raw=True)


def item(found: Mapping[str, Mapping[str, list[Item]]], answer: str) -> Item | None:
    """The one item of carried answer ``answer`` in ``found`` (None: no page carried it)."""
    items = (found.get(answer) or {}).get("", [])
    return items[0] if items else None


def publish(page: str, df: pd.DataFrame, refs: Sequence[object] = ()) -> None:
    """Summary page ``page``'s cell: compute the answers it declares
    (:attr:`~benchlib.publish.pages.catalog.SummaryPage.computes`), show their lines and keep
    them in the notebook for the report's index (:data:`MIME`)."""
    declared = catalog.named(page)
    if declared is None or not declared.computes:
        raise ValueError(f"{page!r} is no summary page that computes answers (those that do: "
                         f"{', '.join(p.name for p in catalog.SUMMARY_PAGES if p.computes)})")
    found = {name: compute(name, df, refs) for name in declared.computes}
    answered = sorted({c for per in found.values() for c, items in per.items() if items})
    parts = []
    for campaign in answered:
        if len(answered) > 1:
            parts.append(Markup("<h4>Campaign {}</h4>").format(campaign or "(unnamed)"))
        parts += [Markup("<p><b>{}</b></p><ul>{}</ul>").format(
            ANSWERS[name].title, Markup("").join(lines(name, per[campaign], {})))
            for name, per in found.items() if per.get(campaign)]
    from IPython.display import display

    display({"text/html": str(Markup("").join(parts) or
                              Markup("<p>Nothing to answer from these runs.</p>")),
             MIME: json.loads(json.dumps(found, default=str))}, raw=True)


def cells(page: catalog.SummaryPage, arguments: str = "df", before: tuple[Call, ...] = ()
          ) -> tuple[str, Call | tuple[Call, ...]]:
    """A page's first cells: they compute and show its answers (``arguments``: what
    :func:`publish` takes after the page's name, ``df`` or ``df, refs``; ``before``: calls
    of the same cell that make them)."""
    call = Call(publish, f'"{page.name}", {arguments}')
    return ("## In short\n\nWhat the report's front page says of these runs, computed here.",
            (*before, call) if before else call)


def read(notebook: Path) -> dict[str, dict[str, list[Item]]]:
    """The answers a page's executed notebook carries ({} where it carries none or they are
    not of the answers' shape: the index then computes them itself)."""
    import nbformat

    found: dict[str, dict[str, list[Item]]] = {}
    for cell in nbformat.read(notebook, as_version=4).cells:
        for output in cell.get("outputs", []):
            data = output.get("data", {}).get(MIME)
            if isinstance(data, dict):
                shaped = {name: _shaped(name, per) for name, per in data.items()}
                found.update({name: per for name, per in shaped.items() if per is not None})
    return found


@functools.cache
def _adapter(answer: str) -> TypeAdapter:
    shape = ANSWERS[answer].shape if answer in ANSWERS else CARRIED[answer]
    return TypeAdapter(dict[str, list[shape]])  # type: ignore[valid-type]


def _shaped(answer: str, per_campaign: object) -> dict[str, list[Item]] | None:
    """``per_campaign`` validated as ``answer``'s shape (per campaign a list of items, each of
    the answer's typed fields, nested ones included), or None where it is not: a tampered or
    older page's answer is computed again, never rendered half-understood."""
    if answer not in ANSWERS and answer not in CARRIED:
        return None
    try:
        return json.loads(json.dumps(_adapter(answer).validate_python(per_campaign)))
    except (ValidationError, TypeError, ValueError):
        return None


def from_pages(folder: Path, summaries: Iterable[str]) -> dict[str, dict[str, list[Item]]]:
    """The answers the executed pages ``summaries`` in ``folder`` computed, each from the page
    that declares it: the index reads them, never computes them again."""
    found: dict[str, dict[str, list[Item]]] = {}
    for name in summaries:
        page = catalog.named(name)
        if page is not None and page.computes and (folder / f"{name}.ipynb").is_file():
            carried = read(folder / f"{name}.ipynb")
            found.update({a: carried[a] for a in page.computes if a in carried})
    return found
