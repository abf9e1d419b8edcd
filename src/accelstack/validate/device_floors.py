"""Per-SKU device health limits and performance floors (``devices``, ``device_health`` in data/thresholds.yml and
each vendor's ``floors.yml``) as the config the host scripts ``device_health.py`` and ``device_perf.py`` judge with.
The scripts pick the row themselves, by the device name their tool or torch reports, because the inventory's
``accelerator`` var is often unset on NVIDIA hosts. Pure apart from reading the shipped files."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import yaml

from ..errors import ConfigError
from ..paths import package_data
from ..vendors import get_vendor
from .thresholds import SAFE_LOADER, ThresholdsFile, shipped_files

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


def load_device_floors(text: str | None = None, overrides: Any = None, vendor: str | None = None) -> dict[str, Any]:
    """``{"device_rows": [...], "device_health": {...}, "device_margin": m}`` from the shipped files (the
    vendor-neutral ``data/thresholds.yml`` and each vendor's ``floors.yml``; or one document's ``text``): the
    inventory's ``device_thresholds`` rows (a list of rows like the shipped ones) first, so they win. Every row, with
    its sources (and ``device_sources``, every source's text), unless ``vendor`` is given: then only that vendor's
    rows and health limits, the keys the scripts read, and nothing at all for a vendor without devices (cpu)."""
    if text is not None:
        files: tuple[ThresholdsFile, ...] = (ThresholdsFile(package_data("thresholds.yml"),
                                                             yaml.load(text, Loader=SAFE_LOADER) or {}),)
    else:
        files = shipped_files()
    sources = {str(k): v for f in files for k, v in (f.doc.get("device_sources") or {}).items()}
    rows = []
    for f in files:
        for row in f.doc.get("devices") or []:
            checked = _check_row(row, str(f.path), sources)
            if f.vendor is not None:
                checked.setdefault("vendor", f.vendor)
            rows.append(checked)
    if overrides:
        if not isinstance(overrides, list):
            raise ConfigError(f"device_thresholds must be a list of rows, not {overrides!r}",
                              where="inventory device_thresholds")
        rows = [_check_row(row, "inventory device_thresholds", None) for row in overrides] + rows
    health: dict[str, Any] = {}
    for f in files:
        if vendor is None or f.vendor in (None, vendor):
            health.update(f.doc.get("device_health") or {})
    health.pop("source", None)
    margin = float(files[0].doc.get("device_margin", 0.10))
    if vendor is None:
        return {"device_rows": rows, "device_health": health, "device_margin": margin, "device_sources": sources}
    if not get_vendor(vendor).has_devices:
        return {}
    rows = [{k: row[k] for k in SCRIPT_KEYS if k in row} for row in rows if row.get("vendor", vendor) == vendor]
    return {"device_rows": rows, "device_health": health, "device_margin": margin}
