"""Path parameters of a params file: made absolute against the folder the sweep started in,
and compared as such (``imgs`` and ``./imgs`` name one folder)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from benchlib.errors import ConfigError

#: Paths, made absolute before papermill (and before points are compared).
PATH_PARAMETERS = ("data_dir", "volume", "output", "token_file")


def resolve_paths(parameters: dict[str, Any], base_dir: Path) -> dict[str, Any]:
    """Path parameters made absolute against ``base_dir`` (where the sweep was started);
    ConfigError naming the parameter for a path whose symbolic links loop (``ln -s a a``)."""
    resolved = dict(parameters)
    for key in PATH_PARAMETERS:
        if resolved.get(key):
            try:
                resolved[key] = str((base_dir / str(resolved[key])).resolve())
            except (RuntimeError, OSError) as error:  # RuntimeError: pathlib's symlink loop
                raise ConfigError(f"{key}: bad value {resolved[key]!r}: its symbolic links "
                                  f"loop ({error}); give the folder itself") from None
    return resolved


def same_paths(points: list[tuple[str, dict[str, Any], int]],
               base_dir: Path) -> list[tuple[str, str, object, object, str]]:
    """(notebook, parameter, first value, other value, absolute path) for each pair of points
    (notebook, parameters, repeat) that differ only in how a path parameter is spelled."""
    found = []
    first: dict[str, dict[str, Any]] = {}
    for notebook, parameters, repeat in points:
        try:
            resolved = resolve_paths(parameters, base_dir)
        except ConfigError:
            continue  # a link loop: named where the points are validated
        key = json.dumps([notebook, resolved, repeat], sort_keys=True, default=str)
        other = first.setdefault(key, parameters)
        if other is parameters:
            continue
        found += [(notebook, name, other.get(name), parameters.get(name), resolved[name])
                  for name in PATH_PARAMETERS if other.get(name) != parameters.get(name)]
    return found


def missing_data_dir(data_dir: str) -> str:
    """The message for a ``data_dir`` that is not a directory: the path as typed from the working
    folder, that relative paths start there (not at the params file), and how to give the
    folder: generated JPEGs, a link to your ImageNet-layout copy, or another folder named in
    the params file."""
    import os
    import shlex

    path, here = Path(data_dir), Path.cwd()
    shown = os.path.relpath(path, here) if path.is_absolute() and path.is_relative_to(here) else data_dir
    typed = shlex.quote(shown)
    parent = Path(shown).parent
    link = f"ln -s /path/to/imagenet/train {typed}"
    if str(parent) not in (".", "/") and not parent.is_dir():
        link = f"mkdir -p {shlex.quote(str(parent))} && {link}"
    where = ("" if Path(shown).is_absolute() else
             f"  (relative paths start from the working folder, {here}, not the params file's)\n")
    return (f"data_dir {shown!r} is not a directory\n{where}"
            "  make it, as generated JPEGs:\n"
            f"    benchlib data imagefolder {typed}\n"
            "  or as a link to your ImageNet-layout folder:\n"
            f"    {link}\n"
            "  or set data_dir to your folder (in the params file; benchlib diagnose: --data-dir)")
