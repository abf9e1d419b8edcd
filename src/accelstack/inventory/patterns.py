"""``--limit`` host patterns, with Ansible's semantics.

A limit is terms separated by ``,`` or ``:`` (a colon inside a ``[begin:end]`` range does not separate). A
term is ``all`` or ``*``; a group name (its hosts, through children); a host name; a glob (``node0*``,
``lab[1-3]``, matched against host and group names); a range (``node[01:04]``: a term holding
``[begin:end]`` is a range, never a glob class); or ``~regex`` (searched in host and group names). ``!term``
excludes, ``&term`` intersects. As in Ansible, plain terms are joined first, then intersections, then
exclusions, whatever their order in the limit; a limit of only ``!``/``&`` terms starts from ``all``.

Stricter than Ansible, which only warns: a plain or ``&`` term that matches no host is an error, because a
typo in ``--limit`` would otherwise shrink the run without a word. An ``!`` term that matches nothing is
fine (excluding a host that was since removed must not break a nightly job). The hosts come back in
inventory order.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from fnmatch import fnmatchcase

from ..errors import InventoryError
from .ranges import RangeError, expand_range, has_range

_GLOB_CHARS = frozenset("*?[")


def split_terms(limit: str) -> list[str]:
    """``"npu,!npu03:gpu*"`` -> ``["npu", "!npu03", "gpu*"]``; separators inside ``[...]`` are kept."""
    terms: list[str] = []
    depth = 0
    current: list[str] = []
    for ch in limit:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth = max(depth - 1, 0)
        if ch in ",:" and depth == 0:
            terms.append("".join(current).strip())
            current = []
        else:
            current.append(ch)
    terms.append("".join(current).strip())
    return [term for term in terms if term]


def select_names(limit: str | None, hosts: Sequence[str], groups: Mapping[str, Sequence[str]]) -> list[str]:
    """The host names ``limit`` selects, in the order of ``hosts``.

    ``groups`` maps every group name to all of its hosts (children included).
    """
    if limit is None:
        return list(hosts)
    terms = split_terms(limit)
    if not terms:
        # `--limit "$HOSTS"` with the variable unset must not provision the whole fleet.
        raise InventoryError(f"{limit!r} names no host or group", where="--limit",
                             hint="leave --limit out to select every host, or name them: --limit all")
    for term in terms:
        if term in ("!", "&"):
            raise InventoryError(f"term {term!r} (in {limit!r}) names nothing after {term}", where="--limit",
                                 hint="write !HOST or &GROUP, without a space")
    plain = [term for term in terms if term[0] not in "!&"]
    intersect = [term[1:].strip() for term in terms if term[0] == "&"]  # "! npu03" means "!npu03"
    exclude = [term[1:].strip() for term in terms if term[0] == "!"]
    host_set = set(hosts)
    selected: set[str] = set()
    for term in plain or ["all"]:
        matched = match_term(term, hosts, host_set, groups)
        if not matched:
            raise _no_match(term, limit, groups)
        selected |= matched
    for term in intersect:
        matched = match_term(term, hosts, host_set, groups)
        if not matched:
            raise _no_match(f"&{term}", limit, groups)
        selected &= matched
    for term in exclude:
        selected -= match_term(term, hosts, host_set, groups)
    if not selected:
        raise InventoryError(f"{limit!r} selects no host (its terms match, but nothing is left after "
                             "'&' and '!')", where="--limit")
    return [name for name in hosts if name in selected]


def match_term(
    term: str, hosts: Sequence[str], host_set: set[str], groups: Mapping[str, Sequence[str]]
) -> set[str]:
    if term in ("all", "*"):
        return set(hosts)
    if term.startswith("~"):
        try:
            regex = re.compile(term[1:])
        except re.error as err:
            raise InventoryError(f"bad regular expression in term {term!r}: {err}", where="--limit") from None
        return _union(
            [name for name in hosts if regex.search(name)],
            [name for name in groups if regex.search(name)],
            groups,
        )
    if has_range(term):
        try:
            names = expand_range(term)
        except RangeError as err:
            raise InventoryError(f"term {term!r}: {err}", where="--limit") from None
        out: set[str] = set()
        for name in names:
            out |= match_term(name, hosts, host_set, groups)
        return out
    # A group wins over a host of the same name, as in Ansible.
    if term in groups:
        return set(groups[term])
    if term in host_set:
        return {term}
    if _GLOB_CHARS & set(term):
        return _union(
            [name for name in hosts if fnmatchcase(name, term)],
            [name for name in groups if fnmatchcase(name, term)],
            groups,
        )
    return set()


def _union(host_names: list[str], group_names: list[str], groups: Mapping[str, Sequence[str]]) -> set[str]:
    out = set(host_names)
    for group in group_names:
        out.update(groups[group])
    return out


def _no_match(term: str, limit: str, groups: Mapping[str, Sequence[str]]) -> InventoryError:
    known = ", ".join(sorted(name for name in groups if name != "all")) or "none"
    return InventoryError(
        f"pattern {term!r} (in {limit!r}) matches no host",
        where="--limit",
        hint=f"groups in this inventory: {known}",
    )
