"""Everything a host's work needs besides its connection: its stack and its variables in precedence order.

Resolved for every selected host before any host is touched, so a missing or incompatible stack stops the run
with exit 3 (preflight). Layers, lowest first: role defaults < inventory (all < groups < host, group_vars/ and
host_vars/ files) < stack < command line; the inventory has already applied its own layers to ``Host.vars``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import ConfigError
from ..inventory import Host, merge_layers
from . import Stack, load_stack

DEFAULT_STACK_PYTHON = "/opt/accelstack/venv/bin/python"


@dataclass
class HostContext:
    host: Host
    stack: Stack
    vars: dict[str, Any] = field(default_factory=dict)

    @property
    def python(self) -> str:
        """The stack's python on the host: where torch and the validators that need it run."""
        return str(self.vars.get("stack_python") or self.stack.paths.get("python") or DEFAULT_STACK_PYTHON)

    @property
    def backend(self) -> str:
        return str(self.vars.get("backend") or self.stack.backend)


def resolve_contexts(hosts: Iterable[Host], *, overrides: Mapping[str, Any] | None = None,
                     role_defaults: Mapping[str, Any] | None = None,
                     run_preflight: bool = True) -> dict[str, HostContext]:
    """One context per host; each distinct stack is loaded and preflighted once."""
    stacks: dict[str, Stack] = {}
    contexts: dict[str, HostContext] = {}
    for host in hosts:
        name = (overrides or {}).get("stack") or host.vars.get("stack")
        if not name:
            raise ConfigError(f"host {host.name} names no stack", where=host.source or None,
                              hint="set `stack: NAME` in the inventory's vars, its group or the host "
                                   "(inv stack.list shows the shipped stacks)")
        name = str(name)
        if name not in stacks:
            stack = load_stack(name)
            if run_preflight:
                from .preflight import preflight_stack  # the matrices: only for runs that preflight

                preflight_stack(stack)
            stacks[name] = stack
        stack = stacks[name]
        merged = merge_layers(role_defaults, dict(host.vars), {"env": dict(stack.env)} if stack.env else None,
                              overrides)
        contexts[host.name] = HostContext(host, stack, merged)
    return contexts
