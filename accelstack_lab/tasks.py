"""``inv lab.*``: real sshd hosts in network namespaces on this machine (needs root)."""

from __future__ import annotations

import json as jsonlib
from pathlib import Path
from typing import Any

from invoke import Collection
from rich.console import Console

from accelstack.tasks.common import boundary, task

from . import FAULT_KINDS, Lab
from .render import status_table


@task(help={"hosts": "how many hosts, 1-256 (default 4)", "stack": "stack the lab inventory names (default cpu)",
            "repo": "artifact repository the lab inventory names (default: .lab/repo, built for the stack if it "
                    "lacks its packages)",
            "slurm": "also start real Slurm: munged, slurmctld and one slurmd per host, partition lab "
                     "(installs Debian's slurmctld/slurmd/slurm-client/munge when missing)"})
@boundary
def up(c: Any, hosts: int | None = None, stack: str = "cpu", repo: str | None = None, slurm: bool = False) -> int:
    """Bring up N lab hosts (existing healthy ones are kept) and write inventories/lab.yml.

    The inventory names the lab's artifact repository, so `inv provision --inventory lab` works next.
    """
    from accelstack.paths import project_root

    from .simulated.repository import ensure_lab_repository

    count = 4 if hosts is None else int(hosts)
    lab = Lab()
    lab.require_root()
    if repo:
        location = Path(repo).resolve()
    else:
        # Built before any host: a missing torch wheel or gcc is found before the lab is half up.
        location, built = ensure_lab_repository(project_root() / ".lab" / "repo", stack)
        if built:
            Console().print(f"lab: artifact repository built in {location}")
    made = lab.up(count, stack=stack, artifact_repo=location)
    Console().print(f"lab: {len(made)} host(s) up; inventory {lab.inventory} (artifact_repo {location})")
    if slurm:
        from .slurm import SlurmLab

        slurm_lab = SlurmLab(lab)
        nodes = slurm_lab.up(stack=stack)
        Console().print(f"lab: Slurm up, {len(nodes)} node(s) idle in partition lab; export SLURM_CONF={slurm_lab.conf}")
    return 0


@task
@boundary
def down(c):
    """Remove every lab host, the bridge, the lab's keys and inventories/lab.yml."""
    removed = Lab().down()
    Console().print(f"lab: {removed} host(s) removed")
    return 0


@task(help={"json": "print one JSON object per host"})
@boundary
def status(c, json=False):
    """Show each lab host: namespace, sshd, link state and injected faults."""
    rows = Lab().status()
    if json:
        for row in rows:
            print(jsonlib.dumps(row))
        return 0
    Console().print(status_table(rows))
    return 0 if all(r["netns"] and r["anchor"] for r in rows) else 2


@task(help={"host": "lab host name (lab1, lab2, ...)", "kind": f"one of: {', '.join(FAULT_KINDS)}",
            "delay": "link-slow: added one-way delay (tc netem syntax)", "rate": "link-slow: rate limit"})
@boundary
def fault(c, host, kind, delay="40ms", rate="20mbit"):
    """Inject a real fault into one lab host: sshd-stop, link-down, link-slow (tc netem), disk-full."""
    lab = Lab()
    lab.fault(host, kind, delay=delay, rate=rate)
    Console().print(f"lab: {lab.last_fault_note} injected on {host}")
    return 0


@task(help={"host": "lab host name"})
@boundary
def heal(c, host):
    """Undo every fault on one lab host and wait until its sshd answers."""
    Lab().heal(host)
    Console().print(f"lab: {host} healed")
    return 0


ns = Collection("lab", up, down, status, fault, heal)
