"""The inventory vars that accelstack reads as a number, a flag or one of a few known values, each with its type
and range: one table, checked when the inventory is loaded and for every ``--set``.

A typo in such a var used to reach a host and come back as that host's verdict: ``expect_devices: "eight"`` or
``-3`` failed the ``devices`` check (exit 1, as if the host were bad), ``--set expect_devices=abc`` the same. Here
it is bad input: one line naming the var, its value and where it was set (``inventories/npu8.yml:7``, or ``--set
expect_devices``), exit 3, before any host is touched. A value that is right but written as text (``"8"`` from an
INI file or a quoted YAML scalar) is taken as the number it says, so every reader of the var sees a number.

Vars not in the table are the reader's own business (paths, interface names the ``env`` check judges on the host,
provisioning settings whose limits depend on the host's facts, checked by provisioning per host).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import InventoryError
from ..values import SECONDS, Number
from ..vendors import vendors
from ..yamlfile import kind_name

COUNT = Number(int, 0)
POSITIVE = Number(int, 1)
PORT = Number(int, 1, 65535)
AMOUNT = Number(float, 0)  # sizes and windows where 0 means "none" or "all"


@dataclass(frozen=True)
class Numeric:
    number: Number

    def check(self, value: Any, what: str, where: str | None) -> Any:
        return self.number.parse(value, what, where=where, error=InventoryError)


@dataclass(frozen=True)
class Text:
    """A string (a number is taken as its text: ``accelerator: 910`` is ``"910"``)."""

    meaning: str = "a string"

    def check(self, value: Any, what: str, where: str | None) -> Any:
        if isinstance(value, str):
            return value
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return str(value)
        raise InventoryError(f"{what}: {value!r} is {kind_name(value)}, not {self.meaning}", where=where)


@dataclass(frozen=True)
class Choice:
    values: tuple[str, ...]

    def check(self, value: Any, what: str, where: str | None) -> Any:
        if isinstance(value, str) and value in self.values:
            return value
        raise InventoryError(f"{what}: {value!r} is not one of {', '.join(self.values)}", where=where)


@dataclass(frozen=True)
class Flag:
    def check(self, value: Any, what: str, where: str | None) -> Any:
        if isinstance(value, bool):
            return value
        raise InventoryError(f"{what}: {value!r} is not true or false", where=where)


@dataclass(frozen=True)
class ListOf:
    """A non-empty list of ``item`` (one bare value reads as a list of one)."""

    item: Numeric | Text

    def check(self, value: Any, what: str, where: str | None) -> Any:
        items = value if isinstance(value, list) else [value]
        if not items:
            raise InventoryError(f"{what}: an empty list (leave the var out for the default)", where=where)
        return [self.item.check(item, f"{what}[{index}]", where) for index, item in enumerate(items)]


@dataclass(frozen=True)
class Names:
    """A mapping of names to plain values (an environment)."""

    def check(self, value: Any, what: str, where: str | None) -> Any:
        if not isinstance(value, Mapping):
            raise InventoryError(f"{what}: {kind_name(value)}, not a mapping of NAME: value", where=where)
        for key, item in value.items():
            if not isinstance(key, str) or not key:
                raise InventoryError(f"{what}: the name {key!r} is not a string", where=where)
            if item is not None and not isinstance(item, (str, int, float, bool)):
                raise InventoryError(f"{what}.{key}: {kind_name(item)}, not a string or number", where=where)
        return value


@dataclass(frozen=True)
class Rows:
    """A list of mappings (threshold rows); with ``margin``, also ``{margin: N, rows: [...]}``."""

    margin: bool = False

    def check(self, value: Any, what: str, where: str | None) -> Any:
        rows = value
        if self.margin and isinstance(value, Mapping):
            unknown = sorted(str(key) for key in value if key not in ("margin", "rows"))
            if unknown:
                raise InventoryError(f"{what}: unknown key {unknown[0]!r}; expected margin and rows", where=where)
            if value.get("margin") is not None:
                AMOUNT.parse(value["margin"], f"{what}.margin", where=where, error=InventoryError)
            rows = value.get("rows") or []
        if not isinstance(rows, list):
            shape = "a list of rows" + (" or {margin, rows}" if self.margin else "")
            raise InventoryError(f"{what}: {kind_name(rows)}, not {shape}", where=where)
        for index, row in enumerate(rows):
            if not isinstance(row, Mapping):
                raise InventoryError(f"{what}[{index}]: {kind_name(row)}, not a row (a mapping)", where=where)
        return value


VarType = Numeric | Text | Choice | Flag | ListOf | Names | Rows

_SWEEP: dict[str, VarType] = {"sizes": ListOf(Numeric(POSITIVE)), "iters": Numeric(POSITIVE), "warmup": Numeric(COUNT),
          "size_budget_s": Numeric(SECONDS)}

# Every var accelstack reads as a number, a flag or a known value: validate/config.py's host config, the cluster
# checks, the connection, node-check's node file, the reboots. Where a reader has a default, leaving the var out
# (or null) keeps it.
HOST_VARS: dict[str, VarType] = {
    "stack": Text("a stack name"),
    "stack_python": Text("a path"),
    "backend": Choice(tuple(dict.fromkeys(v.backend for v in vendors()))),  # the vendors' backends
    "accelerator": Text("an accelerator name"),
    "expect_devices": Numeric(COUNT),
    "nccl_socket_ifname": Text("an interface name"),
    "hccl_socket_ifname": Text("an interface name"),
    "gloo_socket_ifname": Text("an interface name"),
    "env": Names(),
    "env_file": Text("a path"),
    "ascend_install_path": Text("a path"),
    "checkpoint_dir": Text("a path"),
    "checkpoint_fs": ListOf(Text("a filesystem type")),
    "checkpoint_size_gb": Numeric(AMOUNT),
    "collective_timeout_s": Numeric(SECONDS),
    "storage_probe_mb": Numeric(POSITIVE),
    "min_shm_gb": Numeric(AMOUNT),
    "nproc_per_node": Numeric(POSITIVE),
    "cluster_nproc": Numeric(POSITIVE),
    **{f"validate_{key}": kind for key, kind in _SWEEP.items()},
    **{f"cluster_{key}": kind for key, kind in _SWEEP.items()},
    "health_xid_window_s": Numeric(AMOUNT),
    "thresholds": Rows(margin=True),
    "device_thresholds": Rows(),
    "rendezvous_port": Numeric(PORT),
    "master_port": Numeric(PORT),
    "multinode_deadline_s": Numeric(SECONDS),
    "ssh_keepalive_s": Numeric(AMOUNT),
    "node_keep_runs": Numeric(COUNT),
    "slurm_node": Text("a Slurm node name"),
    "reboot_settle": Numeric(AMOUNT),
    "reboot_expect_new_boot": Flag(),
}


def check_var(name: str, value: Any, where: str | None, what: str | None = None) -> Any:
    """``value`` as the table says ``name`` is (a number from ``"8"``), or InventoryError at ``where`` about
    ``what`` (the var's name by default). A var not in the table, or null (unset), comes back as it is."""
    kind = HOST_VARS.get(name)
    if kind is None or value is None:
        return value
    return kind.check(value, what or name, where)


def check_vars(values: Mapping[str, Any], where_of: Callable[[str], str],
               seen: dict[tuple[Any, ...], Any] | None = None) -> dict[str, Any]:
    """The vars of the table that ``values`` holds, checked: ``{name: value}`` for those whose value changed (a
    number given as text). ``seen`` remembers scalar values already checked at the same place, so a group var
    shared by 100,000 hosts is checked once."""
    changed: dict[str, Any] = {}
    for name in [key for key in values if key in HOST_VARS]:  # a host has a few vars; the table has dozens
        value = values[name]
        scalar = isinstance(value, (str, int, float, bool, type(None)))
        where = where_of(name)
        key = (name, where, type(value), value) if scalar else None
        if key is not None and seen is not None and key in seen:
            checked = seen[key]
        else:
            checked = check_var(name, value, where)
            if key is not None and seen is not None:
                seen[key] = checked
        if checked is not value and (type(checked) is not type(value) or checked != value):
            changed[name] = checked
    return changed
