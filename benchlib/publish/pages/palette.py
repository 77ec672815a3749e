"""One colour per phase, precision, model, dataset and verdict, the same on every page.

Known values have fixed colours; any other value (a model not listed) gets a colour chosen by
a stable hash of its text, so it too keeps its colour from page to page and build to build.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

from benchlib.vocabulary import MatmulPrecision, Precision

#: Tableau-like colours (colour-blind friendly order), used for values without a fixed colour.
BASE = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1",
        "#ff9da7", "#9c755f", "#bab0ac", "#86bcb6", "#d37295", "#fabfd2", "#8cd17d")
FIXED: dict[str, dict[str, str]] = {
    "phase": {"data": "#e15759", "read": "#ff9da7", "h2d": "#f28e2b", "preprocess": "#edc948",
              "forward": "#4e79a7", "backward": "#76b7b2", "optimizer": "#59a14f",
              "d2h": "#b07aa1", "write": "#9c755f", "iteration": "#555555", "other": "#bab0ac"},
    "precision": {Precision.FP32: "#4e79a7", Precision.TF32: "#76b7b2", Precision.AMP_FP16: "#f28e2b",
                  Precision.AMP_BF16: "#e15759", MatmulPrecision.FP16: "#f28e2b",
                  MatmulPrecision.BF16: "#e15759"},
    "dataset": {"synthetic": "#4e79a7", "real": "#f28e2b"},
    "verdict": {"compute-bound": "#59a14f", "data-bound": "#e15759", "throttled": "#b07aa1"},
    "source": {"this campaign": "#e15759", "reference": "#4e79a7"},
    "model": {"resnet50": "#4e79a7", "resnet18": "#76b7b2", "resnet101": "#59a14f",
              "resnet152": "#8cd17d", "inception_v3": "#b07aa1", "vgg16": "#9c755f",
              "unet3d": "#f28e2b", "vit_b_16": "#edc948"},
}
FLAGGED = "crimson"  #: markers of flagged runs
IDEAL = "black"  #: ideal-scaling and reference lines


def colour(kind: str, value: object) -> str:
    """The colour of ``value`` of ``kind`` (phase, precision, model, dataset, verdict, ...)."""
    text = str(value)
    fixed = FIXED.get(kind, {})
    if text in fixed:
        return fixed[text]
    digest = hashlib.sha256(f"{kind}:{text}".encode()).digest()
    return BASE[digest[0] % len(BASE)]


def mapping(kind: str, values: Iterable[object]) -> dict[str, str]:
    """``{value: colour}`` for seaborn's ``palette=`` (keys as text, the labels plots use);
    values without a fixed colour that would collide get the next free one in order."""
    out: dict[str, str] = {}
    used: set[str] = set()
    for value in values:
        text = str(value)
        if text in out:
            continue
        chosen = colour(kind, text)
        if chosen in used and text not in FIXED.get(kind, {}):
            chosen = next((c for c in BASE if c not in used), chosen)
        out[text] = chosen
        used.add(chosen)
    return out
