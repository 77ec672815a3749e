"""A kind folder that breaks the discovery's contract is named, never left out in silence: a
folder without ``__init__.py``, a config without ``VARIANTS``, a command module without
``add_data_arguments``."""

from __future__ import annotations

import pytest

from benchlib import discovery


@pytest.fixture
def kinds_folder(tmp_path, monkeypatch):
    monkeypatch.setattr(discovery, "KINDS_FOLDER", tmp_path)
    return tmp_path


def test_a_folder_without_init_is_named(kinds_folder):
    (kinds_folder / "axpy").mkdir()
    (kinds_folder / "axpy" / "config.py").write_text("VARIANTS = ()\n")
    (kinds_folder / "__pycache__").mkdir()  # not a kind: no modules
    with pytest.raises(ImportError, match=r"axpy: a kind folder needs an __init__\.py"):
        discovery.kind_folders()


@pytest.mark.parametrize(("role", "needs"), [("config", "VARIANTS"),
                                             ("command", "add_data_arguments")])
def test_a_role_module_without_what_its_registry_reads_is_named(role, needs, monkeypatch):
    import types

    module = types.ModuleType(f"benchlib.kinds.fake.{role}")
    module.__file__ = f"benchlib/kinds/fake/{role}.py"
    monkeypatch.setattr(discovery, "kind_folders", lambda: ["fake"])
    monkeypatch.setattr(discovery, "import_module", lambda name: module)
    monkeypatch.setattr(discovery.Path, "is_file", lambda self: True)
    with pytest.raises(ImportError, match=rf"fake/{role}\.py: a kind.s {role} module defines {needs}"):
        discovery.role_modules(role)


def test_the_shipped_kinds_keep_the_contract():
    shipped = ["classification", "language_model", "probes", "unet3d"]
    assert [k for k in discovery.kind_folders() if k in shipped] == shipped  # a new one may join
    assert len(discovery.role_modules("config")) == len(discovery.kind_folders())
    assert [m.__name__ for m in discovery.role_modules("command")] == ["benchlib.kinds.unet3d.command"]
