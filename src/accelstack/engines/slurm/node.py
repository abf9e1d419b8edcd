"""The Slurm engine's node side: what runs on a node as a task of a step, with no SSH.

``accelstack node-check`` (the host checks, :mod:`accelstack.flows.nodecheck`) and ``accelstack node-collective``
(one rank of the multi-node allreduce) take the node's name from Slurm (``SLURMD_NODENAME``) and, under
``validate --engine slurm --inventory``, the vars the control side sent for the node (``ACCELSTACK_NODE_VARS``:
its inventory host's, over the node file's). node-collective builds the same config the SSH engine gives the worker
and execs the stack's python on ``collectives.py``, which takes its rank and rendezvous from Slurm's environment.
"""

from __future__ import annotations

import json
import math
import os
import shlex
import socket
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ...errors import ConfigError
from ...stacks import load_stack
from ...validate.config import ENV_FILE, host_config
from ...validate.registry import validators_dir
from ..collective import DEFAULT_DEADLINE, cluster_sweep
from ..node import NodeFile, load_node_file, node_context
from .nodes import NODE_VARS_ENV, decode_node_vars
from .parse import INFO_KEY


def slurm_node_name(environ: Mapping[str, str] | None = None) -> str:
    """The name Slurm knows this node by: ``SLURMD_NODENAME`` (set for prologs and jobs), else the short
    hostname, which is what slurmd registers under when no ``-N`` is given."""
    env = os.environ if environ is None else environ
    return env.get("SLURMD_NODENAME") or socket.gethostname().split(".")[0]


def apply_control_vars(node: NodeFile, name: str, environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The vars the control side sent for this node (its inventory host's), over the node file's: a node
    validated with an inventory is judged by the inventory. Returns what was applied."""
    extra = decode_node_vars((os.environ if environ is None else environ).get(NODE_VARS_ENV), name)
    if extra.get("stack") and extra["stack"] != node.stack.name:
        node.stack = load_stack(str(extra["stack"]))
    for key, value in extra.items():
        if key == "env" and isinstance(value, dict):
            node.vars["env"] = {**node.vars.get("env", {}), **value}
        else:
            node.vars[key] = value
    return extra


def parse_collective_spec(text: str) -> dict[str, Any]:
    """``node-collective --spec``: the step's JSON object as :func:`accelstack.engines.slurm.collective.run_step` writes it, each field of the type it
    has there; anything else is a ConfigError (one line, exit 3) before the node file is read. Pure."""
    try:
        spec = json.loads(text)
    except ValueError as err:
        raise ConfigError(f"--spec is not JSON: {err}") from None
    if not isinstance(spec, dict):
        raise ConfigError(f"--spec must be a JSON object (deadline_s, run_tag, pair, node_addrs), not "
                          f"{type(spec).__name__}")
    deadline = spec.get("deadline_s")
    if deadline is not None and (isinstance(deadline, bool) or not isinstance(deadline, int | float)
                                 or not math.isfinite(deadline) or deadline <= 0):
        raise ConfigError(f"--spec deadline_s must be a number of seconds above 0, not {deadline!r}")
    if not isinstance(spec.get("run_tag", ""), str):
        raise ConfigError(f"--spec run_tag must be a string, not {spec['run_tag']!r}")
    if not isinstance(spec.get("pair", False), bool):
        raise ConfigError(f"--spec pair must be true or false, not {spec['pair']!r}")
    addrs = spec.get("node_addrs", {})
    if not isinstance(addrs, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in addrs.items()):
        raise ConfigError(f"--spec node_addrs must map node names to addresses, not {addrs!r}"[:200])
    return spec


def node_collective_config(base: dict[str, Any], spec: dict[str, Any]) -> dict[str, Any]:
    """The worker's config on this node: the node's own config (as the SSH engine builds it) with the step's
    deadline, sweep and rendezvous addresses. Pure."""
    deadline_s = float(spec.get("deadline_s") or DEFAULT_DEADLINE)
    config = dict(base, mode="cluster", run_tag=str(spec.get("run_tag") or ""), deadline_s=max(5.0, deadline_s - 3),
                  node_addrs=dict(spec.get("node_addrs") or {}))
    config.update(cluster_sweep(base, bool(spec.get("pair"))))
    config["collective_timeout_s"] = max(5.0, min(float(config.get("collective_timeout_s") or 600), deadline_s - 8))
    return config


def exec_node_collective(spec_text: str, *, node_file: str | None = None) -> None:
    """Become this task's rank: print the node line (local rank 0), then exec the stack's python on the worker
    with the node's socket interfaces exported and its env file sourced, as the SSH engine's command does."""
    spec = parse_collective_spec(spec_text)
    node = load_node_file(Path(node_file) if node_file else None)
    name = slurm_node_name()
    apply_control_vars(node, name)
    ctx = node_context(node, name)
    config = node_collective_config(host_config(ctx, tier="standard"), spec)
    if os.environ.get("SLURM_LOCALID", "0") == "0":
        info = {"name": name, "accelerator": config.get("accelerator"), "vendor": config.get("vendor"),
                "stack": config.get("stack")}
        sys.stdout.write(json.dumps({INFO_KEY: info}) + "\n")
        sys.stdout.flush()
    exports = {k: str(v) for k, v in (config.get("socket_ifnames") or {}).items()}
    exports.update({"ACCELSTACK_RUN_TAG": config["run_tag"], "OMP_NUM_THREADS": "1"})
    env_file = str(config.get("env_file") or ENV_FILE)
    script = str(validators_dir() / "collectives.py")
    # The env file first, then the node's own settings over it: the order of the SSH engine's command.
    shell = (f"[ -r {shlex.quote(env_file)} ] && . {shlex.quote(env_file)} >/dev/null 2>&1; exec env "
             + " ".join(f"{k}={shlex.quote(v)}" for k, v in sorted(exports.items())) + ' "$@"')
    os.execv("/bin/sh", ["/bin/sh", "-c", shell, "sh", ctx.python, script, json.dumps(config, sort_keys=True)])
