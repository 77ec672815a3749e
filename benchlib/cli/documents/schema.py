"""The ``--json`` documents of the commands that print results (docs/json.md): one pydantic model
per command, the schema's one source of truth. The documentation and the JSON Schema are made
from these models (``python -m benchlib.cli.documents.schema > docs/json.md``;
tests/test_json_output.py keeps the page so); :mod:`benchlib.cli.documents.render` fills them
from each command's typed result.

Every document opens with ``benchlib_json`` (:data:`SCHEMA_VERSION`), ``command``,
``exit_status`` and ``benchlib_version``. Tables are lists of objects, one per row; a number
that is not known (NaN, or unbounded) is ``null``; a time is ISO 8601 in UTC (``...Z``)."""

from __future__ import annotations

import json
import sys
from typing import Annotated, Any, Literal, Union

from pydantic import Field, TypeAdapter

from benchlib.cli.documents.rows import (
    BaselineRow,
    ChangePointRow,
    CheckRow,
    CompareRow,
    DriftRow,
    Finding,
    FleetRow,
    NodeRow,
    NoiseRow,
    PointRow,
    RungRow,
    Scalar,
    StepRow,
    Strict,
    Text,
    WorkerRow,
    said,
)

#: The documents' schema version: raised when a field is removed, renamed or changes meaning
#: (a field added keeps it).
SCHEMA_VERSION = 1


class Document(Strict):
    """What every document opens with."""

    benchlib_json: Literal[SCHEMA_VERSION] = said("the schema version of this document (docs/json.md)")
    command: str = said("the command that wrote it")
    exit_status: int = said("the command's exit status (docs/acceptance.md)")
    benchlib_version: str = said("the benchlib that wrote it")


class ErrorDocument(Document):
    """A command stopped by an error (bad input: exit 2; a failure while working: 1)."""

    command: str = said("the command that stopped")
    error: str = said("the message the command printed on stderr")


class ResultsDocument(Document):
    """``benchlib results``: the records, every column."""

    command: Literal["results"] = said("the command")
    source: str = said("the folder, or the catalog, the records were read from")
    runs: int = said("how many records")
    columns: list[str] = said("every column, in the record's order")
    shown: list[str] = said("the columns the terminal shows: the settings that vary, then the "
                            "results")
    records: list[dict[str, Scalar]] = said("one object per record, every column (docs/record.md)")
    csv: Text = said("the CSV file --csv wrote, else null")


class CheckDocument(Document):
    """``benchlib check``: each run against the references."""

    command: Literal["check"] = said("the command")
    results: str = said("the results folder checked")
    references: str = said("the references file, or 'shipped' (benchlib's published figures)")
    counts: dict[str, int] = said("runs per verdict")
    checks: list[CheckRow] = said("one row per run")
    junit: Text = said("the JUnit file --junit wrote, else null")


class CompareDocument(Document):
    """``benchlib compare``: NEW against BASE per configuration, and the energy efficiency."""

    command: Literal["compare"] = said("the command")
    base: str = said("the baseline: a folder, or a selection of the catalog")
    new: str = said("the campaign judged")
    metric: str = said("the column compared")
    threshold: float = said("the smallest slowdown counted as a regression (0.05: 5 %)")
    pairing: list[str] = said("the columns runs were paired on")
    warnings: list[str] = said("what makes the campaigns hard to compare")
    configurations: list[CompareRow] = said("one row per configuration (the exit status)")
    energy: list[CompareRow] = said("energy efficiency (samples per joule) NEW / BASE per "
                                    "configuration in common; never the exit status")
    junit: Text = said("the JUnit file --junit wrote, else null")
    added_campaigns: list[str] = said("the campaigns --until-decided swept, in order, as "
                                      "side/campaign (new/..., base/...); empty without it")


class HistoryDocument(Document):
    """``benchlib history``: change points of each configuration's campaigns on each node."""

    command: Literal["history"] = said("the command")
    metric: str = said("the column followed")
    unit: str = said("its unit")
    threshold: float = said("the smallest change listed")
    min_size: int = said("campaigns needed each side of a change point")
    ordered_by: str = said("how the runs were ordered in time")
    series: int = said("configuration x node histories looked at")
    judged: int = said("histories long enough to hold a change point (0: exit 3)")
    runs: int = said("runs read")
    campaigns: int = said("campaigns read")
    points: int = said("the values the method read, one per campaign in each history")
    disturbed: int = said("contended or throttled runs left out")
    failed: int = said("failed runs left out")
    small: int = said("shifts under the threshold, not listed")
    uncertain: int = said("shifts whose interval does not clear the threshold, not listed")
    change_points: list[ChangePointRow] = said("one row per change that matters")
    drifts: list[DriftRow] = said("slow drifts, one per history at most")
    outliers: list[Finding] = said("odd campaigns")
    early: list[Finding] = said("the newest campaigns, too few to call")
    future: list[Finding] = said("runs dated in the future (a wrong clock), left out")


class FleetDocument(Document):
    """``benchlib fleet``: each node's state over the fleet's campaigns."""

    command: Literal["fleet"] = said("the command")
    now: str = said("when the window ends")
    window_days: float = said("the validity window in days")
    threshold: float = said("how much slower is slow (0.05: 5 %)")
    metric: str = said("the column judged")
    nodes: list[NodeRow] = said("one row per node")
    states: list[FleetRow] = said("one row per node and configuration")
    baselines: list[BaselineRow] = said("one row per configuration")
    unplaced: int = said("failed runs that name no node, left out")
    future: int = said("runs dated in the future, left out")
    drain: list[str] = said("the scontrol lines that drain the failed and slow nodes")
    junit: Text = said("the JUnit file --junit wrote, else null")


class CalibrateDocument(Document):
    """``benchlib calibrate``: the noise between campaigns per configuration and node."""

    command: Literal["calibrate"] = said("the command")
    campaigns: list[str] = said("the campaign folders run")
    catalog: str = said("the catalog they were indexed into")
    indexed: str = said("what the index did, in words")
    failed_points: bool = said("a point failed (exit 1)")
    measured: int = said("configuration x node noises measured (0: exit 3)")
    noise: list[NoiseRow] = said("one row per configuration and node")


class DiagnoseDocument(Document):
    """``benchlib diagnose``: why this node is slower than it should be for a model."""

    command: Literal["diagnose"] = said("the command")
    campaign: str = said("the ladder's campaign")
    campaign_dir: str = said("its folder")
    model: str = said("the model")
    benchmark: str = said("train or inference")
    precision: str = said("the user's precision")
    unit: str = said("the unit of every speed")
    answer: str = said("the answer in words: the biggest loss, what to change")
    verdict: Text = said("the bottleneck verdict of the user's runs")
    reason: Text = said("its reason")
    best: Union[RungRow, None] = said("the best rung here (null: nothing finished)")  # noqa: UP007
    user: Union[RungRow, None] = said("the user's setting")  # noqa: UP007
    steps: list[StepRow] = said("the waterfall")
    workers: list[WorkerRow] = said("the user's last rung at each worker count")
    notes: list[str] = said("what else was found")
    runs: int = said("benchmark runs of the plan that ran")
    page: Text = said("the report page, else null")


class StatusDocument(Document):
    """``benchlib status``: where each point of a campaign stands."""

    command: Literal["status"] = said("the command")
    campaign_dir: str = said("the campaign folder")
    counts: dict[str, int] = said("points per status")
    points: list[PointRow] = said("one row per point (none: exit 1)")


#: Each command's document, in the order docs/json.md lists them.
DOCUMENTS: dict[str, type[Document]] = {
    "results": ResultsDocument, "check": CheckDocument, "compare": CompareDocument,
    "history": HistoryDocument, "fleet": FleetDocument, "calibrate": CalibrateDocument,
    "diagnose": DiagnoseDocument, "status": StatusDocument}
#: Any document a command writes: its own, or the error that stopped it.
AnyDocument = Union[  # noqa: UP007
    Annotated[Union[tuple(DOCUMENTS.values())], Field(discriminator="command")],  # noqa: UP007
    ErrorDocument]


def json_schema() -> dict[str, Any]:
    """The JSON Schema of every document (draft 2020-12)."""
    schema = TypeAdapter(AnyDocument).json_schema()
    return {"$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": f"benchlib --json, version {SCHEMA_VERSION}", **schema}


#: The rows, in the order docs/json.md lists them.
ROWS: tuple[type[Strict], ...] = (CheckRow, CompareRow, ChangePointRow, DriftRow, Finding,
                                  FleetRow, NodeRow, BaselineRow, NoiseRow, RungRow, StepRow,
                                  WorkerRow, PointRow)
LEAD = f"""# `--json`: each command's answer for CI and dashboards

<!-- generated: python -m benchlib.cli.documents.schema > docs/json.md; tests/test_json_output.py -->

Every command that prints results (`results`, `check`, `compare`, `history`, `fleet`,
`calibrate`, `diagnose`, `status`) takes `--json FILE`: its answer, the one the terminal text
and the JUnit file say, as one JSON document written to FILE beside the text; `--json -`
prints the document on stdout instead, the text going to stderr. The exit status is the same
with or without it. A command stopped by an error writes an error document (`error`, its
`exit_status`). The JSON Schema of every document is `docs/json.schema.json` (`python -m
benchlib.cli.documents.schema --schema`), as pytest-benchmark's and hyperfine's JSON exports
give CI and dashboards their figures.

- `benchlib_json` is the schema version, now {SCHEMA_VERSION}: it is raised when a field is
  removed, renamed or changes meaning; a field added keeps it.
- Every field is present; one not known is `null` (NaN, an unbounded limit).
- A table is a list of objects, one per row; a time is ISO 8601 in UTC
  (`2026-09-09T02:00:00Z`); a ratio or a share is a fraction (0.05 is 5 %).

    benchlib compare outputs/base outputs/new --json - \\
        | jq '.configurations[] | select(.verdict == "regression")'   # placeholders: yours
"""


def _type(prop: dict[str, Any]) -> str:
    """A field's type as docs/json.md says it, from its JSON Schema."""
    if "$ref" in prop:
        name = prop["$ref"].rsplit("/", 1)[1]
        return f"[{name}](#{name.lower()})"
    if "anyOf" in prop:
        kinds = [_type(each) for each in prop["anyOf"]]
        return "scalar: text, number, true / false or null" if len(kinds) == 5 \
            else " or ".join(kinds)
    if "const" in prop:
        return f"`{json.dumps(prop['const'])}`"
    kind = prop.get("type")
    if kind == "array":
        return f"list of {_type(prop['items'])}"
    if kind == "object":
        extra = prop.get("additionalProperties")
        return f"object of {_type(extra)}" if isinstance(extra, dict) else "object"
    return {"string": "text", "boolean": "true / false"}.get(str(kind), str(kind))


def _section(title: str, model: type[Strict]) -> list[str]:
    """One model as a heading, what it is, and a table of its fields."""
    properties = model.model_json_schema()["properties"]
    lines = [f"### {title}", "", " ".join((model.__doc__ or "").replace("``", "`").split()), "",
             "| field | type | meaning |", "|---|---|---|"]
    lines += [f"| `{name}` | {_type(prop)} | {prop.get('description', '')} |"
              for name, prop in properties.items()]
    return [*lines, ""]


def markdown() -> str:
    """docs/json.md: what the documents are, then each document's fields and each row's."""
    lines = [LEAD, "## The documents", ""]
    for command, model in DOCUMENTS.items():
        lines += _section(f"`benchlib {command} --json`", model)
    lines += _section("An error", ErrorDocument)
    lines += ["## The rows", ""]
    for model in ROWS:
        lines += _section(model.__name__, model)
    return "\n".join(lines).rstrip("\n") + "\n"


def schema_text() -> str:
    """docs/json.schema.json: :func:`json_schema` as text."""
    return json.dumps(json_schema(), indent=1) + "\n"


if __name__ == "__main__":
    sys.stdout.write(schema_text() if "--schema" in sys.argv[1:] else markdown())
