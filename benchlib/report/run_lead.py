"""What a run page opens with: what was measured (the throughput with its unit, its within-run
95 % interval, its energy efficiency, and its flags in words) and the parameters the run was
given. The notebook's own parameter cells (its defaults, then the values papermill injected)
are left out of the page when the lead shows the given values; a notebook run by hand keeps
its parameters cell, which holds what it ran with."""

from __future__ import annotations

from collections.abc import Mapping

from markupsafe import Markup

from benchlib.publish.templating import render

#: The cells of a benchmark notebook that hold its parameters: its defaults and papermill's.
PARAMETER_TAGS = frozenset({"parameters", "injected-parameters"})


def given_parameters(nb: Mapping) -> dict[str, object]:
    """The parameters papermill gave the notebook ({} for a notebook run by hand)."""
    found = nb.get("metadata", {}).get("papermill", {}).get("parameters")
    return dict(found) if isinstance(found, Mapping) else {}


def without_parameter_cells(nb: dict) -> None:
    """Drop the parameter cells when papermill gave the parameters (the lead shows them)."""
    if not given_parameters(nb):
        return
    nb["cells"] = [cell for cell in nb.get("cells", [])
                   if not PARAMETER_TAGS & set(cell.get("metadata", {}).get("tags", []) or [])]


def _number(value: object) -> float | None:
    from benchlib.records import flags

    return flags.number(value)


def _measured(record: Mapping) -> dict[str, object]:
    """The figures of the lead's first line: result, interval, detail, flags, failure."""
    import benchlib.analysis.energy as energy
    from benchlib import formatting
    from benchlib.records import flags

    unit = str(record.get("unit") or "").strip()
    throughput, low, high = (_number(record.get(k)) for k in ("throughput", "throughput_low",
                                                              "throughput_high"))
    result = f"{formatting.number(throughput)} {unit}".strip() if throughput is not None else ""
    interval = (f"{formatting.number(low)}–{formatting.number(high)} {unit}".strip()
                if low is not None and high is not None else "")
    detail = []
    iterations, iteration_s = _number(record.get("iterations")), _number(record.get("time_iteration_s"))
    if iterations is not None:
        detail.append(f"{iterations:.0f} timed iterations")
    if iteration_s is not None:
        detail.append(f"{formatting.milliseconds(iteration_s)} ms per iteration (median)")
    efficiency = energy.record_said(dict(record))
    if efficiency:
        detail.append(f"energy efficiency {efficiency}")
    names = flags.of(record.get("flags"))
    failed = str(record.get("status") or "ok") != "ok"
    return {"result": result, "interval": interval, "detail": ", ".join(detail),
            "flags": [(name, flags.FLAGS.get(name, "see the run record")) for name in names],
            "unchecked": unchecked(record),
            "failed": failed, "error": " ".join(str(record.get("error") or "").split())[:400]}


#: What a flag is raised from: a record column that holds the measurement, and the flags it
#: decides. A run whose record lacks it was not checked for them ("not checked", never "none").
CHECKED_BY = (("contention_cpu_share", "contended"), ("throttled_share", "throttled"),
              ("time_iteration_s", "noisy or too short"))


def unchecked(record: Mapping) -> list[str]:
    """The flags ``record`` was never checked for: their measurement is missing (a probe
    measures no contention), so "none" would claim what was not measured."""
    return [said for column, said in CHECKED_BY if _number(record.get(column)) is None]


def lead(nb: Mapping, name: str) -> Markup:
    """The lead of the run page of notebook ``nb`` (named ``name``): its record's result line
    and flags, then the parameters given; a notebook without a record says so."""
    from benchlib.records.store import find_record

    record = find_record(nb)
    record = record if isinstance(record, Mapping) else {}
    what = " ".join(str(record.get(k)) for k in ("benchmark", "model") if record.get(k))
    parameters = [(str(k), " ".join(str(v).split())) for k, v in given_parameters(nb).items()]
    return Markup(render("run_lead.html.j2", title=f"{what}: {name}" if what else name,
                         recorded=bool(record), parameters=parameters,
                         **(_measured(record) if record else {"error": _error(nb)})))


def _error(nb: Mapping) -> str:
    """The first error a cell of ``nb`` raised (``RuntimeError: CUDA out of memory``), or ''."""
    for cell in nb.get("cells", []):
        for output in cell.get("outputs", []) or []:
            if output.get("output_type") == "error":
                return f"{output.get('ename', 'Error')}: {output.get('evalue', '')}"[:400]
    return ""
