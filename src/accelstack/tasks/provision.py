"""``inv provision``: take hosts to their pinned stack (``--check`` shows the plan and touches nothing)."""

from __future__ import annotations

from typing import Any

from ..errors import ConfigError
from ..results.output import Reporter
from ..results.records import RunWriter
from ..transport.fanout import HostPool
from .common import (
    HELP_COMMON,
    boundary,
    check_runs_folder,
    default_text,
    extra_vars,
    fanout_options,
    inventory_hosts,
    setting,
    task,
)


@task(help={
    **HELP_COMMON,
    "check": "print the plan per host (installed -> pinned, bytes to transfer, reboot) and touch nothing",
    "reboot": "after applying, reboot the hosts that need it in rolling batches, waiting for SSH each time",
    "batch": "hosts rebooted at once with --reboot (default 1)",
    "repo": "artifact repository (folder or http(s) mirror with manifest.yml); overrides artifact_repo",
    "roles": "comma-separated roles to run instead of those the stack's vendor selects",
    "retry_failed": "only the hosts that failed (error/fail) in the last provision run",
    "host_timeout": "seconds one host may take for each phase " + default_text("host_timeout"),
}, iterable=["set"])
@boundary
def provision(c: Any, inventory: str | None = None, limit: str | None = None, json: bool = False,
              forks: int | None = None, check: bool = False, reboot: bool = False, batch: int | None = None,
              repo: str | None = None, roles: str | None = None, retry_failed: bool = False,
              set: list[str] | None = None, connect_timeout: float | None = None,
              host_timeout: float | None = None) -> int:
    """Bring hosts to their pinned stack: roles in order, artifacts by checksum, rendered env; idempotent."""
    # The provisioning layer (jinja2, roles) loads only when this task runs: every other task starts faster.
    from ..provision import ProvisionOptions, failed_hosts_of_last_run, prepare
    from ..provision import provision as run_provision
    from ..provision.render import plan_table
    fanout = fanout_options(c, forks, connect_timeout, setting(c, "host_timeout", host_timeout))
    overrides = extra_vars(set or [])
    inv, hosts = inventory_hosts(inventory, limit, overrides)
    if retry_failed:
        failed = failed_hosts_of_last_run()
        if failed is None:
            raise ConfigError("--retry-failed: no earlier provision run in the runs folder")
        hosts = [h for h in hosts if h.name in set_of(failed)]
        if not hosts:
            print("accelstack: the last provision run had no failed host; nothing to retry")
            return 0
    options = ProvisionOptions(check_only=bool(check), reboot=bool(reboot), batch=1 if batch is None else batch,
                               repo=repo, roles=[r.strip() for r in roles.split(",")] if roles else None,
                               overrides=overrides)
    prepared = prepare(hosts, options)  # exit 3 on a bad role, stack or repository: no host touched yet
    check_runs_folder()
    writer = RunWriter("provision", meta={"inventory": str(inv.path), "limit": limit, "check_only": bool(check),
                                          "hosts": [h.name for h in hosts]})
    reporter = Reporter(writer, json_lines=json, total_hosts=len(hosts), title="provision")
    with HostPool(fanout) as pool:
        plans = run_provision(pool, hosts, options, reporter.add, prepared=prepared)
    return reporter.finish(plan_table(plans) if check and not json else None)


def set_of(names: list[str]) -> frozenset[str]:
    return frozenset(names)
