"""The lab's tasks, ``inv lab.*`` and ``inv repo.build``: real sshd hosts in network namespaces on this machine
(needs root), and the artifact repository of simulated vendor packages they install from.

Test tooling of a checkout, never in the wheel: the checkout's ``tasks.py`` adds these to the product's tasks
(:func:`add_tasks`), for ``inv`` and for the ``accelstack`` console script run from the checkout alike.

Each checkout has a lab of its own: ``--tag`` and ``--subnet`` default to ids derived from the checkout's path
(:func:`accelstack_lab.lab_ids`; ``ACCELSTACK_TEST_LAB_SALT`` moves them as it moves the tests' labs), and a lab
that another checkout made is refused, never replaced.
"""

from __future__ import annotations

import json as jsonlib
from pathlib import Path
from typing import Any

from invoke import Collection
from rich.console import Console

from accelstack.paths import project_root
from accelstack.tasks.common import boundary, task

from . import DEFAULT_SUBNET, DEFAULT_TAG, FAULT_KINDS, Lab, lab_ids

_TAG, _SUBNET = lab_ids(DEFAULT_TAG, DEFAULT_SUBNET)  # this checkout's (what a flag left out means)
TAG_HELP = f"the lab's name, prefixing its bridge, namespaces and links (default {_TAG}: this checkout's)"
SUBNET_HELP = f"the lab's /16 of 10/8, written 10.N (default {_SUBNET}: this checkout's)"


def _lab(tag: str | None, subnet: str | None = None) -> Lab:
    return Lab(tag=tag, subnet=subnet)


@task(help={"hosts": "how many hosts, 1-256 (default 4)", "stack": "stack the lab inventory names (default cpu)",
            "repo": "artifact repository the lab inventory names (default: .lab/repo, built for the stack if it "
                    "lacks its packages)",
            "slurm": "also start real Slurm: munged, slurmctld and one slurmd per host, partition lab "
                     "(installs Debian's slurmctld/slurmd/slurm-client/munge when missing)",
            "tag": TAG_HELP, "subnet": SUBNET_HELP})
@boundary
def up(c: Any, hosts: int | None = None, stack: str = "cpu", repo: str | None = None, slurm: bool = False,
       tag: str | None = None, subnet: str | None = None) -> int:
    """Bring up N lab hosts (existing healthy ones are kept) and write inventories/lab.yml.

    The inventory names the lab's artifact repository, so `inv provision --inventory lab` works next.
    """
    from .simulated.repository import ensure_lab_repository

    count = 4 if hosts is None else int(hosts)
    lab = _lab(tag, subnet)
    lab.require_root()
    if repo:
        location = Path(repo).resolve()
    else:
        # Built before any host: a missing torch wheel or gcc is found before the lab is half up.
        location, built = ensure_lab_repository(project_root() / ".lab" / "repo", stack)
        if built:
            Console().print(f"lab: artifact repository built in {location}")
    made = lab.up(count, stack=stack, artifact_repo=location)
    Console().print(f"lab {lab.tag} ({lab.subnet}.0.0/16): {len(made)} host(s) up; inventory {lab.inventory} "
                    f"(artifact_repo {location})")
    if slurm:
        from .slurm import SlurmLab

        slurm_lab = SlurmLab(lab)
        nodes = slurm_lab.up(stack=stack)
        Console().print(f"lab: Slurm up, {len(nodes)} node(s) idle in partition lab; export SLURM_CONF={slurm_lab.conf}")
    return 0


@task(help={"tag": TAG_HELP})
@boundary
def down(c: Any, tag: str | None = None) -> int:
    """Remove every lab host, the bridge, the lab's keys and inventories/lab.yml."""
    removed = _lab(tag).down()
    Console().print(f"lab: {removed} host(s) removed")
    return 0


@task(help={"json": "print one JSON object per host", "tag": TAG_HELP})
@boundary
def status(c: Any, json: bool = False, tag: str | None = None) -> int:
    """Show each lab host: namespace, sshd, link state and injected faults."""
    from .render import status_table

    rows = _lab(tag).status()
    if json:
        for row in rows:
            print(jsonlib.dumps(row))
        return 0
    Console().print(status_table(rows))
    return 0 if all(r["netns"] and r["anchor"] for r in rows) else 2


@task(help={"host": "lab host name (lab1, lab2, ...)", "kind": f"one of: {', '.join(FAULT_KINDS)}",
            "delay": "link-slow: added one-way delay (tc netem syntax)", "rate": "link-slow: rate limit",
            "tag": TAG_HELP})
@boundary
def fault(c: Any, host: str, kind: str, delay: str = "40ms", rate: str = "20mbit", tag: str | None = None) -> int:
    """Inject a real fault into one lab host: sshd-stop, link-down, link-slow (tc netem), disk-full."""
    lab = _lab(tag)
    lab.fault(host, kind, delay=delay, rate=rate)
    Console().print(f"lab: {lab.last_fault_note} injected on {host}")
    return 0


@task(help={"host": "lab host name", "tag": TAG_HELP})
@boundary
def heal(c: Any, host: str, tag: str | None = None) -> int:
    """Undo every fault on one lab host and wait until its sshd answers."""
    _lab(tag).heal(host)
    Console().print(f"lab: {host} healed")
    return 0


@task(help={
    "dest": "folder to write the repository into (default: .lab/repo)",
    "stack": "stack name or path to build packages for; repeatable (default: every stack)",
    "torch_wheel": "the real torch wheel (default: torch 2.13.0 from pip's find-links folders)",
    "with_deps": "also add torch's dependency wheels (pip download from the site's configured index)",
}, iterable=["stack"])
@boundary
def build(c: Any, dest: str | None = None, stack: list[str] | None = None, torch_wheel: str | None = None,
          with_deps: bool = True) -> int:
    """Build the lab's artifact repository: SIMULATED vendor packages, the real torch CPU wheel, manifest.yml."""
    from accelstack.provision.artifacts import add_dependency_wheels

    from .simulated import build_lab_repository

    target = Path(dest) if dest else project_root() / ".lab" / "repo"
    build_lab_repository(target, torch_wheel=Path(torch_wheel) if torch_wheel else None, stacks=list(stack or []))
    if with_deps:
        add_dependency_wheels(target)
    print(f"artifact repository: {target}/manifest.yml")
    return 0


ns = Collection("lab", up, down, status, fault, heal)
repo_ns = Collection("repo", build)


def add_tasks(root: Collection) -> None:
    """Add the lab's collections to a task collection (accelstack.tasks.build_collection's extra modules): the
    names the checkout's tasks.py declares for this module, ``lab`` and ``repo``."""
    root.add_collection(ns)
    root.add_collection(repo_ns)
