"""JUnit XML for CI systems (GitLab's and Jenkins' test reports) from check and compare tables.

One ``<testsuite>`` in a ``<testsuites>`` root; each case is ``<testcase classname name time>``
with a ``<failure message>``, ``<error message>`` or ``<skipped message>`` child when it did
not pass, as the JUnit schema those tools read expects.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from benchlib.errors import OutputError, describe_os_error

Outcome = Literal["passed", "failure", "error", "skipped"]


@dataclass(frozen=True)
class Case:
    """One test case: where it belongs (``classname``), its ``name``, outcome and message."""

    classname: str
    name: str
    outcome: Outcome
    message: str = ""
    details: str = ""


def to_xml(suite: str, cases: list[Case]) -> ET.ElementTree:
    """The cases as a JUnit document."""
    counts = {kind: sum(c.outcome == kind for c in cases) for kind in ("failure", "error", "skipped")}
    root = ET.Element("testsuites", name=suite, tests=str(len(cases)),
                      failures=str(counts["failure"]), errors=str(counts["error"]))
    element = ET.SubElement(root, "testsuite", name=suite, tests=str(len(cases)),
                            failures=str(counts["failure"]), errors=str(counts["error"]),
                            skipped=str(counts["skipped"]))
    for case in cases:
        node = ET.SubElement(element, "testcase", classname=case.classname, name=case.name,
                             time="0")
        if case.outcome != "passed":
            child = ET.SubElement(node, case.outcome, message=case.message)
            child.text = case.details or case.message
    return ET.ElementTree(root)


def write(path: str | Path, suite: str, cases: list[Case]) -> Path:
    """Write the JUnit XML file; OutputError naming the path when it cannot be written."""
    path = Path(path)
    tree = to_xml(suite, cases)
    ET.indent(tree)
    try:
        tree.write(path, encoding="utf-8", xml_declaration=True)
    except OSError as error:
        raise OutputError(f"cannot write JUnit XML: {describe_os_error(error, path)}") from None
    return path
