"""The names benchlib gives its own files and folders inside a campaign folder: one place for
the writers (sweeps, the report), the readers that skip them and the exports that refuse them."""

from __future__ import annotations

LEDGER = ".benchlib"  #: the campaign's ledger: points, jobs, locks, the diagnose plan, rejects
PARTIAL = ".partial"  #: the points' scratch folders (a notebook being written, a launch's files)
REPORT = "report"  #: the built report (and a folder name no campaign may take)
