"""``benchlib history`` and the report's History page as one feature: each configuration on each
node over time, its change points and what changed in the environment then. Each module sits at
the layer of what it does (docs/architecture.md, tests/test_layers.py's ``FEATURES``):

- ``change_points``, ``series``, ``env_changes`` (analysis): Otava's method on one series; each
  configuration's campaigns per node with the change and its interval, outliers and "too early
  to tell"; what changed in the environment at a change point;
- ``report_input``, ``plot``, ``page`` (publish): what the History page is drawn from (earlier
  folders or the catalog), the plot of a configuration over time, the page.

``benchlib history`` is :mod:`~benchlib.history.command`.
"""
