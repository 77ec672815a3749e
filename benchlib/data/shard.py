"""Which share of the data is this process's: its rank in the job, its items and its seed.

Set by the launcher (:mod:`benchlib.workloads.distributed`) and read by the loaders and the
workloads; rank 0 of 1 in a plain process.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Rank:
    """This process's place in the job."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    local_world_size: int = 1
    node_rank: int = 0

    @property
    def distributed(self) -> bool:
        return self.world_size > 1

    def shard(self, items: Sequence) -> list:
        """Every ``world_size``-th item from this rank's index: disjoint, nothing dropped or
        repeated (shares differ by at most one item)."""
        return list(items[self.rank::self.world_size])

    def seed(self, seed: int) -> int:
        """A per-rank seed, so random data and patches differ between ranks."""
        return seed + 1_000_003 * self.rank
