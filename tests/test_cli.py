"""The command's shape: one module per subcommand, each listed once, ``benchlib --help`` listing
them all; executors as registered classes, none asked for by name elsewhere."""

from __future__ import annotations

import ast
import re

import pytest

from benchlib import cli
from benchlib.cli.base import Command

from .conftest import ROOT
from .test_layers import FEATURES


def test_help_lists_every_command_and_the_exit_codes(capsys):
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    shown = capsys.readouterr().out
    listed = re.findall(r"^    (\w+)\s", shown.split("commands:")[1], re.M)
    assert listed == [command.name for command in cli.COMMANDS]
    assert "exit status: 0 success; 1 " in " ".join(shown.split())


def test_each_command_module_holds_one_command_and_every_command_is_listed():
    """One module per command (under 150 lines; ``base`` and ``options`` hold what they share):
    in ``cli/``, or a feature folder's ``command.py`` (the feature owns its command); a
    command whose printing or one of whose options would not fit has it in a module beside it
    (``cli/<command>_<part>.py``, or the feature's: ``compare.output``, ``compare.until``), which
    holds no command."""
    folder = ROOT / "benchlib" / "cli"
    stems = {p.stem for p in folder.glob("*.py")}
    outputs = {s for s in stems if "_" in s.strip("_") and s.split("_", 1)[0] in stems}
    features = sorted((ROOT / "benchlib").glob("*/command.py"))
    assert {p.parent.name for p in features} >= {"diagnosis", "fleet", "history", "report",
                                                  "compare"}
    modules = {f"benchlib.cli.{stem}" for stem in stems - {"__init__", "base", "options"} - outputs} | \
        {f"benchlib.{p.parent.name}.command" for p in features}
    assert {command.__module__ for command in cli.COMMANDS} == modules
    beside = [ROOT / "benchlib" / feature / f"{module}.py" for feature, layers in FEATURES.items()
              for module, layer in layers.items() if layer == "cli" and module != "command"]
    for path in [*folder.glob("*.py"), *features, *beside]:
        tree = ast.parse(path.read_text())
        classes = [n for n in tree.body if isinstance(n, ast.ClassDef)
                   and any(ast.unparse(b) == "Command" for b in n.bases)]
        name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        assert len(classes) == (name in modules), path.name
        assert len(path.read_text().splitlines()) < 150, path.name
    assert set(Command.__subclasses__()) == set(cli.COMMANDS)


def test_every_executor_kind_has_its_registered_executor():
    from benchlib.execute.executor import EXECUTORS, executor_for
    from benchlib.inputs.executors import SETTINGS

    assert set(EXECUTORS) == set(SETTINGS)
    for kind, settings in SETTINGS.items():
        assert type(executor_for(settings())) is EXECUTORS[kind]


def test_no_code_outside_the_executors_asks_which_executor_it_has():
    asked = re.compile(r"""[!=]= *["']slurm["']|["']slurm["'] *[!=]=""")
    found = [f"{path.relative_to(ROOT)}:{n}" for path in (ROOT / "benchlib").rglob("*.py")
             for n, line in enumerate(path.read_text().splitlines(), 1) if asked.search(line)]
    assert found == []
