"""YAML read with ``safe_load`` semantics, keeping the line of every mapping key and sequence item.

Inventories, stacks, compat matrices, roles and node-check configs all name ``file:line`` in their errors, and
plain ``yaml.safe_load`` forgets where things were. The loader here is a :class:`yaml.SafeLoader` subclass: the
same tags, the same types, nothing unsafe; mappings come back as :class:`MarkedDict` and sequences as
:class:`MarkedList`, a ``dict`` and a ``list`` with line numbers attached. Duplicate keys in one mapping are an
error (YAML says keys are unique; PyYAML would silently keep the last, which hides a host defined twice or lets
a second ``torch:`` pin win without anyone noticing).

Every error is raised as the caller's own :class:`~accelstack.errors.ConfigError` subclass (``InventoryError``
for inventories, ``StackError`` for stacks), so a message reads the same wherever the file came from.

Two shapes of document are refused before anything is built from them, because ``safe_load`` alone does not stop
them: an alias bomb (``a: &a [x, x, ...]``, ``b: &b [*a, *a, ...]``: nine lines that stand for a billion values;
PyYAML builds them as shared references in no time, then every merge, copy or JSON dump walks each one, for
hours and gigabytes) and nesting deeper than :data:`MAX_DEPTH` (libyaml composes recursively in C: a few hundred
kilobytes of ``[`` crash the interpreter; the Python constructors run out of recursion long before). A document
whose aliases stand for more than :data:`MAX_ALIAS_VALUES` values beyond what is written is refused at the line
of the alias that crossed the limit; anchors that repeat a block a few hundred times stay well inside it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from yaml.constructor import ConstructorError
from yaml.nodes import MappingNode, Node, SequenceNode

from .errors import ConfigError

_MERGE_TAG = "tag:yaml.org,2002:merge"
# Deeper than any inventory, stack or config a person writes (Ansible group trees are a handful of levels), and far
# below what the recursive composer and constructors survive.
MAX_DEPTH = 100
# What aliases may add to a document, in values (scalars, lists, mappings) beyond those written out.
MAX_ALIAS_VALUES = 100_000


def kind_name(value: Any) -> str:
    """What a YAML value is, in a person's words: ``a mapping``, ``a list``, ``a string``, ``a number``."""
    if value is None:
        return "nothing (null)"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, (list, tuple)):
        return "a list"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, (int, float)):
        return "a number"
    return f"a {type(value).__name__}"


class MarkedDict(dict[Any, Any]):
    """A mapping with the 1-based ``line`` where it starts and ``key_lines[key]`` for each key."""

    line: int = 0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.key_lines: dict[Any, int] = {}

    def line_of(self, key: Any) -> int:
        """The line of ``key``, else the line of the mapping itself."""
        return self.key_lines.get(key, self.line)


class MarkedList(list[Any]):
    """A sequence with the 1-based ``line`` where it starts and ``item_lines[i]`` for each item."""

    line: int = 0

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.item_lines: list[int] = []

    def line_of(self, index: int) -> int:
        """The line of item ``index``, else the line of the sequence itself."""
        return self.item_lines[index] if 0 <= index < len(self.item_lines) else self.line


class MarkedLoader(yaml.SafeLoader):
    """``SafeLoader`` that builds :class:`MarkedDict` and :class:`MarkedList`."""


def _construct_mapping(loader: Any, node: MappingNode) -> MarkedDict:
    own_keys = {id(key) for key, _ in node.value if key.tag != _MERGE_TAG}
    loader.flatten_mapping(node)
    result = MarkedDict()
    result.line = node.start_mark.line + 1
    seen: dict[Any, int] = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        try:
            hash(key)
        except TypeError:
            raise ConstructorError(
                "while constructing a mapping", node.start_mark, "found an unhashable key", key_node.start_mark
            ) from None
        line = key_node.start_mark.line + 1
        # Keys pulled in by a ``<<`` merge may be overridden by the mapping's own keys: that is not a duplicate.
        if id(key_node) in own_keys:
            if key in seen:
                raise ConstructorError(
                    None, None, f"duplicate key {key!r} (first at line {seen[key]})", key_node.start_mark
                )
            seen[key] = line
        result[key] = loader.construct_object(value_node, deep=True)
        result.key_lines[key] = line
    return result


def _construct_sequence(loader: Any, node: SequenceNode) -> MarkedList:
    result = MarkedList(loader.construct_object(child, deep=True) for child in node.value)
    result.line = node.start_mark.line + 1
    result.item_lines = [child.start_mark.line + 1 for child in node.value]
    return result


MarkedLoader.add_constructor("tag:yaml.org,2002:map", _construct_mapping)
MarkedLoader.add_constructor("tag:yaml.org,2002:seq", _construct_sequence)

# libyaml's parser when PyYAML was built with it: the pure-Python scanner took 5 s for 20k hosts. Both give
# nodes with the same marks; the constructors are Python either way. A document libyaml refuses is parsed
# again by the Python loader, whose messages say more (the unclosed bracket, the mapping being built).
_CSafeLoader: Any = getattr(yaml, "CSafeLoader", None)
FastMarkedLoader: Any = None
if _CSafeLoader is not None:
    FastMarkedLoader = type("FastMarkedLoader", (_CSafeLoader,), {})
    FastMarkedLoader.add_constructor("tag:yaml.org,2002:map", _construct_mapping)
    FastMarkedLoader.add_constructor("tag:yaml.org,2002:seq", _construct_sequence)

Hint = Callable[[str], "str | None"]


class _Refused(Exception):
    """A document refused for its shape (too deep, an alias bomb), with the 1-based line to name."""

    def __init__(self, message: str, line: int, hint: str) -> None:
        super().__init__(message)
        self.line = line
        self.hint = hint


# An alias is ``*name`` where a value starts: after a space, a flow indicator or a line start. A ``*`` inside a
# word (``lib/python3*``) is not one; a quoted ``" *x"`` only costs the exact check below.
_ALIAS_TOKEN = re.compile(r"(?:^|[\s\[{,])\*[^\s,\[\]{}]", re.MULTILINE)
_LEADING = re.compile(r"^[ \t?:-]*", re.MULTILINE)
_NOT_FLOW = re.compile(r"[^\[\]{}]+")


def _may_nest_deeper(text: str, limit: int) -> bool:
    """Whether ``text`` could nest deeper than ``limit``: a cheap bound, exact below it. Block nesting needs
    indentation (or ``- `` / ``? `` markers) for every two levels, flow nesting an open bracket per level."""
    indent = max((len(m) for m in _LEADING.findall(text)), default=0)
    if 2 * indent + 2 > limit:
        return True
    depth = deepest = 0
    for char in _NOT_FLOW.sub("", text):  # brackets in quoted strings count too: only ever an overestimate
        depth = depth + 1 if char in "[{" else max(0, depth - 1)
        deepest = max(deepest, depth)
    return 2 * indent + 2 + deepest > limit


def _check_depth(loader: Any, limit: int) -> None:
    """Walk the parser's events (iterative, in C with libyaml) and refuse nesting deeper than ``limit``."""
    depth = 0
    while loader.check_event():
        event = loader.get_event()
        if isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
            depth += 1
            if depth > limit:
                raise _Refused(f"nested deeper than {limit} levels", _line(event),
                                   "nest less: a person reads a handful of levels, not hundreds")
        elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
            depth -= 1


def _line(item: Any) -> int:
    mark = getattr(item, "start_mark", None)
    return mark.line + 1 if mark is not None else 1


def _check_aliases(root: Node, written: int, limit: int) -> None:
    """Count the values ``root`` stands for with every alias expanded, without expanding any (each node's total
    is computed once), and refuse past ``limit`` values beyond the ``written`` ones, or a node that contains
    itself."""
    totals: dict[int, int] = {}
    open_nodes: set[int] = set()
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        children = _children(node)
        if done:
            open_nodes.discard(key)
            total = 1 + sum(totals[id(child)] for child in children)
            totals[key] = total
            if total - written > limit:
                raise _Refused(f"its aliases expand to more than {limit:,} values (an alias bomb?)",
                               _line(node), "write the values out instead of nesting aliases")
            continue
        if key in totals:
            continue
        if key in open_nodes:
            raise _Refused("an alias refers to a value that contains it", _line(node),
                           "an anchor cannot hold an alias to itself")
        open_nodes.add(key)
        stack.append((node, True))
        stack.extend((child, False) for child in children if id(child) not in totals)


def _children(node: Node) -> list[Node]:
    if isinstance(node, SequenceNode):
        return list(node.value)
    if isinstance(node, MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def _count_written(root: Node) -> int:
    seen: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) not in seen:
            seen.add(id(node))
            stack.extend(_children(node))
    return len(seen)


def _load(text: str, loader_class: Any) -> Any:
    """One document through ``loader_class``, its shape checked before anything is constructed from it."""
    if _may_nest_deeper(text, MAX_DEPTH):
        probe = loader_class(text)
        try:
            _check_depth(probe, MAX_DEPTH)
        finally:
            probe.dispose()
    loader = loader_class(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        if _ALIAS_TOKEN.search(text):
            _check_aliases(node, _count_written(node), MAX_ALIAS_VALUES)
        return loader.construct_document(node)
    finally:
        loader.dispose()


def load_marked(text: str, display: str, *, error: type[ConfigError] = ConfigError,
                hint_for: Hint | None = None) -> Any:
    """Parse one YAML document; a syntax error, a duplicate key, nesting past :data:`MAX_DEPTH` or an alias bomb
    is an ``error`` at ``display:line``.

    ``hint_for`` turns the problem's text into a hint for the person, or ``None``: an inventory knows that
    ``but got '['`` usually means an unquoted host range, a stack does not.
    """
    try:
        if FastMarkedLoader is not None:
            try:
                # Not an unsafe load: a CSafeLoader with two constructors replaced.
                return _load(text, FastMarkedLoader)
            except yaml.YAMLError:
                pass  # the Python loader below says what is wrong, and where
        # Not an unsafe load: MarkedLoader is a SafeLoader with two constructors replaced.
        return _load(text, MarkedLoader)
    except _Refused as err:
        raise error(f"refused: {err}", where=f"{display}:{err.line}", hint=err.hint) from None
    except RecursionError:
        raise error(f"refused: nested too deeply to read (more than {MAX_DEPTH} levels)", where=display) from None
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        line = mark.line + 1 if mark is not None else 1
        problem = err.problem or err.context or "invalid YAML"
        if err.problem and err.context:
            # The context often points at the real culprit: the unclosed bracket, the mapping being built.
            at = f" at line {err.context_mark.line + 1}" if err.context_mark is not None else ""
            problem = f"{problem} ({err.context}{at})"
        hint = hint_for(problem) if hint_for is not None else None
        raise error(f"invalid YAML: {problem}", where=f"{display}:{line}", hint=hint) from None
    except yaml.YAMLError as err:
        raise error(f"invalid YAML: {err}", where=display) from None


def read_text(path: Path, display: str, *, error: type[ConfigError] = ConfigError) -> str:
    """A file's UTF-8 text; an unreadable or undecodable file is an ``error`` naming ``display``."""
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise error(f"not UTF-8 text ({err.reason} at byte {err.start})", where=display) from None
    except OSError as err:
        raise error(f"cannot read: {err.strerror or err}", where=display) from None


def load_marked_file(path: Path, display: str | None = None, *, error: type[ConfigError] = ConfigError,
                     hint_for: Hint | None = None) -> Any:
    """:func:`load_marked` on a file's text; ``display`` (the path itself by default) names it in errors."""
    where = str(path) if display is None else display
    return load_marked(read_text(path, where, error=error), where, error=error, hint_for=hint_for)
