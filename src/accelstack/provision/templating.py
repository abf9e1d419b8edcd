"""Templated files: jinja2 with StrictUndefined, checksums to compare, atomic writes on the host.

The env file, the HCCL rank table, the hostfile and the torchrun launcher are rendered here on the control
side; the host gets a file only when its sha256 differs from what is there, written beside the target and
renamed over it, so a reader (a login shell, torchrun) sees the old file or the new one, never a part.
Collective settings are checked against the host's facts before anything is rendered: an interface name that
does not exist on the host would otherwise surface hours later as a hang in ``init_process_group``.
"""

from __future__ import annotations

import hashlib
import json
import shlex
import weakref
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2

from ..errors import TemplateError
from ..facts import Facts
from ..vendors import get_vendor, vendors

# Inventory var -> environment variable, in the order the env file writes them.
COLLECTIVE_VARS: tuple[tuple[str, str], ...] = (
    ("nccl_socket_ifname", "NCCL_SOCKET_IFNAME"),
    ("hccl_socket_ifname", "HCCL_SOCKET_IFNAME"),
    ("gloo_socket_ifname", "GLOO_SOCKET_IFNAME"),
    ("nccl_ib_disable", "NCCL_IB_DISABLE"),
    ("nccl_p2p_disable", "NCCL_P2P_DISABLE"),
    ("hccl_connect_timeout", "HCCL_CONNECT_TIMEOUT"),
    ("hccl_exec_timeout", "HCCL_EXEC_TIMEOUT"),
    ("torch_nccl_async_error_handling", "TORCH_NCCL_ASYNC_ERROR_HANDLING"),
    ("torch_hccl_async_error_handling", "TORCH_HCCL_ASYNC_ERROR_HANDLING"),
)
IFNAME_VARS = ("nccl_socket_ifname", "hccl_socket_ifname", "gloo_socket_ifname")
BOOLEAN_VARS = ("nccl_ib_disable", "nccl_p2p_disable")
# HCCL documents [120, 7200] for the connect timeout and (0, 17340] for the exec timeout on 910.
HCCL_RANGES = {"hccl_connect_timeout": (120, 7200), "hccl_exec_timeout": (0, 17340)}


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def template_environment(search_paths: Iterable[Path]) -> jinja2.Environment:
    # A vendor's own templates (vendors/<name>/templates/) are "vendors/<name>/<file>": the shared env file
    # includes its vendor's part by that name, so no shared template compares a vendor's name.
    vendor_templates = {v.name: jinja2.FileSystemLoader(str(v.data("templates"))) for v in vendors()
                        if v.data("templates").is_dir()}
    env = jinja2.Environment(
        loader=jinja2.ChoiceLoader([jinja2.FileSystemLoader([str(p) for p in search_paths]),
                                    jinja2.PrefixLoader({"vendors": jinja2.PrefixLoader(vendor_templates)})]),
        undefined=jinja2.StrictUndefined, keep_trailing_newline=True, autoescape=False,
        trim_blocks=True, lstrip_blocks=True,
    )
    env.filters["shquote"] = lambda value: shlex.quote(str(value))
    env.filters["tojson_pretty"] = lambda value: json.dumps(value, indent=4) + "\n"
    return env


def render_template(env: jinja2.Environment, name: str, context: Mapping[str, Any]) -> str:
    """Render one template; an undefined variable or a syntax error is a TemplateError naming file:line."""
    try:
        return env.get_template(name).render(**context)
    except jinja2.TemplateSyntaxError as exc:
        raise TemplateError(exc.message or "syntax error", where=f"{exc.filename or name}:{exc.lineno}") from None
    except jinja2.TemplateNotFound:
        raise TemplateError(f"no template named {name!r}",
                            hint="templates live in roles/<role>/templates/ and templates/") from None
    except jinja2.UndefinedError as exc:
        raise TemplateError(f"{exc.message}", where=name,
                            hint="define the variable in the role's defaults.yml or the inventory") from None


_COMPILED: weakref.WeakKeyDictionary[jinja2.Environment, dict[tuple[str, str], Any]] = weakref.WeakKeyDictionary()


def _compiled(env: jinja2.Environment, kind: str, text: str) -> Any:
    """A step field or ``when`` compiled once per environment, not once per host (jinja caches only files)."""
    cache = _COMPILED.setdefault(env, {})
    key = (kind, text)
    if key not in cache:
        cache[key] = env.from_string(text) if kind == "string" else \
            env.compile_expression(text, undefined_to_none=False)
    return cache[key]


def render_string(env: jinja2.Environment, text: str, context: Mapping[str, Any], where: str) -> str:
    if "{{" not in text and "{%" not in text:
        return text
    try:
        return str(_compiled(env, "string", text).render(**context))
    except (jinja2.TemplateSyntaxError, jinja2.UndefinedError) as exc:
        raise TemplateError(f"{getattr(exc, 'message', exc)} in {text!r}", where=where) from None


def evaluate(env: jinja2.Environment, expression: str, context: Mapping[str, Any], where: str) -> Any:
    try:
        return _compiled(env, "expression", expression)(**context)
    except (jinja2.TemplateSyntaxError, jinja2.UndefinedError) as exc:
        raise TemplateError(f"{getattr(exc, 'message', exc)} in when: {expression!r}", where=where) from None


def atomic_write_command(path: str, mode: int, owner: str | None = None) -> str:
    """A shell line that writes stdin to ``path`` atomically: tmp beside it, fsync, chmod, rename."""
    quoted = shlex.quote(path)
    tmp = shlex.quote(f"{path}.accelstack-tmp")
    folder = shlex.quote(str(Path(path).parent))
    chown = f" && chown {shlex.quote(owner)} {tmp}" if owner else ""
    # umask 077 first: the tmp file is never readable by others before its mode is set.
    return (f"umask 077 && mkdir -p {folder} && cat > {tmp} && sync {tmp} 2>/dev/null; "
            f"chmod {mode:o} {tmp}{chown} && mv -f {tmp} {quoted}")


# --- collective settings ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class SettingProblem:
    var: str
    message: str


def _interface_names(facts: Facts) -> list[str]:
    return [i.name for i in facts.interfaces]


def _ifname_problem(var: str, value: str, names: list[str]) -> str | None:
    """NCCL/HCCL syntax: comma list of prefixes, ``=`` exact, ``^`` exclude. Exclusions need no interface."""
    text = value.strip()
    if not text:
        return f"{var} is empty"
    if text.startswith("^"):
        return None
    exact = text.startswith("=")
    wanted = [w.strip() for w in text.lstrip("=").split(",") if w.strip()]
    missing = [w for w in wanted if not any((n == w) if exact else n.startswith(w) for n in names)]
    if missing:
        return (f"{var}={value} names interface(s) {', '.join(missing)} that this host does not have "
                f"(it has: {', '.join(names) or 'none'})")
    return None


def _device_count(facts: Facts, vendor: str) -> int | None:
    return get_vendor(vendor).device_count(facts) or None


def check_collective_settings(values: Mapping[str, Any], facts: Facts, vendor: str) -> list[SettingProblem]:
    """Every way the inventory's collective settings contradict this host's facts; empty when they fit."""
    problems: list[SettingProblem] = []
    names = _interface_names(facts)
    for var in IFNAME_VARS:
        value = values.get(var)
        if value is None or value == "":
            continue
        problem = _ifname_problem(var, str(value), names)
        if problem:
            problems.append(SettingProblem(var, problem))
    for var in BOOLEAN_VARS:
        value = values.get(var)
        if value is not None and str(value).lower() not in ("0", "1", "true", "false"):
            problems.append(SettingProblem(var, f"{var} must be 0 or 1, not {value!r}"))
    for var, (low, high) in HCCL_RANGES.items():
        value = values.get(var)
        if value is None:
            continue
        try:
            number = int(value)
        except (TypeError, ValueError):
            problems.append(SettingProblem(var, f"{var} must be a whole number of seconds, not {value!r}"))
            continue
        if not low <= number <= high:
            problems.append(SettingProblem(var, f"{var}={number} is outside HCCL's range [{low}, {high}]"))
    visible = values.get("visible_devices")
    if visible not in (None, ""):
        problems.extend(_visible_problems(visible, facts, vendor))
    return problems


def _visible_problems(visible: Any, facts: Facts, vendor: str) -> list[SettingProblem]:
    items = visible if isinstance(visible, list) else str(visible).split(",")
    try:
        ids = [int(str(i).strip()) for i in items]
    except ValueError:
        return [SettingProblem("visible_devices", f"visible_devices {visible!r} must be device numbers")]
    if ids != sorted(set(ids)):
        # ASCEND_RT_VISIBLE_DEVICES stops parsing at the first out-of-order id; refuse rather than truncate.
        return [SettingProblem("visible_devices", f"visible_devices {ids} must be ascending without repeats")]
    count = _device_count(facts, vendor)
    if count is not None and ids and max(ids) >= count:
        return [SettingProblem("visible_devices", f"visible_devices {ids} names device {max(ids)}, but this host "
                                                  f"has {count} device(s)")]
    return []


def collective_env(values: Mapping[str, Any], vendor: str) -> dict[str, str]:
    """Environment variables from the inventory's collective settings, in a stable order."""
    env: dict[str, str] = {}
    for var, name in COLLECTIVE_VARS:
        value = values.get(var)
        if value is None or value == "":
            continue
        if isinstance(value, bool):
            value = int(value)
        env[name] = str(value)
    visible = values.get("visible_devices")
    names = get_vendor(vendor).visible_devices_env
    if visible not in (None, "") and names:
        items = visible if isinstance(visible, list) else str(visible).split(",")
        env[names[0]] = ",".join(str(i).strip() for i in items)
    return env


# --- rank table and hostfile --------------------------------------------------------------------------------


@dataclass(frozen=True)
class RankTableServer:
    server_id: str
    device_ips: list[str | None]  # index = device id


def build_rank_table(servers: list[RankTableServer], *, device_port: str | None = None) -> dict[str, Any]:
    """HCCL rank table version 1.0 (A2 layout): every value a string, rank ids contiguous per server."""
    rank = 0
    server_list = []
    for server in servers:
        devices = []
        for device_id, ip in enumerate(server.device_ips):
            device: dict[str, str] = {"device_id": str(device_id)}
            if ip:
                device["device_ip"] = ip
            if device_port:
                device["device_port"] = str(device_port)
            device["rank_id"] = str(rank)
            rank += 1
            devices.append(device)
        server_list.append({"server_id": server.server_id, "device": devices})
    return {"status": "completed", "version": "1.0", "server_count": str(len(server_list)),
            "server_list": server_list}
