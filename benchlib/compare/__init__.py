"""``benchlib compare`` and the Compared page as one feature: two campaigns' runs paired by
configuration, each pair's interval and verdict, and what would decide it; each module at the
layer of what it does (docs/architecture.md's features table, tests/test_layers.py's ``FEATURES``)."""
