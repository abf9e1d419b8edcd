"""The command line as a user meets it: the task list, bad input (exit 3 before any host), the local default."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from .helpers import REPO, run_cli

EXPECTED_TASKS = ["facts", "drift", "diagnose", "collect", "analyze", "report", "baseline", "history",
                  "fleet-check", "lab.up", "lab.down", "lab.status", "lab.fault", "lab.heal", "stack.check",
                  "stack.list"]


def test_inv_list_in_a_checkout_shows_the_tasks() -> None:
    proc = subprocess.run([sys.executable, "-m", "invoke", "--list"], cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    listed = {line.split()[0] for line in proc.stdout.splitlines()[1:] if line.strip()}
    missing = [task for task in EXPECTED_TASKS if task not in listed]
    assert missing == []


def test_console_script_runs_the_same_collection() -> None:
    proc = run_cli("--list")
    assert proc.returncode == 0 and "lab.up" in proc.stdout and "facts" in proc.stdout


def test_broken_inventory_exits_3_with_file_and_line_before_any_connection(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yml"
    bad.write_text("hosts:\n  n1: {address: 192.0.2.250}\ngroups:\n  g: {children: [nope]}\n")
    proc = run_cli("facts", "--inventory", str(bad), "--json", env={"ACCELSTACK_RUNS": str(tmp_path / "runs")})
    assert proc.returncode == 3
    assert "bad.yml:4" in proc.stderr and "nope" in proc.stderr
    assert proc.stdout == ""
    assert not (tmp_path / "runs").exists()  # no run was started, so no host was touched


def test_limit_matching_nothing_exits_3() -> None:
    proc = run_cli("facts", "--limit", "no-such-host")
    assert proc.returncode == 3 and "no-such-host" in proc.stderr


def test_unknown_stack_exits_3_before_any_host(tmp_path: Path) -> None:
    inv = tmp_path / "inv.yml"
    inv.write_text("vars: {stack: cuda-99}\nhosts:\n  n1: {address: 192.0.2.250}\n")
    proc = run_cli("drift", "--inventory", str(inv), env={"ACCELSTACK_RUNS": str(tmp_path / "runs")})
    assert proc.returncode == 3 and "cuda-99" in proc.stderr


def test_facts_on_the_embedded_default(tmp_path: Path) -> None:
    proc = run_cli("facts", "--json", env={"ACCELSTACK_RUNS": str(tmp_path)})
    assert proc.returncode == 0, proc.stderr
    record = json.loads(proc.stdout.splitlines()[0])
    assert record["host"] == "localhost" and record["check"] == "facts" and record["status"] == "pass"
    assert record["evidence"]["facts"]["torch"]["version"].startswith("2.13.0")
