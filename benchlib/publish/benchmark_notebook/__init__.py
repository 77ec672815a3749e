"""What a benchmark notebook shows while it runs: its sections as functions (``run`` for the
timed-loop kinds, ``probes`` for the all-reduce and node probes), each kind's layout of them
(``layouts``) and the comments of the parameters cell (``parameters``, over the kind's own:
its headline, plot title and comments are :class:`benchlib.kinds.Kind`'s);
``tools/make_notebooks.py`` writes them into ``notebooks/<benchmark>.ipynb``. The report and the
summary notebooks are elsewhere (:mod:`benchlib.publish.pages`, :mod:`benchlib.report`)."""
