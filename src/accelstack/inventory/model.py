"""The inventory as the rest of accelstack sees it: hosts with their connection settings and merged vars."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InventoryError
from .patterns import select_names


@dataclass(frozen=True)
class Host:
    """One machine. ``vars`` hold everything but the connection settings, merged by precedence.

    ``vars`` is left out of the hash so hosts can sit in sets; treat it as read-only.
    """

    name: str
    address: str
    port: int = 22
    user: str | None = None
    key_file: str | None = None
    connection: str = "ssh"
    known_hosts: str | None = None
    accept_new_host_keys: bool = False
    groups: tuple[str, ...] = ()
    vars: Mapping[str, Any] = field(default_factory=dict, hash=False)
    source: str = ""
    # ``file:line`` of each var as written (the layer that won), for errors that point at a value.
    var_lines: Mapping[str, str] = field(default_factory=dict, hash=False, compare=False, repr=False)

    def where_of(self, key: str) -> str:
        """Where ``key`` was set (``inventories/npu8.yml:3``), else where the host was defined."""
        return self.var_lines.get(key, self.source)

    @property
    def is_local(self) -> bool:
        return self.connection == "local"


@dataclass
class Group:
    """A group as written: its direct ``hosts`` and ``children`` (names), and its own inline ``vars``."""

    name: str
    hosts: list[str] = field(default_factory=list)
    children: list[str] = field(default_factory=list)
    vars: dict[str, Any] = field(default_factory=dict)
    source: str = ""


@dataclass
class Inventory:
    path: Path
    name: str
    hosts: dict[str, Host]
    groups: dict[str, Group]

    def group_hosts(self, group: str) -> list[Host]:
        """Every host in ``group`` or any group below it, in inventory order."""
        members = self._members().get(group)
        if members is None:
            known = ", ".join(sorted(self.groups)) or "none"
            raise InventoryError(f"no group {group!r} in inventory {self.name} (groups: {known})",
                                 where=str(self.path))
        return [self.hosts[name] for name in members]

    def select(self, limit: str | None = None) -> list[Host]:
        """The hosts ``limit`` selects (see :mod:`accelstack.inventory.patterns`); all hosts when None."""
        return [self.hosts[name] for name in select_names(limit, list(self.hosts), self._members())]

    def _members(self) -> dict[str, list[str]]:
        # Groups are fixed once loaded; walking children for every pattern term would be wasted work.
        cached: dict[str, list[str]] | None = self.__dict__.get("_members_cache")
        if cached is not None:
            return cached
        members: dict[str, list[str]] = {}
        order = {name: index for index, name in enumerate(self.hosts)}
        for group in self.groups:
            found: set[str] = set()
            stack, seen = [group], set()
            while stack:
                current = stack.pop()
                if current in seen or current not in self.groups:
                    continue
                seen.add(current)
                found.update(self.groups[current].hosts)
                stack.extend(self.groups[current].children)
            # Inventory order, by sorting the members (not by scanning every host for every group).
            members[group] = sorted((name for name in found if name in order), key=order.__getitem__)
        self.__dict__["_members_cache"] = members
        return members
