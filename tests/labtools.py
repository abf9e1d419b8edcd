"""Helpers the lab test modules share: the real CLI with a run folder of the test's, its records, a host's files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# torch's dependency wheels, downloaded once from the package index and kept across runs.
DEPS_CACHE = Path("/var/tmp/accelstack-test-deps")


def cli(*args: str, runs: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """``python -m accelstack ARGS`` as a user runs it, its records going to ``runs``."""
    return subprocess.run([sys.executable, "-m", "accelstack", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, "ACCELSTACK_RUNS": str(runs)})


def records(proc: subprocess.CompletedProcess[str]) -> list[dict]:
    return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]


def by_host(proc: subprocess.CompletedProcess[str], check: str = "provision") -> dict[str, dict]:
    return {r["host"]: r for r in records(proc) if r["check"] == check}


def host_root(lab: object, host: str) -> Path:
    """The folder behind a lab host's private /opt, /usr/local, ... (``<root>/opt`` is its /opt)."""
    return lab.dir / "hosts" / host / "root"  # type: ignore[attr-defined,no-any-return]


def lab_repository(dest: Path, stacks: list[str]) -> Path:
    """The lab's artifact repository for ``stacks``, with the wheels torch needs for a ``--no-index`` install."""
    from accelstack.lab.simulated import build_lab_repository
    from accelstack.provision.artifacts import add_dependency_wheels

    repo = build_lab_repository(dest, torch_wheel=None, stacks=stacks, fault_fixtures=False)
    if not DEPS_CACHE.exists() or not list(DEPS_CACHE.glob("*.whl")):
        torch = next((repo / "wheels").glob("torch-*.whl"))
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "-d", str(DEPS_CACHE), str(torch)], check=True)
    add_dependency_wheels(repo, download=DEPS_CACHE)
    return repo
