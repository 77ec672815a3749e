"""The record columns only the classification kind's runs have (decode, smooth inference), each with
its words and its form; ``benchlib.records.columns.every_column`` places them among the shared
ones (settings before the shared bookkeeping, measurements before the environment)."""

from __future__ import annotations

from benchlib.records.column import B, C, Column, M

#: The columns this kind adds to the record (docs/record.md lists them).
COLUMNS: tuple[Column, ...] = (
    Column("decode", C, "text", "", "real data: where the JPEGs were decoded, loader (CPU "
           "workers) or device (the run's device: nvJPEG on a GPU; the workers only read)",
           describes=20, factor=12),
    Column("noise_samples", C, "count", "samples", "smooth inference: noisy copies per image",
            minimum=1, describes=15),
    Column("sigma", B, "float", "", "smooth inference: noise standard deviation", minimum=0),
    Column("noisy_samples_per_s", M, "float", "samples/s", "smooth inference: noisy copies "
           "classified per second", better="higher"),
)
