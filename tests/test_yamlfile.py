"""The one YAML-with-line-marks loader behind inventories, stacks, compat files, roles and node-check configs:
lines kept, duplicates refused, every error raised as the caller's own class at file:line."""

from __future__ import annotations

from pathlib import Path

import pytest

from accelstack.errors import InventoryError, StackError
from accelstack.inventory import load_inventory
from accelstack.stacks import load_stack
from accelstack.yamlfile import MarkedDict, MarkedList, load_marked, load_marked_file


def test_lines_of_keys_and_items() -> None:
    data = load_marked("# head\na: 1\nb:\n  - x\n  - y\n", "t.yml")
    assert isinstance(data, MarkedDict) and data.line_of("a") == 2 and data.line_of("b") == 3
    assert isinstance(data["b"], MarkedList) and data["b"].item_lines == [4, 5]
    assert data["b"].line_of(-1) == data["b"].line == 4  # no item there: the sequence's own line


def test_a_key_a_merge_brought_in_may_be_overridden_but_a_repeated_own_key_may_not() -> None:
    data = load_marked("base: &b {x: 1, y: 2}\nuse:\n  <<: *b\n  x: 3\n", "t.yml")
    assert data["use"] == {"x": 3, "y": 2}
    with pytest.raises(StackError) as info:
        load_marked("a: 1\nb: 2\na: 3\n", "s.yml", error=StackError)
    assert str(info.value).startswith("s.yml:3: invalid YAML: duplicate key 'a' (first at line 1)")


def test_the_hint_is_the_callers() -> None:
    text = "g: {hosts: [node[01:02]]}\n"
    with pytest.raises(StackError) as plain:
        load_marked(text, "s.yml", error=StackError)
    assert plain.value.hint is None
    with pytest.raises(InventoryError) as hinted:
        load_marked(text, "i.yml", error=InventoryError, hint_for=lambda problem: "quote it")
    assert hinted.value.hint == "quote it"


def test_a_stack_file_that_is_not_utf8_is_a_stack_error_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "latin.yml"
    path.write_bytes(b"name: latin\ndescription: caf\xe9\n")
    with pytest.raises(StackError) as info:
        load_stack(path)
    assert str(info.value).startswith(f"{path}: not UTF-8 text")


def test_an_unreadable_file_is_the_callers_error(tmp_path: Path) -> None:
    with pytest.raises(StackError, match="cannot read"):
        load_marked_file(tmp_path / "missing.yml", error=StackError)
    with pytest.raises(InventoryError, match="cannot read"):
        load_marked_file(tmp_path / "missing.yml", "inv.yml", error=InventoryError)


def test_inventory_and_stack_files_report_a_syntax_error_at_the_same_line(tmp_path: Path) -> None:
    text = "hosts:\n  a: {address: 10.0.0.1\n  b: {}\n"
    inventory = tmp_path / "inv.yml"
    inventory.write_text(text)
    with pytest.raises(InventoryError) as inv_error:
        load_inventory(str(inventory))
    with pytest.raises(StackError) as stack_error:
        load_marked(text, "stack.yml", error=StackError)
    assert ":3: invalid YAML: " in str(inv_error.value) and str(stack_error.value).startswith("stack.yml:3: ")
    assert str(inv_error.value).split(":3: ", 1)[1] == str(stack_error.value).split(":3: ", 1)[1]
