"""The cause vocabulary of diagnosis: ``data/causes.yml`` loaded and checked once.

Every finding names one cause from this file and the actor who acts on it: ``node`` (drain or repair, once a host
check confirms), ``job`` (the program's owner), ``config`` (the launch) or ``service`` (storage, network,
rendezvous, the scheduler). Signatures and table rows may name another actor where they know better.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError
from ..paths import package_data
from ..yamlfile import load_marked_file

ACTORS = ("node", "job", "config", "service")
# The floor: a job that failed and that no signature or table names.
UNCLASSIFIED = "unclassified"


@dataclass(frozen=True)
class Cause:
    id: str
    actor: str
    remedy: str
    priority: int
    # Usually the consequence of an earlier error on another rank (a collective timeout, a peer that exited).
    symptom: bool = False


def parse_causes(data: Any, origin: str = "causes.yml") -> dict[str, Cause]:
    if not isinstance(data, dict) or not isinstance(data.get("causes"), dict):
        raise ConfigError("expected a mapping with a 'causes' mapping", where=origin)
    out: dict[str, Cause] = {}
    for name, raw in data["causes"].items():
        where = f"{origin}: {name}"
        if not isinstance(raw, dict):
            raise ConfigError("a cause must be a mapping", where=where)
        missing = [key for key in ("actor", "remedy", "priority") if key not in raw]
        if missing:
            raise ConfigError(f"missing field(s): {', '.join(missing)}", where=where)
        if raw["actor"] not in ACTORS:
            raise ConfigError(f"actor {raw['actor']!r} is not one of {', '.join(ACTORS)}", where=where)
        out[str(name)] = Cause(id=str(name), actor=str(raw["actor"]), remedy=" ".join(str(raw["remedy"]).split()),
                               priority=int(raw["priority"]), symptom=bool(raw.get("symptom", False)))
    if UNCLASSIFIED not in out:
        raise ConfigError(f"the vocabulary needs its floor, {UNCLASSIFIED!r}", where=origin)
    return out


@functools.lru_cache(maxsize=1)
def load_causes() -> dict[str, Cause]:
    """The shipped vocabulary (read once per process)."""
    path = package_data("causes.yml")
    return parse_causes(load_marked_file(path), origin=str(path))


def check_actor(actor: Any, where: str) -> str:
    if actor not in ACTORS:
        raise ConfigError(f"actor {actor!r} is not one of {', '.join(ACTORS)}", where=where)
    return str(actor)


@functools.cache
def confirming_check(cause: str) -> str | None:
    """The first check declared to confirm ``cause`` (``confirms`` in ``accelstack/validate/checks/``), or None
    where no host check can (a program's own error). Imported only when a finding needs it: a log is read without
    the validation machinery. tests/test_checks.py holds every ``node`` cause to a declared check."""
    from ..validate.registry import load_declarations

    found = [c.checks[0] for c in load_declarations() if cause in c.confirms]
    return found[0] if found else None
