"""What people read, by job: the summary pages, each with its tables and plots (``pages/``);
what a benchmark notebook shows while it runs (``benchmark_notebook/``); the HTML report built
from them (``report/``). Shared by all three: a notebook cell as one function call (``cells``)
and the Jinja2 environment of ``templates/pages/`` (``templating``)."""
