"""The shipped kinds' folders: ``benchlib/kinds/<kind>/`` holds one kind, each of its modules named
by its role (``config``, ``columns``, ``model``, ``data``, ``workload``, ``kind``, ``layout``,
``command``; a role's helper is ``<role>_<part>``, as ``model_shapes``) and sitting in that
role's layer (:data:`ROLES`). Each layer's registry imports its role's modules through
:func:`role_modules` (the benchmark registry the configs with their variants, the record schema
the columns, :mod:`benchlib.kinds` the kinds, the notebook layouts the layouts, ``benchlib
data`` the kinds' data sets); nothing else imports a kind folder. A site's kind comes through
the ``benchlib.benchmarks`` entry points instead (:mod:`benchlib.registry`)."""

from __future__ import annotations

from importlib import import_module
from pathlib import Path
from types import ModuleType

#: Where the shipped kinds' folders are.
KINDS_FOLDER = Path(__file__).resolve().parent / "kinds"
#: Each role a kind folder's module plays, and the layer of docs/architecture.md it sits at.
ROLES: dict[str, str] = {"config": "inputs", "columns": "records", "model": "models", "data": "data",
                         "workload": "workloads", "kind": "kinds", "launch": "run",
                         "layout": "publish", "command": "cli"}
#: What a role's module must define for the registry that imports it, and what that is.
CONTRACTS: dict[str, tuple[str, str]] = {
    "config": ("VARIANTS", "the kind's benchmarks, one benchlib.inputs.benchmark.Benchmark per "
                           "notebook"),
    "columns": ("COLUMNS", "the record columns only this kind's runs have, each a "
                           "benchlib.records.column.Column"),
    "command": ("add_data_arguments", "add_data_arguments(subparsers): its own `benchlib data` "
                                      "sub-commands"),
}


def kind_folders() -> list[str]:
    """The names of the shipped kinds' folders (packages under ``benchlib/kinds/``); a folder
    there with modules but no ``__init__.py`` is an ImportError naming it (never a kind left
    out without a word)."""
    found = []
    for path in sorted(KINDS_FOLDER.iterdir()):
        if (path / "__init__.py").is_file():
            found.append(path.name)
        elif path.is_dir() and any(path.glob("*.py")):
            raise ImportError(f"{path}: a kind folder needs an __init__.py (its docstring says "
                              "what the kind measures)")
    return found


def role_of(module: str) -> str:
    """The role of a kind folder's module by its name (``model_shapes`` -> ``model``); a name
    of no role is a KeyError naming the roles."""
    role = module.split("_")[0]
    if role not in ROLES:
        raise KeyError(f"{module!r} names no role of a kind folder (roles: {', '.join(ROLES)})")
    return role


def role_modules(role: str) -> list[ModuleType]:
    """Each shipped kind's ``benchlib.kinds.<kind>.<role>`` module, imported, in the folders'
    order (a kind without that role has none)."""
    if role not in ROLES:
        raise KeyError(f"{role!r} is no role of a kind folder (roles: {', '.join(ROLES)})")
    modules = [import_module(f"benchlib.kinds.{kind}.{role}") for kind in kind_folders()
               if (KINDS_FOLDER / kind / f"{role}.py").is_file()]
    if role in CONTRACTS:
        name, what = CONTRACTS[role]
        for module in modules:
            if not hasattr(module, name):
                raise ImportError(f"{module.__file__}: a kind's {role} module defines {name} "
                                  f"({what})")
    return modules
