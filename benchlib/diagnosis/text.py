"""How ``benchlib diagnose`` writes a change of speed and its 95 % interval, the same way on the
console, the plot, the page's tables and the paragraph: ``-57% (-59% to -55%)``; a change
beyond +999 % as ``>+999%``; an interval spanning more than :data:`WIDE_FACTOR` times (the
repeats disagree) in words instead of numbers. Also a step of the waterfall as text
(:func:`loss_text`, :func:`steps_frame`)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import pandas as pd

#: The unit of every speed a diagnosis gives.
UNIT = "images/s"
#: An interval whose high end is more than this many times its low end says nothing.
WIDE_FACTOR = 10.0
#: What a too-wide interval is, and what to do about it.
UNKNOWN = ("95 % interval unknown: the repeats disagree (run again on an idle node, with a "
           "larger --budget)")


def change(factor: float) -> str:
    """A speed ``factor`` (new over old) as a change: ``-57%``, ``+12%``, beyond +999 % as
    ``>+999%``; ``?`` when not a number."""
    if not math.isfinite(factor):
        return "?"
    return ">+999%" if factor - 1 > 9.99 else f"{factor - 1:+.0%}"


def is_wide(low: float | None, high: float | None) -> bool:
    """Whether the interval ``low``-``high`` of a factor says nothing: missing, not positive,
    or spanning more than :data:`WIDE_FACTOR` times."""
    if low is None or high is None or not (math.isfinite(low) and math.isfinite(high)):
        return True
    return low <= 0 or high / low > WIDE_FACTOR


def change_text(factor: float, low: float | None = None, high: float | None = None) -> str:
    """``-57% (-59% to -55%)``: a speed factor (new over old) as a change with its 95 %
    interval; the interval in words when too wide (:func:`is_wide`); without an interval when
    ``low`` and ``high`` are None."""
    text = change(factor)
    if low is None and high is None:
        return text
    if is_wide(low, high):
        return f"{text} ({UNKNOWN})"
    return f"{text} ({change(float(low))} to {change(float(high))})"  # type: ignore[arg-type]


def step_change(row: Mapping[str, Any]) -> str:
    """A waterfall step's change of speed (after over before) with its interval: the step's
    ``ratio``, ``low`` and ``high`` are before over after, so the change is their inverse; no
    interval when ``known`` is false."""
    inverse = [1 / float(row[k]) if float(row[k]) > 0 else math.nan
               for k in ("ratio", "high", "low")]
    return change_text(*inverse) if row["known"] else change(inverse[0])


def switch_change(row: Mapping[str, Any]) -> str:
    """What switching to the faster side of a comparison measured: its ``ratio`` (faster over
    yours) as a change with its ``low``-``high`` interval."""
    return change_text(float(row["ratio"]), float(row["low"]), float(row["high"]))


def worker_change(row: Mapping[str, Any]) -> str:
    """A worker count's speed against the user's count, with its interval (``-`` for the
    user's own count)."""
    return switch_change(row) if pd.notna(row["ratio"]) else "-"


def loss_text(row: Mapping[str, Any]) -> str:
    """``-54.5 images/s, -57% (-59% to -55%)``: a step's change of speed and of the speed
    before it, with the 95 % interval (:func:`step_change`); what it is when not a clear
    loss."""
    text = f"{-float(row['loss']):+,.1f} {UNIT}, {step_change(row)}"
    if row["verdict"] == "unreliable":
        return f"unreliable ({row['unreliable'].split(':')[0]}): {text}"
    if row["verdict"] in ("unknown", "no significant change", "small loss", "cannot tell"):
        doubt = row.get("doubt") or ""
        return f"{text}, {row['verdict']}" + (f" ({doubt})" if doubt else "")
    return text


def steps_frame(steps: pd.DataFrame) -> pd.DataFrame:
    """The waterfall's ``steps`` as text columns for a table: step, what runs after it, speeds,
    loss, the change with its interval (as on the console and the plot), runs and verdict."""
    rows = []
    for _, row in steps.iterrows():
        rows.append({"step": row["step"], "then": row["label"],
                     "before": f"{row['upper_speed']:,.1f}", "after": f"{row['lower_speed']:,.1f}",
                     "loss": f"{row['loss']:,.1f}",
                     "change (95 % interval)": step_change(row),
                     "runs": f"{row['runs_upper']} + {row['runs_lower']}",
                     "verdict": row["verdict"] + (f": {row['unreliable']}" if row["unreliable"]
                                                  else "")})
    return pd.DataFrame(rows)


#: What to do about a step judged on disturbed runs: a finished ladder's own command runs nothing.
RERUN = ("run the ladder again on an idle node (an exclusive allocation; nothing else running): "
         "the same benchlib diagnose options with a new --campaign NAME, as the same command "
         "finds this ladder finished and runs nothing")


#: Said where the user's setting measured faster than the fastest device rung, which should
#: be the best this node does for the model: the runs' noise, not a gain.
ABOVE_BEST = ("faster than the rung that should be the fastest here: the runs were disturbed or "
              "their repeats disagree (run again on an idle node)")


#: The user's speed over the best rung's above which the best rung was not the best (noise).
ABOVE_BEST_RATIO = 1.005


def against_best(ratio: float, best: str) -> str:
    """``0.43x its best here (BEST)``, or where the setting measured faster than the best rung,
    the ratio to that rung with :data:`ABOVE_BEST` instead of calling the slower rung the best."""
    if ratio <= ABOVE_BEST_RATIO:
        return f"{ratio:.2f}x its best here ({best})"
    return f"{ratio:.2f}x the speed with data made on the device ({best}), {ABOVE_BEST}"


#: What each step's loss is, in words.
WHAT = {"precision": "the precision", "host copy": "the host copy (batches made by the loader "
        "workers, collated and copied to the device)", "decode": "JPEG decode (with crop and "
        "flip) in the loader workers", "filesystem": "reading the files from the file system"}
#: What to change for each loss when more workers did not help.
CHANGE = {
    "decode": ("decoding limits the speed at every worker count tried: store smaller or "
               "pre-resized images, or use a node with more cores per device"),
    "host copy": ("making and copying batches on the host limits the speed: more cores per "
                  "device, or batches made on the device"),
    "filesystem": ("read from faster storage: node-local disk or memory (/dev/shm), or pack the "
                   "files into larger ones (WebDataset, FFCV)"),
}
