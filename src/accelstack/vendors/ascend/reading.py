"""Ascend's facts read from the probe's sections and files, and shown: :func:`read_facts`, the facts table's rows
and the summary's parts."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from ..parsing import parse_key_values
from .facts import AscendFacts
from .parsers import (
    CannVersionCfg,
    parse_ascend_install_info,
    parse_ascend_version_info,
    parse_cann_version_cfg,
    parse_nnal_version_info,
    parse_npu_smi_info,
)

if TYPE_CHECKING:
    from .. import FactsReading


def read_facts(reading: FactsReading, owns: Callable[[Any], bool]) -> AscendFacts | None:
    """The Ascend section of a host's facts from the probe's sections and files; None when the host shows nothing
    of its vendor's (``owns`` tells the vendor's PCI devices)."""
    asc = AscendFacts()
    driver_text = reading.file("driver/version.info")
    if driver_text is not None:
        driver = parse_ascend_version_info(driver_text)
        asc.driver = driver.release
        asc.driver_ascendhal = driver.ascendhal_version
        asc.driver_compatible_cann = driver.compatible_version
    firmware_text = reading.file("firmware/version.info")
    if firmware_text is not None:
        asc.firmware = parse_ascend_version_info(firmware_text).version

    # CANN <= 8.3 lives under ascend-toolkit/latest, 8.5+ under cann/; a host can have both during an
    # upgrade, and set_env.sh of the older layout is what most launch scripts still source, so it wins.
    install = [
        parse_ascend_install_info(text)
        for _, text in reading.files_matching(r"ascend-toolkit/latest/[^/]+-linux/ascend_toolkit_install\.info$")
        + reading.files_matching(r"cann/[^/]+-linux/ascend_toolkit_install\.info$")
    ]
    cfg_text = reading.file("ascend-toolkit/latest/version.cfg", "cann/version.cfg")
    cfg = parse_cann_version_cfg(cfg_text) if cfg_text is not None else CannVersionCfg()
    runtime_text = reading.file("ascend-toolkit/latest/runtime/version.info")
    runtime = parse_key_values(runtime_text) if runtime_text is not None else {}
    toolkit_cfg = cfg.running("toolkit") or cfg.running("runtime")
    asc.cann_toolkit = _pick([i.version for i in install] + [toolkit_cfg.release if toolkit_cfg else None])
    asc.cann_internal = _pick([toolkit_cfg.internal if toolkit_cfg else None, runtime.get("Version")])
    asc.cann_innerversion = _pick(i.innerversion for i in install)

    # [I] which file names the kernels (opp_kernel) package is inferred from the 8.1.RC1 tree and the 8.5+
    # docs, not from an installer's own statement: version.cfg's opp_kernel entry, else opp_kernel's
    # version.info version_dir, else the 8.5+ ascend_ops_install.info.
    kernel_cfg = cfg.running("opp_kernel")
    kernel_info_text = reading.file("ascend-toolkit/latest/opp_kernel/version.info")
    kernel_info = parse_key_values(kernel_info_text) if kernel_info_text is not None else {}
    ops = [parse_ascend_install_info(t) for _, t in reading.files_matching(r"ascend_ops_install\.info$")]
    asc.cann_kernels = _pick(
        [kernel_cfg.release if kernel_cfg else None, kernel_info.get("version_dir")]
        + [o.version for o in ops]
    )

    nnal_files = reading.files_matching(r"nnal/atb/[^/]+/version\.info$")
    # "latest" is what set_env.sh activates; otherwise the last versioned folder in sort order.
    nnal_files.sort(key=lambda item: (item[0].endswith("/latest/version.info"), item[0]))
    if nnal_files:
        asc.nnal = parse_nnal_version_info(nnal_files[-1][1]).version

    if (text := reading.section("npu_smi")) is not None:
        info = parse_npu_smi_info(text)
        asc.npu_smi_version, asc.npus, asc.processes = info.version, info.chips, info.processes

    has_device = any(owns(d) for d in reading.accelerators)
    if not (asc.driver or asc.firmware or asc.cann_toolkit or asc.nnal or asc.npus or has_device):
        return None
    return asc


def _pick(candidates: Iterable[str | None]) -> str | None:
    return next((x for x in candidates if x), None)


def facts_rows(asc: AscendFacts) -> list[tuple[str, str]]:
    return [("ascend", f"driver {asc.driver or '-'}, firmware {asc.firmware or '-'}, CANN "
                       f"{asc.cann_toolkit or '-'} (kernels {asc.cann_kernels or '-'}, NNAL {asc.nnal or '-'}), "
                       f"{len(asc.npus)} NPU(s)" + (f": {asc.npus[0].name}" if asc.npus else ""))]


def facts_summary(asc: AscendFacts) -> list[str]:
    if not (asc.driver or asc.npus):
        return []
    parts = [f"Ascend driver {asc.driver}, {len(asc.npus)} NPU chips"]
    if asc.cann_toolkit:
        parts.append(f"CANN {asc.cann_toolkit}")
    return parts
