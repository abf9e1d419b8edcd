"""The per-host config JSON each validator receives as its one argument, built from the host's context.

Keys (all optional for a script; each reads what it needs, and its declaration in validate/checks/ names them):
  host, inventory, stack, vendor (ascend|nvidia|cpu), backend (hccl|nccl|gloo), accelerator, expect_devices, tier,
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
from ..stacks.versions import parse_version
from .device_floors import load_device_floors

ENV_FILE = "/etc/profile.d/accelstack.sh"
SOCKET_VARS = ("NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME", "HCCL_SOCKET_IFNAME")
# What torch_npu / torch dlsym at the first communicator (reference ascend.md 6; nvidia.md 3.2). NCCL's
# ncclCommInitRankConfig arrived in 2.14 and ncclCommSplit in 2.18, both used by torch >= 2.2.
REQUIRED_SYMBOLS = {
    "ascend": {"libhccl.so": ["HcclCommInitRootInfo", "HcclCommInitRootInfoConfig"]},
    "nvidia": {"libnccl.so.2": ["ncclCommInitRankConfig", "ncclCommSplit"]},
}
SWEEPS = {
    "quick": {"sizes": [1 << 20], "iters": 5},
    "standard": {"sizes": [1 << 16, 1 << 20, 1 << 24], "iters": 20},
    "full": {"sizes": [1 << 16, 1 << 20, 1 << 24, 1 << 27, 1 << 30], "iters": 50},
}
# Accelerators get bigger messages: busbw thresholds are quoted at GB sizes.
ACCEL_SWEEPS = {
    "quick": {"sizes": [1 << 26], "iters": 10},
    "standard": {"sizes": [1 << 20, 1 << 26, 1 << 30], "iters": 20},
    "full": {"sizes": [1 << 20, 1 << 26, 1 << 30, 1 << 33], "iters": 50},
}


def libraries_remedy(ctx: HostContext) -> str:
    """Name the CANN that the stack's torch_npu is released against (compat matrix), or the NCCL pin."""
    stack = ctx.stack
    host = ctx.host.name
    if stack.vendor == "ascend":
        pin = stack.pins.get("torch_npu")
        if pin is not None:
            try:
                want = parse_version(pin.version)
                rows = [r for r in load_matrix().torch_npu if parse_version(r.torch_npu).release[:3] ==
                        want.release[:3]]
            except Exception:
                rows = []
            pairs = ", ".join(sorted({f"torch_npu {r.torch_npu} + CANN {r.cann}" for r in rows})[:4])
            return (f"the libhccl.so loaded is older than torch_npu {pin.version} expects: install the CANN the "
                    f"compat matrix pairs with it ({pairs or 'see compat/ascend.yml'}), or pin a torch_npu built "
                    f"for the installed CANN; then check LD_LIBRARY_PATH in {ENV_FILE} points at that CANN "
                    f"(inv provision --limit {host})")
    if stack.vendor == "nvidia":
        pin = stack.pins.get("nccl")
        return (f"the libnccl loaded lacks symbols torch needs: use the NCCL the torch wheel pins "
                f"({pin.version if pin else 'see compat/nvidia.yml'}), and keep an older system libnccl off "
                f"LD_LIBRARY_PATH (inv provision --limit {host})")
    return f"inv provision --limit {host}"


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
    vendor = stack.vendor
    env = dict(v.get("env") or {})
    socket_ifnames = {}
    socket_ifname_sources = {}  # where each intended value was set, so the env check can name it
    for name in SOCKET_VARS:
        if v.get(name.lower()):
            socket_ifnames[name] = str(v[name.lower()])
            socket_ifname_sources[name] = f"inventory var {name.lower()}"
        elif env.get(name):
            socket_ifnames[name] = str(env[name])
            socket_ifname_sources[name] = f"env.{name} of the stack or inventory"
    venv = stack.paths.get("venv")
    library_dirs = []
    if vendor == "nvidia" and venv:
        library_dirs.append(f"{venv}/lib/python3*/site-packages/nvidia/nccl/lib")
    if vendor == "ascend":
        home = str(v.get("ascend_install_path") or stack.paths.get("ascend_home") or "/usr/local/Ascend")
        library_dirs += [f"{home}/ascend-toolkit/latest/lib64", f"{home}/cann/lib64"]
    sweep = dict((SWEEPS if vendor == "cpu" else ACCEL_SWEEPS)[tier])
    for key in ("sizes", "iters", "warmup", "size_budget_s"):
        if v.get(f"validate_{key}") is not None:
            sweep[key] = v[f"validate_{key}"]
    default_timeout = 1800 if vendor == "ascend" else 600
    config: dict[str, Any] = {
        "host": ctx.host.name,
        "stack": stack.name,
        "vendor": vendor,
        "backend": ctx.backend,
        "accelerator": str(v.get("accelerator") or ("cpu" if vendor == "cpu" else "")),
        "expect_devices": v.get("expect_devices"),
        "tier": tier,
        "env_file": str(v.get("env_file") or ENV_FILE),
        "socket_ifnames": socket_ifnames,
        "socket_ifname_sources": socket_ifname_sources,
        "required_symbols": REQUIRED_SYMBOLS.get(vendor, {}),
        "library_dirs": library_dirs,
        "remedy": libraries_remedy(ctx),
        "checkpoint_dir": v.get("checkpoint_dir"),
        "checkpoint_fs": v.get("checkpoint_fs"),
        "inventory": inventory_of(ctx.host.source),
        "checkpoint_size_gb": v.get("checkpoint_size_gb"),
        "collective_timeout_s": float(v.get("collective_timeout_s") or default_timeout),
        "storage_probe_mb": v.get("storage_probe_mb") or (32 if vendor == "cpu" else 1024),
        "min_shm_gb": v.get("min_shm_gb") or (1 if vendor == "cpu" else 16),
        "nproc": v.get("nproc_per_node") or (2 if vendor == "cpu" else None),
        **sweep,
        **load_device_floors(overrides=v.get("device_thresholds"), vendor=vendor),
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
