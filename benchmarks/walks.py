"""Walks through the code: follow one value from a command's entry through the calls, as a
reviewer reading the code would, and count where it goes.

Each command runs in this process under a profiler (``sys.setprofile``). A *stay* is a benchlib
function called with the value among its arguments (the campaign's unique name, or a path or
object holding it: a ``Sweep``, a plan, a campaign folder); *modules* are the modules of those
functions, *folders* their packages (``benchlib.records``, ``benchlib.diagnosis``); a *climb*
is such a call from a module into a module of a higher layer (the layers as that checkout's
``tests/test_layers.py`` defines them, feature folders included), and a *return up* a stay, in
the order they are first reached, in a higher layer than the stay before it (the reader going
back up the layers). Three walks: ``benchlib sweep`` of one point, ``benchlib report`` of that
campaign, and ``benchlib diagnose`` of a finished ladder (run once first, untraced, so the walk
is the plan, the resume, the analysis and the report page, not the notebooks' kernels).

    python benchmarks/walks.py            # this checkout
    python benchmarks/walks.py /tmp/old   # an earlier one (a git worktree)
"""

from __future__ import annotations

import contextlib
import importlib
import io
import itertools
import os
import sys
import tempfile
from pathlib import Path, PurePath

TREE = Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent
sys.path[:0] = [str(TREE)]
TOKEN = "walkzz9"


def _layers():
    """That checkout's layer of a module name, and the layers' order (its tests/test_layers.py)."""
    module = importlib.import_module("tests.test_layers")
    return module._layer, module.LAYERS


LAYER_OF, ORDER = _layers()


def _carries(value: object, depth: int = 0) -> bool:
    """Whether ``value`` is or holds the walk's value."""
    if isinstance(value, str):
        return TOKEN in value
    if isinstance(value, PurePath):
        return TOKEN in str(value)
    if depth == 0 and not isinstance(value, (int, float, bool, type(None), bytes)):
        for name in ("campaign", "name", "campaign_dir"):
            try:
                inner = getattr(value, name, None)
            except Exception:  # a property that fails is not the value
                continue
            if inner is not None and _carries(inner, 1):
                return True
    return False


def _module(frame) -> str | None:
    path = Path(frame.f_code.co_filename)
    try:
        relative = path.resolve().relative_to(TREE)
    except ValueError:
        return None
    if relative.parts[0] != "benchlib":
        return None
    return ".".join(relative.with_suffix("").parts).removesuffix(".__init__")


def walk(run) -> dict[str, int]:
    """Run ``run()`` under the profiler; the walk's stays, modules and climbs."""
    stays: dict[str, str] = {}
    climbs = 0

    def profile(frame, event, arg):
        nonlocal climbs
        if event != "call":
            return
        module = _module(frame)
        if module is None:
            return
        code = frame.f_code
        names = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
        if not any(_carries(frame.f_locals.get(n)) for n in names):
            return
        key = f"{module}:{code.co_qualname}"
        caller = frame.f_back
        while caller is not None and _module(caller) is None:
            caller = caller.f_back
        if key not in stays and caller is not None:
            above = _module(caller)
            if ORDER.index(LAYER_OF(module)) > ORDER.index(LAYER_OF(above)):
                climbs += 1
        stays.setdefault(key, module)

    sys.setprofile(profile)
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            run()
    finally:
        sys.setprofile(None)
    layers = [ORDER.index(LAYER_OF(m)) for m in stays.values()]
    ups = sum(b > a for a, b in itertools.pairwise(layers))
    folders = {m.rsplit(".", 1)[0] for m in stays.values()}
    if os.environ.get("WALKS_VERBOSE"):
        print("\n".join(stays), file=sys.__stderr__)
    return {"stays": len(stays), "modules": len(set(stays.values())), "folders": len(folders),
            "climbs": climbs, "returns up": ups}


def main() -> None:
    from benchlib.cli import main as benchlib

    work = Path(tempfile.mkdtemp(prefix="walks-"))
    os.chdir(work)
    with contextlib.redirect_stdout(io.StringIO()):
        benchlib(["data", "imagefolder", "data/imgs", "--classes", "2", "--images", "4",
                  "--size", "40"])
    Path("walk.yaml").write_text(
        f"campaign: {TOKEN}\nnotebook: inference\nbase: {{model: resnet18, image_size: 32, "
        "num_classes: 2, batch_size: 2, iterations: 2, warmup: 1, num_workers: 0, device: cpu, "
        "dataset: real, data_dir: data/imgs}\n")
    found = {"sweep": walk(lambda: benchlib(["sweep", "walk.yaml", "--quiet"])),
             "report": walk(lambda: benchlib(["report", f"outputs/{TOKEN}"]))}
    args = ["diagnose", "--model", "resnet18", "--data-dir", "data/imgs", "--device", "cpu",
            "--image-size", "32", "--batch-size", "2", "--repeats", "2", "--budget", "120",
            "--campaign", f"{TOKEN}-d"]
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        benchlib(args)  # the ladder run once, untraced
    found["diagnose"] = walk(lambda: benchlib(args))
    print(f"{'walk':10} {'stays':>6} {'modules':>8} {'folders':>8} {'climbs':>7} {'returns up':>11}"
          f"   ({TREE})")
    for name, c in found.items():
        print(f"{name:10} {c['stays']:>6} {c['modules']:>8} {c['folders']:>8} {c['climbs']:>7} "
              f"{c['returns up']:>11}")


if __name__ == "__main__":
    main()
