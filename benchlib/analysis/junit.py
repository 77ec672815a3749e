"""JUnit XML for CI systems (GitLab's and Jenkins' test reports) from check and compare tables.

One ``<testsuite>`` in a ``<testsuites>`` root; each case is ``<testcase classname name time>``
with a ``<failure message>``, ``<error message>`` or ``<skipped message>`` child when it did
not pass, as the JUnit schema those tools read expects. Record text (errors, names) may hold
what XML 1.0 forbids (control characters, lone surrogates) and terminal colour escapes: escapes
are dropped and forbidden characters become U+FFFD, so the file is always well-formed. The file
is written through a temporary file and a rename, never half-written; a character device or
FIFO (``/dev/stdout``) is written in place, never replaced
(:func:`benchlib.records.store.write_output_file`).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from benchlib.errors import InputError, OutputError
from benchlib.records.store import write_output_file
from benchlib.vocabulary import JUnitOutcome

Outcome = JUnitOutcome  #: the former name
#: Terminal escape sequences: CSI (``ESC [ ... m``), OSC (``ESC ] ... BEL``) and two-byte ones.
_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_])")
#: Characters XML 1.0 does not allow (its ``Char`` production), lone surrogates included.
_NOT_XML = re.compile(r"[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def xml_text(text: str) -> str:
    """``text`` without terminal escapes, every character XML 1.0 forbids as U+FFFD."""
    return _NOT_XML.sub("\ufffd", _ANSI.sub("", text))


@dataclass(frozen=True)
class Case:
    """One test case: where it belongs (``classname``), its ``name``, outcome and message."""

    classname: str
    name: str
    outcome: JUnitOutcome
    message: str = ""
    details: str = ""


def to_xml(suite: str, cases: list[Case]) -> ET.ElementTree:
    """The cases as a JUnit document (text made XML-safe by :func:`xml_text`)."""
    suite = xml_text(suite)
    counts = {kind.value: sum(c.outcome == kind for c in cases)
              for kind in (JUnitOutcome.FAILURE, JUnitOutcome.ERROR, JUnitOutcome.SKIPPED)}
    root = ET.Element("testsuites", name=suite, tests=str(len(cases)),
                      failures=str(counts["failure"]), errors=str(counts["error"]))
    element = ET.SubElement(root, "testsuite", name=suite, tests=str(len(cases)),
                            failures=str(counts["failure"]), errors=str(counts["error"]),
                            skipped=str(counts["skipped"]))
    for case in cases:
        node = ET.SubElement(element, "testcase", classname=xml_text(case.classname),
                             name=xml_text(case.name), time="0")
        if case.outcome != JUnitOutcome.PASSED:
            child = ET.SubElement(node, str(case.outcome), message=xml_text(case.message))
            child.text = xml_text(case.details or case.message)
    return ET.ElementTree(root)


def write(path: str | Path, suite: str, cases: list[Case]) -> Path:
    """Write the JUnit XML file atomically (any previous file stays when it cannot be written
    whole); InputError (exit 2, as for any unusable path given: never the 1 of a failing
    verdict) naming the path and the reason."""
    path = Path(path)
    tree = to_xml(suite, cases)
    ET.indent(tree)
    data = ET.tostring(tree.getroot(), encoding="utf-8", xml_declaration=True)
    try:
        write_output_file(path, data)
    except OutputError as error:
        raise InputError(f"--junit {path}: cannot write JUnit XML: {error}") from None
    return path
