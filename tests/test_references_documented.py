"""Every published figure shipped in expectations.yaml is named in docs/acceptance.md."""

from __future__ import annotations

from pathlib import Path

from benchlib.analysis import references

DOC = Path(__file__).resolve().parent.parent / "docs" / "acceptance.md"


def test_every_shipped_published_figure_is_in_the_acceptance_docs() -> None:
    text = " ".join(DOC.read_text().split())
    published = [ref for ref in references.shipped() if ref.metric not in
                 {m for m in references.DATASHEET_METRICS.values()}]
    assert len(published) >= 12
    missing = [f"{ref.label}: {ref.value:,.0f}" for ref in published
               if f"{ref.value:,.0f}" not in text]
    assert not missing, missing
