"""``inv collect`` and ``inv analyze``: support bundles, gathered in one round trip and read offline."""

from __future__ import annotations

import json as jsonlib
from pathlib import Path
from typing import Any

from rich.console import Console

from ..facts.gather import probe_options_for
from ..results.output import Reporter, records_table
from ..results.records import Record, RunWriter, error_record, exit_code_for, utc_now
from ..transport.fanout import HostPool
from .common import (
    HELP_COMMON,
    boundary,
    check_runs_folder,
    extra_vars,
    fanout_options,
    inventory_hosts,
    task,
    with_vars,
    writable_dir,
)


@task(help={**HELP_COMMON, "output": "folder for the bundles (default bundles/<timestamp>)"}, iterable=["set"])
@boundary
def collect_bundles(c: Any, inventory: str | None = None, limit: str | None = None, output: str | None = None,
                    json: bool = False, forks: int | None = None, connect_timeout: float | None = None,
                    set: list[str] | None = None) -> int:
    """Gather a support bundle per host, in one round trip, as a folder and a .tar.gz.

    A bundle holds npu-smi, hccn_tool, nvidia-smi -q -x and topo -m, lspci, ip addr, version files, the
    environment (secrets masked), pip list and dmesg.
    """
    from ..flows.bundle.run import collect  # loaded when this task runs, not for every task

    overrides = extra_vars(set or [])
    options = fanout_options(c, forks, connect_timeout, read_only=True)
    inv, selected = inventory_hosts(inventory, limit, overrides)
    hosts = with_vars(selected, overrides)
    dest = writable_dir(Path(output or f"bundles/{utc_now().replace(':', '').replace('.', '')}"), "--output")
    check_runs_folder()
    writer = RunWriter("collect", meta={"inventory": str(inv.path), "output": str(dest)})
    reporter = Reporter(writer, json_lines=json, total_hosts=len(hosts), title="collect")
    by_name = {h.name: h for h in hosts}

    def work(transport):
        host = by_name[transport.host.name]
        return collect(transport, probe_options_for(host), dest, stack=host.vars.get("stack"))

    with HostPool(options) as pool:
        for outcome in pool.map(hosts, work, release=True):  # one round trip per host, nothing after it
            if outcome.error is not None or outcome.value is None:
                reporter.add(error_record(outcome.host.name, "collect", outcome.error or Exception("no bundle")))
                continue
            bundle = outcome.value
            reporter.add(Record(bundle.host, "collect", "pass", f"bundle in {bundle.path} (+ .tar.gz)",
                                evidence={"path": str(bundle.path), "tarball": f"{bundle.path}.tar.gz"},
                                duration_s=round(outcome.duration_s, 3)))
    return reporter.finish()




@task(help={"bundle": "bundle folder or .tar.gz from `inv collect`",
            "expect_devices": "accelerators the host should have (default: not checked)",
            "stack": "judge the installed versions against this stack (a name or a .yml file; default: the "
                     "stack the bundle was collected for)",
            "json": "print {\"records\": [...], \"findings\": [...]} instead of tables"})
@boundary
def analyze(c: Any, bundle: str, expect_devices: int | None = None, json: bool = False,
            stack: str | None = None) -> int:
    """Read a bundle offline: the fact parsers, the offline checks and the log diagnosis, as if on the host."""
    from ..diagnose import render_diagnosis
    from ..flows.bundle.run import analyze_bundle

    facts, records, diagnosis = analyze_bundle(Path(bundle), expect_devices=expect_devices, stack=stack)
    failing = [r for r in records if r.status in ("fail", "error")]
    if json:
        print(jsonlib.dumps({"facts": facts.to_dict(), "records": [r.to_dict() for r in records],
                             **diagnosis.to_dict()}))
    else:
        console = Console()
        console.print(records_table(records, title=f"bundle {bundle}"))
        console.print(render_diagnosis(diagnosis))
    code = exit_code_for(records)
    return 1 if diagnosis.findings and code == 0 and not failing else code
