"""YAML read with ``safe_load`` semantics, keeping the line of every mapping key and sequence item.

Inventories, stacks, compat matrices, roles and node-check configs all name ``file:line`` in their errors, and
plain ``yaml.safe_load`` forgets where things were. The loader here is a :class:`yaml.SafeLoader` subclass: the
same tags, the same types, nothing unsafe; mappings come back as :class:`MarkedDict` and sequences as
:class:`MarkedList`, a ``dict`` and a ``list`` with line numbers attached. Duplicate keys in one mapping are an
error (YAML says keys are unique; PyYAML would silently keep the last, which hides a host defined twice or lets
a second ``torch:`` pin win without anyone noticing).

Every error is raised as the caller's own :class:`~accelstack.errors.ConfigError` subclass (``InventoryError``
for inventories, ``StackError`` for stacks), so a message reads the same wherever the file came from.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from yaml.constructor import ConstructorError
from yaml.nodes import MappingNode, SequenceNode

from .errors import ConfigError

_MERGE_TAG = "tag:yaml.org,2002:merge"


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


def load_marked(text: str, display: str, *, error: type[ConfigError] = ConfigError,
                hint_for: Hint | None = None) -> Any:
    """Parse one YAML document; a syntax error or a duplicate key is an ``error`` at ``display:line``.

    ``hint_for`` turns the problem's text into a hint for the person, or ``None``: an inventory knows that
    ``but got '['`` usually means an unquoted host range, a stack does not.
    """
    if FastMarkedLoader is not None:
        try:
            # Not an unsafe load: a CSafeLoader with two constructors replaced.
            return yaml.load(text, Loader=FastMarkedLoader)
        except yaml.YAMLError:
            pass  # the Python loader below says what is wrong, and where
    try:
        # Not an unsafe load: MarkedLoader is a SafeLoader with two constructors replaced.
        return yaml.load(text, Loader=MarkedLoader)
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
