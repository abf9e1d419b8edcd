"""Huawei Ascend NPUs: the HDK driver and firmware, CANN, torch_npu, HCCL (torch's ``hccl`` backend), ``npu-smi``.

CANN's ``cann_toolkit``, ``cann_kernels`` and ``nnal`` may read as CANN's internal numbers (``7.7.0.1.238``); they
are compared as the release they are (``8.1.RC1``), through ``compat/ascend.yml``'s ``cann_internal``. A Huawei PCI
device (vendor id 0x19e5) is this vendor's: facts name it ``ascend``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .. import Component, DeviceMemory, FactsReading, Vendor
from . import reading
from .facts import AscendFacts
from .parsers import parse_npu_smi_info

_PYTHON_ENV = "python_env (the venv from the artifact wheelhouse)"
DEFAULT_ROOT = "/usr/local/Ascend"
# HCCL_IF_BASE_PORT and the 32 ports above it, on which HCCL's ranks connect across hosts (Ascend's HCCL
# environment variable reference: HCCL_IF_BASE_PORT).
HCCL_BASE_PORT = 60000
HCCL_PORTS = 32
# An Ascend error code (the CANN error code reference): CANN's E + family letter + 4 digits (EI0002 HCCL, EJ
# runtime, EL, EE, EH, EZ ...), E + 5 digits (E30001 ...) and torch_npu's ERR + 5 digits (ERR02200). Every code the
# pattern can match contains one of the anchors.
_CODE_FAMILIES = "EHIJKLZ"
ERROR_CODE = rf"\b(?P<code>E[{_CODE_FAMILIES}]\d{{4}}|E[1-9]\d{{4}}|ERR\d{{5}})\b"
ERROR_CODE_ANCHORS = ("ERR",) + tuple(f"E{a}{d}" for a in _CODE_FAMILIES + "123456789" for d in "0123456789")


def _section(facts: Any) -> AscendFacts | None:
    section: AscendFacts | None = facts.section("ascend")
    return section


def _ascend_attr(name: str) -> Any:
    def read(facts: Any) -> str | None:
        section = _section(facts)
        return getattr(section, name, None) if section is not None else None
    return read


def _release3(text: str) -> tuple[int, ...] | None:
    """``2.1.0.post6`` -> ``(2, 1, 0)``: the release a torch_npu build belongs to."""
    match = re.match(r"^\s*(\d+)\.(\d+)(?:\.(\d+))?", text or "")
    return tuple(int(g or 0) for g in match.groups()) if match else None


def _torch_npu(facts: Any) -> str | None:
    return facts.torch.torch_npu if facts.torch is not None else None


class AscendVendor(Vendor):
    name = "ascend"
    label = "Ascend"
    order = 10
    backend = "hccl"
    torch_device = "npu"
    torch_plugin = "torch_npu"
    torch_build = "torch_npu (imported before torch's device API)"
    pci_vendor_ids = ("0x19e5",)  # Huawei
    pci_classes = ("0x1200",)  # processing accelerator
    visible_devices_env = ("ASCEND_RT_VISIBLE_DEVICES",)
    socket_ifname_env = "HCCL_SOCKET_IFNAME"
    tool = "npu-smi"
    health_read = "`npu-smi`"
    health_help = ("`health.status`, `health.ecc` (`-t ecc`), `health.hbm`, `health.temperature`, "
                   "`health.aicore` (busy with no process listed)")
    tool_sections = {"npu_smi": "npu-smi"}
    # What torch_npu dlsyms at the first communicator (the Ascend/pytorch sources, ProcessGroupHCCL).
    required_symbols = {"libhccl.so": ["HcclCommInitRootInfo", "HcclCommInitRootInfoConfig"]}
    # HCCL's first connection waits for every rank's CANN to load the operators: a cold start takes minutes.
    collective_timeout_s = 1800.0
    device_ips = True
    rank_table = True
    listed_pins = ("torch_npu", "cann_toolkit", "ascend_driver", "torch", "python")
    compat_rules = ("torch_npu", "cann_hdk", "same_release")
    error_code = ERROR_CODE
    error_code_anchors = ERROR_CODE_ANCHORS
    error_code_wrappers = ("ERR",)
    error_code_lookup = ("Look the code up in the CANN error code reference for your CANN version (and the plog under "
                         "~/ascend/log for that PID); add it to the Ascend vendor's diagnose/ascend-cann.yml with its "
                         "cause.")
    error_code_source = ("torch_npu's error code format: https://github.com/Ascend/pytorch/blob/master/docs/zh/"
                         "user_guide/troubleshooting/error_code_description/error_code_mechanism.md")
    # CANN's codes: E, the module, four digits, "0000 to 8999 are user errors, and 9000 to 9999 are internal error
    # codes" (torch_npu's ERR codes wrap another error and carry no such class).
    error_code_user = r"E[0-9A-Z][0-8]\d{3}"
    error_code_user_source = ("CANN's error code format: https://www.hiascend.com/document/detail/en/"
                              "CANNCommunityEdition/900/maintenref/troubleshooting/troubleshooting_0225.html")

    def components(self) -> tuple[Component, ...]:
        return (
            self.component("torch_npu", required=True, critical=True, match="exact",
                           copy="torch_npu in the stack's python (its package metadata)", installed_by=_PYTHON_ENV,
                           read=_torch_npu),
            self.component("ascend_driver", required=True, critical=True, match="exact",
                           copy="driver/version.info under the Ascend root", installed_by="ascend_driver",
                           read=_ascend_attr("driver")),
            self.component("ascend_firmware", required=True, critical=True, match="exact",
                           copy="firmware/version.info under the Ascend root", installed_by="ascend_driver",
                           read=_ascend_attr("firmware")),
            self.component("cann_toolkit", required=True, critical=True, match="exact",
                           copy="the toolkit set_env.sh activates (ascend-toolkit/latest, else cann/): its "
                                "install.info or version.cfg", installed_by="cann", read=_ascend_attr("cann_toolkit"),
                           internal_release=True),
            self.component("cann_kernels", required=True, critical=True, match="exact",
                           copy="the kernels (opp_kernel / ops) inside that toolkit", installed_by="cann",
                           read=_ascend_attr("cann_kernels"), internal_release=True),
            self.component("nnal", required=False, critical=False, match="exact",
                           copy="nnal/atb/latest (what its set_env.sh activates), else the newest nnal/atb/<version>",
                           installed_by="cann", read=_ascend_attr("nnal"), internal_release=True),
        )

    @property
    def facts_type(self) -> type:
        return AscendFacts

    def read_facts(self, facts_reading: FactsReading) -> AscendFacts | None:
        return reading.read_facts(facts_reading, self.owns)

    def facts_rows(self, section: Any) -> list[tuple[str, str]]:
        return reading.facts_rows(section)

    def facts_summary(self, section: Any) -> list[str]:
        return reading.facts_summary(section)

    def device_count(self, facts: Any) -> int | None:
        section = _section(facts)
        return len({chip.npu_id for chip in section.npus}) if section is not None else None

    def root(self, paths: Mapping[str, str], variables: Mapping[str, Any]) -> str:
        """Where the driver and CANN are installed: the inventory's ``ascend_install_path``, the stack's
        ``paths.ascend_home``, else Huawei's default."""
        return str(variables.get("ascend_install_path") or paths.get("ascend_home") or DEFAULT_ROOT)

    def library_dirs(self, paths: Mapping[str, str], variables: Mapping[str, Any]) -> list[str]:
        home = self.root(paths, variables)
        return [f"{home}/ascend-toolkit/latest/lib64", f"{home}/cann/lib64"]

    def libraries_remedy(self, pins: Mapping[str, Any], host: str, matrix: Any) -> str | None:
        """Name the CANN that the stack's torch_npu is released against (the compat matrix)."""
        pin = pins.get("torch_npu")
        if pin is None:
            return None
        want = _release3(pin.version)
        rows = [r for r in matrix.torch_npu if want is not None and _release3(r.torch_npu) == want]
        pairs = ", ".join(sorted({f"torch_npu {r.torch_npu} + CANN {r.cann}" for r in rows})[:4])
        return (f"the libhccl.so loaded is older than torch_npu {pin.version} expects: install the CANN the "
                f"compat matrix pairs with it ({pairs or 'see compat/ascend.yml'}), or pin a torch_npu built "
                f"for the installed CANN; then check LD_LIBRARY_PATH in /etc/profile.d/accelstack.sh points at "
                f"that CANN (inv provision --limit {host})")

    def collective_ports(self, config: Mapping[str, Any]) -> list[int]:
        base = int(config.get("hccl_if_base_port") or HCCL_BASE_PORT)
        return list(range(base, base + HCCL_PORTS))

    def device_counts(self, tool_output: str, evidence: Mapping[str, Any]) -> tuple[int, list[str]]:
        info = parse_npu_smi_info(tool_output)
        ids = sorted({chip.npu_id for chip in info.chips})
        bad = [f"npu {c.npu_id} chip {c.chip_id}: {c.health}" for c in info.chips
               if c.health and c.health.upper() != "OK"]
        return len(ids), bad

    def device_memory(self, tool_output: str, apps_output: str, min_free: float) -> DeviceMemory:
        info = parse_npu_smi_info(tool_output)
        busy = []
        for chip in info.chips:
            used, total = chip.hbm_used_mb, chip.hbm_total_mb
            if used is not None and total and 1 - used / total < min_free:
                busy.append(f"npu {chip.npu_id}: {used}/{total} MB HBM used")
        procs = [f"pid {p.pid} {p.name} on npu {p.npu_id} ({p.memory_mb} MB)" for p in info.processes]
        return DeviceMemory(len(info.chips), busy, procs)


VENDOR = AscendVendor()
