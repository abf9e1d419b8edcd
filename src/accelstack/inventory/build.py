"""From a :class:`Draft` to an :class:`Inventory`: whole-file checks, vars layered by precedence, and the
connection settings taken out of the merged vars and checked.

The precedence order is written once, in :mod:`accelstack.inventory`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import InventoryError
from ..yamlfile import MarkedDict, kind_name, read_text
from .draft import CONNECTION_KEYS, Draft, Layer, normalized
from .model import Group, Host, Inventory
from .vartypes import check_vars
from .yaml_format import load_inventory_yaml

CONNECTION_FIELDS = frozenset(CONNECTION_KEYS.values())
# Ansible's own transports that are ssh by another name; anything else (docker, winrm, ...) we cannot drive.
_SSH_CONNECTIONS = frozenset({"ssh", "smart", "paramiko", "paramiko_ssh"})


def merge_layers(*layers: Mapping[str, Any] | None) -> dict[str, Any]:
    """Merge vars dicts; later ones win, nested dicts are merged key by key, lists are replaced.

    The result shares nothing with the inputs, so callers may change it freely.
    """
    result: dict[str, Any] = {}
    for layer in layers:
        if not layer:
            continue
        for key, value in layer.items():
            if isinstance(value, Mapping) and isinstance(result.get(key), dict):
                result[key] = merge_layers(result[key], value)
            else:
                result[key] = _plain(value)
    return result


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    return value


def display_path(path: Path) -> str:
    """``path`` relative to the current folder when it is below it: short, and what the user typed."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except (ValueError, OSError):
        return str(path)


def build_inventory(draft: Draft, path: Path, name: str) -> Inventory:
    _resolve_host_refs(draft)
    for group in draft.groups.values():
        if not group.defined:
            raise InventoryError(f"group {group.name} is used as a child but is never defined", where=group.source)
    depth = _group_depths(draft)
    grouped = {host for group in draft.groups.values() for host in group.hosts}
    for host in draft.hosts:
        if host not in grouped:
            draft.group("ungrouped", draft.display)
            draft.add_member("ungrouped", host, draft.hosts[host].source)
    depth.setdefault("ungrouped", 1)
    if not draft.hosts:
        raise InventoryError("the inventory defines no host", where=f"{draft.display}:1")

    parents: dict[str, list[str]] = {group: [] for group in draft.groups}
    for group in draft.groups.values():
        for child in group.children:
            parents[child].append(group.name)
    host_groups: dict[str, set[str]] = {host: set() for host in draft.hosts}
    for group in draft.groups.values():
        ancestors = _ancestors(group.name, parents)  # once per group, not once per member
        for host in group.hosts:
            host_groups[host].update(ancestors)

    base = path.parent
    group_files = _VarsFiles(base / "group_vars")
    host_files = _VarsFiles(base / "host_vars")
    all_layers = [normalized(draft.all_vars)] + group_files.layers("all")
    group_inline = {name: normalized(group.inline) for name, group in draft.groups.items()}

    hosts: dict[str, Host] = {}
    checked: dict[tuple[Any, ...], Any] = {}  # a var's value at one place, checked once for every host that has it
    for host_name, draft_host in draft.hosts.items():
        ordered = sorted(host_groups[host_name], key=lambda g: (depth[g], g))
        layers = (
            all_layers[:1]
            + [group_inline[g] for g in ordered]
            + all_layers[1:]
            + [layer for g in ordered for layer in group_files.layers(g)]
            + [draft_host.inline]
            + host_files.layers(host_name)
        )
        hosts[host_name] = _make_host(host_name, layers, tuple(ordered), draft_host.source, base, checked)

    groups = {
        "all": Group("all", hosts=list(draft.hosts),
                     children=[g for g in draft.groups if not parents[g]],
                     vars=merge_layers(draft.all_vars.vars), source=draft.display),
    }
    for group_name, group in draft.groups.items():
        groups[group_name] = Group(
            group_name,
            hosts=list(group.hosts),
            children=list(group.children),
            vars=merge_layers(group.inline.vars),
            source=group.source,
        )
    return Inventory(path=path, name=name, hosts=hosts, groups=groups)


def _resolve_host_refs(draft: Draft) -> None:
    for group, host, where in draft.host_refs:
        if host in draft.hosts:
            draft.add_member(group, host, where)
        elif host in draft.groups:
            raise InventoryError(f"group {group} lists {host} under hosts, but {host} is a group",
                                 where=where, hint=f"list it under children: [{host}]")
        else:
            raise InventoryError(f"group {group} lists host {host}, which is not defined", where=where,
                                 hint="define it under the top-level hosts:, or give the group's hosts as a "
                                      "mapping to define them there")


def _group_depths(draft: Draft) -> dict[str, int]:
    """Depth below ``all`` (top-level groups are 1); a cycle among children is an error.

    Walked with a stack of its own, not by recursion: a chain of 3000 nested groups is a legal inventory (if an odd
    one), and recursion stopped it with a RecursionError."""
    parents: dict[str, list[tuple[str, str]]] = {name: [] for name in draft.groups}
    for group in draft.groups.values():
        for child, where in group.children.items():
            parents[child].append((group.name, where))
    depth: dict[str, int] = {}
    for start in draft.groups:
        if start in depth:
            continue
        path: list[str] = [start]  # the groups being visited, each a child of the one before
        on_path = {start}
        todo: list[list[tuple[str, str]]] = [list(parents[start])]
        while path:
            if todo[-1]:
                parent, where = todo[-1].pop()
                if parent in depth:
                    continue
                if parent in on_path:
                    cycle = " -> ".join(path[path.index(parent):] + [parent])
                    raise InventoryError(f"groups form a cycle through children: {cycle}", where=where)
                path.append(parent)
                on_path.add(parent)
                todo.append(list(parents[parent]))
                continue
            name = path.pop()
            on_path.discard(name)
            todo.pop()
            depth[name] = 1 + max((depth[parent] for parent, _ in parents[name]), default=0)
    return depth


def _ancestors(group: str, parents: Mapping[str, list[str]]) -> set[str]:
    found: set[str] = set()
    stack = [group]
    while stack:
        current = stack.pop()
        if current not in found:
            found.add(current)
            stack.extend(parents.get(current, []))
    return found


class _VarsFiles:
    """``group_vars/`` or ``host_vars/``: ``NAME.yml``, ``NAME.yaml`` and the yml files below ``NAME/``.

    Files for names the inventory does not have are ignored: inventories in one folder share these folders.
    """

    def __init__(self, folder: Path) -> None:
        self.index: dict[str, list[Path]] = {}
        self.cache: dict[Path, Layer] = {}
        if not folder.is_dir():
            return
        entries = sorted(folder.iterdir())
        for entry in entries:
            if entry.suffix in (".yml", ".yaml") and entry.is_symlink() and not entry.exists():
                # A vars file that links to nothing would silently drop its vars from every host.
                raise InventoryError(f"{entry.name} is a link to {os.readlink(entry)}, which does not exist",
                                     where=display_path(entry))
            if entry.is_file() and entry.suffix in (".yml", ".yaml"):
                self.index.setdefault(entry.stem, []).append(entry)
        for entry in entries:
            if entry.is_dir():
                files = sorted(p for p in entry.rglob("*") if p.is_file() and p.suffix in (".yml", ".yaml"))
                self.index.setdefault(entry.name, []).extend(files)

    def layers(self, name: str) -> list[Layer]:
        return [self._load(path) for path in self.index.get(name, [])]

    def _load(self, path: Path) -> Layer:
        if path in self.cache:
            return self.cache[path]
        display = display_path(path)
        data = load_inventory_yaml(read_text(path, display, error=InventoryError), display)
        layer = Layer(where=f"{display}:1")
        if data is not None:
            if not isinstance(data, MarkedDict):
                raise InventoryError(f"a vars file holds a mapping of names to values, not {kind_name(data)}",
                                     where=f"{display}:1")
            for key, value in data.items():
                if not isinstance(key, str):
                    raise InventoryError(f"variable names are strings, not {key!r}",
                                         where=f"{display}:{data.line_of(key)}")
                layer.vars[key] = value
                layer.lines[key] = f"{display}:{data.line_of(key)}"
        self.cache[path] = normalized(layer)
        return self.cache[path]


def _make_host(name: str, layers: list[Layer], groups: tuple[str, ...], source: str, base: Path,
               checked: dict[tuple[Any, ...], Any] | None = None) -> Host:
    merged = merge_layers(*(layer.vars for layer in layers))
    lines: dict[str, str] = {}
    for layer in layers:
        lines.update(layer.lines)
    settings = {key: merged.pop(key) for key in CONNECTION_FIELDS if key in merged}

    def where(key: str) -> str:
        return lines.get(key, source)

    address = settings.get("address", name)
    if not isinstance(address, str) or not address.strip():
        raise InventoryError(f"host {name}: address {address!r} is not a host name or IP address",
                             where=where("address"))
    connection = settings.get("connection", "ssh")
    if connection in _SSH_CONNECTIONS:
        connection = "ssh"
    elif connection != "local":
        raise InventoryError(f"host {name}: unknown connection {connection!r}; accelstack connects with "
                             "'ssh' or 'local'", where=where("connection"))
    accept = settings.get("accept_new_host_keys", False)
    if not isinstance(accept, bool):
        raise InventoryError(f"host {name}: accept_new_host_keys must be true or false, not {accept!r}",
                             where=where("accept_new_host_keys"))
    # Vars read as numbers or known values (expect_devices, ports, timeouts ...): a typo is exit 3 here, not a
    # host's fail later; a number written as text becomes the number.
    merged.update(check_vars(merged, where, checked))
    user = settings.get("user")
    if isinstance(user, bool) or not isinstance(user, (str, int, type(None))):
        raise InventoryError(f"host {name}: user {user!r} is not a user name", where=where("user"))
    return Host(
        name=name,
        address=address.strip(),
        port=_port(name, settings.get("port", 22), where("port")),
        user=None if user is None else str(user),
        key_file=_path_setting(name, "key", settings.get("key"), base, where("key")),
        connection=connection,
        known_hosts=_path_setting(name, "known_hosts", settings.get("known_hosts"), base, where("known_hosts")),
        accept_new_host_keys=accept,
        groups=groups,
        vars=merged,
        source=source,
        var_lines=lines,
    )


def _port(name: str, value: Any, where: str) -> int:
    port: int | None = None
    if isinstance(value, int) and not isinstance(value, bool):
        port = value
    elif isinstance(value, str) and value.strip().isdigit():
        port = int(value.strip())
    if port is None or not 1 <= port <= 65535:
        raise InventoryError(f"host {name}: port {value!r} is not an integer 1-65535", where=where)
    return port


def _path_setting(name: str, key: str, value: Any, base: Path, where: str) -> str | None:
    """A file path from the inventory; relative ones are relative to the inventory's folder, not the cwd."""
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise InventoryError(f"host {name}: {key} {value!r} is not a file path", where=where)
    expanded = Path(os.path.expanduser(value.strip()))
    return os.path.normpath(expanded if expanded.is_absolute() else base.resolve() / expanded)
