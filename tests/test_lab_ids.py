"""One lab per checkout: ``lab.up``'s tag and subnet come from the checkout's path (or ``ACCELSTACK_TEST_LAB_SALT``,
as the tests' and benchmarks' labs do), a flag names others, and a lab another checkout made is refused, never
replaced (issue 23: one checkout's ``lab.up`` used to replace the other's hosts with new keys mid-run)."""

from __future__ import annotations

from pathlib import Path

import pytest

from accelstack.errors import ConfigError
from accelstack_lab import CHECKOUT, DEFAULT_SUBNET, DEFAULT_TAG, Lab, checkout_salt, lab_ids

from .helpers import run_program


def test_the_salt_comes_from_the_environment_when_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACCELSTACK_TEST_LAB_SALT", "3")
    assert checkout_salt(Path("/any/checkout")) == "3"
    assert lab_ids("act", "10.214") == ("act3", "10.104")
    for bad in ("0", "7", "12", "x"):
        monkeypatch.setenv("ACCELSTACK_TEST_LAB_SALT", bad)
        with pytest.raises(ConfigError, match="a digit 1-6"):
            checkout_salt()


def test_without_it_each_checkout_path_gives_its_own_ids(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ACCELSTACK_TEST_LAB_SALT", raising=False)
    salts = {checkout_salt(Path(f"/work/wt/helper{i}")) for i in range(40)}
    assert salts <= set("0123456") and len(salts) > 3  # spread over the slots, not one for every path
    assert checkout_salt(Path("/work/main")) == checkout_salt(Path("/work/main/"))  # stable for one checkout
    tags = {lab_ids(DEFAULT_TAG, DEFAULT_SUBNET, Path(f"/work/wt/helper{i}")) for i in range(40)}
    assert len({tag for tag, _ in tags}) == len({subnet for _, subnet in tags}) == len(salts)
    assert lab_ids("act", "10.214", Path("/x")) != lab_ids("acs", "10.213", Path("/x"))  # tests beside a dev lab


@pytest.mark.parametrize(("flag", "value", "words"), [
    ("--tag", "Bad-Tag", ["--tag", "lower-case"]),
    ("--tag", "abcdefghijkl", ["--tag", "1-11"]),
    ("--subnet", "192.168", ["--subnet", "10.N"]),
    ("--subnet", "10.300", ["--subnet", "10.N"]),
])
def test_a_bad_tag_or_subnet_is_one_line_and_exit_3(flag: str, value: str, words: list[str]) -> None:
    proc = run_program("accelstack", "lab.up", flag, value)
    assert proc.returncode == 3, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert all(word in proc.stderr for word in words), proc.stderr


def test_a_lab_another_checkout_made_is_refused(tmp_path: Path) -> None:
    lab = Lab(tmp_path, tag="acy", subnet="10.250", state_dir=tmp_path / "state")
    lab._claim()  # no lab yet: this checkout may make it
    lab.owner_file.parent.mkdir(parents=True)
    lab.owner_file.write_text(f"{CHECKOUT}\n")
    lab._claim()  # its own
    lab.owner_file.write_text("/elsewhere/checkout\n")
    with pytest.raises(ConfigError, match="belongs to the checkout /elsewhere/checkout") as refused:
        lab._claim()
    assert "--tag" in (refused.value.hint or "")
