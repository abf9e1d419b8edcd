"""The signature catalog: ``data/signatures.yml`` loaded, checked and compiled once.

The catalog is data so that a fleet operator can add a signature without touching Python; this module only
refuses entries that would make the engine lie (an unknown cause id, a regex that does not compile, a
``refines`` that points nowhere).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ..errors import ConfigError
from ..paths import package_data

# The fixed vocabulary of cause ids: reports, tests and the lead's validators key on these exact strings.
CAUSES: tuple[str, ...] = (
    "collective-timeout",
    "watchdog-stuck",
    "device-mapping",
    "network-interface",
    "connect-timeout",
    "rdma",
    "out-of-memory",
    "torch-build-mismatch",
    "driver-too-old",
    "driver-library-mismatch",
    "cann-mismatch",
    "cann-env-missing",
    "npu-device-busy",
    "hccl-api-error",
    "xid-fatal",
    "xid-warn",
    "nccl-internal",
)
VENDORS = ("nvidia", "ascend", "any")
_REQUIRED = ("id", "cause", "vendor", "title", "patterns", "explanation", "remedy", "confirm_with", "priority",
             "source")
_NAMED_GROUP = re.compile(r"\(\?P<\w+>")


@dataclass(frozen=True)
class Signature:
    id: str
    cause: str
    vendor: str
    title: str
    patterns: tuple[re.Pattern[str], ...]
    explanation: str
    remedy: str
    confirm_with: str
    priority: int
    source: str
    symptom: bool = False
    extract_patterns: tuple[re.Pattern[str], ...] = ()
    requires_context: str | None = None
    unless_context: str | None = None
    refines: str | None = None
    when: dict[str, frozenset[Any]] = field(default_factory=dict)


@dataclass(frozen=True)
class Catalog:
    signatures: tuple[Signature, ...]
    contexts: dict[str, tuple[re.Pattern[str], ...]]
    # One alternation of every pattern, without group names: most lines of a healthy log are rejected by a
    # single regex search instead of one search per pattern, which is what makes gigabyte logs tractable.
    prefilter: re.Pattern[str]
    context_prefilter: re.Pattern[str]
    nccl_result_codes: dict[int, str] = field(default_factory=dict)

    def by_id(self, sig_id: str) -> Signature:
        for sig in self.signatures:
            if sig.id == sig_id:
                return sig
        raise KeyError(sig_id)


def _compile(pattern: Any, where: str) -> re.Pattern[str]:
    if not isinstance(pattern, str):
        raise ConfigError(f"pattern must be a string, got {pattern!r}", where=where)
    try:
        return re.compile(pattern)
    except re.error as err:
        raise ConfigError(f"pattern {pattern!r} does not compile: {err}", where=where) from None


def _alternation(patterns: list[re.Pattern[str]]) -> re.Pattern[str]:
    if not patterns:
        return re.compile(r"(?!x)x")
    # Group names may repeat across patterns, which one alternation cannot hold: make them anonymous.
    parts = [_NAMED_GROUP.sub("(?:", p.pattern) for p in patterns]
    return re.compile("|".join(f"(?:{part})" for part in parts))


def parse_catalog(data: Any, origin: str = "signatures.yml") -> Catalog:
    """Build a catalog from the YAML document's data; ``origin`` names the file in error messages."""
    if not isinstance(data, dict) or not isinstance(data.get("signatures"), list):
        raise ConfigError("expected a mapping with a 'signatures' list", where=origin)
    contexts: dict[str, tuple[re.Pattern[str], ...]] = {}
    for name, pats in (data.get("contexts") or {}).items():
        contexts[str(name)] = tuple(_compile(p, f"{origin}: context {name}") for p in pats)

    signatures: list[Signature] = []
    seen: set[str] = set()
    for index, raw in enumerate(data["signatures"]):
        where = f"{origin}: signature #{index + 1} ({raw.get('id', '?') if isinstance(raw, dict) else '?'})"
        if not isinstance(raw, dict):
            raise ConfigError("a signature must be a mapping", where=where)
        missing = [key for key in _REQUIRED if key not in raw]
        if missing:
            raise ConfigError(f"missing field(s): {', '.join(missing)}", where=where)
        if raw["id"] in seen:
            raise ConfigError(f"duplicate id {raw['id']!r}", where=where)
        seen.add(raw["id"])
        if raw["cause"] not in CAUSES:
            raise ConfigError(f"cause {raw['cause']!r} is not one of the fixed ids: {', '.join(CAUSES)}",
                              where=where)
        if raw["vendor"] not in VENDORS:
            raise ConfigError(f"vendor {raw['vendor']!r} is not one of {', '.join(VENDORS)}", where=where)
        for key in ("requires_context", "unless_context"):
            if raw.get(key) is not None and raw[key] not in contexts:
                raise ConfigError(f"{key} {raw[key]!r} names no context", where=where)
        patterns = raw["patterns"] if isinstance(raw["patterns"], list) else [raw["patterns"]]
        when = {str(k): frozenset(v) for k, v in (raw.get("when") or {}).items()}
        signatures.append(Signature(
            id=str(raw["id"]),
            cause=raw["cause"],
            vendor=raw["vendor"],
            title=str(raw["title"]),
            patterns=tuple(_compile(p, where) for p in patterns),
            explanation=" ".join(str(raw["explanation"]).split()),
            remedy=" ".join(str(raw["remedy"]).split()),
            confirm_with=str(raw["confirm_with"]),
            priority=int(raw["priority"]),
            source=str(raw["source"]),
            symptom=bool(raw.get("symptom", False)),
            extract_patterns=tuple(_compile(p, where) for p in raw.get("extract_patterns") or ()),
            requires_context=raw.get("requires_context"),
            unless_context=raw.get("unless_context"),
            refines=raw.get("refines"),
            when=when,
        ))
    ids = {sig.id for sig in signatures}
    for sig in signatures:
        if sig.refines is not None and sig.refines not in ids:
            raise ConfigError(f"refines {sig.refines!r}, which is no signature id", where=f"{origin}: {sig.id}")
    all_patterns = [p for sig in signatures for p in (*sig.patterns, *sig.extract_patterns)]
    context_patterns = [p for pats in contexts.values() for p in pats]
    codes = {int(k): str(v) for k, v in (data.get("nccl_result_codes") or {}).items()}
    return Catalog(tuple(signatures), contexts, _alternation(all_patterns), _alternation(context_patterns), codes)


def load_catalog(path: str | Path | None = None) -> Catalog:
    """Read a catalog file; the shipped one when ``path`` is None (cached: compiled once per process)."""
    if path is None:
        return _shipped_catalog()
    return _load(Path(path))


@functools.lru_cache(maxsize=1)
def _shipped_catalog() -> Catalog:
    return _load(package_data("signatures.yml"))


def _load(path: Path) -> Catalog:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise ConfigError(f"cannot read signature catalog: {err.strerror}", where=str(path)) from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise ConfigError(f"signature catalog is not valid YAML: {err}", where=str(path)) from None
    return parse_catalog(data, origin=str(path))
