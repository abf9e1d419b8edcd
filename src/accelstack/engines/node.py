"""What a node knows of itself when an engine hands it its own checks (Slurm's ``node-check`` and
``node-collective`` today; a Kubernetes DaemonSet running ``node-check`` would be the next): the node file that
provisioning renders on it (role env, ``templates/node.yml.j2``, ``/etc/accelstack/node.yml``: the stack's pins and
paths as ``stacks/<name>.yml`` writes them, the stack's python and the inventory vars the checks read), the tiers a
node runs on itself, and the node as a host context of its own.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigError, StackError
from ..inventory import Host
from ..stacks import Stack, preflight_stack
from ..stacks.context import HostContext
from ..stacks.model import parse_stack
from ..yamlfile import MarkedDict, kind_name, load_marked_file

NODE_FILE = Path("/etc/accelstack/node.yml")
# health (the default): vendor tools, sysfs, files and package metadata, no torch and no device context, safe beside
# a running job: what HealthCheckProgram runs. quick adds torch and the communication library's init (a prolog).
NODE_TIERS = ("health", "quick", "standard")
DEFAULT_NODE_TIER = "health"
NODE_FIELDS = ("node", "stack", "stack_python", "runs_dir", "keep_runs", "vars")
# A health check every 5 minutes is 288 run folders a day on every node: the newest 500 are kept by default.
DEFAULT_KEEP_RUNS = 500


@dataclass
class NodeFile:
    """``/etc/accelstack/node.yml`` as read: where it is, the stack, and the vars the validators get."""

    path: Path
    node: str
    stack: Stack
    vars: dict[str, Any] = field(default_factory=dict)
    runs_dir: str | None = None
    keep_runs: int = DEFAULT_KEEP_RUNS  # node-check runs kept in the runs folder; 0 keeps every one


def load_node_file(path: Path | None = None) -> NodeFile:
    """Read and check a node file; every problem is a ConfigError naming the file (and line), exit 3."""
    path = path or Path(os.environ.get("ACCELSTACK_NODE_FILE") or NODE_FILE)
    if not path.is_file():
        raise ConfigError(f"no node file at {path}",
                          hint="inv provision renders it (role env); or point --config at one")
    data = load_marked_file(path, error=StackError)  # a syntax error is a StackError (a ConfigError) at file:line
    if not isinstance(data, MarkedDict):
        raise ConfigError("a node file must be a mapping", where=f"{path}:1",
                          hint=f"fields: {', '.join(NODE_FIELDS)}")
    unknown = [key for key in data if key not in NODE_FIELDS]
    if unknown:
        raise ConfigError(f"unknown field {unknown[0]!r}", where=f"{path}:{data.line_of(unknown[0])}",
                          hint=f"fields: {', '.join(NODE_FIELDS)}")
    if "stack" not in data:
        raise ConfigError("missing required field 'stack' (the stack file's fields, as provisioning writes them)",
                          where=f"{path}:{data.line}")
    stack = _parse_node_stack(data["stack"], path)
    node_vars = data.get("vars") or {}
    if not isinstance(node_vars, Mapping):
        raise ConfigError("'vars' must be a mapping of variable names to values",
                          where=f"{path}:{data.line_of('vars')}")
    merged: dict[str, Any] = {"stack": stack.name}
    if stack.env:
        merged["env"] = dict(stack.env)
    for key, value in node_vars.items():
        if key == "env" and isinstance(value, Mapping):
            merged["env"] = {**merged.get("env", {}), **dict(value)}
        else:
            merged[str(key)] = value
    node_name = _text_field(data, "node", path)
    stack_python = _text_field(data, "stack_python", path)
    runs_dir = _text_field(data, "runs_dir", path)
    if stack_python:
        merged["stack_python"] = stack_python
    keep = data.get("keep_runs")
    if keep is None:
        keep = DEFAULT_KEEP_RUNS
    elif isinstance(keep, bool) or not isinstance(keep, int) or keep < 0:
        raise ConfigError(f"'keep_runs' must be a whole number >= 0 (0 keeps every run), not {keep!r}",
                          where=f"{path}:{data.line_of('keep_runs')}")
    return NodeFile(path=path, node=node_name or "", stack=stack, vars=merged, runs_dir=runs_dir or None,
                    keep_runs=keep)


def _text_field(data: MarkedDict, key: str, path: Path) -> str | None:
    """A field that names one thing (the node, a python, a folder): a string, or a number written without quotes;
    None when absent or empty. A list or a mapping there is a mistake, refused at its line, never its repr."""
    value = data.get(key)
    if value is None or value == "":
        return None
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise ConfigError(f"'{key}' must be a single name or path, not {kind_name(value)}",
                          where=f"{path}:{data.line_of(key)}")
    return str(value)


def _parse_node_stack(section: Any, path: Path) -> Stack:
    """The ``stack:`` section, checked as a stack file is. parse_stack ties a stack's name to its file's name, so
    it is handed that name, and any error it raises is pointed back at the node file."""
    name = section.get("name") if isinstance(section, Mapping) else None
    stand_in = path.with_name(f"{name}.yml") if isinstance(name, str) and name else path
    try:
        return parse_stack(section, stand_in)
    except StackError as err:
        err.where = (err.where or "").replace(str(stand_in), str(path)) or str(path)
        raise


def node_context(node: NodeFile, name: str) -> HostContext:
    """The node as a host of its own: a local connection, the node file's stack (preflighted) and vars."""
    preflight_stack(node.stack)
    host = Host(name=name, address="localhost", connection="local", vars=dict(node.vars), source=str(node.path))
    return HostContext(host, node.stack, dict(node.vars))


def check_tier(tier: str) -> None:
    if tier not in NODE_TIERS:
        raise ConfigError(f"--tier {tier!r} is not one of {', '.join(NODE_TIERS)}",
                          hint="the full tier's sweeps belong in a maintenance job: inv validate --tier full")
