"""The 3D U-Net notebooks' cells: the network's shapes first, then the timed loop's sections,
its figures in lab units beside the record (``unet3d_train``, ``unet3d_predict``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from benchlib.kinds.record import make_record
from benchlib.publish.benchmark_notebook import run
from benchlib.publish.benchmark_notebook.layouts import Layout, register_layout
from benchlib.publish.cells import Call, show
from benchlib.publish.pages import plots

if TYPE_CHECKING:
    from benchlib.kinds.unet3d.config import UNet3DConfig
    from benchlib.workloads.result import RunResult

#: What the prediction's phase breakdown adds: its reader and writer threads.
PREDICT_PHASES = (" `read` and `write` are the time the loop waited for the reader threads and "
                  "the writer thread; their own busy time is in the record (`result_read_busy_s`, "
                  "`result_write_busy_s`).")


def network(config: UNet3DConfig) -> None:
    """The 3D U-Net's shapes, parameters and receptive field."""
    from benchlib.kinds.unet3d import workload

    show(plots.as_table(workload.network_summary(config)))


def lab_units(config: UNet3DConfig, result: RunResult) -> dict[str, object]:
    """The run's result record (not yet published), its figures in lab units shown."""
    from benchlib.analysis.lab_units import lab_units as lab_units_of

    made = make_record(config, result)
    show(plots.as_table(lab_units_of(made)))
    return made


def unet_cells(phases_note: str = "") -> tuple:
    """A 3D U-Net notebook's cells after its configuration cell (``phases_note`` appended to
    the phase breakdown's explanation)."""
    return (
        Call(network, "config"),
        run.RUN,
        Call(run.launch, "config", "result"),
        *run.SHARED,
        run.PHASES + phases_note,
        Call(run.phases, "result"),
        f"## Lab units and result record\n\n{run.RECORD}",
        Call(lab_units, "config, result", "record"),
        Call(run.publish, "record"),
    )


TRAIN = register_layout("unet3d_train", Layout(unet_cells(""), "params/unet3d.yaml",
                                               "volume data/em.h5", "## Configuration and network"))
PREDICT = register_layout("unet3d_predict", Layout(unet_cells(PREDICT_PHASES), "params/unet3d.yaml",
                                                   "volume data/em.h5",
                                                   "## Configuration and network"))
