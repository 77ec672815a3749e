"""``benchlib compare`` and the Compared page as one feature: two campaigns' runs paired by
configuration, each pair's interval and verdict, and what would decide it. Each module sits at
the layer of what it does (docs/architecture.md, tests/test_layers.py's ``FEATURES``):

- ``comparable``, ``regression``, ``until_decided`` (analysis): which runs may be paired and on
  which columns (:func:`benchlib.records.configuration.pair`), the comparison itself
  (:class:`~benchlib.compare.regression.Comparison`), and how many campaigns would decide it;
- ``tables``, ``page`` (publish): the compare tables and the Compared page
  (``summary_compare``);
- ``command``, ``output``, ``until`` (cli): ``benchlib compare``, what it prints, and
  ``--until-decided``, which runs campaigns of the new side until it decides.
"""
