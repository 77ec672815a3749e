"""An EM-like synthetic volume in CREMI layout: neurite-like cells with dark membranes.

Cells are the Voronoi regions of a jittered grid of seeds (anisotropic, like serial-section EM
with thick z sections); voxels near the boundary between two cells form a dark membrane; each
cell has its own grey level, and noise plus a light blur stand in for the texture. Labels are
the cell ids (``volumes/labels/neuron_ids``), raw the uint8 image (``volumes/raw``). The volume
is written plane by plane, so its size is bounded by disk, not memory. It is written under a
temporary name beside ``path`` and renamed into place once whole (free space checked first):
an interrupted or failed write leaves nothing at ``path`` (a previous volume there is kept).
"""

from __future__ import annotations

import functools
import itertools
import os
import secrets
import shutil
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from benchlib.data.space import check_free_space
from benchlib.kinds.unet3d.data import LABEL_KEY, RAW_KEY, create_dataset, volume_format

DEFAULT_CELL = (6, 40, 40)  #: mean cell extent in voxels (z, y, x)
MEMBRANE_WIDTH = 2.0  #: voxels (in y / x units) either side of a boundary that are membrane


def _seed_grid(shape: Sequence[int], cell: Sequence[int], rng: np.random.Generator) -> np.ndarray:
    counts = [-(-s // c) + 2 for s, c in zip(shape, cell, strict=True)]
    index = np.stack(np.meshgrid(*(np.arange(n) for n in counts), indexing="ij"), axis=-1)
    jitter = rng.uniform(0.1, 0.9, size=index.shape)
    return ((index - 1 + jitter) * np.asarray(cell)).astype(np.float32)


def em_plane(z: int, shape: Sequence[int], cell: Sequence[int], seeds: np.ndarray,
             grey: np.ndarray, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Raw (uint8) and labels (uint64) of plane ``z`` (its noise seeded by ``seed`` and ``z``)."""
    rng = np.random.default_rng([seed, z])
    _, height, width = shape
    y, x = np.mgrid[0:height, 0:width]
    cells = (z // cell[0] + 1, y // cell[1] + 1, x // cell[2] + 1)
    z_scale = cell[1] / cell[0]  # distances in y / x voxel units
    best = np.full((height, width), np.inf, dtype=np.float32)
    second = np.full((height, width), np.inf, dtype=np.float32)
    label = np.zeros((height, width), dtype=np.int64)
    counts = seeds.shape[:3]
    for dz, dy, dx in itertools.product((-1, 0, 1), repeat=3):
        iz, iy, ix = cells[0] + dz, cells[1] + dy, cells[2] + dx
        seed = seeds[iz, iy, ix]
        dist = np.sqrt(((seed[..., 0] - z) * z_scale) ** 2 + (seed[..., 1] - y) ** 2
                       + (seed[..., 2] - x) ** 2)
        ids = (iz * counts[1] + iy) * counts[2] + ix
        closer = dist < best
        second = np.where(closer, best, np.minimum(second, dist))
        label = np.where(closer, ids, label)
        best = np.where(closer, dist, best)
    membrane = (second - best) < MEMBRANE_WIDTH
    image = grey[label] + rng.normal(0, 10, (height, width))
    image[membrane] = 45 + rng.normal(0, 8, int(membrane.sum()))
    image[1:-1] = (image[:-2] + 2 * image[1:-1] + image[2:]) / 4  # light blur
    image[:, 1:-1] = (image[:, :-2] + 2 * image[:, 1:-1] + image[:, 2:]) / 4
    return image.clip(0, 255).astype(np.uint8), (label + 1).astype(np.uint64)


def write_em_volume(path: str | Path, shape: Sequence[int], cell: Sequence[int] = DEFAULT_CELL,
                    chunks: Sequence[int] = (8, 128, 128), seed: int = 0,
                    compression: str | None = None, progress: bool = True,
                    workers: int | None = None) -> tuple[int, ...]:
    """Write raw and labels of an EM-like volume of ``shape`` (z, y, x) to ``path``.

    HDF5 or zarr by the suffix. Planes are computed by ``workers`` processes (default: one per
    CPU core); memory use is a few slabs. The result does not depend on ``workers``. Free
    space is checked against :func:`estimated_bytes` first (OutputError); the volume is
    written to ``.NAME.partial-XXXXXXXX.SUFFIX`` beside ``path``, removed on any failure or
    interrupt, and replaces whatever was at ``path`` only once it is whole. Returns the shape.
    """
    shape = tuple(int(s) for s in shape)
    if len(shape) != 3 or min(shape) < 1:
        raise ValueError(f"shape {list(shape)}: three positive sizes (z, y, x) are needed")
    path = Path(path)
    volume_format(path)
    check_free_space(path, estimated_bytes(shape, compression))
    partial = path.with_name(f".{path.stem}.partial-{secrets.token_hex(4)}{path.suffix}")
    try:
        _write(partial, shape, cell, chunks, seed, compression, progress, workers, path.name)
        _replace(partial, path)
    finally:
        _remove(partial)
    return shape


def estimated_bytes(shape: Sequence[int], compression: str | None) -> int:
    """Bytes a volume of ``shape`` takes: uint8 raw and uint64 labels, 9 bytes a voxel; with
    compression, the raw voxels (EM-like noise barely compresses; the labels shrink to little)."""
    voxels = int(np.prod(shape, dtype=np.int64))
    return voxels * (9 if compression is None else 1)


def _remove(path: Path) -> None:
    """Remove the file or folder at ``path`` (a zarr volume is a folder), if any."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def _replace(new: Path, path: Path) -> None:
    """Put ``new`` at ``path``: a rename, after moving a previous volume aside (a zarr folder
    cannot be renamed over), which is then removed."""
    if not path.is_dir() or new.is_file():  # a file over a file or nothing: one rename
        os.replace(new, path)
        return
    old = path.with_name(f".{path.stem}.old-{secrets.token_hex(4)}{path.suffix}")
    os.replace(path, old)
    try:
        os.replace(new, path)
    except BaseException:
        os.replace(old, path)
        raise
    _remove(old)


def _write(path: Path, shape: tuple[int, ...], cell: Sequence[int], chunks: Sequence[int],
           seed: int, compression: str | None, progress: bool, workers: int | None,
           name: str) -> None:
    """Write the volume's planes to ``path`` (a new file), slab by slab."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from benchlib import progress as shown

    rng = np.random.default_rng(seed)
    seeds = _seed_grid(shape, cell, rng)
    grey = rng.uniform(120, 215, size=seeds.shape[0] * seeds.shape[1] * seeds.shape[2])
    slab = min(int(chunks[0]), shape[0])
    workers = workers or len(os.sched_getaffinity(0))
    # spawn, never fork: the caller may run threads (a progress bar's monitor, a notebook kernel)
    pool = (ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"))
            if workers > 1 and shape[0] > slab else None)
    plane = functools.partial(em_plane, shape=shape, cell=cell, seeds=seeds, grey=grey, seed=seed)
    with create_dataset(path, RAW_KEY, shape, chunks, np.uint8, compression=compression) as raw, \
            create_dataset(path, LABEL_KEY, shape, chunks, np.uint64,
                           compression=compression) as labels:
        planes = shown.bar(range(0, shape[0], slab), desc=f"writing {name}", unit="slab",
                           enabled=progress)
        try:
            for z0 in planes:
                zs = range(z0, min(z0 + slab, shape[0]))
                pairs = list(pool.map(plane, zs) if pool else map(plane, zs))
                raw[z0:z0 + len(pairs)] = np.stack([p[0] for p in pairs])
                labels[z0:z0 + len(pairs)] = np.stack([p[1] for p in pairs])
        finally:
            if pool:
                pool.shutdown(cancel_futures=True)
