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


# --- shapes refused before anything is built: alias bombs, runaway nesting -----------------------------------

def alias_bomb(levels: int = 9, width: int = 9) -> str:
    """The classic: each level a list of ``width`` aliases to the one before; ``width ** levels`` values."""
    names = [f"l{i}" for i in range(levels)]
    lines = [f"{names[0]}: &{names[0]} [{', '.join(['x'] * width)}]"]
    lines += [f"{name}: &{name} [{', '.join(['*' + prev] * width)}]" for prev, name in zip(names, names[1:], strict=False)]
    return "\n".join(lines) + "\n"


def test_an_alias_bomb_is_refused_at_the_line_that_crosses_the_limit_and_quickly() -> None:
    with pytest.raises(InventoryError) as info:
        load_marked(alias_bomb(), "bomb.yml", error=InventoryError)
    text = str(info.value)
    # 9 ** 6 = 531,441 values > 100,000: refused at the sixth level (line 6), nothing expanded before.
    assert text.startswith("bomb.yml:6: refused: its aliases expand to more than 100,000 values"), text
    assert "write the values out" in text
    # The same bomb through a merge key (flatten_mapping copies each merged mapping's pairs).
    merged = "a: &a {k0: 1, k1: 2, k2: 3, k3: 4, k4: 5, k5: 6, k6: 7, k7: 8, k8: 9}\n" + "".join(
        f"m{i}: &m{i} {{<<: [{', '.join([f'*{prev}'] * 9)}]}}\n" for i, prev in enumerate(["a", "m0", "m1", "m2",
                                                                                       "m3", "m4", "m5", "m6"]))
    with pytest.raises(StackError, match="alias bomb"):
        load_marked(merged, "merge.yml", error=StackError)


def test_anchors_used_as_people_use_them_still_load() -> None:
    # One block of settings shared by 300 hosts: 300 aliases, a few thousand values, far inside the limit.
    text = "common: &c {user: root, port: 22, key: id_ed25519, expect_devices: 8}\nhosts:\n" + "".join(
        f"  n{i}: *c\n" for i in range(300))
    data = load_marked(text, "ok.yml")
    assert data["hosts"]["n299"] == {"user": "root", "port": 22, "key": "id_ed25519", "expect_devices": 8}
    # A '*' that is not an alias (a glob in a value) costs nothing and changes nothing.
    assert load_marked("libs: lib/python3*/site-packages\nglob: '*'\n", "g.yml")["glob"] == "*"


def test_an_alias_to_the_value_that_holds_it_is_refused() -> None:
    with pytest.raises(StackError, match="refused: an alias refers to a value that contains it"):
        load_marked("a: &a [1, *a]\n", "loop.yml", error=StackError)


@pytest.mark.parametrize("text", ["[" * 200_000 + "]" * 200_000, "x:\n" + "".join(
    " " * i + f"k{i}:\n" for i in range(1, 150)) + " " * 150 + "v: 1\n", "- " * 300 + "x\n"],
    ids=["flow 200k deep", "block 150 deep", "sequence 300 deep"])
def test_nesting_past_the_limit_is_refused_with_its_line_never_a_crash(text: str) -> None:
    # 200k nested brackets crashed the interpreter (libyaml composes recursively in C): now one line.
    with pytest.raises(InventoryError) as info:
        load_marked(text, "deep.yml", error=InventoryError)
    assert "refused: nested deeper than 100 levels" in str(info.value)
    assert str(info.value).startswith("deep.yml:")


def test_nesting_a_person_writes_still_loads() -> None:
    text = "a:\n" + "".join("  " * i + f"k{i}:\n" for i in range(1, 40)) + "  " * 40 + "v: 1\n"
    data = load_marked(text, "fine.yml")
    node = data["a"]
    for i in range(1, 40):
        node = node[f"k{i}"]
    assert node == {"v": 1}
