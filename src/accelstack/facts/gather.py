"""Gathering facts across hosts: one probe per host, one round trip, one record per host."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable

from ..errors import ConfigError, HostError
from ..inventory import Host
from ..results.records import Record, Status, error_record
from ..stacks import Stack, load_stack
from ..stacks.context import DEFAULT_STACK_PYTHON, HostContext
from ..transport.connection import CommandResult, Transport
from ..transport.fanout import HostPool, Outcome
from . import Facts, ProbeOptions, parse_probe_output, probe_command

PROBE_TIMEOUT = 60.0


@functools.lru_cache(maxsize=32)
def _stack_named(name: str) -> Stack:
    # Once per stack name per process: parsing the stack's YAML for each of hundreds of hosts showed in profiles.
    return load_stack(name)


def probe_options_for(host: Host, context: HostContext | None = None) -> ProbeOptions:
    """What the probe looks at on this host: the stack's python and the paths whose free space matters.

    Facts never require a stack: without a context, the host's named stack is used if it loads, else defaults.
    """
    python = str(host.vars.get("stack_python") or DEFAULT_STACK_PYTHON)
    extra_paths: list[str] = []
    if context is not None:
        python = context.python
        extra_paths = list(context.stack.paths.values())
    elif host.vars.get("stack"):
        try:
            stack = _stack_named(str(host.vars["stack"]))
            python = str(host.vars.get("stack_python") or stack.paths.get("python") or python)
            extra_paths = list(stack.paths.values())
        except ConfigError:
            pass
    paths = ["/", "/opt", "/usr/local", "/tmp"]
    for key in ("checkpoint_dir", "artifact_cache"):
        if host.vars.get(key):
            paths.append(str(host.vars[key]))
    # Only folders: the stack's paths include files (the python binary).
    paths.extend(p for p in extra_paths if not p.endswith(("/python", "/python3")))
    return ProbeOptions(python=python, disk_paths=list(dict.fromkeys(paths)))


def probe(transport: Transport, options: ProbeOptions) -> Facts:
    """Run the probe on one host and parse what it printed."""
    # exec: the shell the transport runs the line in becomes the probe's /bin/sh, not its waiting parent (dash forks
    # for a last command); every login shell (sh, bash, zsh, fish, csh) knows exec.
    command = "exec " + probe_command(options)
    result = transport.run(command, timeout=PROBE_TIMEOUT)
    try:
        return parse_probe_output(result.stdout)
    except ValueError as exc:
        raise unreadable_probe(transport.host.name, "facts probe", result, exc) from None


def unreadable_probe(host: str, command: str, result: CommandResult, exc: ValueError) -> HostError:
    """The error for a probe whose output could not be read: what it said, and where to look."""
    detail = (result.stderr or result.stdout).strip().splitlines()[-3:]
    return HostError(f"the facts probe printed nothing readable (exit {result.exit_status}): {exc}; "
                     + " | ".join(detail), host=host, command=command,
                     hint="the probe runs under /bin/sh; see what the host's login shell prints with "
                          f"`ssh {host} /bin/sh -c true`")


def facts_record(outcome: Outcome[Facts]) -> Record:
    if outcome.error is not None or outcome.value is None:
        assert outcome.error is not None
        return error_record(outcome.host.name, "facts", outcome.error, outcome.duration_s)
    facts = outcome.value
    status: Status = "pass"
    summary = facts.summary()
    if facts.probe_errors:
        status = "warn"
        summary += f"; probe notes: {len(facts.probe_errors)}"
    data = facts.to_dict()
    metrics = {
        "cpus": data.get("cpus"), "mem_total_kib": data.get("mem_total_kib"),
        "accelerators": len(data.get("accelerators") or []), "numa_nodes": data.get("numa_nodes"),
    }
    return Record(host=outcome.host.name, check="facts", status=status, summary=summary, metrics=metrics,
                  evidence={"facts": data, "probe_errors": facts.probe_errors},
                  duration_s=round(outcome.duration_s, 3))


def gather_facts(pool: HostPool, hosts: list[Host],
                 options_for: Callable[[Host], ProbeOptions] = probe_options_for) -> Iterable[Outcome[Facts]]:
    """Yield each host's facts (or its error) as it arrives. Its callers (facts, drift) use the hosts for
    nothing else, so each connection closes when its host is done (``release``, see :meth:`HostPool.map`)."""
    by_name = {host.name: host for host in hosts}
    return pool.map(hosts, lambda transport: probe(transport, options_for(by_name[transport.host.name])),
                     release=True)
