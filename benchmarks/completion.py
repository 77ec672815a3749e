"""Tab completion on the facade, as JupyterLab asks for it: a real kernel's ``complete_request``.

Starts a kernel (the venv's ``python3`` kernel spec), runs ``import benchlib``, then times
``complete_request`` on ``benchlib.`` and on ``benchlib.analysis.`` (each in a fresh kernel, so
nothing is imported by an earlier completion), and counts the modules the completion imported
and the matches whose type Jedi could not tell (``<unknown>``). JupyterLab gives up on a
completion after 1 s; the goal is 0.3 s.

Usage: python benchmarks/completion.py [--repeats 3] [--json F]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

from jupyter_client.manager import start_new_kernel

CASES = ("benchlib.", "benchlib.analysis.")
MODULES = "import sys; print(len(sys.modules))"


def _run(client, code: str) -> str:
    """Run ``code`` in the kernel; its stdout."""
    out: list[str] = []
    client.execute_interactive(code, timeout=120, output_hook=lambda m: out.append(
        m["content"].get("text", "")) if m["msg_type"] == "stream" else None)
    return "".join(out).strip()


def one(case: str) -> dict[str, object]:
    """One completion of ``case`` in a fresh kernel that has run ``import benchlib``."""
    manager, client = start_new_kernel(kernel_name="python3")
    try:
        _run(client, "import benchlib")
        before = int(_run(client, MODULES))
        started = time.perf_counter()
        reply = client.complete(case, len(case), reply=True, timeout=60)
        seconds = time.perf_counter() - started
        after = int(_run(client, MODULES))
        content = reply["content"]
        types = [m.get("type") for m in content.get("metadata", {}).get(
            "_jupyter_types_experimental", [])]
        return {"case": case, "seconds": seconds, "matches": content["matches"],
                "unknown": sum(t == "<unknown>" for t in types), "modules_imported": after - before}
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", default="")
    args = parser.parse_args(argv)
    results = []
    for case in CASES:
        runs = [one(case) for _ in range(args.repeats)]
        seconds = [r["seconds"] for r in runs]
        last = runs[-1]
        results.append({"case": case, "median_s": statistics.median(seconds),
                        "max_s": max(seconds), "matches": last["matches"],
                        "unknown": last["unknown"], "modules_imported": last["modules_imported"]})
        print(f"{case:22s} median {statistics.median(seconds):.3f} s (max {max(seconds):.3f} s, "
              f"{args.repeats} kernels), {len(last['matches'])} matches, {last['unknown']} "
              f"<unknown>, {last['modules_imported']} modules imported: "
              f"{', '.join(last['matches'])}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(results, handle, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
