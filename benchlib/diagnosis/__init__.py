"""``benchlib diagnose`` as one feature: why a node is slower than it should be for a model,
answered by an experiment. Each module sits at the layer of what it does (docs/architecture.md,
tests/test_layers.py's ``FEATURES``):

- ``defaults``, ``budget``, ``data_check``, ``plan`` (inputs): the defaults per target, how the
  budget is spent, whether the data folder holds images, the ladder of rungs planned;
- ``ladder`` (execute): the ladder run as one campaign through the normal sweep, and its
  rounds of extra repeats;
- ``analysis``, ``rung_speeds``, ``rounds``, ``verdict``, ``text``, ``against_published``,
  ``agreement`` (analysis): the waterfall and its answer, each rung's calm runs, which
  comparisons are decided (a disturbed one run again first), the bottleneck verdict agreeing with
  the waterfall, the words for a change and its interval, the node beside published figures;
- ``waterfall``, ``page`` (publish): the plot and the report page;
- ``api`` (cli): :func:`benchlib.diagnose`, the whole of it from Python (``benchlib diagnose``
  is :mod:`~benchlib.diagnosis.command`).
"""
