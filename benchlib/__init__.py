"""benchlib: GPU benchmark workbook for deep-learning nodes and clusters.

The short API for notebooks and JupyterLab (loaded on first use, so ``import benchlib`` stays
light: no torch, no pandas)::

    import benchlib
    df = benchlib.load("outputs/demo")          # every record of a campaign, one row per run
    benchlib.analysis.scaling(df)               # speedup and efficiency per configuration
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

__version__ = "0.1.0"
SCHEMA_VERSION = 1

#: The folder holding the benchlib package: the project root in a checkout (notebooks/, params/).
PROJECT_ROOT = Path(__file__).resolve().parent.parent

#: Submodules reachable as attributes without importing them first (``benchlib.analysis``).
_SUBMODULES = frozenset({"analysis", "results", "records", "publish", "execute", "inputs",
                         "measure", "workloads", "data", "models", "run", "reference",
                         "registry", "formatting", "errors", "cli"})

#: Functions of the facade, loaded on first use: name -> (module, attribute).
#: ``load(path)``: every result record under ``path`` (a campaign folder, ``outputs/``, one
#: notebook) as a pandas DataFrame, one row per run. ``diagnose(model, data_dir, ...)``: the
#: ``benchlib diagnose`` ladder run and analysed (:mod:`benchlib.publish.diagnose`).
_FUNCTIONS = {"load": ("benchlib.records.results", "load"),
              "scan": ("benchlib.records.results", "scan"),
              "diagnose": ("benchlib.publish.diagnose", "diagnose")}

__all__ = ["PROJECT_ROOT", "SCHEMA_VERSION", "__version__", "analysis", "diagnose", "load",
           "results", "scan"]

def __getattr__(name: str) -> Any:
    if name in _FUNCTIONS:
        module, attribute = _FUNCTIONS[name]
        value = getattr(importlib.import_module(module), attribute)
        globals()[name] = value
        return value
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module 'benchlib' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_SUBMODULES, *_FUNCTIONS})
