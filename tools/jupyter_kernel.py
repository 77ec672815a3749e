"""The Jupyter kernel the workbook's notebooks name, and the one ``make setup`` installs.

One source of truth: ``tools/make_notebooks.py`` writes :data:`KERNELSPEC` into every committed
notebook and the Makefile installs the kernel through this script, so JupyterLab finds the
notebook's kernel under the name and display name the notebook already states (no "modified" on
open, nothing for ``make_notebooks.py --check`` to find after a save).
Usage: python tools/jupyter_kernel.py install [--prefix PREFIX]   (default: this Python's prefix)
"""

from __future__ import annotations

import argparse
import sys

NAME = "python3"
DISPLAY_NAME = "Python 3 (benchlib)"
#: What a notebook's ``metadata.kernelspec`` says.
KERNELSPEC = {"name": NAME, "display_name": DISPLAY_NAME, "language": "python"}


def install(prefix: str = sys.prefix) -> str:
    """Install this Python's ipykernel as :data:`NAME` under ``prefix`` (``--sys-prefix`` by
    default, so the venv's Jupyter finds it); returns the kernel spec's folder."""
    from ipykernel.kernelspec import install as install_kernel

    return install_kernel(kernel_name=NAME, display_name=DISPLAY_NAME, prefix=prefix)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["install"])
    parser.add_argument("--prefix", default=sys.prefix, help="install under PREFIX/share/jupyter")
    args = parser.parse_args(argv)
    install(args.prefix)
    return 0


if __name__ == "__main__":
    sys.exit(main())
