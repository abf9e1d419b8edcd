"""What a parser hands to the builder: hosts, groups and vars as written, each with where it was written.

Both parsers (our YAML, Ansible INI and YAML) fill a :class:`Draft` through the same few methods, so the rules
that do not depend on the syntax live once: a host defined twice with a different address or port is an
error, a host in two groups is not, vars given twice for one host merge (the later definition wins).
Checks that need the whole file (a child group that is never defined, a cycle) run in the builder.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..errors import InventoryError
from .ranges import MAX_HOSTS

# Ansible's names for the connection settings, mapped onto ours; the ``ansible_ssh_*`` forms are the pre-2.0
# spellings that old inventories (DeepOps among them) still carry.
CONNECTION_KEYS: dict[str, str] = {
    "address": "address",
    "ansible_host": "address",
    "ansible_ssh_host": "address",
    "port": "port",
    "ansible_port": "port",
    "ansible_ssh_port": "port",
    "user": "user",
    "ansible_user": "user",
    "ansible_ssh_user": "user",
    "key": "key",
    "ansible_ssh_private_key_file": "key",
    "ansible_private_key_file": "key",
    "connection": "connection",
    "ansible_connection": "connection",
    "known_hosts": "known_hosts",
    "accept_new_host_keys": "accept_new_host_keys",
}


@dataclass
class Layer:
    """One set of vars from one place, with ``lines[key]`` = ``"file:line"`` of each key."""

    vars: dict[str, Any] = field(default_factory=dict)
    lines: dict[str, str] = field(default_factory=dict)
    where: str = ""

    def where_of(self, key: str) -> str:
        return self.lines.get(key, self.where)

    def update(self, other: Layer) -> None:
        """Later values win, key by key (nested dicts are merged by the builder, not here)."""
        self.vars.update(other.vars)
        self.lines.update(other.lines)


def normalized(layer: Layer) -> Layer:
    """The layer with Ansible's connection names renamed to ours, so later layers override either spelling."""
    out = Layer(where=layer.where)
    for key, value in layer.vars.items():
        canonical = CONNECTION_KEYS.get(key, key) if isinstance(key, str) else key
        # Only two spellings of one setting can collide here: a dict holds each key once.
        if canonical in out.vars and out.vars[canonical] != value:
            raise InventoryError(
                f"{key}={value!r} contradicts the {canonical} {out.vars[canonical]!r} given at "
                f"{out.where_of(canonical)}; give one of them",
                where=layer.where_of(key),
            )
        out.vars[canonical] = value
        out.lines[canonical] = layer.where_of(key)
    return out


@dataclass
class DraftHost:
    name: str
    source: str
    inline: Layer


@dataclass
class DraftGroup:
    name: str
    source: str
    defined: bool = False
    # name -> where it was listed; a dict (insertion-ordered) so adding a member is O(1), not a scan of the
    # list (that made a 20k-host group take 14 s to load).
    hosts: dict[str, str] = field(default_factory=dict)
    children: dict[str, str] = field(default_factory=dict)
    inline: Layer = field(default_factory=Layer)


@dataclass
class Draft:
    display: str
    all_vars: Layer = field(default_factory=Layer)
    hosts: dict[str, DraftHost] = field(default_factory=dict)
    groups: dict[str, DraftGroup] = field(default_factory=dict)
    # Names a group lists without defining them (our format's ``hosts: [node01]``); checked once all is read.
    host_refs: list[tuple[str, str, str]] = field(default_factory=list)

    def define_host(self, name: str, inline: Layer, where: str) -> DraftHost:
        """A host entry with its vars; a second entry for the same name merges unless it moves the host."""
        if not name or any(ch.isspace() for ch in name):
            raise InventoryError(f"invalid host name {name!r}", where=where)
        inline = normalized(inline)
        existing = self.hosts.get(name)
        if existing is None:
            if len(self.hosts) >= MAX_HOSTS:
                raise InventoryError(f"host {name} would be host {MAX_HOSTS + 1:,}; an inventory holds at most "
                                     f"{MAX_HOSTS:,}",
                                     where=where, hint="split the fleet into several inventories")
            host = DraftHost(name=name, source=where, inline=inline)
            self.hosts[name] = host
            return host
        for key in ("address", "port"):
            if key in inline.vars and key in existing.inline.vars:
                old, new = existing.inline.vars[key], inline.vars[key]
                if str(old) != str(new):
                    raise InventoryError(
                        f"host {name} is defined twice with a different {key}: {new!r} here, {old!r} at "
                        f"{existing.inline.where_of(key)}",
                        where=inline.where_of(key),
                        hint="a host may sit in many groups, but it has one address and one port",
                    )
        existing.inline.update(inline)
        return existing

    def group(self, name: str, where: str, *, defined: bool = True) -> DraftGroup:
        if not name or any(ch.isspace() for ch in name) or any(ch in name for ch in "[],:!&*?~"):
            raise InventoryError(f"invalid group name {name!r}", where=where)
        group = self.groups.get(name)
        if group is None:
            group = DraftGroup(name=name, source=where, defined=defined)
            self.groups[name] = group
        elif defined and not group.defined:
            group.defined = True
            group.source = where
        return group

    def add_member(self, group: str, host: str, where: str) -> None:
        self.groups[group].hosts.setdefault(host, where)

    def add_child(self, parent: str, child: str, where: str) -> None:
        self.groups[parent].children.setdefault(child, where)
