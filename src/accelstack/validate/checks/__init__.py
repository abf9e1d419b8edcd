"""Check declarations: each check is declared once, here, one module per check family.

A module ``checks/<name>.py`` declares the check(s) that the host-side script
``accelstack/hostside/validators/<name>.py`` provides (or, with ``script=None``, a check the control side computes:
``versions``, ``clock``) as a tuple ``CHECKS`` of :class:`Check`. Everything else is derived from these: the
registry that ``--tier`` and ``--only`` select from (:mod:`accelstack.validate.registry`), the ``--tier``/``--only``
help of ``inv validate``, the README's table of checks (``python -m accelstack.validate.checks --readme``), the
control-side judgement of a check's records, and the checks ``inv diagnose --host`` runs to confirm a cause.

Adding a check is three files: the script (``hostside/validators/x.py``), its declaration (``checks/x.py``) and its
outcome cases (``tests/data/outcomes/x/``); then regenerate the README table. A cluster check (``scope="cluster"``)
declares its ``runner`` too, the control-side function that orchestrates it across the hosts
(:data:`accelstack.engines.ssh.cluster.ClusterRunner`); the run iterates over the declarations and names no check.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...errors import ConfigError
from ..judge import Judge

# health < quick < standard < full. health: vendor tools, sysfs/procfs, the kernel log, files and package metadata only
# (no torch, no device context): safe beside a running job, a scheduler's periodic health check. quick adds what
# needs torch or a device context (a prolog); standard the collectives, memory, performance and storage; full the
# bigger sweeps (a maintenance job).
TIERS = ("health", "quick", "standard", "full")
PYTHONS = ("system", "stack")
SCOPES = ("host", "cluster")
ENGINES = ("ssh", "slurm")
NAME = re.compile(r"^[a-z][a-z0-9_]*$")
# What the run adds to the host config for every script it runs (accelstack.engines.ssh.host.run_script): a script
# may declare these beside the host config's keys.
RUN_KEYS = ("mode", "collectives", "deadline_s")
# The ``full`` tier runs the standard checks with bigger sweeps (each vendor's Vendor.sweep): no check is full-only yet.
FULL_TIER = "the standard checks with bigger collective sweeps"


@dataclass(frozen=True)
class Check:
    """One check family: one run of a script (or one control-side computation) and the records it produces.

    ``checks``: the names of the records it produces, the names ``--only`` takes (a record ``memory.shm`` belongs
    to check ``memory``). ``tier``: the lowest tier that runs it (health < quick < standard < full; a ``health``
    check runs with the system python: no torch, no device context). ``help``: one line saying what it checks
    (the README table's "what" column). ``script``: the file in ``hostside/validators/``
    that runs on the host, ``None`` when the control side computes it. ``python``: ``system`` (the host's
    python3, stdlib only) or ``stack`` (the stack's python, with torch). ``timeout``: seconds. ``scope``:
    ``host`` (runs on every host) or ``cluster`` (the control side orchestrates it across hosts). ``mode``:
    what a script with several uses is asked to do (``config["mode"]``). ``config``: the keys of the host config
    (:func:`accelstack.validate.config.host_config`) the script reads. ``judge``: the control-side judgement of
    its records (``None``: the script's verdict stands); every host record then passes
    :func:`accelstack.validate.judge.never_pass_a_failed_tool`. ``thresholds``: the sections of
    ``data/thresholds.yml`` it is judged against. ``confirms``: the diagnosis causes
    (:data:`accelstack.diagnose.catalog.CAUSES`) it confirms on a host: ``inv diagnose --host`` runs it for them.

    ``runner``: the control-side function that computes its records, as ``"module:function"`` (resolved when the
    run needs it, so a declaration stays plain data) or the function itself. Every cluster check has one, called
    ``runner(check, run)`` with a :class:`accelstack.engines.ssh.cluster.ClusterRun` (the joined hosts, thresholds,
    the run's vars and deadline); a host check without a script has one too, called ``runner(transport, ctx)``
    (``versions``). ``engines``: the engines that run it (``--engine ssh``, ``--engine slurm``: Slurm runs the
    host checks through node-check and the cluster checks that declare ``slurm``). ``rerun_below_floor``: a
    bandwidth record below its floor is run once more before it fails the host (healthy nodes fluctuate).
    ``needs_peers``: a cluster check that measures between hosts: one host left alone measured nothing.
    ``owns_join_errors``: a host that cannot join the cluster phase (unreachable, upload refused) gets its
    ``error`` record under this cluster check rather than ``cluster`` (the first such check selected).
    """

    checks: tuple[str, ...]
    tier: str
    help: str
    script: str | None = None
    python: str = "system"
    timeout: float = 60.0
    scope: str = "host"
    mode: str | None = None
    config: tuple[str, ...] = ()
    judge: Judge | None = None
    thresholds: tuple[str, ...] = ()
    confirms: tuple[str, ...] = ()
    runner: str | Callable[..., list] | None = None
    engines: tuple[str, ...] = ENGINES
    rerun_below_floor: bool = False
    needs_peers: bool = False
    owns_join_errors: bool = False
    # Filled by the registry: the script's path in the validators folder it was loaded against.
    path: Path | None = field(default=None, compare=False, repr=False)
    # Filled by the registry: the declaration module it came from (errors and tests name it).
    declared_in: str = field(default="", compare=False, repr=False)

    @property
    def name(self) -> str:
        return ",".join(self.checks)

    def in_tier(self, tier: str) -> bool:
        return TIERS.index(self.tier) <= TIERS.index(tier)

    def owns(self, record_check: str) -> bool:
        """Whether a record named ``record_check`` (``memory.shm``, ``allreduce``) is one of this check's."""
        return record_check in self.checks or record_check.split(".", 1)[0] in self.checks

    def judge_for(self, record_check: str) -> Judge | None:
        """The control-side judge of one of this check's records; ``None`` for a record it does not own."""
        return self.judge if self.owns(record_check) else None

    def run_config(self, config: dict[str, Any]) -> dict[str, Any]:
        """The config this check's script gets: the host config plus what the run adds (:data:`RUN_KEYS`: its
        ``mode``, the sweep's ``collectives``, its ``deadline_s``)."""
        config = dict(config)
        if self.mode is not None:  # a script with several uses (collectives.py) is told which one
            config["mode"] = self.mode
        if self.mode == "sweep":
            config["collectives"] = list(self.checks)
        # The script's own deadline sits inside the shell's hard limit, so it reports before it is killed.
        config["deadline_s"] = max(5.0, self.timeout - 10)
        return config

    def run_function(self) -> Callable[..., list]:
        """The declared ``runner``, imported now if it is named by its dotted path; ValueError when it cannot be."""
        if callable(self.runner):
            return self.runner
        if not isinstance(self.runner, str):
            raise ValueError(f"check {self.name} declares no runner")
        module, _, attr = self.runner.partition(":")
        try:
            function = getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError) as err:
            raise ValueError(f"runner {self.runner!r} does not resolve: {type(err).__name__}: {err}") from err
        if not callable(function):
            raise ValueError(f"runner {self.runner!r} is not a function")
        return function

    def problems(self) -> list[str]:
        """What is wrong with this declaration, one line each (the registry refuses it, naming its module)."""
        out = []
        if not self.checks:
            out.append("names no check")
        out += [f"check name {c!r} is not lower_snake_case" for c in self.checks if not NAME.match(c)]
        for value, allowed, key in ((self.tier, TIERS, "tier"), (self.python, PYTHONS, "python"),
                                    (self.scope, SCOPES, "scope")):
            if value not in allowed:
                out.append(f"{key}={value!r} is not one of {', '.join(allowed)}")
        if self.tier == "health" and (self.python != "system" or self.scope != "host"):
            out.append("a health-tier check is a host check on the system python (no torch, no device context: it "
                       "runs beside jobs)")
        if not isinstance(self.timeout, (int, float)) or self.timeout <= 0:
            out.append(f"timeout={self.timeout!r} is not a positive number of seconds")
        if not self.help.strip() or "\n" in self.help or "|" in self.help.replace("\\|", ""):
            out.append("help must be one line of text, without an unescaped |")
        if self.script is not None and not (self.script.endswith(".py") and "/" not in self.script):
            out.append(f"script={self.script!r} is not a file name in the validators folder")
        if isinstance(self.runner, str) and not re.match(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$", self.runner):
            out.append(f"runner={self.runner!r} is not module:function")
        if self.runner is None and (self.scope == "cluster" or self.script is None):
            out.append("a cluster check, or a check without a script, needs a runner (the function computing it)")
        if self.runner is not None and self.scope == "host" and self.script is not None:
            out.append("a host check runs its script: a runner is for cluster checks and checks without a script")
        out += [f"engines: {e!r} is not one of {', '.join(ENGINES)}" for e in self.engines if e not in ENGINES] \
            if isinstance(self.engines, tuple) else []
        if (self.needs_peers or self.owns_join_errors) and self.scope != "cluster":
            out.append("needs_peers and owns_join_errors are for cluster checks")
        named = {"checks": self.checks, "config": self.config, "thresholds": self.thresholds,
                 "confirms": self.confirms, "engines": self.engines}
        # ("x") is a string, not a tuple: its letters would be read as names.
        out += [f"{key} must be a tuple of names" for key, names in named.items() if not isinstance(names, tuple)]
        return out


def checks_in_tier(registry: Iterable[Check], tier: str) -> list[str]:
    return [c for v in registry if v.tier == tier for c in v.checks]


def tier_help(registry: Iterable[Check], tiers: Iterable[str] = TIERS, default: str = "standard") -> str:
    """The ``--tier`` help, from the declarations: what each tier adds."""
    registry = list(registry)
    parts = []
    for tier in tiers:
        names = checks_in_tier(registry, tier)
        what = ", ".join(names) if names else FULL_TIER
        if tier != TIERS[0] and names:
            what = "+ " + what
        parts.append(f"{tier} ({what}{'; default' if tier == default else ''})")
    return ", ".join(parts[:-1]) + " or " + parts[-1] if len(parts) > 1 else parts[0]


def only_help(registry: Iterable[Check]) -> str:
    """The ``--only`` help, from the declarations: every check name it accepts."""
    names = sorted(c for v in registry for c in v.checks)
    return "comma-separated checks to run whatever the tier: " + ", ".join(names)


README_BEGIN = "<!-- checks:begin: generated from validate/checks/ by python -m accelstack.validate.checks --readme -->"
README_END = "<!-- checks:end -->"


def readme_table(registry: Iterable[Check]) -> str:
    """The README's table of checks: one row per declaration, in tier order."""
    rows = ["| check | tier | what |", "|---|---|---|"]
    for check in registry:
        rows.append(f"| {', '.join(f'`{c}`' for c in check.checks)} | {check.tier} | {check.help} |")
    return "\n".join(rows) + "\n"


def with_readme_table(text: str, table: str, where: str = "README.md") -> str:
    """``text`` with the part between the README markers replaced by ``table``."""
    begin, end = text.find(README_BEGIN), text.find(README_END)
    if begin < 0 or end < begin:
        raise ConfigError("no <!-- checks:begin ... --> / <!-- checks:end --> markers around the table of checks",
                          where=where)
    start = begin + len(README_BEGIN)
    return text[:start] + "\n" + table + text[end:]
