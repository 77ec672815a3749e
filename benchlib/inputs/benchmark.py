"""One benchmark benchlib runs (:class:`Benchmark`): its notebook, the ``benchmark`` value its
records carry, its config class and kind, and what it does. A kind declares its variants as
these (a shipped kind folder's ``config.VARIANTS``, a site's package through
:func:`benchlib.registry.register`); :mod:`benchlib.registry` holds them all."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from benchlib.inputs.config import CommonConfig


@dataclass(frozen=True)
class Benchmark:
    """One shipped benchmark notebook."""

    notebook: str
    benchmark: str
    config: type[CommonConfig]
    kind: str
    title: str
    description: str
    #: What a run does, in words ("training", "inference", ...).
    activity: str = ""
    #: Whether an iteration is an optimizer step (projections count training iterations).
    trains: bool = False
    #: Fields of its config class this benchmark does not take (a shared config's others').
    ignores: tuple[str, ...] = ()
    #: The folder holding its notebook (a site's benchmark: its own package's folder, where
    #: ``tools/make_notebooks.py`` writes it); None: benchlib's ``notebooks/``.
    folder: Path | None = None

    @property
    def fixed(self) -> dict[str, object]:
        """Parameters the notebook fixes (not the user): its ``benchmark``."""
        return {"benchmark": self.benchmark}

    @property
    def parameters(self) -> list[str]:
        """The config fields its notebook takes."""
        return [n for n in self.config.model_fields if n != "benchmark" and n not in self.ignores]
