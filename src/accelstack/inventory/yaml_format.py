"""YAML inventories: ours, and Ansible's ``all:``/``children:``/``hosts:``/``vars:`` form.

Which one a file is: a top level with an ``all:`` key, or whose every key looks like an Ansible group (a
mapping of ``hosts``/``children``/``vars``, or empty), is Ansible YAML; otherwise it is ours, and a top-level
key other than ``vars``, ``hosts`` or ``groups`` is an error (a typo such as ``group:`` must not pass silently).

In our format, ``hosts:`` at the top level defines hosts; a group's ``hosts:`` either lists names defined
there (a typo is an error) or, as a mapping, defines hosts in place. In a range entry (``node[01:16]``) an
``address`` or ``port`` that holds a range of the same length is paired with the names in order
(``address: 10.0.0.[11:26]``).

In Ansible YAML, a child group with an empty body (``k8s_cluster: {children: {kube_node:}}``) refers to a
group defined elsewhere in the file; one never defined is an error, where Ansible would make an empty group.
Empty groups directly under ``all.children`` are definitions, as in Ansible.
"""

from __future__ import annotations

from typing import Any

from ..errors import InventoryError
from ..yamlfile import MarkedDict, MarkedList, kind_name, load_marked
from .draft import Draft, Layer
from .ranges import RangeError, expand_range, has_range, split_port_suffix

NATIVE_KEYS = frozenset({"vars", "hosts", "groups"})
GROUP_KEYS = frozenset({"hosts", "children", "vars"})


def load_inventory_yaml(text: str, display: str) -> Any:
    """One YAML document of an inventory (or a vars file): errors are :class:`InventoryError` at file:line."""
    return load_marked(text, display, error=InventoryError, hint_for=_range_hint)


def _range_hint(problem: str) -> str | None:
    if "but got '['" in problem:
        # The usual cause: `hosts: [node[01:08]]`, where YAML reads the range's brackets as a nested list.
        return 'quote a host range inside [...] or {...}: ["node[01:08]"]'
    return None


def parse_yaml(text: str, display: str) -> Draft:
    """A YAML inventory's text -> :class:`Draft` (either form); ``display`` names the file in errors."""
    return parse_yaml_data(load_inventory_yaml(text, display), display)


def looks_like_ansible(data: Any) -> bool:
    if not isinstance(data, dict) or not data:
        return False
    if "all" in data:
        return True
    if set(data) & NATIVE_KEYS:
        return False
    return all(value is None or (isinstance(value, dict) and set(value) <= GROUP_KEYS) for value in data.values())


def parse_yaml_data(data: Any, display: str) -> Draft:
    if data is None:
        raise InventoryError("the inventory is empty", where=f"{display}:1")
    if not isinstance(data, MarkedDict):
        line = data.line if isinstance(data, MarkedList) else 1
        raise InventoryError(f"an inventory is a mapping at the top level, not {kind_name(data)}",
                             where=f"{display}:{line}")
    draft = Draft(display=display)
    draft.all_vars.where = f"{display}:1"
    if looks_like_ansible(data):
        for name, body in data.items():
            where = f"{display}:{data.line_of(name)}"
            _ansible_group(draft, _name(name, where, "group"), body, where, parent=None)
    else:
        _native(draft, data)
    return draft


def _native(draft: Draft, data: MarkedDict) -> None:
    display = draft.display
    for key in data:
        if key not in NATIVE_KEYS:
            raise InventoryError(f"unknown top-level key {key!r}; expected vars, hosts or groups",
                                 where=f"{display}:{data.line_of(key)}")
    if "vars" in data:
        draft.all_vars.update(_layer(data["vars"], display, f"{display}:{data.line_of('vars')}"))
    if "hosts" in data:
        _native_hosts(draft, data["hosts"], f"{display}:{data.line_of('hosts')}", group=None)
    groups = data.get("groups")
    if groups is None:
        return
    if not isinstance(groups, MarkedDict):
        raise InventoryError("groups must be a mapping of group name to {hosts, children, vars}",
                             where=f"{display}:{data.line_of('groups')}")
    for raw_name, body in groups.items():
        where = f"{display}:{groups.line_of(raw_name)}"
        name = _name(raw_name, where, "group")
        group = draft.group(name, where)
        if body is None:
            continue
        _check_group_body(name, body, where)
        if "vars" in body:
            group.inline.update(_layer(body["vars"], display, f"{display}:{body.line_of('vars')}"))
        if "hosts" in body:
            _native_hosts(draft, body["hosts"], f"{display}:{body.line_of('hosts')}", group=name)
        for child, child_where in _names_list(body.get("children"), display, f"{display}:{body.line_of('children')}"):
            if child == name:
                raise InventoryError(f"group {name} cannot be its own child", where=child_where)
            draft.group(child, child_where, defined=False)
            draft.add_child(name, child, child_where)


def _native_hosts(draft: Draft, value: Any, where: str, *, group: str | None) -> None:
    display = draft.display
    if value is None:
        return
    if isinstance(value, MarkedList) and group is None:
        # A list here would make each name a host reached at its own name, with no settings: easy to write
        # by mistake (for a group's list) and silently wrong, so it is refused.
        raise InventoryError("the top-level hosts: is a mapping of host name to settings, not a list",
                             where=where, hint="write each host as `name: {address: ...}` (or `name: {}`); "
                                               "a list of names belongs under a group's hosts:")
    if isinstance(value, MarkedList):
        for pattern, item_where in _names_list(value, display, where):
            for name in _expand(pattern, item_where):
                if group is None:
                    draft.define_host(name, Layer(where=item_where), item_where)
                else:
                    draft.host_refs.append((group, name, item_where))
        return
    if not isinstance(value, MarkedDict):
        raise InventoryError("hosts must be a mapping of host name to settings, or a list of names", where=where)
    for raw_pattern, entry in value.items():
        entry_where = f"{display}:{value.line_of(raw_pattern)}"
        names = _expand(_name(raw_pattern, entry_where, "host"), entry_where)
        layer = _layer(entry, display, entry_where, what="host entry")
        paired = _paired_values(layer, names)
        for index, name in enumerate(names):
            host_layer = Layer(dict(layer.vars), dict(layer.lines), entry_where)
            for key, values in paired.items():
                host_layer.vars[key] = values[index]
            draft.define_host(name, host_layer, entry_where)
            if group is not None:
                draft.add_member(group, name, entry_where)


def _paired_values(layer: Layer, names: list[str]) -> dict[str, list[str]]:
    """``address``/``port`` ranges in a range entry, one value per name."""
    paired: dict[str, list[str]] = {}
    for key in ("address", "port", "ansible_host", "ansible_port"):
        value = layer.vars.get(key)
        if not isinstance(value, str) or not has_range(value):
            continue
        values = _expand(value, layer.where_of(key))
        if len(values) != len(names):
            raise InventoryError(
                f"{key} {value!r} gives {len(values)} values for {len(names)} hosts; a range in {key} is paired "
                "with the host names one to one",
                where=layer.where_of(key),
            )
        paired[key] = values
    return paired


def _ansible_group(draft: Draft, name: str, body: Any, where: str, *, parent: str | None) -> None:
    display = draft.display
    if name != "all":
        # Under ``all`` (or at the top) an empty body declares an empty group; deeper, it refers to one.
        draft.group(name, where, defined=body is not None or parent in (None, "all"))
        if parent not in (None, "all"):
            assert parent is not None
            if name == parent:
                raise InventoryError(f"group {name} cannot be its own child", where=where)
            draft.add_child(parent, name, where)
    if body is None:
        return
    _check_group_body(name, body, where)
    if "vars" in body:
        layer = _layer(body["vars"], display, f"{display}:{body.line_of('vars')}")
        (draft.all_vars if name == "all" else draft.groups[name].inline).update(layer)
    hosts = body.get("hosts")
    if hosts is not None:
        if not isinstance(hosts, MarkedDict):
            raise InventoryError(f"hosts of group {name} must be a mapping of host name to vars",
                                 where=f"{display}:{body.line_of('hosts')}")
        for raw_pattern, entry in hosts.items():
            entry_where = f"{display}:{hosts.line_of(raw_pattern)}"
            pattern, port = split_port_suffix(_name(raw_pattern, entry_where, "host"))
            layer = _layer(entry, display, entry_where, what="host entry")
            if port is not None:
                layer.vars["ansible_port"] = port
                layer.lines["ansible_port"] = entry_where
            for host in _expand(pattern, entry_where):
                draft.define_host(host, Layer(dict(layer.vars), dict(layer.lines), entry_where), entry_where)
                if name != "all":
                    draft.add_member(name, host, entry_where)
    children = body.get("children")
    if children is not None:
        if not isinstance(children, MarkedDict):
            raise InventoryError(f"children of group {name} must be a mapping of group name to group",
                                 where=f"{display}:{body.line_of('children')}")
        for raw_child, child_body in children.items():
            child_where = f"{display}:{children.line_of(raw_child)}"
            _ansible_group(draft, _name(raw_child, child_where, "group"), child_body, child_where, parent=name)


def _check_group_body(name: str, body: Any, where: str) -> None:
    if not isinstance(body, MarkedDict):
        raise InventoryError(f"group {name} must be a mapping with hosts, children and vars", where=where)
    for key in body:
        if key not in GROUP_KEYS:
            line = body.line_of(key)
            raise InventoryError(f"unknown key {key!r} in group {name}; expected hosts, children or vars",
                                 where=f"{where.rsplit(':', 1)[0]}:{line}")


def _layer(value: Any, display: str, where: str, *, what: str = "vars") -> Layer:
    if value is None:
        return Layer(where=where)
    if not isinstance(value, MarkedDict):
        raise InventoryError(f"{what} must be a mapping of names to values, not {kind_name(value)}",
                             where=where)
    layer = Layer(where=where)
    for key, item in value.items():
        key_where = f"{display}:{value.line_of(key)}"
        if not isinstance(key, str):
            raise InventoryError(f"variable names are strings, not {key!r}", where=key_where)
        layer.vars[key] = item
        layer.lines[key] = key_where
    return layer


def _names_list(value: Any, display: str, where: str) -> list[tuple[str, str]]:
    """A list of names (or a mapping whose values are all empty, Ansible's habit) with each one's location."""
    if value is None:
        return []
    if isinstance(value, MarkedList):
        out = []
        for index, item in enumerate(value):
            item_where = f"{display}:{value.line_of(index)}"
            out.append((_name(item, item_where, "name"), item_where))
        return out
    if isinstance(value, MarkedDict) and all(item is None for item in value.values()):
        return [(_name(key, f"{display}:{value.line_of(key)}", "name"), f"{display}:{value.line_of(key)}")
                for key in value]
    raise InventoryError("expected a list of names", where=where)


def _name(value: Any, where: str, what: str) -> str:
    # YAML reads a bare ``1`` or ``10.1`` as a number; names are text, so say so rather than guess.
    if not isinstance(value, str) or not value.strip():
        raise InventoryError(f"a {what} must be a non-empty string, not {value!r} (quote it)", where=where)
    return value.strip()


def _expand(pattern: str, where: str) -> list[str]:
    try:
        return expand_range(pattern)
    except RangeError as err:
        raise InventoryError(str(err), where=where) from None
