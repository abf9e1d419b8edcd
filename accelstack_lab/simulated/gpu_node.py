"""A SIMULATED GPU node on this machine, with no root and no lab host: the lab's simulated ``nvidia-smi`` (N H100s
in a devices file of its own) and a kernel log without Xids on a PATH of its own, an env file whose exports the
node's login environment carries (as ``/etc/profile.d`` gives them on a provisioned node), and the node file
provisioning would render for an NVIDIA stack whose python is this one.

``bench/node_check.py`` times ``node-check`` on it; ``tests/test_health_tier.py`` runs it there, with a device that
another process holds (:meth:`SimulatedGpuNode.hold`). torch here is a CPU build, so the quick tier's torch checks
see no GPU: what they do with a held device (leave it alone) is decided before torch is asked.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .hostside import install

HOSTSIDE = Path(__file__).resolve().parent / "hostside"
DRIVER = "580.65.06"
CUDA = "13.0"
ENV_EXPORTS = {"NCCL_SOCKET_IFNAME": "lo", "NCCL_DEBUG": "WARN"}


@dataclass
class SimulatedGpuNode:
    folder: Path
    bin_dir: Path
    devices_file: Path
    node_file: Path
    env_file: Path

    def env(self, base: dict[str, str] | None = None) -> dict[str, str]:
        """The environment node-check runs in on this node: the simulated tools first on PATH, and the env
        file's exports (a login shell on a provisioned node has them from /etc/profile.d)."""
        env = dict(os.environ if base is None else base)
        env["PATH"] = f"{self.bin_dir}{os.pathsep}{env.get('PATH', '/usr/bin:/bin')}"
        env.update(ENV_EXPORTS)
        return env

    def devices(self) -> dict[str, Any]:
        return dict(json.loads(self.devices_file.read_text()))

    def set(self, index: int, **values: Any) -> None:
        """Change one device's knobs (see the simulated nvidia-smi's docstring)."""
        doc = self.devices()
        doc["devices"][index].update(values)
        self.devices_file.write_text(json.dumps(doc, indent=1))

    def hold(self, index: int, *, pid: int = 4242, name: str = "python3", memory_mib: int = 78000,
             compute_mode: str | None = None) -> None:
        """Another process (a training job's rank) holds GPU ``index``: listed, with its memory."""
        values: dict[str, Any] = {"processes": [{"pid": pid, "name": name, "memory_mib": memory_mib}]}
        if compute_mode is not None:
            values["compute_mode"] = compute_mode
        self.set(index, **values)


def make_gpu_node(folder: Path, *, count: int = 8, name: str = "NVIDIA H100 80GB HBM3",
                  stack: str = "nvidia-cuda13.0", node_vars: dict[str, Any] | None = None) -> SimulatedGpuNode:
    folder.mkdir(parents=True, exist_ok=True)
    bin_dir = folder / "bin"
    bin_dir.mkdir(exist_ok=True)
    devices = folder / "nvidia-devices.json"
    devices.write_text(json.dumps(install.nvidia_devices({"count": count, "name": name}, DRIVER, CUDA), indent=1))
    smi = bin_dir / "nvidia-smi"
    smi.write_text((HOSTSIDE / "nvidia_smi.py").read_text().replace("@@DEVICES_FILE@@", str(devices)))
    smi.chmod(0o755)
    log = folder / "kernel.log"
    log.write_text("[    0.000000] Linux version 6.1.0 (simulated GPU node)\n"
                   f"[    4.120000] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  {DRIVER}\n")
    dmesg = bin_dir / "dmesg"
    dmesg.write_text(f"#!/bin/sh\ncat {log}\n")
    dmesg.chmod(0o755)
    env_file = folder / "accelstack.sh"
    env_file.write_text("".join(f"export {k}={v}\n" for k, v in ENV_EXPORTS.items()))
    values: dict[str, Any] = {"expect_devices": count, "accelerator": "H100", "nccl_socket_ifname": "lo",
                              "stack_python": sys.executable, **(node_vars or {})}
    node_file = render_node_file(folder / "node.yml", stack=stack, node="gpu01", values=values, env_file=env_file,
                                 runs_dir=folder / "runs")
    return SimulatedGpuNode(folder, bin_dir, devices, node_file, env_file)


def render_node_file(path: Path, *, stack: str, node: str, values: dict[str, Any], env_file: Path,
                     runs_dir: Path) -> Path:
    """The node file ``inv provision`` renders (``templates/node.yml.j2``) for ``node`` on ``stack``, with the
    inventory vars ``values`` (``stack_python``, ``expect_devices``, ``accelerator``, ...)."""
    from accelstack.paths import project_root
    from accelstack.provision.templating import render_template, template_environment
    from accelstack.stacks import load_stack

    the_stack = load_stack(stack)
    context = {**values, "inventory_hostname": node, "stack": the_stack, "paths": the_stack.paths,
               "vendor": the_stack.vendor, "env_file": str(env_file), "node_runs_dir": str(runs_dir),
               "env_exports": dict(the_stack.env)}
    path.write_text(render_template(template_environment([project_root() / "templates"]), "node.yml.j2", context))
    return path
