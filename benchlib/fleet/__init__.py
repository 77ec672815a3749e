"""``benchlib fleet`` and the acceptance page's node tables as one feature: which nodes are
slower than their peers, each node's state over campaigns and what to do about it. Each module
sits at the layer of what it does (docs/architecture.md, tests/test_layers.py's ``FEATURES``):

- ``outliers``, ``health``, ``actions`` (analysis): robust z-scores within a group and the
  nodes x probes heat map; each node's state from the healthy nodes' baselines; Slurm drain
  lines safe for a shell and JUnit cases;
- ``tables`` (publish): the node tables and plots of the acceptance page.

``benchlib fleet`` is :mod:`~benchlib.fleet.command`.
"""
