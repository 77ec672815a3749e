"""Token batches for language-model benchmarks: synthetic ids, or windows of a token file.

A token file is nanoGPT's ``.bin`` layout: the whole tokenized corpus as one array of unsigned
16-bit ids (``numpy.memmap(path, dtype=uint16)``). A batch is ``batch`` random windows of
``sequence + 1`` tokens: the inputs and, shifted by one, the targets.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

import numpy as np
import torch

from benchlib.data.space import check_free_space
from benchlib.errors import InputError

TOKEN_DTYPE = np.uint16  #: nanoGPT's token files: one uint16 per token
#: Tokens :func:`open_tokens` checks before the run (the rest are checked batch by batch).
CHECKED_AT_OPEN = 1_000_000


def _outside(path: object, ids: np.ndarray, offsets: np.ndarray, vocab_size: int) -> InputError:
    """The error for the first id of ``ids`` (at token ``offsets``) not below ``vocab_size``."""
    first = int(np.argmax(ids >= vocab_size))
    return InputError(f"token_file {str(path)!r}: token id {int(ids[first])} at offset "
                      f"{int(offsets[first]):,} (token index; byte {2 * int(offsets[first]):,}) "
                      f"is outside the model's vocabulary (vocab_size {vocab_size})")


def open_tokens(path: str | Path, sequence: int, vocab_size: int) -> np.memmap:
    """The token file at ``path``, mapped read-only; InputError naming ``token_file`` when it
    is shorter than one window or its first :data:`CHECKED_AT_OPEN` tokens hold an id outside
    the model's vocabulary (the rest are checked as :func:`file_batch` reads them)."""
    path = Path(path)
    size = path.stat().st_size
    if size % np.dtype(TOKEN_DTYPE).itemsize:
        raise InputError(f"token_file {str(path)!r}: {size} bytes is not a whole number of "
                         "uint16 tokens (a token file is nanoGPT's .bin layout)")
    tokens = np.memmap(path, dtype=TOKEN_DTYPE, mode="r")
    if len(tokens) < sequence + 2:
        raise InputError(f"token_file {str(path)!r}: {len(tokens)} tokens, fewer than one "
                         f"window of {sequence + 1}")
    head = np.asarray(tokens[:CHECKED_AT_OPEN])
    if int(head.max()) >= vocab_size:
        raise _outside(path, head, np.arange(len(head)), vocab_size)
    return tokens


def file_batch(tokens: np.ndarray, batch: int, sequence: int, generator: np.random.Generator,
               vocab_size: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """``batch`` random windows of ``tokens`` as int64 (inputs, targets), each contiguous, on
    the host; with
    ``vocab_size``, InputError naming the token file, the offset and the vocabulary when a
    window holds an id the model's embedding cannot take (one max over the batch: cheap)."""
    starts = generator.integers(0, len(tokens) - sequence - 1, size=batch)
    windows = np.stack([np.asarray(tokens[s:s + sequence + 1], dtype=np.int64) for s in starts])
    if vocab_size is not None and int(windows.max()) >= vocab_size:
        offsets = starts[:, None] + np.arange(sequence + 1)[None, :]
        raise _outside(getattr(tokens, "filename", None) or "(in memory)", windows.ravel(),
                       offsets.ravel(), vocab_size)
    rows = torch.from_numpy(windows)
    # contiguous: pinned for the device, a strided view would pin (and copy) the whole rows, and
    # its copy to the device would pass through a pageable, blocking host copy
    return rows[:, :-1].contiguous(), rows[:, 1:].contiguous()


def synthetic_batch(batch: int, sequence: int, vocab_size: int, device: torch.device | str,
                    seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Uniformly random ids (inputs, targets) made once on ``device``."""
    generator = torch.Generator().manual_seed(seed)
    rows = torch.randint(vocab_size, (batch, sequence + 1), generator=generator)
    rows = rows.to(device)
    return rows[:, :-1], rows[:, 1:]


def write_tokens(path: str | Path, count: int, vocab_size: int, seed: int = 0) -> Path:
    """A token file of ``count`` random ids below ``vocab_size`` (for tests and demos): free
    space checked first (OutputError), written whole to a temporary name in the same folder
    (``.NAME.partial-XXXXXXXX``, removed on any failure) and renamed into place."""
    path = Path(path)
    check_free_space(path, count * np.dtype(TOKEN_DTYPE).itemsize)
    ids = np.random.default_rng(seed).integers(0, vocab_size, size=count, dtype=TOKEN_DTYPE)
    partial = path.with_name(f".{path.name}.partial-{secrets.token_hex(4)}")
    try:
        _write_ids(ids, partial)
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)
    return path


def _write_ids(ids: np.ndarray, path: Path) -> None:
    """``ids`` to a new file at ``path`` (0666 less the umask, as ``open`` makes it)."""
    with open(path, "xb") as file:
        ids.tofile(file)
