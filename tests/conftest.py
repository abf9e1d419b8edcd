"""Shared fixtures, and the hook that marks what the edit-test loop leaves out.

The lab fixture brings up real sshd hosts in network namespaces (root needed) under a tag and subnet of its own, so
a developer's lab (tag ``acs``) is never touched by the tests. Whatever needs root asks for the ``as_root`` fixture
(every lab fixture does), and :func:`pytest_collection_modifyitems` marks each test whose fixtures reach it
``root``; ``root`` and ``slow`` tests are ``lab``: ``pytest -m "not lab"`` is what runs as any user, with no lab,
in a couple of minutes (the edit-test loop), ``-m "not root"`` all that runs without root. The ``root`` tests share
one pytest-xdist worker (group ``lab``): one lab at a time, the other tests beside them on the other workers."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from .helpers import REPO, lab_ids

TEST_TAG, TEST_SUBNET = lab_ids("act", "10.214")
ROOT_FIXTURE = "as_root"

# pytest rewrites every test module's asserts as it imports it (5 CPU-s for this suite, in every process: each xdist
# worker, each run), and caches the result as bytecode beside the module, but not where PYTHONDONTWRITEBYTECODE is
# set, as on this project's machines. Cached, as any bytecode (``__pycache__``, ignored by git), it is read again.
sys.dont_write_bytecode = False


def pytest_sessionstart(session: pytest.Session) -> None:
    """This checkout's modules compiled once, before any test: the suite starts a few hundred fresh interpreters
    (the command line as a user runs it, the host-side checks) and each would otherwise compile every module it
    imports again where PYTHONDONTWRITEBYTECODE is set, as on this project's machines (a quarter of a command's
    start). The bytecode goes where Python keeps it (``__pycache__``, ignored by git and left out of the wheel);
    once, by the xdist controller or a run without xdist, never by its workers at the same time."""
    if hasattr(session.config, "workerinput"):
        return
    import compileall

    for folder in (REPO / "src" / "accelstack", REPO / "accelstack_lab"):
        compileall.compile_dir(folder, quiet=1, workers=1)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test that reaches ``as_root`` through its fixtures needs root: it is marked ``root``. Every ``root`` test
    (so marked, or by hand where no fixture tells, as a bench's parameter) and every ``slow`` one is ``lab``, left
    out of ``-m "not lab"``. The ``root`` tests join the xdist group ``lab``: they run one after another on one
    worker, so two of them never bring up two labs under one tag at once.

    First, before ``-m`` deselects and before xdist reads the groups."""
    for item in items:
        if ROOT_FIXTURE in getattr(item, "fixturenames", ()) and not item.get_closest_marker("root"):
            item.add_marker(pytest.mark.root)
        root = item.get_closest_marker("root") is not None
        if (root or item.get_closest_marker("slow")) and not item.get_closest_marker("lab"):
            item.add_marker(pytest.mark.lab)
        if item.get_closest_marker("xdist_group"):
            continue
        if root:
            item.add_marker(pytest.mark.xdist_group("lab"))
        elif shared := _costly_shared_fixture(item):
            item.add_marker(pytest.mark.xdist_group(shared))


def _costly_shared_fixture(item: pytest.Item) -> str | None:
    """The test module whose own module- or session-scoped fixtures ``item`` uses (a repository built, a wheel
    installed, a driver run): the tests of that module that use them share a worker, so each is made once, not
    once a worker."""
    info = getattr(item, "_fixtureinfo", None)
    for name in sorted(getattr(item, "fixturenames", ())):
        defs = info.name2fixturedefs.get(name) if info else None
        if defs and defs[-1].scope in ("module", "session") and defs[-1].baseid.startswith("tests/test_"):
            return defs[-1].baseid
    return None


@pytest.fixture(scope="session")
def as_root() -> None:
    """Whatever needs root (network namespaces, sshd, mounts, the lab's Slurm) asks for this fixture; a test
    that reaches it is a ``root`` test, and so ``lab`` (see the hook above). Run without root, such a test fails
    with one clear line: it is never skipped, and ``-m "not root"`` (or ``"not lab"``) leaves it out."""
    if os.geteuid() != 0:
        pytest.fail("this test needs root (network namespaces, sshd, mounts: the lab); CI runs the suite as root, "
                    "and `pytest -m \"not root\"` runs what needs none", pytrace=False)


@pytest.fixture(scope="session")
def lab_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("labroot")
    (root / "inventories").mkdir()
    return root


@pytest.fixture(scope="session")
def lab(as_root: None, lab_root: Path) -> Iterator[object]:
    """Four real hosts for the whole session; torn down at the end."""
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
