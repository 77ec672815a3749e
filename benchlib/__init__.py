"""benchlib: GPU benchmark workbook for deep-learning nodes and clusters."""

__version__ = "0.1.0"
SCHEMA_VERSION = 1
