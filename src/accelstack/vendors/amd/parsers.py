"""AMD's pure parsers: ``amd-smi`` (``static``, ``metric``, ``process``, ``list`` and ``version``, as JSON or as the
tool's default text), ``rocm-smi --json``, ``/opt/rocm/.info/version``, ``/sys/module/amdgpu/version`` and torch's
``torch.version.hip``. Text -> dataclasses or plain values, no I/O; the error policy of
:mod:`accelstack.facts.parsers` (JSON that does not parse raises ValueError, human-oriented text is read
leniently). The public outputs they were written against are under ``tests/data/amd/`` with their sources.

amd-smi prints one document two ways (the CLI builds one dictionary per GPU and writes it as JSON or as indented
``KEY: value`` text, https://github.com/ROCm/amdsmi, amdsmi_cli/README.md): its JSON keys are the text's keys in
lower case. Its JSON is a list of ``{"gpu": N, ...}`` objects up to amd-smi 25 and ``{"gpu_data": [...]}`` from
amd-smi 26 (ROCm 7; ROCm/rocm-systems PR #223); quantities are ``{"value": 196592, "unit": "MB"}`` from ROCm 6.1
(amdsmi CHANGELOG, "Added units of measure to JSON output"), plain numbers or ``"196592 MB"`` text before and in
the text form; what a GPU cannot report is ``"N/A"``. :func:`amd_smi_gpus` reads all of these into the same
lower-case tree, so one reader serves every version and both forms.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ..parsing import NA as _NA
from .facts import AmdGpu

_GPU_HEADER = re.compile(r"^GPU:\s*(\d+)\s*$")
_KEY_LINE = re.compile(r"^(\s*)([A-Za-z0-9_ ./()\-]+?):\s?(.*)$")
# Bytes per unit of the sizes amd-smi prints (its "MB" are MiB: amdsmi_vram_usage_t is in MB of 2^20 bytes).
_UNIT_BYTES = {"b": 1, "kb": 1 << 10, "mb": 1 << 20, "gb": 1 << 30, "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30}


def _json_start(text: str) -> int | None:
    """Where the JSON document starts: amd-smi may print warnings (a missing permission) before it."""
    for match in re.finditer(r"^[ \t]*[\[{]", text, re.MULTILINE):
        return match.start()
    return None


def parse_amd_smi_text(text: str) -> list[dict[str, Any]]:
    """amd-smi's default text (``GPU: 0`` then indented ``KEY: value`` lines) -> one lower-case tree per GPU.

    A key with no value opens a nested mapping; a line without a key continues the previous value (long lists
    wrap). Lenient: lines before the first ``GPU:`` header (a CPU's section, a banner) are skipped."""
    gpus: list[dict[str, Any]] = []
    stack: list[tuple[int, dict[str, Any]]] = []
    last: tuple[dict[str, Any], str] | None = None
    for raw in (text or "").splitlines():
        if not raw.strip():
            continue
        header = _GPU_HEADER.match(raw)
        if header:
            gpu: dict[str, Any] = {"gpu": int(header.group(1))}
            gpus.append(gpu)
            stack, last = [(-1, gpu)], None
            continue
        if not stack:
            continue
        match = _KEY_LINE.match(raw)
        indent = len(raw) - len(raw.lstrip())
        if match is None:
            if last is not None:
                holder, key = last
                holder[key] = f"{holder[key]} {raw.strip()}".strip()
            continue
        key, value = match.group(2).strip().lower().replace(" ", "_"), match.group(3).strip()
        while len(stack) > 1 and stack[-1][0] >= indent:
            stack.pop()
        parent = stack[-1][1]
        if value:
            parent[key] = value
            last = (parent, key)
        else:
            child: dict[str, Any] = {}
            parent[key] = child
            stack.append((indent, child))
            last = None
    return gpus


def amd_smi_gpus(text: str, what: str = "amd-smi") -> list[dict[str, Any]]:
    """Any amd-smi GPU document (``static``, ``metric``, ``process``, ``list``; JSON or text) -> one tree per GPU,
    keys in lower case. Raises ValueError on JSON that does not parse or has no GPU list."""
    start = _json_start(text or "")
    if start is None:
        return parse_amd_smi_text(text)
    try:
        data = json.loads(text[start:])
    except ValueError as exc:
        raise ValueError(f"{what}: not valid JSON ({exc}): {text[start:start + 200]!r}") from None
    if isinstance(data, dict) and isinstance(data.get("gpu_data"), list):
        data = data["gpu_data"]
    elif isinstance(data, dict) and "gpu" in data:
        data = [data]
    if not isinstance(data, list):
        raise ValueError(f"{what}: expected a list of GPUs or {{\"gpu_data\": [...]}}, got {type(data).__name__}")
    return [_lower(item) for item in data if isinstance(item, dict)]


def _lower(node: Any) -> Any:
    if isinstance(node, dict):
        return {str(k).lower(): _lower(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_lower(v) for v in node]
    return node


def _dig(node: Any, *path: str) -> Any:
    """``node[path[0]][path[1]]...``, None where a step is missing."""
    for key in path:
        if not isinstance(node, dict):
            return None
        node = node.get(key)
    return node


def _quantity(value: Any) -> tuple[float, str | None] | None:
    """A quantity as amd-smi writes it (``{"value": 32, "unit": "GT/s"}``, ``32``, ``"32 GT/s"``, ``"N/A"``) ->
    ``(number, unit)``, None when it is not reported."""
    unit = None
    if isinstance(value, dict):
        value, unit = value.get("value"), value.get("unit")
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value), unit
    match = re.match(r"^\s*(-?\d+(?:\.\d+)?)\s*(\S.*)?$", str(value))
    if not match or str(value).strip().lower() in _NA:
        return None
    return float(match.group(1)), unit or (match.group(2).strip() if match.group(2) else None)


def _number(value: Any) -> float | None:
    found = _quantity(value)
    return found[0] if found else None


def _mebibytes(value: Any, default_unit: str = "MB") -> int | None:
    """A size (``{"value": 196592, "unit": "MB"}``, ``"64289 MB"``, bytes) -> MiB."""
    found = _quantity(value)
    if found is None:
        return None
    amount, unit = found
    factor = _UNIT_BYTES.get((unit or default_unit).lower())
    return int(amount * factor / (1 << 20)) if factor else None


def _text_of(value: Any) -> str | None:
    if value is None or isinstance(value, (dict, list)):
        return None
    text = str(value).strip()
    return None if text.lower() in _NA else text


def _first(node: dict[str, Any], *paths: tuple[str, ...]) -> Any:
    for path in paths:
        value = _dig(node, *path)
        if _text_of(value) is not None or isinstance(value, dict):
            return value
    return None


def parse_amd_smi_static(text: str) -> list[AmdGpu]:
    """``amd-smi static [--json]`` -> the GPUs. The VBIOS section is ``IFWI`` from amd-smi 26; older JSON names
    some fields with their section's prefix (``vbios_version``, ``driver_version``)."""
    gpus = []
    for node in amd_smi_gpus(text, "amd-smi static"):
        name = _text_of(_first(node, ("asic", "market_name"), ("board", "product_name")))
        vram = _first(node, ("vram", "size"), ("vram", "vram_size_mb"), ("vram", "vram_size"))
        gpus.append(AmdGpu(
            index=int(node["gpu"]) if str(node.get("gpu", "")).isdigit() else None,
            name=name,
            device_id=_text_of(_dig(node, "asic", "device_id")),
            bus_id=_text_of(_first(node, ("bus", "bdf"), ("bdf",))),
            gfx=_text_of(_dig(node, "asic", "target_graphics_version")),
            vbios=_text_of(_first(node, ("vbios", "version"), ("vbios", "vbios_version"), ("ifwi", "version"))),
            driver_version=_text_of(_first(node, ("driver", "version"), ("driver", "driver_version"))),
            memory_total_mib=_mebibytes(vram),
            pcie_width_max=_whole(_dig(node, "bus", "max_pcie_width")),
            pcie_speed_max_gts=_number(_dig(node, "bus", "max_pcie_speed")),
            numa_node=_whole(_dig(node, "numa", "node")),
        ))
    return gpus


def _whole(value: Any) -> int | None:
    found = _number(value)
    return int(found) if found is not None else None


def parse_amd_smi_version(text: str) -> dict[str, str]:
    """``amd-smi version`` (``AMDSMI Tool: 25.3.0+ede62f2 | AMDSMI Library version: 25.3.0 | ROCm version:
    6.4.0 | amdgpu version: ...``) or its ``--json`` -> ``{"tool", "library", "rocm", "amdgpu"}``, the parts it
    names. Lenient."""
    start = _json_start(text or "")
    if start is not None:
        try:
            data = json.loads(text[start:])
        except ValueError:
            data = None
        if isinstance(data, list) and data and isinstance(data[0], dict):
            data = data[0]
        if isinstance(data, dict):
            # amdsmi_cli's version command: {"tool": "AMDSMI Tool", "version": ..., "amdsmi_library_version": ...,
            # "rocm_version": ...} (https://github.com/ROCm/amdsmi, amdsmi_cli/amdsmi_commands.py)
            return {k: str(data[key]) for k, key in (("tool", "version"), ("library", "amdsmi_library_version"),
                    ("rocm", "rocm_version"), ("amdgpu", "amdgpu_version")) if _text_of(data.get(key)) is not None}
    out = {}
    for part in (text or "").split("|"):
        key, sep, value = part.partition(":")
        if not sep or _text_of(value) is None:
            continue
        key = key.strip().lower()
        name = ("tool" if key == "amdsmi tool" else "library" if key.startswith("amdsmi library") else
                "rocm" if key == "rocm version" else "amdgpu" if key.startswith("amdgpu") else None)
        if name:
            out[name] = value.strip()
    return out


def parse_rocm_version_file(text: str) -> str | None:
    """``/opt/rocm/.info/version`` (``6.2.0-66``) -> ``6.2.0``: the release, without the build number."""
    match = re.match(r"^\s*(\d+\.\d+(?:\.\d+)?)", text or "")
    return match.group(1) if match else None


def parse_amdgpu_module_version(text: str) -> str | None:
    """``/sys/module/amdgpu/version`` (``6.8.5``): the version of an out-of-tree (DKMS) amdgpu module. The kernel's
    own amdgpu has no such file."""
    match = re.match(r"^\s*(\d+\.\d+(?:\.\d+)?)\s*$", text or "")
    return match.group(1) if match else None


def hip_release(text: str | None) -> str | None:
    """``torch.version.hip`` (``6.2.41133-dd7f95766``: major, minor, HIP's build number) -> ``6.2``, the ROCm
    release torch's wheel names (``+rocm6.2``)."""
    match = re.match(r"^\s*(\d+)\.(\d+)", text or "")
    return f"{match.group(1)}.{match.group(2)}" if match else None


def parse_rocm_smi_products(text: str) -> list[AmdGpu]:
    """``rocm-smi --showproductname [--showdriverversion] --json`` (``{"card0": {"Card series": ...}}``; ROCm
    releases before amd-smi, and hosts without it) -> the GPUs it names. Raises ValueError on bad JSON."""
    start = _json_start(text or "")
    if start is None:
        return []
    try:
        data = json.loads(text[start:])
    except ValueError as exc:
        raise ValueError(f"rocm-smi --json: not valid JSON ({exc}): {text[start:start + 200]!r}") from None
    gpus = []
    for card, values in sorted(data.items() if isinstance(data, dict) else (),
                               key=lambda kv: int(re.sub(r"\D", "", kv[0]) or 0)):
        if not card.startswith("card") or not isinstance(values, dict):
            continue
        fields = {k.lower(): v for k, v in values.items()}
        name = _text_of(fields.get("card series")) or _text_of(fields.get("card model"))
        gpus.append(AmdGpu(index=int(card[4:]) if card[4:].isdigit() else None, name=name,
                           device_id=_text_of(fields.get("card model")) or _text_of(fields.get("device id")),
                           bus_id=_text_of(fields.get("pci bus")), vbios=_text_of(fields.get("vbios version")),
                           gfx=_text_of(fields.get("gfx version"))))
    return gpus


def rocm_smi_driver(text: str) -> str | None:
    """The driver version ``rocm-smi --showdriverversion --json`` reports (``{"system": {"Driver version": ...}}``)."""
    start = _json_start(text or "")
    if start is None:
        return None
    try:
        data = json.loads(text[start:])
    except ValueError:
        return None
    system = data.get("system") if isinstance(data, dict) else None
    return _text_of(system.get("Driver version")) if isinstance(system, dict) else None


def parse_amd_smi_memory(metric_text: str) -> list[tuple[int, int | None, int | None]]:
    """``amd-smi metric [--mem-usage] --json`` -> ``(gpu, used MiB, total MiB)`` per GPU."""
    out = []
    for node in amd_smi_gpus(metric_text, "amd-smi metric"):
        used = _mebibytes(_dig(node, "mem_usage", "used_vram"))
        total = _mebibytes(_dig(node, "mem_usage", "total_vram"))
        out.append((int(_number(node.get("gpu")) or 0), used, total))
    return out


def parse_amd_smi_processes(text: str) -> list[dict[str, Any]]:
    """``amd-smi process --json`` -> ``{gpu, pid, name, memory_mib}`` per process. Each entry of a GPU's
    ``process_list`` is ``{"process_info": {...}}`` (amd-smi 6.2) or the mapping itself (later); a GPU without
    one says so as text (``"No running processes detected"``)."""
    out = []
    for node in amd_smi_gpus(text, "amd-smi process"):
        entries = node.get("process_list")
        if entries is None and isinstance(node.get("process_info"), dict):
            entries = [node["process_info"]]  # the text form's one PROCESS_INFO section
        for entry in entries if isinstance(entries, list) else []:
            info = entry.get("process_info", entry) if isinstance(entry, dict) else None
            if not isinstance(info, dict) or _number(info.get("pid")) is None:
                continue
            memory = _dig(info, "memory_usage", "vram_mem")
            if _quantity(memory) is None:
                memory = info.get("mem_usage", info.get("mem"))
            out.append({"gpu": int(_number(node.get("gpu")) or 0), "pid": int(_number(info.get("pid")) or 0),
                        "name": _text_of(info.get("name")) or "?", "memory_mib": _mebibytes(memory, "B")})
    return out
