"""The validator registry, read from the header lines of the scripts in ``accelstack/hostside/validators/``.

A script declares each check it provides on a line of its own near the top::

    # accelstack-validator: check=allreduce,allgather tier=standard python=stack timeout=420 scope=host

``check`` names the record(s) the run produces (a record ``memory.shm`` belongs to check ``memory``), ``tier`` is
the lowest tier that runs it (quick < standard < full), ``python`` is ``system`` (the host's python3, stdlib only)
or ``stack`` (the stack's python, with torch), ``timeout`` is seconds, ``scope`` is ``host`` (default: run on
every host) or ``cluster`` (the control side orchestrates it across hosts). Two checks have no script: ``versions``
(drift from facts) and ``clock`` (timestamps over the connections), both computed on the control side.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ..errors import ConfigError
from ..paths import hostside

HEADER = re.compile(r"^#\s*accelstack-validator:\s*(?P<fields>.+?)\s*$")
TIERS = ("quick", "standard", "full")
PYTHONS = ("system", "stack")
SCOPES = ("host", "cluster")
HEADER_LINES = 12


@dataclass(frozen=True)
class Validator:
    """One registry entry: a script (or ``None`` for a control-side check) and the checks it produces."""

    name: str
    checks: tuple[str, ...]
    tier: str
    python: str = "system"
    timeout: float = 60.0
    scope: str = "host"
    script: Path | None = None

    def in_tier(self, tier: str) -> bool:
        return TIERS.index(self.tier) <= TIERS.index(tier)

    @property
    def mode(self) -> str:
        """What the script is asked to do, for scripts with several headers (collectives.py)."""
        if self.scope == "cluster":
            return "cluster"
        return "init" if self.checks == ("collective_init",) else "sweep"


CONTROL_SIDE = (
    Validator("versions", ("versions",), "quick", scope="host"),
    Validator("clock", ("clock",), "quick", scope="cluster"),
)


def validators_dir() -> Path:
    """The host validators, shipped inside the package: a wheel runs them as a checkout does."""
    return hostside("validators")


def parse_header(line: str, script: Path, lineno: int) -> Validator | None:
    match = HEADER.match(line)
    if not match:
        return None
    fields: dict[str, str] = {}
    for item in match.group("fields").split():
        key, sep, value = item.partition("=")
        if not sep:
            raise ConfigError(f"validator header item {item!r} is not key=value", where=f"{script}:{lineno}")
        fields[key] = value
    where = f"{script}:{lineno}"
    checks = tuple(c for c in fields.get("check", "").split(",") if c)
    if not checks:
        raise ConfigError("validator header names no check=", where=where)
    tier, python, scope = fields.get("tier", "standard"), fields.get("python", "system"), fields.get("scope", "host")
    for value, allowed, key in ((tier, TIERS, "tier"), (python, PYTHONS, "python"), (scope, SCOPES, "scope")):
        if value not in allowed:
            raise ConfigError(f"validator header {key}={value!r} is not one of {', '.join(allowed)}", where=where)
    try:
        timeout = float(fields.get("timeout", "60"))
    except ValueError:
        raise ConfigError(f"validator header timeout={fields['timeout']!r} is not a number", where=where) from None
    return Validator(",".join(checks), checks, tier, python, timeout, scope, script)


def load_registry(folder: Path | None = None) -> list[Validator]:
    """Every validator the scripts declare, plus the control-side checks; sorted by tier, then name."""
    folder = folder or validators_dir()
    if not folder.is_dir():
        raise ConfigError(f"no validators folder at {folder}", hint="reinstall accelstack: the package ships them")
    found: list[Validator] = list(CONTROL_SIDE)
    for script in sorted(folder.glob("*.py")):
        with script.open(encoding="utf-8") as handle:
            for lineno, line in enumerate(handle, start=1):
                if lineno > HEADER_LINES:
                    break
                validator = parse_header(line, script, lineno)
                if validator is not None:
                    found.append(validator)
    names = [c for v in found for c in v.checks]
    duplicates = sorted({c for c in names if names.count(c) > 1})
    if duplicates:
        raise ConfigError(f"check(s) declared twice in {folder}: {', '.join(duplicates)}")
    return sorted(found, key=lambda v: (TIERS.index(v.tier), v.name))


def all_checks(registry: Iterable[Validator]) -> list[str]:
    return [c for v in registry for c in v.checks]


def select(registry: Iterable[Validator], tier: str = "standard", only: set[str] | None = None) -> list[Validator]:
    """The validators a run executes: every one in the tier, or (with ``only``) those producing a named check,
    whatever their tier. An unknown name is a configuration error (exit 3), before any host is touched."""
    if tier not in TIERS:
        raise ConfigError(f"--tier {tier!r} is not one of {', '.join(TIERS)}")
    registry = list(registry)
    if only:
        known = set(all_checks(registry))
        unknown = sorted(only - known)
        if unknown:
            raise ConfigError(f"--only names unknown check(s): {', '.join(unknown)}",
                              hint=f"checks: {', '.join(sorted(known))}")
        return [v for v in registry if set(v.checks) & only]
    return [v for v in registry if v.in_tier(tier)]
