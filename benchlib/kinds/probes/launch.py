"""Probes that start runs of their own: the node probe's all-reduce part, run through torchrun
(the run layer), so that the node probe's workload never imports the launcher."""

from __future__ import annotations

from benchlib.kinds.probes.config import AllReduceConfig, NodeProbeConfig


def allreduce_for_node(config: NodeProbeConfig, visible_gpus: int | None = None):
    """The all-reduce probe over ``config.allreduce_count`` devices through torchrun: its
    result and record, or (None, None) when fewer than two devices take part."""
    import torch

    from benchlib.kinds.record import make_record
    from benchlib.run import launch

    visible = torch.cuda.device_count() if visible_gpus is None else visible_gpus
    devices = config.allreduce_count(visible)
    if not devices:
        return None, None
    allreduce = AllReduceConfig(campaign=config.campaign, cluster=config.cluster,
                                device=config.device, num_devices=devices, seed=config.seed,
                                hang_timeout_s=config.hang_timeout_s)
    result = launch.run(allreduce)
    return result, make_record(allreduce, result)
