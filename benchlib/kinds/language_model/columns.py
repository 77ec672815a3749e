"""The record columns only the language-model kind's runs have, each with its words and its form;
``benchlib.records.columns.every_column`` places them among the shared ones (settings
before the shared bookkeeping, measurements before the environment)."""

from __future__ import annotations

from benchlib.records.column import B, C, Column

#: The columns this kind adds to the record (docs/record.md lists them).
COLUMNS: tuple[Column, ...] = (
    Column("lm_size", C, "text", "", "language model: named size (tiny, mini, gpt2, ..., custom)"),
    Column("lm_layers", C, "count", "blocks", "language model: transformer blocks", minimum=1),
    Column("lm_heads", C, "count", "heads", "language model: attention heads", minimum=1),
    Column("lm_width", C, "count", "", "language model: embedding width", minimum=1),
    Column("lm_vocab", C, "count", "tokens", "language model: vocabulary size", minimum=1),
    Column("sequence_length", C, "count", "tokens", "language model: tokens per sequence (a "
           "sample of batch_size is a sequence, of throughput a token)", minimum=1),
    Column("parameters", B, "int", "parameters", "language model: trainable parameters",
           minimum=1),
)
