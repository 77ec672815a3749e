"""Analysis over records: comparisons, intervals, verdicts, references, regressions, fleets.

The first design's names are attributes of this package, loaded on first use (pandas is not
imported until one is used)::

    from benchlib import analysis, results
    analysis.scaling(results.load("outputs/demo"))

Each name is documented where it lives (``help(analysis.scaling)``).
"""

from __future__ import annotations

import importlib
from typing import Any

#: Public name -> (module under benchlib.analysis, attribute there).
_NAMES: dict[str, tuple[str, str]] = {
    **{name: ("comparisons", name) for name in (
        "aggregate", "scaling", "scaling_table", "compare", "effect", "headline", "breakdown",
        "expected", "extrapolate", "derived_units", "unet3d_units", "benchmarks",
        "allreduce_curves", "distributed_runs", "outliers", "history", "config_columns",
        "failed", "labels", "ok")},
    "compare_campaigns": ("regression", "compare"),
    "check": ("references", "check"),
    "verdicts": ("verdict", "verdicts"),
    "node_table": ("fleet", "node_table"),
}

__all__ = sorted(_NAMES)


def __getattr__(name: str) -> Any:
    if name in _NAMES:
        module, attribute = _NAMES[name]
        value = getattr(importlib.import_module(f"{__name__}.{module}"), attribute)
        globals()[name] = value  # looked up once
        return value
    raise AttributeError(f"module 'benchlib.analysis' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_NAMES})
