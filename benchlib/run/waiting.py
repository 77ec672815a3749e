"""How long a launched rank may wait: for its next iteration before the launcher calls the
launch hung (with the grace of the first iteration, and of torch.compile's), and in a
collective for its peers (the process group's timeout, longer than the launcher's)."""

from __future__ import annotations

from benchlib.inputs.config import CommonConfig

STARTUP_GRACE_S = 60.0  #: extra time a rank gets to finish its first iteration
COMPILE_GRACE_S = 3600.0  #: and with torch.compile (max-autotune's warm-up is not a hang)


def compiled(config: CommonConfig) -> bool:
    """Whether the run compiles its model (``compile`` other than ``none``)."""
    return str(getattr(config, "compile", "none") or "none") != "none"


def allowance(config: CommonConfig, iterations_seen: int) -> float:
    """Seconds a rank may go without an iteration before the launch is stopped as hung:
    ``hang_timeout_s``, before the first iteration plus the grace (and the compile's)."""
    timeout = float(config.hang_timeout_s)
    if iterations_seen >= 1:
        return timeout
    return timeout + STARTUP_GRACE_S + (COMPILE_GRACE_S if compiled(config) else 0.0)


def collective_timeout_s(config: CommonConfig) -> float:
    """Seconds a rank's collective waits for its peers before it gives up (the process group's
    timeout): twice ``hang_timeout_s``, so the launcher's diagnosis of a hang comes first; with
    torch.compile, the launcher's whole allowance before the first iteration (the compile's
    :data:`COMPILE_GRACE_S` in it) plus ``hang_timeout_s``, so a rank waiting in DDP's first
    all-reduce for a peer still compiling is not cut off before the launcher would stop it."""
    if compiled(config):
        return allowance(config, 0) + float(config.hang_timeout_s)
    return 2.0 * float(config.hang_timeout_s)
