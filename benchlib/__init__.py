"""benchlib: GPU benchmark workbook for deep-learning nodes and clusters."""

from pathlib import Path

__version__ = "0.1.0"
SCHEMA_VERSION = 1

#: The folder holding the benchlib package: the project root in a checkout (notebooks/, params/).
PROJECT_ROOT = Path(__file__).resolve().parent.parent
