"""Shared fixtures. The lab fixture brings up real sshd hosts in network namespaces (root needed) under a tag
and subnet of its own, so a developer's lab (tag ``acs``) is never touched by the tests."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
TEST_TAG = "act"
TEST_SUBNET = "10.214"


@pytest.fixture(scope="session")
def lab_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("labroot")
    (root / "inventories").mkdir()
    return root


@pytest.fixture(scope="session")
def lab(lab_root: Path) -> Iterator[object]:
    """Four real hosts for the whole session; torn down at the end."""
    if os.geteuid() != 0:
        pytest.fail("the lab tests need root (network namespaces and sshd); CI runs them as root")
    from accelstack.lab import Lab

    the_lab = Lab(lab_root, tag=TEST_TAG, subnet=TEST_SUBNET)
    the_lab.down()  # a lab left by an interrupted earlier session
    the_lab.up(4)
    yield the_lab
    the_lab.down()


@pytest.fixture()
def healthy_lab(lab: object) -> Iterator[object]:
    """The session lab, with every fault a test injected healed afterwards."""
    yield lab
    for row in lab.status():  # type: ignore[attr-defined]
        if row["faults"]:
            lab.heal(row["host"])  # type: ignore[attr-defined]


def run_cli(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None,
            timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """Run the real console script, as a user would."""
    full_env = {**os.environ, **(env or {})}
    return subprocess.run([sys.executable, "-m", "accelstack", *args], cwd=cwd or REPO, env=full_env,
                          capture_output=True, text=True, timeout=timeout)
