"""Per-SKU device health limits and performance floors (``devices``, ``device_health`` in data/thresholds.yml) as
the config the host scripts ``device_health.py`` and ``device_perf.py`` judge with. The scripts pick the row
themselves, by the device name their tool or torch reports, because the inventory's ``accelerator`` var is often
unset on NVIDIA hosts. Pure apart from reading the shipped file."""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any

import yaml

from ..errors import ConfigError
from ..paths import package_data
from ..vendors import get_vendor

SOURCE_KEYS = ("nvlinks_source", "matmul_source", "copy_source", "h2d_source", "pcie_source")
# What the scripts judge with; sources and notes stay here (the config travels in every record's command).
SCRIPT_KEYS = ("sku", "match", "nvlinks", "min_matmul_bf16_tflops", "min_copy_tbps", "min_h2d_gbps",
               "min_d2h_gbps", "pcie_gen", "pcie_width", "estimate")


def _check_row(row: Any, where: str, sources: Mapping[str, str] | None) -> dict[str, Any]:
    if not isinstance(row, Mapping) or not isinstance(row.get("match"), list) or not row.get("sku"):
        raise ConfigError(f"a device threshold row needs sku: and match: [..], not {row!r}", where=where)
    if sources is not None:
        for key in SOURCE_KEYS:
            if key in row and row[key] not in sources:
                raise ConfigError(f"device row {row['sku']}: {key} {row[key]!r} is not in device_sources",
                                  where=where)
    return dict(row)


# libyaml's parser where PyYAML has it (the same safe constructors): the node-check every few minutes reads this file.
SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@lru_cache(maxsize=1)
def _shipped_text() -> str:
    return package_data("thresholds.yml").read_text(encoding="utf-8")


def load_device_floors(text: str | None = None, overrides: Any = None, vendor: str | None = None) -> dict[str, Any]:
    """``{"device_rows": [...], "device_health": {...}, "device_margin": m}``: the inventory's
    ``device_thresholds`` rows (a list of rows like the shipped ones) first, so they win. Every row, with its
    sources, unless ``vendor`` is given: then only that vendor's rows and the keys the scripts read, and nothing
    at all for the cpu stack (no device to judge)."""
    where = str(package_data("thresholds.yml"))
    doc = yaml.load(text if text is not None else _shipped_text(), Loader=SAFE_LOADER) or {}
    sources = dict(doc.get("device_sources") or {})
    rows = [_check_row(row, where, sources) for row in doc.get("devices") or []]
    if overrides:
        if not isinstance(overrides, list):
            raise ConfigError(f"device_thresholds must be a list of rows, not {overrides!r}",
                              where="inventory device_thresholds")
        rows = [_check_row(row, "inventory device_thresholds", None) for row in overrides] + rows
    health = dict(doc.get("device_health") or {})
    if vendor is not None:
        if not get_vendor(vendor).has_devices:
            return {}
        rows = [{k: row[k] for k in SCRIPT_KEYS if k in row} for row in rows
                if row.get("vendor", vendor) == vendor]
        health.pop("source", None)
    return {"device_rows": rows, "device_health": health, "device_margin": float(doc.get("device_margin", 0.10))}
