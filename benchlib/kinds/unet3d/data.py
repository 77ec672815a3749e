"""CREMI-layout volumes in HDF5 or zarr: opened lazily, read by region, written block by block.

A volume file holds 3D datasets under keys such as ``volumes/raw`` and
``volumes/labels/neuron_ids``. The format follows the suffix: ``.h5``, ``.hdf``, ``.hdf5`` for
HDF5 and ``.zarr`` for a zarr directory. Nothing here loads a whole volume into memory.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np

from benchlib.errors import VolumeError

Format = Literal["hdf5", "zarr"]
SUFFIXES: dict[str, Format] = {".h5": "hdf5", ".hdf": "hdf5", ".hdf5": "hdf5", ".zarr": "zarr"}
RAW_KEY = "volumes/raw"
LABEL_KEY = "volumes/labels/neuron_ids"
PREDICTION_KEY = "volumes/predictions"


def volume_format(path: str | Path) -> Format:
    """``hdf5`` or ``zarr`` from the path's suffix."""
    suffix = Path(path).suffix.lower()
    if suffix not in SUFFIXES:
        raise VolumeError(f"volume {str(path)!r}: unknown suffix {suffix or '(none)'!r}; allowed: "
                          f"{', '.join(SUFFIXES)}")
    return SUFFIXES[suffix]


#: Files one of which a zarr volume (a folder) holds at its top: zarr v3, then v2 metadata.
ZARR_MARKERS = ("zarr.json", ".zgroup")


def is_zarr_volume(path: str | Path) -> bool:
    """Whether ``path`` is a folder holding a zarr group (its metadata file at the top)."""
    return Path(path).is_dir() and any((Path(path) / m).is_file() for m in ZARR_MARKERS)


def _open_file(path: str | Path, mode: str = "r") -> Any:
    if volume_format(path) == "hdf5":
        import h5py

        return h5py.File(path, mode)
    import zarr

    return zarr.open_group(str(path), mode=mode)


def array_keys(path: str | Path) -> list[str]:
    """Every array key in the file (``volumes/raw``, ...)."""
    keys: list[str] = []
    with _closing(_open_file(path)) as root:
        if volume_format(path) == "hdf5":
            import h5py

            root.visititems(lambda name, item: keys.append(name)
                            if isinstance(item, h5py.Dataset) else None)
        else:
            keys = [name for name, _ in root.arrays()]
            for name, group in root.groups():
                keys += [f"{name}/{k}" for k in _zarr_keys(group)]
    return sorted(keys)


def _zarr_keys(group: Any) -> list[str]:
    keys = [name for name, _ in group.arrays()]
    for name, child in group.groups():
        keys += [f"{name}/{k}" for k in _zarr_keys(child)]
    return keys


@contextlib.contextmanager
def _closing(root: Any) -> Iterator[Any]:
    try:
        yield root
    finally:
        if hasattr(root, "close"):
            root.close()


def check_volume(path: str | Path, key: str, what: str = "volume") -> tuple[int, ...]:
    """The shape of the 3D dataset ``key`` in ``path``; VolumeError naming what exists instead."""
    path = Path(path)
    volume_format(path)
    if not path.exists():
        raise VolumeError(f"{what} {str(path)!r} does not exist (write a synthetic one with "
                          "`benchlib data volume PATH --shape Z Y X`)")
    try:
        keys = array_keys(path)
    except Exception as error:  # not an HDF5 file, broken zarr metadata, ...
        raise VolumeError(f"{what} {str(path)!r} cannot be opened as "
                          f"{volume_format(path)}: {error}") from error
    if key not in keys:
        raise VolumeError(f"{what} {str(path)!r} has no dataset {key!r}; datasets there: "
                          f"{', '.join(keys) or '(none)'}")
    with open_volume(path, key) as array:
        if array.ndim != 3:
            raise VolumeError(f"{what} {str(path)!r} dataset {key!r} has shape "
                              f"{list(array.shape)}; a 3D (z, y, x) volume is needed")
        return tuple(int(s) for s in array.shape)


@contextlib.contextmanager
def open_volume(path: str | Path, key: str) -> Iterator[Any]:
    """The dataset ``key`` of ``path`` opened read-only (h5py.Dataset or zarr.Array), closed on exit."""
    root = _open_file(path, "r")
    try:
        yield root[key]
    finally:
        if hasattr(root, "close"):
            root.close()


class LazyVolume:
    """A dataset handle that opens its file on first use in each process (picklable for
    DataLoader workers, which must not share an open HDF5 file)."""

    def __init__(self, path: str | Path, key: str) -> None:
        self.path, self.key = str(path), key
        self._pid: int | None = None
        self._root: Any = None
        self._array: Any = None

    def __getstate__(self) -> dict[str, Any]:
        return {"path": self.path, "key": self.key, "_pid": None, "_root": None, "_array": None}

    @property
    def array(self) -> Any:
        if self._pid != os.getpid():
            self._root = _open_file(self.path, "r")
            self._array = self._root[self.key]
            self._pid = os.getpid()
        return self._array

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(int(s) for s in self.array.shape)

    def read(self, start: Sequence[int], shape: Sequence[int]) -> np.ndarray:
        """The region ``[start, start + shape)``; voxels outside the volume read as zero."""
        return read_padded(self.array, start, shape)

    def close(self) -> None:
        if self._root is not None and hasattr(self._root, "close"):
            self._root.close()
        self._pid = self._root = self._array = None


def read_padded(array: Any, start: Sequence[int], shape: Sequence[int]) -> np.ndarray:
    """Read ``shape`` voxels from ``start`` (may lie partly outside); outside is zero."""
    size = array.shape
    low = [max(0, s) for s in start]
    high = [min(n, s + w) for n, s, w in zip(size, start, shape, strict=True)]
    if all(lo == s for lo, s in zip(low, start, strict=True)) and \
            all(h - lo == w for h, lo, w in zip(high, low, shape, strict=True)):
        return np.asarray(array[tuple(slice(lo, h) for lo, h in zip(low, high, strict=True))])
    out = np.zeros(tuple(shape), dtype=array.dtype)
    if all(h > lo for lo, h in zip(low, high, strict=True)):
        inner = tuple(slice(lo - s, h - s) for lo, h, s in zip(low, high, start, strict=True))
        out[inner] = array[tuple(slice(lo, h) for lo, h in zip(low, high, strict=True))]
    return out


@contextlib.contextmanager
def create_dataset(path: str | Path, key: str, shape: Sequence[int], chunks: Sequence[int],
                   dtype: Any, fill_value: float | int = 0,
                   compression: str | None = None) -> Iterator[Any]:
    """A new (or replaced) dataset ``key`` in ``path`` for writing, closed on exit."""
    shape = tuple(int(s) for s in shape)
    chunks = tuple(min(int(c), s) for c, s in zip(chunks, shape, strict=True))
    if volume_format(path) == "hdf5":
        import h5py

        with h5py.File(path, "a") as root:
            if key in root:
                del root[key]
            yield root.create_dataset(key, shape=shape, chunks=chunks, dtype=dtype,
                                      fillvalue=fill_value, compression=compression)
        return
    import zarr

    root = zarr.open_group(str(path), mode="a")
    compressors = "auto" if compression else None
    yield root.create_array(key, shape=shape, chunks=chunks, dtype=dtype, fill_value=fill_value,
                            overwrite=True, compressors=compressors)


def open_dataset(path: str | Path, key: str) -> Any:
    """An existing zarr array for writing (several processes may write disjoint chunks)."""
    if volume_format(path) != "zarr":
        raise VolumeError(f"{path}: only zarr outputs can be written by several processes")
    import zarr

    return zarr.open_group(str(path), mode="r+")[key]
