"""Which run each row of a records table is, and each run once: the same run found in two
folders (a campaign copied, both indexed or both read) counts once in a history, a fleet's
recent runs and a comparison."""

from __future__ import annotations

import pandas as pd


def identity(df: pd.DataFrame) -> pd.Series:
    """Which run each row is: its ``run_id``, else its notebook (``source``)."""
    ids = df["run_id"].astype("string") if "run_id" in df else pd.Series(pd.NA, index=df.index,
                                                                         dtype="string")
    sources = (df["source"].astype("string") if "source" in df
               else pd.Series(pd.NA, index=df.index, dtype="string"))
    return ids.fillna(sources)


def once(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with each run once: a record whose ``run_id`` an earlier row has (the same
    campaign copied to a second folder, both indexed or read) is left out, so that a copy
    never doubles a history's runs nor a node's recent runs (how many: ``len(df) -
    len(once(df))``)."""
    ids = identity(df)
    repeated = ids.notna() & ids.duplicated()
    return df[~repeated].reset_index(drop=True) if repeated.any() else df


def copies_said(side: str, copies: int, found: int) -> str:
    """The warning that ``copies`` of ``found`` runs of a ``side`` repeat another run's
    ``run_id`` (a campaign folder copied or restored beside the original): each counted once."""
    return (f"{copies} of the {found} {side} runs are copies of runs found in another folder "
            "(the same run_id: a campaign folder copied or restored beside the original): left "
            "out, each run counted once")
