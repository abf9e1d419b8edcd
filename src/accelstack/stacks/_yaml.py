"""YAML read with ``SafeLoader`` and line numbers kept, so every error can name ``file:line``.

Mappings come back as :class:`MarkedDict` (a dict that knows its own line and each key's line) and sequences as
:class:`MarkedList`. A duplicate key is an error rather than a silent overwrite: in a pinned stack the second
``torch:`` would win without anyone noticing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from ..errors import StackError


class MarkedDict(dict[Any, Any]):
    line: int = 0
    key_lines: dict[Any, int]

    def line_of(self, key: Any) -> int:
        return self.key_lines.get(key, self.line)


class MarkedList(list[Any]):
    line: int = 0
    item_lines: list[int]

    def line_of(self, index: int) -> int:
        return self.item_lines[index] if 0 <= index < len(self.item_lines) else self.line


class _MarkedLoader(yaml.SafeLoader):
    pass


def _construct_map(loader: _MarkedLoader, node: yaml.MappingNode) -> MarkedDict:
    loader.flatten_mapping(node)
    result = MarkedDict()
    result.line = node.start_mark.line + 1
    result.key_lines = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        try:
            hash(key)
        except TypeError:
            raise yaml.constructor.ConstructorError(
                None, None, "a mapping key must be a plain value", key_node.start_mark
            ) from None
        if key in result:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r} (first on line {result.key_lines[key]})", key_node.start_mark
            )
        result[key] = loader.construct_object(value_node, deep=True)
        result.key_lines[key] = key_node.start_mark.line + 1
    return result


def _construct_seq(loader: _MarkedLoader, node: yaml.SequenceNode) -> MarkedList:
    result = MarkedList(loader.construct_object(child, deep=True) for child in node.value)
    result.line = node.start_mark.line + 1
    result.item_lines = [child.start_mark.line + 1 for child in node.value]
    return result


_MarkedLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_map)
_MarkedLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, _construct_seq)


def load_marked(path: Path) -> Any:
    """Parse one YAML file; a syntax error, a duplicate key or an unreadable file is a StackError at file:line."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise StackError(f"cannot read: {err.strerror or err}", where=str(path)) from None
    try:
        return yaml.load(text, Loader=_MarkedLoader)  # a SafeLoader subclass: no arbitrary objects
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        where = f"{path}:{mark.line + 1}" if mark else str(path)
        problem = err.problem or str(err)
        raise StackError(f"invalid YAML: {problem}", where=where) from None
    except yaml.YAMLError as err:
        raise StackError(f"invalid YAML: {err}", where=str(path)) from None
