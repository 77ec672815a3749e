"""What a report's executed notebooks keep of where they were built: nothing. They are zipped
and mailed with the report (``report/*.ipynb``), so their papermill parameters and metadata
name the campaign folder and the notebooks by name, never the builder's absolute paths."""

from __future__ import annotations

from pathlib import Path

import nbformat


def results_dir(campaign_dir: Path) -> str:
    """The ``results_dir`` a report's notebook is given: ``../<campaign folder's name>``, never
    its absolute path (papermill keeps it in ``report/*.ipynb``). Run in the campaign folder
    (the kernel's), it names that folder; reopened from ``report/`` in JupyterLab, the summary
    pages find it from a parent (:func:`benchlib.publish.pages.summary.resolve_results_dir`)."""
    return f"../{campaign_dir.resolve().name}"


def metadata(target: Path, name: str) -> None:
    """papermill's ``input_path`` and ``output_path`` in ``target`` as names, not the builder's
    absolute paths."""
    notebook = nbformat.read(target, as_version=4)
    meta = notebook.metadata.get("papermill", {})
    meta.update(input_path=f"notebooks/{name}.ipynb", output_path=target.name)
    nbformat.write(notebook, target)
