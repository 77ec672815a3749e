"""Fleet and history on one catalog tell one story (issue 52): on the planted fleet of the
issue (48 nodes, 30 nightly campaigns, three nodes -8 % for 8 nights and one -15 % for 4),
every node ``history`` calls regressed is slow for ``fleet`` (against the fleet and its own
past, since the right date), no healthy node is drained, a slowed node is found within 3
campaigns of its change, and a step of the whole fleet drains no node but is named."""

from __future__ import annotations

import pandas as pd
import pytest

from benchlib.fleet import health
from benchlib.history import series

from .conftest import benchmark_module

PLANTED = benchmark_module("fleet_planted")


@pytest.fixture(scope="module")
def issue_fleet() -> pd.DataFrame:
    return PLANTED.records(48, 30, PLANTED.ISSUE_PLANT, seed=0)


def test_fleet_and_history_agree_on_the_issues_fleet(issue_fleet: pd.DataFrame) -> None:
    fleet = health.node_states(issue_fleet, now=PLANTED.NOW)
    states = fleet.table.set_index("node")
    slowed = set(PLANTED.ISSUE_PLANT)
    assert set(states.index[states["state"] == "slow"]) == slowed
    assert set(states.loc[sorted(set(states.index) - slowed), "state"]) == {"ok"}
    for node, (_, last) in PLANTED.ISSUE_PLANT.items():
        since = (PLANTED.NOW - pd.Timedelta(days=last)).strftime("%Y-%m-%d")
        reason = states.loc[node, "reason"]
        assert "slow against the fleet and its own past" in reason, reason
        assert f"against its own past from {since}" in reason, reason
    listed = series.change_points(issue_fleet).table
    assert set(listed.loc[listed["verdict"] == "regression", "node"]) == slowed
    assert PLANTED.contradictions(fleet, listed) == []


@pytest.mark.slow  # a command as a subprocess: in make test, not the edit loop
def test_persistent_spread_is_not_slow() -> None:
    """Nodes of their own speed within +-2 % and the fleet moving +-1.5 % a night, nothing
    planted: no node is slow, for 5 fleets."""
    for seed in range(5):
        fleet = health.node_states(PLANTED.records(48, 30, {}, seed=seed), now=PLANTED.NOW)
        assert set(fleet.table["state"]) == {"ok"}, fleet.table[fleet.table["state"] != "ok"]


@pytest.mark.slow  # a command as a subprocess: in make test, not the edit loop
def test_a_slowed_node_is_found_within_three_campaigns(issue_fleet: pd.DataFrame) -> None:
    for node in ("node005", "node042"):
        found = PLANTED.first_found(issue_fleet, node, PLANTED.ISSUE_PLANT[node][1])
        assert found is not None and found <= 3, (node, found)


def test_a_step_of_the_whole_fleet_drains_no_node_and_is_named() -> None:
    frame = PLANTED.records(48, 30, {}, seed=1, fleet_step=(0.92, 6))
    fleet = health.node_states(frame, now=PLANTED.NOW)
    assert set(fleet.table["state"]) == {"ok"}
    since = (PLANTED.NOW - pd.Timedelta(days=6)).strftime("%Y-%m-%d")
    assert f"from {since}" in fleet.baselines["fleet_moved"].iloc[0]
    listed = series.change_points(frame).table
    assert len(listed) >= 40  # history lists it on (nearly) every node ...
    assert PLANTED.contradictions(fleet, listed) == []  # ... the fleet names it once
