"""Lab units: what the 3D U-Net campaigns reported (iterations/minute, days to 100k
iterations, megavoxels/s, hours per teravoxel), for the runs whose kind reports them
(:attr:`benchlib.kinds.Kind.lab_units`)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from benchlib.analysis.tables import ok
from benchlib.kinds import fact_of_rows, kind_named


def derived_units(df: pd.DataFrame) -> pd.DataFrame:
    """Lab units: iterations/minute, days to 100k iterations, megavoxels/s, hours per teravoxel."""
    df = df.copy()
    if "time_iteration_s" in df:
        df["iterations_per_minute"] = 60 / df["time_iteration_s"]
        df["days_to_100k"] = 100_000 * df["time_iteration_s"] / 86_400
    if "throughput" in df and "benchmark" in df:
        # each only where the kind reports it (training voxels/s are not a volume to process)
        df["megavoxels_per_s"] = np.where(_reports(df, "megavoxels_per_s"), df["throughput"] / 1e6,
                                          np.nan)
        df["hours_per_teravoxel"] = np.where(_reports(df, "hours_per_teravoxel"),
                                             1e12 / df["throughput"] / 3600, np.nan)
    return df


LAB_UNITS = ("iterations_per_minute", "days_to_100k", "megavoxels_per_s", "hours_per_teravoxel")


def _reports(df: pd.DataFrame, unit: str) -> pd.Series:
    """Whether each row's kind reports lab unit ``unit``."""
    return fact_of_rows(df["benchmark"], "lab_units", ()).map(lambda units: unit in units)


def has_lab_units(df: pd.DataFrame) -> pd.Series:
    """Whether each row's kind reports lab units (the 3D U-Net's)."""
    return fact_of_rows(df["benchmark"], "lab_units", ()).map(bool)


def lab_units(record: dict) -> dict[str, object]:
    """The lab units one record's kind reports (a 3D U-Net's: iterations/minute and days to
    100k iterations when training, megavoxels/s and hours per teravoxel when predicting), as
    the summaries compute them."""
    row = derived_units(pd.DataFrame([record])).iloc[0]
    return {key: row[key] for key in getattr(kind_named(record.get("benchmark")), "lab_units", ())}


def unet3d_units(df: pd.DataFrame, reference: pd.DataFrame | None = None) -> pd.DataFrame:
    """Runs of ``df`` whose kind reports lab units (the 3D U-Net's) beside ``reference`` ones:
    training in iterations per minute and days to 100k iterations, prediction in megavoxels/s
    and hours per teravoxel. ``source`` says which rows are this campaign's; ``flags`` each
    run's flags, where the runs have them."""
    frames = []
    for source, frame in (("this campaign", df), ("reference", reference)):
        if frame is None or "benchmark" not in frame:
            continue
        rows = ok(frame)
        rows = rows[has_lab_units(rows)].assign(source=source)
        frames.append(rows)
    if not frames or all(f.empty for f in frames):
        return pd.DataFrame(columns=["source", "benchmark", *LAB_UNITS])
    table = derived_units(pd.concat([f for f in frames if not f.empty], ignore_index=True))
    for unit in LAB_UNITS:
        table.loc[~_reports(table, unit), unit] = np.nan
    described = [c for c in ("cluster", "gpu", "num_devices", "precision", "dataset",
                             "batch_size", "patch_shape", "block_shape") if c in table]
    marks = ["flags"] if "flags" in table else []
    return table[["source", "benchmark", *described, *LAB_UNITS, *marks]].reset_index(drop=True)
