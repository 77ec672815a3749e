"""The docs that describe the tree cannot drift from it: docs/architecture.md's table names
every module of every layer (and no module that is gone), and the README's Layout names every
top-level folder of the checkout."""

from __future__ import annotations

import re
import subprocess

from .conftest import ROOT
from .test_layers import LAYERS, MODULES, TOP_LEVEL, _kind_folder, _layer

TICKED = re.compile(r"`([^`]+)`")
GROUP = re.compile(r"`(\w+)/` \(([^)]*)\)")


def _table() -> dict[str, tuple[set[str], set[str]]]:
    """Layer -> (modules its row names, top-level modules its first cell adds)."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    rows = text.split("| layer | modules | job |", 1)[1].split("\n\n", 1)[0].splitlines()[2:]
    table = {}
    for row in rows:
        first, modules = (cell.strip() for cell in row.strip("|").split(" | ")[:2])
        names = TICKED.findall(first)
        layer = "benchlib" if first == "base" else names[0]
        documented = {f"{group}/{name}" for group, inner in GROUP.findall(modules)
                      for name in TICKED.findall(inner)}
        documented |= {n for n in TICKED.findall(GROUP.sub("", modules)) if "/" not in n}
        table[layer] = (documented, {n for n in names[1:] if "." not in n})
    return table


def _actual(layer: str) -> tuple[set[str], set[str]]:
    """The modules of ``layer`` as the table names them, and its top-level modules."""
    inside, top = set(), set()
    for name, path in MODULES.items():
        parts = name.split(".")
        if len(parts) == 2 and parts[1] in TOP_LEVEL:
            if _layer(name) == layer and layer != "benchlib":
                top.add(parts[1])
            elif _layer(name) == layer:
                inside.add(parts[1])
        elif len(parts) > 2 and parts[1] == layer and path.name != "__init__.py" \
                and not _kind_folder(name):
            inside.add("/".join(parts[2:]))
    return inside, top


def test_the_architecture_table_names_every_module_of_every_layer():
    table = _table()
    assert list(table) == LAYERS
    for layer in LAYERS:
        assert table[layer] == _actual(layer), layer


def test_the_readme_layout_names_every_top_level_folder():
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True,
                             check=True).stdout.splitlines()
    folders = {path.split("/")[0] for path in tracked if "/" in path}
    layout = (ROOT / "README.md").read_text().split("## Layout", 1)[1].split("\n## ", 1)[0]
    named = set(re.findall(r"^ {4}(\S+)/ ", layout, flags=re.M))
    assert named == folders


def test_the_kind_folders_table_is_the_generated_one():
    """docs/architecture.md's kind table is written from the folders (a new kind is its folder
    and the generated files: this table, docs/record.md, its notebooks)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_kind_table",
                                                  ROOT / "tools" / "make_kind_table.py")
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    text = (ROOT / "docs" / "architecture.md").read_text()
    assert tool.written(text) == text, "run python tools/make_kind_table.py"
    assert tool.main(["--check"]) == 0


def test_the_kind_folders_table_names_every_module_of_a_kind_and_its_role():
    from benchlib.discovery import kind_folders, role_of

    text = (ROOT / "docs" / "architecture.md").read_text()
    rows = text.split("| kind | modules (role) | job |", 1)[1].split("\n\n", 1)[0]
    documented = {}
    for row in rows.splitlines()[2:]:
        first, modules = (cell.strip() for cell in row.strip("|").split(" | ")[:2])
        documented[TICKED.findall(first)[0]] = {
            name: role for group, role in re.findall(r"([^;]*?)\((\w+)\)", modules)
            for name in TICKED.findall(group)}
    actual = {kind: {path.stem: role_of(path.stem)
                     for path in (ROOT / "benchlib" / "kinds" / kind).glob("*.py")
                     if path.stem != "__init__"} for kind in kind_folders()}
    wrong = sorted(k for k in {*documented, *actual} if documented.get(k) != actual.get(k))
    assert documented == actual, (f"docs/architecture.md's 'Kind folders' table: give "
                                  f"{', '.join(wrong)} a row naming each module and its role")


def test_the_features_table_names_every_module_of_a_feature_and_its_layer():
    from .test_layers import FEATURES

    text = (ROOT / "docs" / "architecture.md").read_text()
    rows = text.split("| feature | modules (layer) | job |", 1)[1].split("\n\n", 1)[0]
    documented = {}
    for row in rows.splitlines()[2:]:
        first, modules = (cell.strip() for cell in row.strip("|").split(" | ")[:2])
        feature = TICKED.findall(first)[0]
        documented[feature] = {name: layer for group, layer in
                               re.findall(r"([^;]*?)\((\w+)\)", modules)
                               for name in TICKED.findall(group)}
    assert documented == {f: {m: layer for m, layer in modules.items() if m}
                          for f, modules in FEATURES.items()}
