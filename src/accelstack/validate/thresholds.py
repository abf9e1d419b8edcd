"""Bandwidth floors as data (``data/thresholds.yml`` and each vendor's ``vendors/<name>/floors.yml``), the inventory's
overrides, and the judgement. Pure apart from reading the shipped files."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from ..errors import ConfigError
from ..paths import package_data
from ..results.records import Status
from ..vendors import vendors

FLOOR_SCOPES = ("single-node", "multi-node")


@dataclass(frozen=True)
class Threshold:
    accelerator: str
    scope: str
    collective: str
    min_busbw_gbps: float | None
    ranks: int | None = None
    source: str = ""
    confidence: str | None = None
    note: str | None = None
    origin: str = "data/thresholds.yml"

    def describe(self) -> str:
        floor = "no published floor" if self.min_busbw_gbps is None else f"floor {self.min_busbw_gbps:g} GB/s"
        text = f"{self.accelerator} {self.scope} {self.collective}: {floor} ({self.source}"
        text += f", {self.confidence})" if self.confidence else ")"
        return text


@dataclass
class Thresholds:
    rows: list[Threshold] = field(default_factory=list)
    margin: float = 0.10
    clock_warn_s: float = 0.1
    clock_fail_s: float = 1.0
    sources: dict[str, str] = field(default_factory=dict)

    def lookup(self, accelerator: str | None, scope: str, collective: str, ranks: int) -> Threshold | None:
        """The first row (overrides first) whose accelerator is a prefix of the host's and whose ranks fit."""
        # No accelerator named is no row: an 8-GPU host must never be held to the CPU lab's floor. A name matches
        # a row when one of its words starts with the row's ("NVIDIA H100 80GB HBM3" and "h100-sxm" match H100).
        words = [w for w in re.split(r"[\s_/-]+", (accelerator or "").lower()) if w]
        if not words:
            return None
        for row in self.rows:
            if row.scope != scope or row.collective != collective:
                continue
            if not any(word.startswith(row.accelerator.lower()) for word in words):
                continue
            if row.ranks is not None and row.ranks != ranks:
                continue
            return row
        return None

    def with_overrides(self, raw: Any, where: str = "inventory thresholds") -> Thresholds:
        """A copy with the inventory's ``thresholds:`` var layered on top (its rows win)."""
        if not raw:
            return self
        margin = self.margin
        rows_raw: Any = raw
        if isinstance(raw, Mapping):
            margin = float(raw.get("margin", margin))
            rows_raw = raw.get("rows") or []
        rows = [_row(item, where) for item in rows_raw]
        return Thresholds(rows + self.rows, margin, self.clock_warn_s, self.clock_fail_s, self.sources)


def _row(item: Any, origin: str) -> Threshold:
    if not isinstance(item, Mapping):
        raise ConfigError(f"a threshold row must be a mapping, not {item!r}", where=origin)
    missing = [k for k in ("accelerator", "scope", "collective") if k not in item]
    if missing:
        raise ConfigError(f"threshold row {dict(item)} lacks {', '.join(missing)}", where=origin)
    if item["scope"] not in FLOOR_SCOPES:
        raise ConfigError(f"threshold scope {item['scope']!r} is not one of {', '.join(FLOOR_SCOPES)}", where=origin)
    floor = item.get("min_busbw_gbps")
    return Threshold(str(item["accelerator"]), str(item["scope"]), str(item["collective"]),
                     None if floor is None else float(floor), int(item["ranks"]) if item.get("ranks") else None,
                     str(item.get("source", "inventory")), item.get("confidence"), item.get("note"), origin)


# libyaml's parser where PyYAML has it (the same safe constructors): the node-check every few minutes reads this file.
SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclass(frozen=True)
class ThresholdsFile:
    """One shipped file of floors and limits: ``data/thresholds.yml`` (vendor None) or a vendor's ``floors.yml``."""

    path: Path
    doc: dict[str, Any]
    vendor: str | None = None


@lru_cache(maxsize=1)
def shipped_files() -> tuple[ThresholdsFile, ...]:
    """The vendor-neutral file first, then each vendor's (Vendor.floors_file), in the vendors' order."""
    files = [ThresholdsFile(package_data("thresholds.yml"), _read(package_data("thresholds.yml")))]
    for vendor in vendors():
        path = vendor.floors_file()
        if path is not None:
            files.append(ThresholdsFile(path, _read(path), vendor.name))
    return tuple(files)


def _read(path: Path) -> dict[str, Any]:
    doc = yaml.load(path.read_text(encoding="utf-8"), Loader=SAFE_LOADER) or {}
    if not isinstance(doc, dict):
        raise ConfigError("a thresholds file must be a mapping of sections", where=str(path))
    return doc


def load_thresholds(text: str | None = None) -> Thresholds:
    """The shipped floors (every file of :func:`shipped_files`), or those of one document's ``text``."""
    if text is not None:
        files: tuple[ThresholdsFile, ...] = (ThresholdsFile(package_data("thresholds.yml"),
                                                             yaml.load(text, Loader=SAFE_LOADER) or {}),)
    else:
        files = shipped_files()
    doc = files[0].doc
    clock = doc.get("clock") or {}
    rows = [_row(item, str(f.path)) for f in files for item in f.doc.get("rows") or []]
    sources = {str(k): v for f in files for k, v in (f.doc.get("sources") or {}).items()}
    return Thresholds(rows, float(doc.get("margin", 0.10)), float(clock.get("warn_s", 0.1)),
                      float(clock.get("fail_s", 1.0)), sources)


NO_BUSBW = "not judged: busbw is not defined for one rank (algbw only)"


def judge(value: float | None, row: Threshold | None, margin: float) -> tuple[Status, str]:
    """``fail`` below the floor, ``warn`` within ``margin`` above it, else ``pass``; no floor is ``pass``. A
    ``None`` value (one rank: no busbw) is never compared with a floor."""
    if value is None:
        return "pass", NO_BUSBW
    if row is None or row.min_busbw_gbps is None:
        why = row.describe() if row else "no threshold row for this accelerator, scope and rank count"
        return "pass", f"not judged: {why}"
    floor = row.min_busbw_gbps
    if value < floor:
        return "fail", f"below the {floor:g} GB/s floor ({row.source})"
    if value < floor * (1 + margin):
        return "warn", f"within {margin:.0%} of the {floor:g} GB/s floor ({row.source})"
    return "pass", f"above the {floor:g} GB/s floor ({row.source})"
