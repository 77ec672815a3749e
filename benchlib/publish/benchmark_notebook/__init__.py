"""What a benchmark notebook shows while it runs: its sections as functions (``run`` for the
training and inference kinds, ``probes`` for the all-reduce and node probes) and the comments of
its parameters cell (``parameters``). Each kind names its cells here
(:attr:`benchlib.kinds.Kind.cells`); ``tools/make_notebooks.py`` writes them into
``notebooks/<benchmark>.ipynb``. The report and the summary notebooks are elsewhere
(:mod:`benchlib.publish.pages`, :mod:`benchlib.publish.report`)."""
