"""Result records as pandas tables: the first design's ``benchlib.results`` names.

``load(path)`` reads every record under a folder (executed notebooks and their sidecars);
``scan(path)`` also says which files were skipped and why. They live in
:mod:`benchlib.records.results`; this module is the short name notebooks use.
"""

from benchlib.records.results import Scan, Skipped, load, scan
from benchlib.records.store import read_iterations

__all__ = ["Scan", "Skipped", "load", "read_iterations", "scan"]
