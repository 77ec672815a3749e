"""The planted nightly history of issue 41, as ``benchlib history`` prints it: 40 nights, two
nodes, 3 runs a night; every run of a night on a node moves by one shared factor (2 %), runs
within a night by 1 %; node002 loses 12 % from night 25, when its driver changes. Run against
another checkout (``TREE``: its ``benchmarks/`` and package, e.g. a ``git worktree`` of an
earlier commit) to compare before and after.

    python benchmarks/history_planted.py            # this checkout
    python benchmarks/history_planted.py /tmp/old   # an earlier one
"""

import sys
from pathlib import Path

TREE = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent
sys.path[:0] = [str(TREE / "benchmarks"), str(TREE)]

import numpy as np  # noqa: E402
from history_data import nights  # noqa: E402

try:
    from benchlib.history import series as node_history
except ImportError:  # a checkout from before the feature folders
    from benchlib.analysis import node_history  # type: ignore[no-redef]

frame = nights(nodes=2, nights=40, noise=0.01, repeats=3, step={"node002": (25, 0.88)},
               driver={"node002": 25}, seed=41)
rng = np.random.default_rng(41)
night = {(c, h): float(np.exp(0.02 * rng.standard_normal()))
         for c in sorted(frame["campaign"].unique()) for h in ("node001", "node002")}
frame["throughput"] *= [night[(c, h)] for c, h in zip(frame["campaign"], frame["host"],
                                                       strict=True)]
found = node_history.change_points(frame)
try:
    from benchlib.history.said import lines
except ImportError:  # a checkout from before the lines moved to history.said
    lines = node_history.lines  # type: ignore[attr-defined]
print("\n".join(lines(found)))
from benchlib.analysis import gate  # noqa: E402

print("exit", gate.exit_code("history", found.table["verdict"]))
