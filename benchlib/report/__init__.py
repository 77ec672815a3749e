"""The HTML report of a campaign: the build (``build``: summary notebooks executed, pages
exported, the index written), the offline export of a notebook (``export``), the run pages
(``run_pages``, each opening with ``run_lead``), the front page (``index_page``), the navigation
bar (``navigation``), the cache of unchanged pages (``reuse``) and each build's scratch folder
(``scratch``). What the summary pages show is :mod:`benchlib.publish.pages`."""
