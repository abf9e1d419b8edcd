"""``inv provision``: take hosts to their pinned stack (``--check`` shows the plan and touches nothing), and
``inv repo.build``: the lab's artifact repository."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import yaml
from invoke import Collection, task
from rich.table import Table

from ..errors import ConfigError
from ..fanout import FanoutOptions, Fleet
from ..inventory import load_inventory
from ..output import Reporter
from ..records import RunWriter
from .common import HELP_COMMON, boundary

if TYPE_CHECKING:
    from ..provision.plan import HostPlan


def _extra_vars(pairs: list[str]) -> dict[str, object]:
    out: dict[str, object] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ConfigError(f"--set {pair!r}: expected NAME=VALUE")
        out[key.strip()] = yaml.safe_load(value) if value else ""
    return out


def _plan_table(plans: dict[str, HostPlan]) -> Table:
    table = Table(title="plan (--check: nothing was touched)")
    for column in ("host", "step", "change", "bytes", "reboot"):
        table.add_column(column, overflow="fold")
    for name in sorted(plans):
        plan = plans[name]
        if plan.problems:
            table.add_row(name, "-", "; ".join(plan.problems), "", "")
            continue
        if not plan.changes:
            table.add_row(name, "-", "no change", "0", "yes (pending)" if plan.reboot_pending else "no")
        for change in plan.changes:
            table.add_row(name, change.step, change.summary, str(change.bytes_to_transfer), change.reboot)
    return table


@task(help={
    **HELP_COMMON,
    "check": "print the plan per host (installed -> pinned, bytes to transfer, reboot) and touch nothing",
    "reboot": "after applying, reboot the hosts that need it in rolling batches, waiting for SSH each time",
    "batch": "hosts rebooted at once with --reboot (default 1)",
    "repo": "artifact repository (folder or http(s) mirror with manifest.yml); overrides artifact_repo",
    "roles": "comma-separated roles to run instead of those the stack's vendor selects",
    "retry_failed": "only the hosts that failed (error/fail) in the last provision run",
    "set": "NAME=VALUE variable on the command line (highest precedence); repeatable",
    "connect_timeout": "seconds to wait for an SSH connection (default 10)",
    "host_timeout": "seconds one host may take for each phase (default 3600)",
}, iterable=["set"])
@boundary
def provision(c, inventory=None, limit=None, json=False, forks=64, check=False, reboot=False, batch=1, repo=None,
              roles=None, retry_failed=False, set=None, connect_timeout=10.0, host_timeout=3600.0):
    """Bring hosts to their pinned stack: roles in order, artifacts by checksum, rendered env; idempotent."""
    # The provisioning layer (jinja2, roles) loads only when this task runs: every other task starts faster.
    from ..provision import ProvisionOptions, failed_hosts_of_last_run, prepare
    from ..provision import provision as run_provision
    inv = load_inventory(inventory)
    hosts = inv.select(limit)
    if retry_failed:
        failed = failed_hosts_of_last_run()
        if failed is None:
            raise ConfigError("--retry-failed: no earlier provision run in the runs folder")
        hosts = [h for h in hosts if h.name in set_of(failed)]
        if not hosts:
            print("accelstack: the last provision run had no failed host; nothing to retry")
            return 0
    options = ProvisionOptions(check_only=bool(check), reboot=bool(reboot), batch=int(batch), repo=repo,
                               roles=[r.strip() for r in roles.split(",")] if roles else None,
                               overrides=_extra_vars(list(set or [])))
    prepared = prepare(hosts, options)  # exit 3 on a bad role, stack or repository: no host touched yet
    writer = RunWriter("provision", meta={"inventory": str(inv.path), "limit": limit, "check_only": bool(check),
                                          "hosts": [h.name for h in hosts]})
    reporter = Reporter(writer, json_lines=json, total_hosts=len(hosts), title="provision")
    fanout = FanoutOptions(forks=int(forks), connect_timeout=float(connect_timeout), host_deadline=float(host_timeout))
    with Fleet(fanout) as fleet:
        plans = run_provision(fleet, hosts, options, reporter.add, prepared=prepared)
    return reporter.finish(_plan_table(plans) if check and not json else None)


def set_of(names: list[str]) -> frozenset[str]:
    return frozenset(names)


@task(help={
    "dest": "folder to write the repository into (default: .lab/repo)",
    "stack": "stack name or path to build packages for; repeatable (default: every stack)",
    "torch_wheel": "the real torch wheel (default: torch 2.13.0 from pip's find-links folders)",
    "with_deps": "also add torch's dependency wheels (pip download from the site's configured index)",
}, iterable=["stack"])
@boundary
def build(c, dest=None, stack=None, torch_wheel=None, with_deps=True):
    """Build the lab's artifact repository: SIMULATED vendor packages, the real torch CPU wheel, manifest.yml."""
    from ..lab.simulated import build_lab_repository
    from ..paths import project_root
    from ..provision.artifacts import add_dependency_wheels

    target = Path(dest) if dest else project_root() / ".lab" / "repo"
    build_lab_repository(target, torch_wheel=Path(torch_wheel) if torch_wheel else None, stacks=list(stack or []))
    if with_deps:
        add_dependency_wheels(target)
    print(f"artifact repository: {target}/manifest.yml")
    return 0


repo_ns = Collection("repo")
repo_ns.add_task(build)
