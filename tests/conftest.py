"""Shared fixtures. The lab fixture brings up real sshd hosts in network namespaces (root needed) under a tag
and subnet of its own, so a developer's lab (tag ``acs``) is never touched by the tests."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def lab_ids(tag: str, subnet: str) -> tuple[str, str]:
    """A test lab's tag and subnet for this checkout (accelstack_lab.lab_ids: from the checkout's path, or
    ``ACCELSTACK_TEST_LAB_SALT``), so two checkouts' test runs never share a lab."""
    from accelstack_lab import lab_ids as checkout_lab_ids

    return checkout_lab_ids(tag, subnet)


TEST_TAG, TEST_SUBNET = lab_ids("act", "10.214")


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
    from accelstack_lab import Lab

    the_lab = Lab(lab_root, tag=TEST_TAG, subnet=TEST_SUBNET)
    the_lab.down()  # a lab left by an interrupted earlier session
    the_lab.up(4)
    yield the_lab
    the_lab.down()


@pytest.fixture()
def healthy_lab(lab: object) -> Iterator[object]:
    """The session lab, with every fault a test injected healed afterwards."""
    from .labtools import heal_all

    yield lab
    heal_all(lab)


@pytest.fixture()
def lab_venv(healthy_lab: object) -> Iterator[Callable[[str], str]]:
    """``lab_venv("/opt/NAME")``: the CPU stack's venv copied fresh to ``/opt/NAME/venv`` on every session-lab
    host (hard links where it can: seconds), its python returned, every copy removed after the test. For a run
    whose ``stack_python`` must be known-good whatever earlier suites left in the hosts' /opt/accelstack."""
    from .labtools import copy_tree, venv_cache

    made: list[Path] = []

    def make(folder: str) -> str:
        assert folder.startswith("/opt/"), f"{folder}: a lab host's own folders are its /opt and /usr/local"
        cache = venv_cache(healthy_lab)
        for host in healthy_lab.load().values():  # type: ignore[attr-defined]
            target = healthy_lab._host_dir(host) / "root" / folder.lstrip("/")  # type: ignore[attr-defined]
            subprocess.run(["rm", "-rf", str(target)], check=False)
            copy_tree(cache / "venv", target / "venv")
            made.append(target)
        return f"{folder}/venv/bin/python"

    yield make
    for target in made:
        subprocess.run(["rm", "-rf", str(target)], check=False)


def run_cli(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None,
            timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """Run the real console script, as a user would."""
    full_env = {**os.environ, **(env or {})}
    return subprocess.run([sys.executable, "-m", "accelstack", *args], cwd=cwd or REPO, env=full_env,
                          capture_output=True, text=True, timeout=timeout)
