"""Token batches for language-model benchmarks: synthetic ids, or windows of a token file.

A token file is nanoGPT's ``.bin`` layout: the whole tokenized corpus as one array of unsigned
16-bit ids (``numpy.memmap(path, dtype=uint16)``). A batch is ``batch`` random windows of
``sequence + 1`` tokens: the inputs and, shifted by one, the targets.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

TOKEN_DTYPE = np.uint16  #: nanoGPT's token files: one uint16 per token


def open_tokens(path: str | Path, sequence: int, vocab_size: int) -> np.memmap:
    """The token file at ``path``, mapped read-only; ValueError when it is shorter than one
    window or holds ids outside the model's vocabulary (checked on its first million)."""
    path = Path(path)
    size = path.stat().st_size
    if size % np.dtype(TOKEN_DTYPE).itemsize:
        raise ValueError(f"{path}: {size} bytes is not a whole number of uint16 tokens "
                         "(a token file is nanoGPT's .bin layout)")
    tokens = np.memmap(path, dtype=TOKEN_DTYPE, mode="r")
    if len(tokens) < sequence + 2:
        raise ValueError(f"{path}: {len(tokens)} tokens, fewer than one window of "
                         f"{sequence + 1}")
    largest = int(tokens[:1_000_000].max())
    if largest >= vocab_size:
        raise ValueError(f"{path}: token id {largest} is outside the model's vocabulary of "
                         f"{vocab_size}")
    return tokens


def file_batch(tokens: np.ndarray, batch: int, sequence: int,
               generator: np.random.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """``batch`` random windows of ``tokens`` as int64 (inputs, targets) on the host."""
    starts = generator.integers(0, len(tokens) - sequence - 1, size=batch)
    windows = np.stack([np.asarray(tokens[s:s + sequence + 1], dtype=np.int64) for s in starts])
    rows = torch.from_numpy(windows)
    return rows[:, :-1], rows[:, 1:]


def synthetic_batch(batch: int, sequence: int, vocab_size: int, device: torch.device | str,
                    seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Uniformly random ids (inputs, targets) made once on ``device``."""
    generator = torch.Generator().manual_seed(seed)
    rows = torch.randint(vocab_size, (batch, sequence + 1), generator=generator)
    rows = rows.to(device)
    return rows[:, :-1], rows[:, 1:]


def write_tokens(path: str | Path, count: int, vocab_size: int, seed: int = 0) -> Path:
    """A token file of ``count`` random ids below ``vocab_size`` (for tests and demos), written
    whole to a temporary name and renamed into place."""
    path = Path(path)
    ids = np.random.default_rng(seed).integers(0, vocab_size, size=count, dtype=TOKEN_DTYPE)
    partial = path.with_name(f".{path.name}.partial")
    ids.tofile(partial)
    partial.replace(path)
    return path
