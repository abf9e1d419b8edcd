"""The per-host config JSON each validator receives as its one argument, built from the host's context.

Keys (all optional for a script; each reads what it needs, and its declaration in validate/checks/ names them):
  host, inventory, stack, vendor (accelstack.vendors), backend (the vendor's), accelerator, expect_devices, tier,
  env_file, socket_ifnames {NAME: value}, socket_ifname_sources {NAME: where it was set},
  required_symbols {library: [symbols]}, library_dirs [globs where the stack's library lives], remedy,
  checkpoint_dir, checkpoint_fs, checkpoint_size_gb, collective_timeout_s, storage_probe_mb, min_shm_gb,
  min_device_free_fraction, nproc, sizes [bytes], iters, warmup, size_budget_s, deadline_s, mode, collectives,
  run_tag, device_rows [per-SKU rows], device_health {limits}, device_margin (data/thresholds.yml via
  device_floors; an inventory ``device_thresholds`` list of rows wins).
"""

from __future__ import annotations

from typing import Any

from ..inventory.vartypes import check_vars
from ..stacks import load_matrix
from ..stacks.context import HostContext
from ..vendors import get_vendor, vendors
from .device_floors import load_device_floors

ENV_FILE = "/etc/profile.d/accelstack.sh"


def socket_vars() -> tuple[str, ...]:
    """The socket-interface variables of every vendor's backend (NCCL_SOCKET_IFNAME, ...)."""
    return tuple(dict.fromkeys(v.socket_ifname_env for v in vendors() if v.socket_ifname_env))


def libraries_remedy(ctx: HostContext) -> str:
    """The vendor's remedy for a collective library that lacks what torch needs (the CANN the stack's torch_npu is
    released against, the NCCL the torch wheel pins), else provisioning."""
    host = ctx.host.name
    vendor = get_vendor(ctx.stack.vendor)
    matrix = load_matrix() if vendor.compat_rules else None
    return vendor.libraries_remedy(ctx.stack.pins, host, matrix) or f"inv provision --limit {host}"


def inventory_of(source: str | None) -> str | None:
    """The inventory file a host was read from (``Host.source`` is ``file:line``): remedies name it."""
    if not source:
        return None
    path, sep, line = source.rpartition(":")
    return path if sep and line.isdigit() else source


def checked_vars(ctx: HostContext) -> dict[str, Any]:
    """The context's vars, checked by the inventory's table of var types (inventory/vartypes.py). An inventory's
    own vars and ``--set`` were checked when read; this catches the ones that come from elsewhere: a node file,
    ``ACCELSTACK_NODE_VARS`` under ``--engine slurm``. A bad value is a ConfigError (exit 3), never a verdict."""
    changed = check_vars(ctx.vars, lambda name: ctx.host.where_of(name) or ctx.host.name)
    return {**ctx.vars, **changed} if changed else ctx.vars


def host_config(ctx: HostContext, *, tier: str = "standard") -> dict[str, Any]:
    stack = ctx.stack
    v = checked_vars(ctx)
    vendor = get_vendor(stack.vendor)
    env = dict(v.get("env") or {})
    socket_ifnames = {}
    socket_ifname_sources = {}  # where each intended value was set, so the env check can name it
    for name in socket_vars():
        if v.get(name.lower()):
            socket_ifnames[name] = str(v[name.lower()])
            socket_ifname_sources[name] = f"inventory var {name.lower()}"
        elif env.get(name):
            socket_ifnames[name] = str(env[name])
            socket_ifname_sources[name] = f"env.{name} of the stack or inventory"
    sweep = vendor.sweep(tier)
    for key in ("sizes", "iters", "warmup", "size_budget_s"):
        if v.get(f"validate_{key}") is not None:
            sweep[key] = v[f"validate_{key}"]
    defaults = vendor.host_defaults()
    config: dict[str, Any] = {
        "host": ctx.host.name,
        "stack": stack.name,
        "vendor": vendor.name,
        "backend": ctx.backend,
        "accelerator": str(v.get("accelerator") or defaults["accelerator"]),
        "expect_devices": v.get("expect_devices"),
        "tier": tier,
        "env_file": str(v.get("env_file") or ENV_FILE),
        "socket_ifnames": socket_ifnames,
        "socket_ifname_sources": socket_ifname_sources,
        "required_symbols": {lib: list(symbols) for lib, symbols in vendor.required_symbols.items()},
        "library_dirs": vendor.library_dirs(stack.paths, v),
        "remedy": libraries_remedy(ctx),
        "checkpoint_dir": v.get("checkpoint_dir"),
        "checkpoint_fs": v.get("checkpoint_fs"),
        "inventory": inventory_of(ctx.host.source),
        "checkpoint_size_gb": v.get("checkpoint_size_gb"),
        "collective_timeout_s": float(v.get("collective_timeout_s") or vendor.collective_timeout_s),
        "storage_probe_mb": v.get("storage_probe_mb") or defaults["storage_probe_mb"],
        "min_shm_gb": v.get("min_shm_gb") or defaults["min_shm_gb"],
        "nproc": v.get("nproc_per_node") or defaults["nproc"],
        **sweep,
        **load_device_floors(overrides=v.get("device_thresholds"), vendor=vendor.name),
    }
    for key in ("sizes", "iters", "warmup", "size_budget_s", "nproc"):
        if v.get(f"cluster_{key}") is not None:
            config[f"cluster_{key}"] = v[f"cluster_{key}"]
    window = v.get("health_xid_window_s")
    if window is not None and "device_health" in config:  # one of the health script's limits
        config["device_health"] = {**config["device_health"], "xid_window_s": window}
    return config


# The health tier runs no collective: its host config carries the quick tier's sweep settings, which no check of
# it reads.
SWEEP_TIER = {"health": "quick"}


def tier_config(ctx: HostContext, tier: str) -> dict[str, Any]:
    """The host config every script of a ``tier`` run gets (:func:`host_config`, with ``tier`` set)."""
    config = host_config(ctx, tier=SWEEP_TIER.get(tier, tier))
    config["tier"] = tier
    return config
