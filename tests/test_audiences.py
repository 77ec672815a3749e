"""publish by audience: what a benchmark notebook shows (benchlib.publish.benchmark_notebook)
apart from the summary notebooks' pages (benchlib.publish.pages); each notebook imports the
cells it calls from their own package."""

import json
import pkgutil

from benchlib import registry
from benchlib.kinds.probes import layout as probes
from benchlib.publish import benchmark_notebook, pages
from benchlib.publish.benchmark_notebook import run
from benchlib.publish.cells import Call, imports
from benchlib.publish.pages import scaling

from .conftest import ROOT


def _modules(package) -> set[str]:
    return {info.name for info in pkgutil.iter_modules(package.__path__)}


def test_benchmark_notebook_sections_are_apart_from_the_summary_pages():
    assert _modules(benchmark_notebook) == {"run", "parameters", "layouts", "gpu_sized"}
    assert not _modules(pages) & _modules(benchmark_notebook)


def test_imports_name_each_package_once_in_isort_order():
    cells = (Call(run.configuration, "config"), (Call(probes.loader, "result"),),
             Call(scaling.plot, "done"))
    assert imports(cells) == ["from benchlib.kinds.probes import layout as probes",
                              "from benchlib.publish.benchmark_notebook import run",
                              "from benchlib.publish.pages import scaling"]


def _code(name: str) -> str:
    notebook = json.loads((ROOT / "notebooks" / f"{name}.ipynb").read_text())
    return "".join("".join(cell["source"]) for cell in notebook["cells"]
                   if cell["cell_type"] == "code")


def test_notebooks_import_their_cells_from_their_audience():
    for entry in registry.shipped():
        code = _code(entry.notebook)
        assert "from benchlib.publish.benchmark_notebook import" in code, entry.notebook
        assert "benchlib.publish.pages" not in code, entry.notebook
    for name in ("summary_scaling", "summary_comparisons", "summary_node"):
        code = _code(name)
        assert "from benchlib.publish.pages import" in code, name
        assert "benchmark_notebook" not in code, name
