"""The probe notebooks' sections (``allreduce``, ``node_probe``): run the probe, show its
table and curves, publish its record."""

from __future__ import annotations

from benchlib.kinds.probes.config import AllReduceConfig, NodeProbeConfig
from benchlib.kinds.record import make_record
from benchlib.publish.benchmark_notebook.layouts import Layout, register_layout
from benchlib.publish.benchmark_notebook.run import ENVIRONMENT, environment, publish
from benchlib.publish.cells import Call, show
from benchlib.publish.pages import catalog as pages_catalog
from benchlib.publish.pages import plots, present

ALLREDUCE_ABOUT = (
    "# All-reduce probe: bus bandwidth over message sizes\n\nThe collective that data-parallel "
    "training waits for, timed as nccl-tests times it: for each message size (doubling from "
    "`min_bytes` to `max_bytes`), `warmup` untimed then `iterations` timed all-reduces; the time "
    "is the mean over ranks. `algbw` = bytes / time, `busbw` = algbw x 2(n-1)/n, the rate each "
    "link sustains. NCCL on GPUs, gloo on CPUs; at least 2 devices, through torchrun.")
NODE_ABOUT = (
    "# Node probe: what this node can do at most\n\nMatrix-multiply TFLOP/s per precision "
    "(one square size, and the best over a sweep of shapes: the achievable matmul), device "
    "memory bandwidth (a copy and STREAM's triad), host-to-device and device-to-host bandwidth "
    "(pinned and pageable), read from the data directory + JPEG decode + transform images/s "
    "against the number of loader workers (the files read as a loader reads them), decode + "
    "transform alone from the images read into memory first, the data "
    "directory's read throughput, and the all-reduce bus bandwidth where several GPUs exist. "
    f"`{pages_catalog.NODE.name}` puts these ceilings beside datasheet figures and uses them "
    "to say what held each benchmark run back.")


def launch(config: AllReduceConfig | NodeProbeConfig) -> object:
    """Run the probe and show its table (one row per message size, or per figure)."""
    from benchlib.run import launch as launcher

    result = launcher.run(config)
    show(present.table(result.table, "The probe's figures, one per row", keep=tuple(result.table),
                       missing_reason="not measured on this node (no GPU, or skipped)"))
    return result


def bandwidth(config: AllReduceConfig, result: object) -> dict[str, object]:
    """The all-reduce probe's record (not yet published); its bus bandwidth curve shown."""
    made = make_record(config, result)
    configuration = f"{made['gpu']} x {result.num_devices}"
    plots.show(plots.busbw_plot(result.table.assign(configuration=configuration)))
    return made


def loader(result: object) -> None:
    """Images/s the loader delivered against its worker processes, when decode was probed."""
    if len(result.decode):
        plots.show(plots.decode_plot(result.decode))
    else:
        print("no data_dir: decode not probed")


def node_allreduce(config: NodeProbeConfig) -> dict[str, object] | None:
    """The all-reduce probe over the node's GPUs when there are two or more: its bus
    bandwidth curve shown, its record returned (None when not probed)."""
    from benchlib.kinds.probes import launch as probe_runs

    allreduce, made = probe_runs.allreduce_for_node(config)
    if allreduce is None:
        print("fewer than 2 devices: all-reduce not probed")
    else:
        configuration = f"{allreduce.num_devices} devices"
        plots.show(plots.busbw_plot(allreduce.table.assign(configuration=configuration)))
    return made


def node_record(config: NodeProbeConfig, result: object,
                allreduce: dict[str, object] | None) -> dict[str, object]:
    """The node probe's record, with the all-reduce figures, published in the notebook."""
    made = make_record(config, result, allreduce=allreduce)
    publish(made)
    return made


#: The all-reduce notebook's cells after its configuration cell.
ALLREDUCE = (
    "## Run",
    Call(launch, "config", "result"),
    Call(bandwidth, "config, result", "record"),
    *ENVIRONMENT,
    "## Result record",
    Call(publish, "record"),
)
#: The node probe notebook's cells after its configuration cell.
NODE = (
    "## Ceilings",
    Call(launch, "config", "result"),
    "## Loader capacity\n\nImages/s the training loader delivers (decode, RandomResizedCrop, "
    "flip) against its worker processes.",
    Call(loader, "result"),
    "## All-reduce\n\nThe all-reduce probe over the node's GPUs (torchrun, NCCL), when there are "
    "two or more.",
    Call(node_allreduce, "config", "allreduce_record"),
    "## Environment",
    Call(environment, "result"),
    "## Result record",
    Call(node_record, "config, result, allreduce_record", "record"),
)


ALLREDUCE_LAYOUT = register_layout("allreduce", Layout(ALLREDUCE, about=ALLREDUCE_ABOUT))
NODE_LAYOUT = register_layout("node_probe", Layout(NODE, about=NODE_ABOUT))
