""":func:`diagnose`: ``benchlib diagnose`` from Python (``benchlib.diagnose``): the ladder planned
and run as one campaign (:mod:`benchlib.diagnosis.ladder`), analysed
(:mod:`benchlib.diagnosis.analysis`) and given its report page."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from benchlib.diagnosis.analysis import answer_text, load_diagnosis, recommendation
from benchlib.diagnosis.data_check import check_data_dir
from benchlib.diagnosis.ladder import run
from benchlib.diagnosis.rounds import next_round
from benchlib.publish.pages.catalog import NODE
from benchlib.records.campaign_reader import CampaignReader
from benchlib.report.build import DIAGNOSE, build_report

if TYPE_CHECKING:
    from benchlib.diagnosis.analysis import Diagnosis
    from benchlib.inputs.executors import Settings


@dataclass
class Result:
    """What :func:`diagnose` returns: the diagnosis, its campaign folder and its page."""

    diagnosis: Diagnosis
    campaign_dir: Path
    page: Path | None

    def __str__(self) -> str:
        return answer_text(self.diagnosis)

    def __repr__(self) -> str:
        return f"<diagnose Result {self.campaign_dir}: {self.diagnosis!r}>"


def diagnose(model: str = "resnet50", data_dir: str | Path = "", outputs: str | Path = "outputs",
             executor: Settings | None = None, report: bool = True,
             say: Callable[[str], None] | None = print, **options: object) -> Result:
    """Plan, run (here, or with ``executor`` the settings of another executor, e.g.
    :class:`~benchlib.inputs.executors.SlurmExecutor`) and analyse the ladder for ``model`` on
    ``data_dir``; ``options`` are :class:`benchlib.diagnosis.plan.DiagnoseRequest` fields
    (``num_workers``, ``precision``, ``budget_s``, ...). With ``report``, builds the campaign's
    report page. Relative paths are taken from the current folder."""
    check_data_dir(data_dir)
    readers: dict[Path, CampaignReader] = {}  # each round parses only the runs new since the last

    def reader(campaign: Path) -> CampaignReader:
        return readers.setdefault(Path(campaign).resolve(), CampaignReader(campaign))

    def choose(campaign: Path, runs_left: int) -> list[str]:
        found = load_diagnosis(campaign, reader(campaign))
        return next_round(found.steps, found.workers, found.plan, runs_left, found.gpu_decode)

    campaign_dir = run(model, data_dir, outputs, executor, say=say, choose=choose, **options)
    found = load_diagnosis(campaign_dir, reader(campaign_dir))
    page = None
    if report:
        index = build_report(campaign_dir, summaries=(DIAGNOSE, NODE.name), progress=False,
                             diagnosis=recommendation(found))  # the diagnosis made once here
        page = index.parent / f"{DIAGNOSE}.html"
    return Result(found, campaign_dir, page)
