"""The inventory: which hosts, how to reach them, and their vars.

An inventory is a YAML file of ours, or an Ansible inventory (INI, or YAML in the ``all:`` form) read as it
is. ``group_vars/`` and ``host_vars/`` beside the file add vars per group and per host, as in Ansible: files
``NAME.yml`` or ``NAME.yaml``, or a folder ``NAME/`` whose yml files are read in name order. Every problem is
an :class:`~accelstack.errors.InventoryError` (exit code 3) naming the file and line, raised before any host
is touched.

Our format::

    vars:                          # every host
      stack: ascend-910b-cann8.1.rc1
      key: id_ed25519              # relative paths are relative to this file's folder
    hosts:
      localhost: {connection: local}
      npu[01:16]:                  # ranges: [01:16] keeps the zero padding, [a:c], [1:16:2] (stride)
        address: 10.0.0.[11:26]    # a range here pairs with the names: npu01 -> 10.0.0.11, ...
        user: root
      npu17: {address: 10.0.0.27, port: 2222, hccl_socket_ifname: eth1}
    groups:
      rack1: {hosts: ["npu[01:08]"]}
      rack2: {hosts: ["npu[09:17]"], vars: {hccl_socket_ifname: eth2}}
      npu: {children: [rack1, rack2], vars: {expect_devices: 8}}

Quote a name with a range inside a flow list or mapping (``["npu[01:08]"]``): YAML would read its brackets
as a nested list. A group's ``hosts:`` list names hosts defined under the top-level ``hosts:``; as a mapping
it defines them in place.

A host entry (or vars at any level) may set the connection settings ``address`` (default: the host name),
``port`` (22), ``user``, ``key`` (private key file), ``connection`` (``ssh`` or ``local``), ``known_hosts``
(default ``~/.ssh/known_hosts``) and ``accept_new_host_keys`` (false); Ansible's ``ansible_host``,
``ansible_port``, ``ansible_user``, ``ansible_ssh_private_key_file`` and ``ansible_connection`` mean the same
in either format. These become :class:`Host` fields; every other key stays in ``Host.vars``.

Variable precedence, lowest first (later wins; nested mappings are merged key by key, lists are replaced):

1. role defaults
2. inventory ``vars`` (Ansible: ``all: vars`` / ``[all:vars]``)
3. group vars in the inventory file, parents before children, groups at the same depth in name order
4. ``group_vars/`` files: ``all`` first, then groups in the same order as 3
5. host vars in the inventory file (a host entry, or inline ``key=value`` on an INI host line)
6. ``host_vars/`` files
7. the stack
8. the command line

The inventory applies 2 to 6 into ``Host.vars``; the other layers use :func:`merge_layers` for the rest.
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import replace
from pathlib import Path

from ..errors import InventoryError
from ..paths import project_root
from ..yamlfile import MarkedDict, read_text
from .build import build_inventory, display_path, merge_layers
from .draft import Draft
from .ini_format import parse_ini
from .model import Group, Host, Inventory
from .yaml_format import load_inventory_yaml, looks_like_ansible, parse_yaml, parse_yaml_data

__all__ = ["Group", "Host", "Inventory", "load_inventory", "merge_layers", "resolve_inventory_path"]

DEFAULT_INVENTORY = "local"
_SUFFIXES = (".yml", ".yaml", ".ini", "")
_INI_SECTION = re.compile(r"^\s*\[[^\[\]]+\]\s*(?:[#;].*)?$", re.MULTILINE)


def load_inventory(name_or_path: str | None = None, *, search_dir: Path | None = None) -> Inventory:
    """Read and check an inventory.

    ``None`` is the embedded default (``inventories/local.yml``); a bare name such as ``npu8`` is looked up in
    ``search_dir`` (default ``<project root>/inventories``) as ``npu8.yml``, ``.yaml``, ``.ini`` or ``npu8``;
    anything with a folder in it is a path, used as it is.
    """
    path = resolve_inventory_path(name_or_path, search_dir=search_dir)
    display = display_path(path)
    draft = _parse(path, display)
    name = path.stem if path.suffix in _SUFFIXES else path.name
    inventory = build_inventory(draft, path, name)
    if (name_or_path is None or name_or_path.strip() == DEFAULT_INVENTORY) and name == DEFAULT_INVENTORY:
        _python_that_runs_us(inventory)
    return inventory


def _python_that_runs_us(inventory: Inventory) -> None:
    """The embedded default's local hosts run torch with the interpreter that runs accelstack, unless the file
    names one: ``venv/bin/accelstack validate`` from cron has no activated venv, and ``python3`` on PATH
    would be the system's, without the torch installed beside accelstack."""
    for host_name, host in inventory.hosts.items():
        if host.is_local and not host.vars.get("stack_python"):
            inventory.hosts[host_name] = replace(host, vars={**host.vars, "stack_python": sys.executable})


def resolve_inventory_path(name_or_path: str | None, *, search_dir: Path | None = None) -> Path:
    folder = search_dir if search_dir is not None else project_root() / "inventories"
    if name_or_path is not None and not name_or_path.strip():
        # `--inventory "$INV"` with the variable unset: this machine is not what was meant.
        raise InventoryError("--inventory '' names no inventory",
                             hint="leave --inventory out for the embedded default (this machine); "
                                  + _available_hint(folder))
    name = DEFAULT_INVENTORY if name_or_path is None else name_or_path.strip()
    as_path = Path(name).expanduser()
    if "/" in name or "\\" in name or name.startswith((".", "~")) or as_path.is_absolute():
        if not as_path.is_file():
            raise InventoryError(f"no inventory file at {name}", where=str(as_path),
                                 hint=_available_hint(folder))
        return as_path
    for suffix in _SUFFIXES:
        candidate = folder / f"{name}{suffix}"
        if candidate.is_file():
            return candidate
    if as_path.is_file():
        return as_path
    tried = ", ".join(f"{name}{suffix}" for suffix in _SUFFIXES)
    raise InventoryError(f"no inventory named {name!r} (looked for {tried} in {display_path(folder)})",
                         where=display_path(folder), hint=_available_hint(folder))


def available_inventories(folder: Path) -> list[str]:
    """Names that :func:`load_inventory` would accept in ``folder``."""
    if not folder.is_dir():
        return []
    names = set()
    for entry in folder.iterdir():
        if entry.is_file() and not entry.name.startswith("."):
            names.add(entry.stem if entry.suffix in _SUFFIXES else entry.name)
    return sorted(names)


def _available_hint(folder: Path) -> str:
    names = available_inventories(folder)
    home = os.environ.get("ACCELSTACK_HOME", "").strip()
    if not names and home and not folder.is_dir():
        return f"ACCELSTACK_HOME is {home}, which holds no inventories/ folder: point it at a project folder"
    if not names:
        return f"{display_path(folder)} holds no inventory"
    return f"available in {display_path(folder)}: {', '.join(names)}"


def _parse(path: Path, display: str) -> Draft:
    text = read_text(path, display, error=InventoryError)
    suffix = path.suffix.lower()
    if suffix in (".yml", ".yaml", ".json"):
        return parse_yaml(text, display)
    if suffix == ".ini" or _INI_SECTION.search(text):
        return parse_ini(text, display)
    # No telling suffix and no [section]: Ansible's `hosts` file of bare host lines, or YAML.
    try:
        data = load_inventory_yaml(text, display)
    except InventoryError:
        return parse_ini(text, display)
    if isinstance(data, MarkedDict) and (looks_like_ansible(data) or {"vars", "hosts", "groups"} & set(data)):
        return parse_yaml_data(data, display)
    return parse_ini(text, display)
