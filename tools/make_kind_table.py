"""Write docs/architecture.md's "Kind folders" table from the kind folders themselves: one row
per folder of ``benchlib/kinds/`` with its modules grouped by role (``benchlib.discovery``) and
its job (the first paragraph of the folder's ``__init__`` docstring: what the kind measures and
what each module holds). A new kind is its folder;
this table, like docs/record.md and the notebooks, is generated from it.

Usage: python tools/make_kind_table.py [--check]   (--check: exit 1 when the table is stale)
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchlib import discovery  # noqa: E402

DOC = ROOT / "docs" / "architecture.md"
HEAD = "| kind | modules (role) | job |\n| --- | --- | --- |\n"


#: The docstring's words a row leaves out: what every kind folder's says alike.
ALIKE = (re.compile(r"One folder holds the whole kind, each module in its role's layer "
                    r"\(docs/architecture\.md\): "), re.compile(r" ?Nothing outside the folder.*$"))


def _job(folder: Path) -> str:
    """The first paragraph of the folder's package docstring (what the kind measures, then what
    each module holds), without what every kind's says alike, in Markdown."""
    text = ast.get_docstring(ast.parse((folder / "__init__.py").read_text(encoding="utf-8"))) or ""
    job = " ".join(text.split("\n\n")[0].split())
    for alike in ALIKE:
        job = alike.sub("", job)
    job = re.sub(r":\w+:`~?([^`]+)`", r"`\1`", job)
    return re.sub(r"``([^`]+)``", r"`\1`", job).rstrip(".").replace("|", "\\|")


def row(kind: str) -> str:
    """The table row of kind folder ``kind``."""
    folder = discovery.KINDS_FOLDER / kind
    modules = sorted(p.stem for p in folder.glob("*.py") if p.stem != "__init__")
    groups = []
    for role in discovery.ROLES:
        mine = [m for m in modules if discovery.role_of(m) == role]
        mine.sort(key=lambda m: (m != role, m))  # the role's own module first
        if mine:
            groups.append(f"{', '.join(f'`{m}`' for m in mine)} ({role})")
    return f"| `{kind}` | {'; '.join(groups)} | {_job(folder)} |"


def table() -> str:
    """The whole table: its head and one row per kind folder."""
    return HEAD + "\n".join(row(kind) for kind in discovery.kind_folders()) + "\n"


def written(text: str) -> str:
    """``text`` (docs/architecture.md) with its kind table replaced by :func:`table`."""
    start = text.index(HEAD)
    end = text.index("\n\n", start)
    return text[:start] + table() + text[end + 1:]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when the table is stale")
    args = parser.parse_args(argv)
    text = DOC.read_text(encoding="utf-8")
    new = written(text)
    if args.check:
        if new != text:
            print(f"{DOC.relative_to(ROOT)}: the Kind folders table is stale: run "
                  "python tools/make_kind_table.py")
            return 1
        return 0
    DOC.write_text(new, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
