"""Where a sweep's points run: one registered class per executor kind (``local``, ``slurm``),
each with one :meth:`Executor.submit_and_wait`, which ``benchlib sweep`` and ``benchlib
diagnose`` both call. The params file's ``executor`` section gives the kind and its settings
(:mod:`benchlib.inputs.executors`); :func:`executor_for` gives the executor that runs them."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

from benchlib.execute import campaign
from benchlib.execute.slurm_sweep import submit_sweep
from benchlib.execute.sweep import PointOutcome, run_sweep, summarize_outcomes
from benchlib.inputs.executors import SETTINGS, LocalExecutor, Settings, SlurmExecutor
from benchlib.inputs.params import Sweep
from benchlib.vocabulary import PointState

Say = Callable[[str], None]

#: Each executor class by its kind (the settings' ``kind``), filled by :func:`register`.
EXECUTORS: dict[str, type[Executor]] = {}


def register(cls: type[Executor]) -> type[Executor]:
    """Class decorator: make ``cls`` the executor of its settings class's kind."""
    kind = cls.settings_class.model_fields["kind"].default
    if SETTINGS.get(kind) is not cls.settings_class:
        raise TypeError(f"{cls.__name__}: settings of kind {kind!r} are not in SETTINGS")
    EXECUTORS[kind] = cls
    return cls


def executor_for(settings: Settings) -> Executor:
    """The executor that runs points with ``settings`` (a params file's ``executor``)."""
    return EXECUTORS[settings.kind](settings)


def _quiet(text: str) -> None:
    """A ``say`` that says nothing."""


class Executor(ABC):
    """Runs a sweep's points somewhere and waits for them."""

    settings_class: ClassVar[type[Settings]]

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    @abstractmethod
    def check_runnable(self, sweep: Sweep, outputs: Path, force: bool = False,
                       retry_failed: bool = False) -> None:
        """InputError (exit 2, nothing run or written) when this machine cannot run the points
        of ``sweep`` that :meth:`submit_and_wait` would run."""

    @abstractmethod
    def submit_and_wait(self, sweep: Sweep, outputs: Path, *, force: bool = False,
                        retry_failed: bool = False, wait: bool = True, progress: bool = True,
                        say: Say | None = print,
                        on_point: Callable[[PointOutcome], None] | None = None,
                        ) -> list[PointState] | None:
        """Run every point of ``sweep`` not done yet (``force``: all; ``retry_failed``: failed
        ones too) into ``outputs/<campaign>`` and, with ``wait``, wait for them; ``say`` gets
        what happened in a few lines. Returns each point's state, None when not waited for."""


@register
class Local(Executor):
    """The points one after another in this process, each through papermill."""

    settings_class = LocalExecutor

    def check_runnable(self, sweep: Sweep, outputs: Path, force: bool = False,
                       retry_failed: bool = False) -> None:
        """Points asking for device cuda where torch sees no CUDA device are refused."""
        refuse_cuda_without_a_gpu(sweep, outputs, force, retry_failed)

    def submit_and_wait(self, sweep: Sweep, outputs: Path, *, force: bool = False,
                        retry_failed: bool = False, wait: bool = True, progress: bool = True,
                        say: Say | None = print,
                        on_point: Callable[[PointOutcome], None] | None = None,
                        ) -> list[PointState]:
        """Run the points here (always waited for); a progress bar unless ``on_point`` reports
        each point as it finishes."""
        say = say or _quiet
        self.check_runnable(sweep, outputs, force, retry_failed)
        outcomes = run_sweep(sweep, outputs, force=force, retry_failed=retry_failed,
                             progress=progress and on_point is None, on_point=on_point)
        say(summarize_outcomes(outcomes))
        for outcome in outcomes:
            if outcome.status == PointState.FAILED:
                say(f"  failed {outcome.point.name}: {outcome.error}")
        say(f"executed notebooks and records in {outputs / sweep.campaign}")
        return [outcome.status for outcome in outcomes]


def refuse_cuda_without_a_gpu(sweep: Sweep, outputs: Path, force: bool,
                              retry_failed: bool) -> None:
    """InputError (exit 2, nothing run or written) when points this machine would run ask for
    device ``cuda`` and torch sees no CUDA device: each would fail the same way, one after
    another. A Slurm sweep is not asked (the login node needs no GPU)."""
    from benchlib.errors import InputError
    from benchlib.execute.sweep import point_status, skip_reason

    asking = [p for p in sweep.points if p.parameters.get("device") == "cuda"
              and not skip_reason(point_status(outputs / sweep.campaign / f"{p.name}.ipynb"),
                                  force, retry_failed)]
    if not asking:
        return
    import torch

    if not torch.cuda.is_available():
        raise InputError(
            f"{len(asking)} of the {len(sweep.points)} points ask for device cuda, and torch "
            "sees no CUDA device on this machine: nothing was run. Run it on a GPU node (a "
            "Slurm job: benchlib sweep --executor slurm), or try it here with device cpu (a "
            "params file of its own; params/demo.yaml is the CPU one)")


def refuse_without_slurm() -> None:
    """InputError (exit 2, nothing written) when this machine has no Slurm to submit to."""
    import shutil

    from benchlib.errors import InputError

    if shutil.which("sbatch") is None:
        raise InputError("executor slurm: no sbatch on this machine's PATH, so no Slurm "
                         "cluster to submit to: nothing was submitted or written. Run "
                         "it on the cluster's login node, or here (executor local)")


@register
class Slurm(Executor):
    """The points as Slurm job arrays through submitit; waiting polls the scheduler."""

    settings_class = SlurmExecutor

    def check_runnable(self, sweep: Sweep, outputs: Path, force: bool = False,
                       retry_failed: bool = False) -> None:
        """No sbatch here: no Slurm cluster to submit to (the login node needs no GPU)."""
        refuse_without_slurm()

    def submit_and_wait(self, sweep: Sweep, outputs: Path, *, force: bool = False,
                        retry_failed: bool = False, wait: bool = True, progress: bool = True,
                        say: Say | None = print,
                        on_point: Callable[[PointOutcome], None] | None = None,
                        ) -> list[PointState] | None:
        """Submit the points (RequestTooLarge or SubmissionError before anything is submitted),
        then with ``wait`` poll until every one has finished and say the status table;
        ``on_point`` is not called (the jobs run elsewhere)."""
        say = say or _quiet
        self.check_runnable(sweep, outputs, force, retry_failed)
        campaign_dir = (outputs / sweep.campaign).resolve()
        submission = submit_sweep(sweep, self.settings, outputs, force=force,
                                  retry_failed=retry_failed)
        skipped: dict[str, int] = {}
        for reason in submission.skipped.values():
            skipped[reason] = skipped.get(reason, 0) + 1
        left = "; ".join(f"{n} {reason}" for reason, n in skipped.items())
        arrays = (f"job array{'s' if len(submission.arrays) > 1 else ''} "
                  f"{', '.join(submission.arrays)}")
        partition = self.settings.partition
        total = len(submission.points)
        say(f"submitted {len(submission.jobs)} of {total} point{'' if total == 1 else 's'}"
            + (f" as {arrays}" if submission.arrays else "")
            + (f" to partition {partition}" if partition and submission.arrays else "")
            + (f"; left alone: {left}" if left else ""))
        if not wait:
            say(f"follow with: benchlib status {campaign_dir}")
            return None
        table = campaign.wait(campaign_dir, [p.name for p in submission.points],
                         poll_s=self.settings.poll_s, progress=progress)
        say(campaign.format_status(campaign_dir, table))
        return [point.status for point in table]

