"""Model FLOPs per sample, counted by torch.utils.flop_counter on the meta device.

FlopCounterMode counts the matrix multiplies and convolutions (2 flops per multiply-add) of one
forward pass, and of the backward pass when asked; on the meta device nothing is computed or
allocated, so counting ResNet-50 costs a fraction of a second on any machine. These are the
FLOPs of model FLOPs utilization (MFU): the work the model needs, whatever the kernels do.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

log = logging.getLogger(__name__)
COUNT_BATCH = 2  #: samples in the counted batch (batch norm in training mode needs more than 1)


def _total(output: object) -> torch.Tensor:
    """A scalar from a model output (tensor, or tuple of tensors such as aux logits)."""
    if isinstance(output, torch.Tensor):
        return output.float().sum()
    parts = [o.float().sum() for o in output if isinstance(o, torch.Tensor)]  # type: ignore[union-attr]
    return sum(parts[1:], parts[0])


def count_flops(build: Callable[[], nn.Module], input_shape: tuple[int, ...], train: bool) -> int:
    """FLOPs of one pass of ``build()``'s model over a batch of ``input_shape`` (forward, and
    backward when ``train``), on the meta device."""
    with torch.device("meta"):
        model = build().train(train)
        inputs = torch.empty(input_shape)
    with FlopCounterMode(display=False) as counter:
        if train:
            _total(model(inputs)).backward()
        else:
            with torch.no_grad():
                model(inputs)
    return int(counter.get_total_flops())


def flops_columns(per_sample: Callable[[], float | None],
                  throughput: float | None) -> dict[str, float | None]:
    """``flops_per_sample`` (``per_sample()``: a kind's FLOPs per counted sample) and
    ``achieved_tflops`` (that times the whole run's samples per second) for a record; no
    columns when the kind has no model FLOPs, empty values with a warning when the model
    cannot be counted on the meta device."""
    try:
        found = per_sample()
    except Exception as error:  # a model with an op the meta device lacks: no MFU, no failure
        log.warning("FLOPs not counted: %s: %s", type(error).__name__, error)
        return {"flops_per_sample": None, "achieved_tflops": None}
    if found is None:
        return {}
    achieved = found * throughput / 1e12 if throughput else None
    return {"flops_per_sample": found, "achieved_tflops": achieved}
