"""Each device's figures against their floors, and its health readings, as one run's records hold them.

``perf.matmul``, ``perf.copy``, ``perf.h2d`` and ``perf.d2h`` (``hostside/validators/device_perf.py``) write
``metrics.per_device`` ``{device: figure}`` with ``metrics.floor`` and ``metrics.unit``: the floor the check
judged against (the SKU's row in its vendor's ``floors.yml``, or the inventory's ``device_thresholds``), and the check
judges the slowest device. ``perf.pcie`` writes ``metrics.links`` ``{device: "Gen5 x16 of Gen5 x16"}`` (the link
now, of its own maximum); what the SKU itself has (``pcie_gen``, ``pcie_width``), the band above a floor that
warns (``device_margin``) and where each floor comes from are read from the same ``floors.yml`` rows the
checks judge with, found by the SKU the record names (``evidence.sku``). ``health.*`` records keep their
per-device readings in ``evidence``: ``temperature_c`` and ``active_reasons`` by ``gpu N``/``npu N``, NVLink
``links`` by GPU index. Torch's ``cuda:N`` and the vendor tool's ``gpu N`` need not be the same device (torch may
order devices differently, ``CUDA_VISIBLE_DEVICES`` renumbers them), so figures and readings stay apart, each
under the name its own tool gave.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from ..results.metrics import number
from ..results.records import Record
from .model import cells, family_of, headline

PERF_FAMILY = "perf"
HEALTH_FAMILY = "health"


@dataclass(frozen=True)
class FigureKind:
    """One per-device figure a ``perf.*`` check measures."""

    check: str
    label: str
    unit: str  # what the validator writes; a record's own ``metrics.unit`` wins
    source_key: str  # the row's key naming where the floor comes from


FIGURES = (
    FigureKind("perf.matmul", "bf16 matmul", "TFLOP/s", "matmul_source"),
    FigureKind("perf.copy", "device copy", "TB/s", "copy_source"),
    FigureKind("perf.h2d", "host to device", "GB/s", "h2d_source"),
    FigureKind("perf.d2h", "device to host", "GB/s", "h2d_source"),
)
LINK_CHECK = "perf.pcie"
LINK_SOURCE_KEY = "pcie_source"
PERF_CHECKS = tuple(kind.check for kind in FIGURES) + (LINK_CHECK,)


@dataclass(frozen=True)
class Figure:
    """One device's figure. ``state``: ``pass`` above the floor and its warning band, ``warn`` within the band,
    ``fail`` below the floor, ``unjudged`` (no floor for this SKU), ``missing`` (the check has no figure for this
    device: its summary says why)."""

    value: float | None
    floor: float | None
    unit: str
    state: str

    @property
    def ratio(self) -> float | None:
        """The figure as a multiple of its floor."""
        if self.value is None or not self.floor:
            return None
        return self.value / self.floor


@dataclass(frozen=True)
class Link:
    """A device's PCIe link now, its own maximum, and what its SKU has (``None`` where unknown)."""

    gen: int | None
    width: int | None
    max_gen: int | None
    max_width: int | None
    sku_gen: int | None
    sku_width: int | None
    state: str
    reading: str  # as the record wrote it

    @property
    def now(self) -> str:
        return f"Gen{_text(self.gen)} x{_text(self.width)}"

    @property
    def maximum(self) -> str:
        return f"Gen{_text(self.max_gen)} x{_text(self.max_width)}"

    @property
    def sku(self) -> str | None:
        if self.sku_gen is None and self.sku_width is None:
            return None
        return f"Gen{_text(self.sku_gen)} x{_text(self.sku_width)}"


@dataclass
class DevicePerf:
    device: str
    figures: dict[str, Figure] = field(default_factory=dict)  # by check
    link: Link | None = None


@dataclass
class HostPerf:
    """One host's ``perf`` family: its records (``perf.*``, or one ``perf`` record for the whole family when it
    could not measure at all) and its devices' figures."""

    host: str
    records: dict[str, Record]
    devices: list[DevicePerf]
    sku: str | None = None
    estimate: bool = False  # the SKU row's figures are estimates, not measured on that SKU
    sources: dict[str, str] = field(default_factory=dict)  # check -> where its floor comes from

    @property
    def status(self) -> str:
        return headline(r.status for r in self.records.values())

    def floor(self, check: str) -> tuple[float | None, str]:
        """The floor ``check`` was judged against on this host, and its unit."""
        record = self.records.get(check)
        kind = next((k for k in FIGURES if k.check == check), None)
        unit = kind.unit if kind else ""
        if record is None:
            return None, unit
        return number(record.metrics.get("floor")), str(record.metrics.get("unit") or unit)


@dataclass(frozen=True)
class DeviceHealth:
    device: str
    temperature_c: float | None = None
    clock_events: tuple[str, ...] | None = None  # active clock-event (throttle) reasons; () none
    nvlinks: tuple[int, int] | None = None  # (active, expected)

    @property
    def nvlink_state(self) -> str | None:
        if self.nvlinks is None:
            return None
        return "fail" if self.nvlinks[0] < self.nvlinks[1] else "pass"


@dataclass
class HostHealth:
    host: str
    records: list[Record]
    devices: list[DeviceHealth]

    @property
    def status(self) -> str:
        return headline(r.status for r in self.records)


# -- reading the records -------------------------------------------------------------------------------------


@lru_cache(maxsize=1)
def shipped_floors() -> tuple[dict[str, dict[str, Any]], float, dict[str, str]]:
    """The SKU rows of the vendors' ``floors.yml`` by ``sku``, the warning band above a floor, and the sources.
    Read through validation's own loader, imported here: a report without device figures never loads validation
    (and paramiko with it)."""
    from ..validate.device_floors import load_device_floors

    floors = load_device_floors()
    rows = {str(row["sku"]): row for row in floors["device_rows"]}
    sources = {str(k): " ".join(str(v).split()) for k, v in floors["device_sources"].items()}
    return rows, float(floors["device_margin"]), sources


def device_key(name: str) -> list[object]:
    """Natural order: cuda:2 before cuda:10."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


def judge_figure(value: float | None, floor: float | None, unit: str, margin: float) -> Figure:
    """A device's figure against its floor, by the rule the checks judge their slowest device with."""
    if value is None:
        return Figure(None, floor, unit, "missing")
    if floor is None:
        return Figure(value, None, unit, "unjudged")
    if value < floor:
        return Figure(value, floor, unit, "fail")
    if value < floor * (1 + margin):
        return Figure(value, floor, unit, "warn")
    return Figure(value, floor, unit, "pass")


_LINK = re.compile(r"^\s*Gen(\w+) x(\w+) of Gen(\w+) x(\w+)\s*$")
_WORSE = ("pass", "warn", "error", "fail")


def _int(text: str) -> int | None:
    return int(text) if text.isdigit() else None


def _text(value: int | None) -> str:
    return "?" if value is None else str(value)


def judge_link(reading: str, row: Mapping[str, Any] | None, record_status: str) -> Link:
    """A ``perf.pcie`` reading (``Gen5 x16 of Gen5 x16``) against its own maximum and its SKU's. A link narrower
    than its maximum fails; a generation below it is what the check said (a fail under load); a maximum below
    the SKU's warns (the slot or root port limits it); an unreadable part is an error."""
    found = _LINK.match(reading or "")
    gen, width, max_gen, max_width = [_int(g) for g in found.groups()] if found else [None] * 4
    sku_gen = int(row["pcie_gen"]) if row and row.get("pcie_gen") else None
    sku_width = int(row["pcie_width"]) if row and row.get("pcie_width") else None
    states = ["pass"]
    if gen is None or width is None or max_gen is None or max_width is None:
        states.append("error")
    else:
        if width < max_width:
            states.append("fail")
        if gen < max_gen:
            states.append("fail" if record_status == "fail" else "warn")
        if (sku_gen and max_gen < sku_gen) or (sku_width and max_width < sku_width):
            states.append("warn")
    return Link(gen, width, max_gen, max_width, sku_gen, sku_width, max(states, key=_WORSE.index), reading)


def _per_device(record: Record) -> dict[str, float]:
    raw = record.metrics.get("per_device")
    if not isinstance(raw, Mapping):
        return {}
    found = {}
    for device, value in raw.items():
        figure = number(value)
        if figure is not None:
            found[str(device)] = figure
    return found


def host_perf(host: str, records: list[Record]) -> HostPerf:
    """One host's perf records as figures per device (``records``: that host's ``perf`` family)."""
    by_check = {check: record for (_, check), record in cells(records).items()}
    if not any(r.check in PERF_CHECKS for r in records):  # one ``perf`` record: it measured nothing
        return HostPerf(host=host, records=by_check, devices=[])
    rows, margin, sources = shipped_floors()
    sku = next((str(r.evidence["sku"]) for r in records if r.evidence.get("sku")), None)
    row = rows.get(sku) if sku else None
    devices: dict[str, DevicePerf] = {}
    for kind in FIGURES:
        record = by_check.get(kind.check)
        if record is not None:
            for device in _per_device(record):
                devices.setdefault(device, DevicePerf(device))
    links = by_check[LINK_CHECK].metrics.get("links") if LINK_CHECK in by_check else None
    if isinstance(links, Mapping):
        for device in links:
            devices.setdefault(str(device), DevicePerf(str(device)))
    for device, entry in devices.items():
        for kind in FIGURES:
            record = by_check.get(kind.check)
            if record is None:
                continue
            floor = number(record.metrics.get("floor"))
            unit = str(record.metrics.get("unit") or kind.unit)
            entry.figures[kind.check] = judge_figure(_per_device(record).get(device), floor, unit, margin)
        if isinstance(links, Mapping) and device in links:
            entry.link = judge_link(str(links[device]), row, by_check[LINK_CHECK].status)
    where = {kind.check: sources.get(str(row.get(kind.source_key)), "") for kind in FIGURES} if row else {}
    if row:
        where[LINK_CHECK] = sources.get(str(row.get(LINK_SOURCE_KEY)), "")
    return HostPerf(host=host, records=by_check, devices=sorted(devices.values(), key=lambda d: device_key(d.device)),
                    sku=sku, estimate=bool(row and row.get("estimate")), sources=where)


def _readings(record: Record | None, key: str) -> Mapping[str, Any]:
    value = record.evidence.get(key) if record is not None else None
    return value if isinstance(value, Mapping) else {}


def host_health(host: str, records: list[Record]) -> HostHealth:
    """One host's health parts and the readings they keep per device."""
    by_check = {check: record for (_, check), record in cells(records).items()}
    temperatures = _readings(by_check.get("health.temperature"), "temperature_c")
    reasons = _readings(by_check.get("health.throttle"), "active_reasons")
    nvlink = by_check.get("health.nvlink")
    links = {f"gpu {index}": state for index, state in _readings(nvlink, "links").items()}
    expected = number(nvlink.metrics.get("expected_links")) if nvlink is not None else None
    devices = []
    for name in sorted({*temperatures, *reasons, *links}, key=device_key):
        events = reasons.get(name)
        state = links.get(name)
        active = number(state.get("active")) if isinstance(state, Mapping) else None
        devices.append(DeviceHealth(
            device=str(name), temperature_c=number(temperatures.get(name)),
            clock_events=tuple(str(e) for e in events) if isinstance(events, list) else None,
            nvlinks=(int(active), int(expected)) if active is not None and expected is not None else None))
    return HostHealth(host=host, records=records, devices=devices)


def _family(records: Iterable[Record], family: str) -> dict[str, list[Record]]:
    found: dict[str, list[Record]] = {}
    for record in records:
        if family_of(record.check) == family:
            found.setdefault(record.host, []).append(record)
    return found


def device_perf(records: Iterable[Record]) -> dict[str, HostPerf]:
    """Every host with a ``perf`` record, by host."""
    return {host: host_perf(host, found) for host, found in _family(records, PERF_FAMILY).items()}


def device_health(records: Iterable[Record]) -> dict[str, HostHealth]:
    """Every host with a ``health`` record, by host."""
    return {host: host_health(host, found) for host, found in _family(records, HEALTH_FAMILY).items()}


def figure_text(value: float) -> str:
    """Three significant figures, as the checks' summaries print them: 792, 4.23, 55.3."""
    return f"{value:.3g}" if abs(value) < 1000 else f"{value:.0f}"
