"""Which Slurm nodes a run validates, and what each is told: the partition's nodes (``sinfo``) or those
``--nodes`` names, each node's fields (``scontrol show node``: address, devices, a drained node's reason), and, with
an inventory, the host each node is and the vars it is sent (``ACCELSTACK_NODE_VARS``).

With an inventory, each Slurm node is the inventory host that names it (``slurm_node: NAME``), else the host of
that name, else the host whose address (``ansible_host``) has it as short hostname. That host's vars (stack,
accelerator, expect_devices, socket interfaces, thresholds...) are sent to the node with the step and override the
node file's there (:func:`accelstack.engines.slurm.node.apply_control_vars`); records keep the Slurm node name as
``host``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ...errors import ConfigError
from ...inventory import Host, Inventory
from ...stacks.context import HostContext, resolve_contexts
from .client import QUERY_TIMEOUT_S, Client
from .parse import SlurmNode, last_line, parse_scontrol_node, parse_sinfo_nodes

NODE_VARS_ENV = "ACCELSTACK_NODE_VARS"


# The inventory vars a node's checks read (what the node file carries, and the cluster sweep's settings): every
# var validate.config.host_config, the context and node-check read from a host's vars (a test reads them all).
NODE_VARS = ("stack", "stack_python", "expect_devices", "accelerator", "backend", "nccl_socket_ifname",
             "hccl_socket_ifname", "gloo_socket_ifname", "ascend_install_path", "checkpoint_dir", "checkpoint_fs",
             "checkpoint_size_gb", "collective_timeout_s", "storage_probe_mb", "min_shm_gb", "validate_sizes",
             "validate_iters", "validate_warmup", "validate_size_budget_s", "thresholds", "device_thresholds", "env",
             "env_file", "nproc_per_node", "health_xid_window_s", "cluster_sizes", "cluster_iters", "cluster_warmup",
             "cluster_size_budget_s", "cluster_nproc")


def short_name(address: str) -> str:
    """``gpu07.dc1.example`` -> ``gpu07``; an IP address stays whole. Pure."""
    return address if re.fullmatch(r"[\d.]+|[0-9a-fA-F:]+", address or "") else (address or "").split(".")[0]


def map_node_names(slurm_names: Iterable[str], hosts: dict[str, tuple[str, str | None]]) -> dict[str, str]:
    """Slurm node name -> inventory host name. ``hosts`` is ``{host: (address, slurm_node var or None)}``. A node
    matches the host that names it (``slurm_node``), else the host of its name, else the host whose address has
    it as short hostname; a node no host matches is left out. Pure."""
    by_var = {var: host for host, (_addr, var) in hosts.items() if var}
    by_short: dict[str, str] = {}
    for host, (address, _var) in hosts.items():
        by_short.setdefault(short_name(address), host)
        by_short.setdefault(short_name(host), host)
    found: dict[str, str] = {}
    for name in slurm_names:
        match = by_var.get(name) or (name if name in hosts else None) or by_short.get(name)
        if match is not None:
            found[name] = match
    return found


def inventory_contexts(inventory: Inventory, hosts: Sequence[Host], slurm_names: list[str],
                       overrides: dict[str, Any] | None = None) -> dict[str, HostContext]:
    """The context of the host (of ``hosts``, from the loaded ``inventory``) that each Slurm node is; a node no
    host matches is a ConfigError (exit 3), before any srun."""
    mapping = map_node_names(slurm_names, {h.name: (h.address, str(h.vars["slurm_node"]) if h.vars.get("slurm_node")
                                                    else None) for h in hosts})
    missing = [n for n in slurm_names if n not in mapping]
    if missing:
        raise ConfigError(f"Slurm node(s) {', '.join(missing)} match no host of {inventory.path}",
                          hint="name the host as the node, give it `slurm_node: NAME`, or narrow --nodes")
    chosen = set(mapping.values())
    wanted = [h for h in hosts if h.name in chosen]
    contexts = resolve_contexts(wanted, overrides=overrides)
    return {name: contexts[host] for name, host in mapping.items()}


# Linux refuses to start a program with one environment string over 128 KiB (MAX_ARG_STRLEN): srun would not run.
NODE_VARS_MAX_BYTES = 120_000


def encode_node_vars(per_node: dict[str, dict[str, Any]]) -> str:
    """``ACCELSTACK_NODE_VARS``: each distinct set of vars once; the set most nodes share is the ``default``, and
    only the nodes with another set are named (a fleet has few sets: the text stays small at any node count, where
    naming every node made it grow with the fleet, past what one environment variable may hold). Pure."""
    sets: list[dict[str, Any]] = []
    index: dict[str, int] = {}
    of_node: dict[str, int] = {}
    for name, values in sorted(per_node.items()):
        chosen = {k: values[k] for k in NODE_VARS if values.get(k) is not None}
        key = json.dumps(chosen, sort_keys=True, default=str)
        if key not in index:
            index[key] = len(sets)
            sets.append(chosen)
        of_node[name] = index[key]
    counts: dict[int, int] = {}
    for number in of_node.values():
        counts[number] = counts.get(number, 0) + 1
    default = max(counts, key=lambda number: (counts[number], -number)) if counts else 0
    nodes = {name: number for name, number in of_node.items() if number != default}
    return json.dumps({"sets": sets, "default": default, "nodes": nodes}, sort_keys=True, default=str)


def node_vars_env(per_node: dict[str, dict[str, Any]]) -> dict[str, str]:
    """The environment a step carries for these nodes' vars (none when no node has any); vars too many and too
    varied to travel in one environment variable are a ConfigError (exit 3) before any srun."""
    if not any(values.get(key) is not None for values in per_node.values() for key in NODE_VARS):
        return {}
    text = encode_node_vars(per_node)
    if len(NODE_VARS_ENV) + 1 + len(text.encode()) > NODE_VARS_MAX_BYTES:
        sets = len(json.loads(text)["sets"])
        raise ConfigError(f"the inventory vars of {len(per_node)} Slurm nodes ({sets} different sets) take "
                          f"{len(text.encode())} bytes in {NODE_VARS_ENV}; one environment variable holds 128 KiB",
                          hint="give nodes that share a role the same vars (group_vars), or validate fewer nodes "
                               "at once (--nodes)")
    return {NODE_VARS_ENV: text}


def decode_node_vars(text: str | None, name: str) -> dict[str, Any]:
    """This node's vars from ``ACCELSTACK_NODE_VARS`` (the set it is named with, else the default set); none when
    it is unset or empty. A value that is not what :func:`encode_node_vars` writes is a ConfigError naming the
    variable (exit 3), never silently no vars: the node would be judged by its node file alone. Pure."""
    if not text:
        return {}
    try:
        doc = json.loads(text)
    except ValueError as err:
        raise ConfigError(f"{NODE_VARS_ENV} is not JSON ({err}): {text[:60]!r}; validate --engine slurm sets "
                          "it, unset it to judge by the node file alone") from None
    try:
        number = doc["nodes"].get(name, doc.get("default"))
        if number is None:  # from a control side that named every node, and not this one
            return {}
        chosen = doc["sets"][number] if isinstance(number, int) else None
    except (KeyError, IndexError, TypeError, AttributeError):
        chosen = None
    if not isinstance(chosen, dict):
        raise ConfigError(f"{NODE_VARS_ENV} is not the vars validate --engine slurm sends ({{\"sets\": [...], "
                          f"\"default\": N, \"nodes\": {{...}}}}): {text[:60]!r}")
    return dict(chosen)


@dataclass(frozen=True)
class Selection:
    """The Slurm nodes a run validates (sinfo's, with their states) and, with an inventory, each one's host
    context: worked out once, when the flags are checked, and handed to the run."""

    nodes: list[SlurmNode]
    contexts: dict[str, HostContext]


def select(client: Client, partition: str | None, nodes: str | None, inventory: Inventory | None = None,
           hosts: Sequence[Host] = (), overrides: dict[str, Any] | None = None) -> Selection:
    """The partition's nodes (or those ``nodes`` names) and their inventory hosts' contexts; a node the partition
    lacks, or one no inventory host matches, is a ConfigError (exit 3)."""
    found = select_nodes(client, partition, nodes)
    contexts = inventory_contexts(inventory, hosts, [n.name for n in found], overrides) \
        if inventory is not None else {}
    return Selection(found, contexts)


def select_nodes(client: Client, partition: str | None, nodes: str | None) -> list[SlurmNode]:
    """The partition's nodes (sinfo), or those of them ``nodes`` names; a name the partition lacks is exit 3."""
    listing = ["sinfo", "-h", "-N", "-o", "%N %T"]
    if partition:
        listing.append(f"--partition={partition}")
    proc = client.run(listing, timeout=2 * QUERY_TIMEOUT_S)
    if proc.returncode != 0:
        raise ConfigError(f"sinfo exited {proc.returncode}: {last_line(proc.stderr)}",
                          hint="is SLURM_CONF set and slurmctld up? (scontrol ping)")
    found = parse_sinfo_nodes(proc.stdout)
    where = f"partition {partition}" if partition else "the default partition"
    if nodes:
        expanded = client.run(["scontrol", "show", "hostnames", nodes], timeout=QUERY_TIMEOUT_S)
        wanted = expanded.stdout.split() if expanded.returncode == 0 else []
        if not wanted:
            raise ConfigError(f"--nodes {nodes!r} is not a Slurm hostlist: "
                              f"{last_line(expanded.stderr, 'it names no node')}", hint="e.g. lab[1-4],gpu07")
        known = {n.name for n in found}
        unknown = [n for n in wanted if n not in known]
        if unknown:
            raise ConfigError(f"--nodes names {', '.join(unknown)}, which {where} does not have",
                              hint=f"sinfo -N{' -p ' + partition if partition else ''} lists its nodes")
        chosen = set(wanted)
        found = [n for n in found if n.name in chosen]
    if not found:
        raise ConfigError(f"Slurm lists no node in {where}")
    return found


def node_table(client: Client) -> dict[str, dict[str, str]]:
    """``scontrol -o show node``: every node's fields (NodeAddr, Gres, Reason...) by name, in one call whatever the
    node count; none when scontrol fails (a drained node's reason is then left out, nothing else)."""
    proc = client.run(["scontrol", "-o", "show", "node"], timeout=QUERY_TIMEOUT_S)
    table = {}
    for line in proc.stdout.splitlines() if proc.returncode == 0 else []:
        fields = parse_scontrol_node(line)
        if fields.get("NodeName"):
            table[fields["NodeName"]] = fields
    return table
