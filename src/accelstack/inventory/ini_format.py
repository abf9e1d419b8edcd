"""Ansible INI inventories, read as they are.

Sections are ``[group]`` (host lines), ``[group:vars]`` (``key=value`` lines) and ``[group:children]`` (one
group name a line); ``[all:vars]`` sets vars for every host, and host lines before the first section, or in
``[ungrouped]``, belong to no group. A host line is a name (ranges allowed, an optional ``:port`` suffix)
followed by ``key=value`` pairs; values may be quoted with ``'`` or ``"``, and ``#`` starts a comment where a
token would start. Whole-line comments start with ``#`` or ``;``.

Values are coerced as Ansible does for simple literals: unquoted ``true``/``false`` (any case) become booleans
and unquoted decimal integers without a leading zero become ints; everything else, and every quoted value,
stays a string, byte for byte. Unlike Ansible, ``:vars`` values are coerced the same way as inline ones
(Ansible keeps those strings and converts later, in Jinja); quote a value to keep it a string. A ``:vars``
value runs to the end of the line, as in Ansible, so ``#`` there is part of the value.
"""

from __future__ import annotations

import re
from typing import Any

from ..errors import InventoryError
from .draft import Draft, Layer
from .ranges import RangeError, expand_range, split_port_suffix

_SECTION = re.compile(r"\[(?P<name>[^\[\]:\s]+)(?::(?P<kind>[^\[\]\s]*))?\]")
_INT = re.compile(r"[-+]?(?:0|[1-9][0-9]*)")


def coerce_scalar(text: str) -> Any:
    """``true``/``false`` -> bool, a plain decimal integer -> int, anything else unchanged."""
    lowered = text.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if _INT.fullmatch(text):
        return int(text)
    return text


def parse_ini(text: str, display: str) -> Draft:
    """An Ansible INI inventory's text -> :class:`Draft`; ``display`` names the file in errors."""
    draft = Draft(display=display)
    draft.all_vars.where = f"{display}:1"
    # Host lines before the first section are ungrouped, exactly like an [all] section.
    group, kind = "all", "hosts"
    for lineno, raw in enumerate(text.splitlines(), start=1):
        where = f"{display}:{lineno}"
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("["):
            group, kind = _parse_section(line, where, draft)
        elif kind == "hosts":
            _parse_host_line(line, where, group, draft)
        elif kind == "vars":
            key, value = _parse_var_line(line, where)
            target = draft.all_vars if group == "all" else draft.groups[group].inline
            target.vars[key] = value
            target.lines[key] = where
        else:
            _parse_child_line(line, where, group, draft)
    return draft


def _parse_section(line: str, where: str, draft: Draft) -> tuple[str, str]:
    header = line.split("#", 1)[0].split(";", 1)[0].strip() if "]" in line else line
    match = _SECTION.fullmatch(header)
    if match is None:
        raise InventoryError(f"malformed section header {line!r}; expected [group], [group:vars] or "
                             "[group:children]", where=where)
    name, kind = match.group("name"), match.group("kind")
    if kind is None:
        kind = "hosts"
    elif kind not in ("vars", "children"):
        raise InventoryError(f"unknown section type ':{kind}' in {line!r}; expected :vars or :children",
                             where=where)
    if name != "all":
        draft.group(name, where)
    elif kind == "children":
        raise InventoryError("[all:children] is not needed: every group is already a child of all", where=where)
    return name, kind


def _parse_host_line(line: str, where: str, group: str, draft: Draft) -> None:
    try:
        tokens = _tokenize(line)
    except ValueError as err:
        raise InventoryError(f"{err} in {line!r}", where=where) from None
    if not tokens:
        return
    (pattern, _), rest = tokens[0], tokens[1:]
    if "=" in pattern:
        raise InventoryError(f"a host line starts with the host name, not {pattern!r}", where=where)
    inline = Layer(where=where)
    pattern, port = split_port_suffix(pattern)
    if port is not None:
        inline.vars["ansible_port"] = port
        inline.lines["ansible_port"] = where
    for token, value_quoted in rest:
        key, sep, value = token.partition("=")
        if not sep or not key:
            raise InventoryError(f"expected key=value after the host name, got {token!r}", where=where)
        inline.vars[key] = value if value_quoted else coerce_scalar(value)
        inline.lines[key] = where
    try:
        names = expand_range(pattern)
    except RangeError as err:
        raise InventoryError(str(err), where=where) from None
    for name in names:
        draft.define_host(name, Layer(dict(inline.vars), dict(inline.lines), where), where)
        if group != "all":
            draft.add_member(group, name, where)


def _parse_var_line(line: str, where: str) -> tuple[str, Any]:
    key, sep, value = line.partition("=")
    key, value = key.strip(), value.strip()
    if not sep or not key or any(ch.isspace() for ch in key):
        raise InventoryError(f"expected key=value in a :vars section, got {line!r}", where=where)
    if len(value) >= 2 and value[0] in "'\"" and value[-1] == value[0]:
        return key, value[1:-1]
    return key, coerce_scalar(value)


def _parse_child_line(line: str, where: str, group: str, draft: Draft) -> None:
    name = line.split("#", 1)[0].strip()
    if not name or any(ch.isspace() or ch == "=" for ch in name):
        raise InventoryError(f"expected one group name a line in [{group}:children], got {line!r}", where=where)
    if name == group:
        raise InventoryError(f"group {group} cannot be its own child", where=where)
    draft.group(name, where, defined=False)
    draft.add_child(group, name, where)


def _tokenize(line: str) -> list[tuple[str, bool]]:
    """Split a host line shell-style; each token comes with whether its value part (after ``=``) was quoted.

    ``shlex`` forgets quoting, and quoting is what tells ``port="22"`` (a string) from ``port=22`` (an int).
    """
    tokens: list[tuple[str, bool]] = []
    buf: list[str] = []
    in_token = quoted_value = False
    i, n = 0, len(line)
    while i < n:
        ch = line[i]
        if ch in " \t":
            if in_token:
                tokens.append(("".join(buf), quoted_value))
                buf, in_token, quoted_value = [], False, False
            i += 1
        elif ch == "#" and not in_token:
            break
        elif ch in "'\"":
            end, content = _read_quoted(line, i)
            if "=" in "".join(buf):
                quoted_value = True
            buf.append(content)
            in_token = True
            i = end + 1
        else:
            buf.append(ch)
            in_token = True
            i += 1
    if in_token:
        tokens.append(("".join(buf), quoted_value))
    return tokens


def _read_quoted(line: str, start: int) -> tuple[int, str]:
    quote = line[start]
    out: list[str] = []
    i = start + 1
    while i < len(line):
        ch = line[i]
        if ch == quote:
            return i, "".join(out)
        if ch == "\\" and quote == '"' and i + 1 < len(line) and line[i + 1] in '"\\':
            out.append(line[i + 1])
            i += 2
            continue
        out.append(ch)
        i += 1
    raise ValueError(f"unterminated {quote} quote")
