"""The one-round-trip facts command and the reading of what it prints: the two halves of one contract.

The probe (``accelstack/hostside/probes/facts_probe.sh``) is a POSIX sh script that travels inside the command
line (``/bin/sh -c SCRIPT accelstack-probe ARGS...``), so a host needs nothing from us beforehand and the facts
cost one SSH exec, not one per tool. It prints framed raw text; :func:`read_probe_output` turns that into the
probe document that bundles store and :mod:`accelstack.facts.assemble` parses::

    {"probe": 2, "sections": {NAME: {"cmd", "rc", "out", "err"[, "missing", "tool", "timeout", "native"]}},
     "files": {PATH: TEXT | None}, "errors": [TEXT, ...]}

The sections the script reads itself (hostname, uname, CPUs, NUMA nodes, PCI devices, memlock, free space, NCCL
libraries, the python version) come out in the shapes the document has always had, so a bundle written by an
earlier probe reads back through the same parsers.
"""

from __future__ import annotations

import base64
import functools
import json
import re
import shlex
import zlib
from dataclasses import dataclass, field
from typing import Any

from accelstack.facts.parsers import parse_cpu_list
from accelstack.paths import hostside
from accelstack.vendors import vendors

PROBE_SCRIPT = "facts_probe.sh"
STACK_SNIPPET = "stack_snippet.py"
NET_SNIPPET = "net_snippet.py"
PROBE_VERSION = 2
MARKER = "@@accelstack-probe@@"
MAX_TEXT_CHARS = 256 * 1024  # per section output and per file, as the host-side probe always bounded them
STACK_MIN_TIMEOUT = 20.0  # a cold site-packages on network storage takes a while to scan
_MARKER_LINE = re.compile(rf"^{re.escape(MARKER)} (\w+)(?: (.*))?$", re.MULTILINE)


# What a probe reads: the whole host (facts, drift, provisioning, bundles), or only what the installed versions are
# read from (the versions check, run in every health check: no network, free space, PCI or memory reads, no npu-smi,
# and no nvidia-smi where /proc/driver/nvidia/version gives the loaded driver's version).
PROBE_SCOPES = ("host", "components")


@dataclass
class ProbeOptions:
    """What the probe is told: the stack's python, where Ascend lives, which disks to measure, the per-command
    timeout in seconds (npu-smi can hang on a wedged device), and its scope (:data:`PROBE_SCOPES`)."""

    python: str = "python3"
    ascend_root: str = "/usr/local/Ascend"
    disk_paths: list[str] = field(default_factory=lambda: ["/"])
    timeout: float = 10.0
    scope: str = "host"


@functools.lru_cache(maxsize=8)
def _hostside_text(name: str) -> str:
    text = hostside("probes", name).read_text(encoding="utf-8")
    return vendor_probe(text) if name == PROBE_SCRIPT else text


def _line_of(text: str, marker: str) -> str:
    [line] = [line for line in text.splitlines(keepends=True) if marker in line]
    return line


def _spellings(ids: tuple[str, ...]) -> list[str]:
    """sysfs writes ``0x10de``; a kernel or a simulation may write ``0x10DE``: the case matches both."""
    return sorted({i.lower() for i in ids} | {"0x" + i[2:].upper() for i in ids})


def vendor_probe(text: str) -> str:
    """The facts probe with each vendor's part put in (:class:`accelstack.vendors.Vendor`): its tools' folders
    after the system's, ``SEEN_<vendor>`` set when a PCI device of its ids is on the bus, and its ``probe.sh``
    where the script's vendors line is. A vendor brings its part in its folder; the script names none."""
    every = vendors()
    dirs = [d for v in every for d in v.tool_dirs]
    head = "".join(f"SEEN_{v.name}=\n" for v in every)
    base = _line_of(text, "EXTRA_DIRS=")
    text = text.replace(base, head + base.rstrip("\n") + "".join(f":{d}" for d in dirs) + "\n", 1)
    pci = _line_of(text, "@vendor-pci-ids@")
    indent = pci[:len(pci) - len(pci.lstrip())]
    cases = "".join(f"{indent}{' | '.join(_spellings(v.pci_vendor_ids))}) SEEN_{v.name}=yes ;;\n"
                    for v in every if v.pci_vendor_ids)
    text = text.replace(pci, cases, 1)
    # Put in as written (a here-document's end must stay at the start of its line).
    parts = [v.data("probe.sh").read_text(encoding="utf-8") for v in every if v.data("probe.sh").is_file()]
    return text.replace(_line_of(text, "@vendor-probes@"), "\n".join(parts), 1)


def without_comment_lines(text: str) -> str:
    """A script without its blank and comment-only lines: what is sent to every host (a third fewer bytes for
    each host's shell or python to read). Safe for our host-side scripts, which hold no multi-line string
    with such a line (a test compares the python snippets' syntax trees before and after)."""
    return "\n".join(line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#"))


@functools.lru_cache(maxsize=1)
def _sent_texts() -> tuple[str, str, str]:
    # The script and its two python snippets are the same for every host: read and trimmed once per process.
    script, stack, net = (without_comment_lines(_hostside_text(name))
                          for name in (PROBE_SCRIPT, STACK_SNIPPET, NET_SNIPPET))
    return script, stack, net


def probe_argv(options: ProbeOptions | None = None, shell: tuple[str, ...] = ("/bin/sh",)) -> list[str]:
    """The probe as an argument vector: ``SHELL -c SCRIPT accelstack-probe TIMEOUT STACK_TIMEOUT ASCEND_ROOT
    PYTHON STACK_SNIPPET NET_SNIPPET SCOPE DISK_PATH...`` (tests run the script under other shells through it)."""
    opts = options or ProbeOptions()
    if opts.scope not in PROBE_SCOPES:
        raise ValueError(f"probe scope {opts.scope!r} is not one of {', '.join(PROBE_SCOPES)}")
    timeout = float(opts.timeout)
    script, stack, net = _sent_texts()
    return [*shell, "-c", script, "accelstack-probe", f"{timeout:g}", f"{max(timeout, STACK_MIN_TIMEOUT):g}",
            opts.ascend_root, opts.python, stack, net, opts.scope, *map(str, opts.disk_paths)]


def probe_command(options: ProbeOptions | None = None) -> str:
    """One shell line, for any POSIX login shell, that runs :func:`probe_argv` under ``/bin/sh``.

    Every option value reaches the script as a positional parameter through ``shlex.quote``: data, never code.
    """
    return shlex.join(probe_argv(options))


@functools.lru_cache(maxsize=8)
def _encoded_script(name: str) -> str:
    # base64's alphabet holds no quote, space or shell metacharacter, so it can sit inside single quotes.
    return base64.b64encode(zlib.compress(_hostside_text(name).encode("utf-8"), 9)).decode("ascii")


def embedded_script_command(script: str, argument: str, missing_doc: str) -> str:
    """One shell line that runs a stdlib script from ``accelstack/hostside/probes`` with the host's python3.

    ``argument`` (one JSON document) reaches the script as ``sys.argv[1]`` through ``shlex.quote``. Without a
    python3 on the host the line prints ``missing_doc``, so the caller always gets JSON to parse.
    """
    loader = (
        "import base64,zlib;"
        f'exec(compile(zlib.decompress(base64.b64decode("{_encoded_script(script)}")),"{script}","exec"))'
    )
    run = f"python3 -c {shlex.quote(loader)} {shlex.quote(argument)}"
    missing = f"printf '%s\\n' {shlex.quote(missing_doc)}"
    return f"if command -v python3 >/dev/null 2>&1; then {run}; else {missing}; fi"


_BEGIN = re.compile(rf"^{re.escape(MARKER)} begin", re.MULTILINE)


def is_probe_output(text: str) -> bool:
    return _BEGIN.search(text) is not None


def read_probe_output(text: str) -> dict[str, Any]:
    """The probe's framed output -> the probe document. Pure.

    Raises ValueError when ``text`` is not the probe's output. What a login shell printed before the probe
    began (a noisy ``.bashrc``) is left out. Output cut short (the host or the link died mid-probe) keeps what
    came and says so in ``errors``.
    """
    begin = _BEGIN.search(text)
    if begin is None:
        raise ValueError(f"not the facts probe's output: {text[:200]!r}")
    text = text[begin.start():]
    sections: dict[str, dict[str, Any]] = {}
    files: dict[str, str | None] = {}
    errors: list[str] = []
    ended = False
    marks = list(_MARKER_LINE.finditer(text))
    for index, mark in enumerate(marks):
        kind, rest = mark.group(1), mark.group(2) or ""
        start = mark.end() + 1
        stop = marks[index + 1].start() if index + 1 < len(marks) else len(text)
        body = text[start:stop]
        body = body[:-1] if body.endswith("\n") else body  # the one newline the script puts before a marker
        body = body[:MAX_TEXT_CHARS]
        if kind == "run":
            name, _, cmd = rest.partition(" ")
            sections[name] = {"cmd": cmd, "rc": None, "out": "", "err": body}
        elif kind == "out":
            name, _, rc = rest.partition(" ")
            section = sections.setdefault(name, {"cmd": name, "rc": None, "out": "", "err": ""})
            section["out"] = body
            if rc == "timeout":
                section["timeout"] = True
                section["err"] = (section["err"] + "\n" if section["err"] else "") + "timed out"
            else:
                section["rc"] = int(rc) if rc.lstrip("-").isdigit() else None
        elif kind == "missing":
            name, _, cmd = rest.partition(" ")
            sections[name] = {"cmd": cmd, "rc": None, "out": "", "err": "", "missing": True, "tool": body or cmd}
        elif kind == "native":
            name, _, cmd = rest.partition(" ")
            sections[name] = {"cmd": cmd, "rc": 0, "out": body, "err": "", "native": True}
        elif kind == "file":
            files[rest] = body
        elif kind == "nofile":
            files[rest] = None
        elif kind == "note":
            errors.append(rest)
        elif kind == "end":
            ended = True
    if not ended:
        errors.append("the facts probe's output was cut short (the host or the link went away mid-probe)")
    _as_document_shapes(sections)
    return {"probe": PROBE_VERSION, "sections": sections, "files": files, "errors": errors}


def _as_document_shapes(sections: dict[str, dict[str, Any]]) -> None:
    """The script's raw readings, in the shapes the probe document gives them (JSON where structured)."""

    def reshape(name: str, convert: Any) -> None:
        section = sections.get(name)
        if section is None or section.get("rc") != 0:
            return
        try:
            section["out"] = convert(section["out"])
        except (ValueError, IndexError) as exc:
            section.update(rc=None, err=f"{type(exc).__name__}: {exc}", out="")

    lines = _lines
    hostname = (sections.get("hostname") or {}).get("out", "")
    reshape("uname", lambda t: _dumps(dict(zip(("sysname", "release", "version", "machine"), t.split("\n"),
                                               strict=True), nodename=hostname)))
    reshape("cpu_count", lambda t: str(len(parse_cpu_list(t))))
    reshape("numa_nodes", lambda t: _dumps(sorted(lines(t), key=lambda n: int(n[4:]) if n[4:].isdigit() else 0)))
    reshape("pci", lambda t: _dumps([_pci_entry(line) for line in lines(t)]))
    reshape("memlock", lambda t: _dumps(dict(zip(("soft", "hard"), map(_limit, t.split("\n")), strict=True))))
    reshape("nccl_libs", lambda t: _dumps(sorted(set(lines(t)))))
    reshape("probe_python", lambda t: t.strip().removeprefix("Python ").strip())
    if "probe_python" in sections and sections["probe_python"].get("rc") == 0:
        sections["probe_python"]["native"] = True
    _statvfs_sections(sections)


def _lines(text: str) -> list[str]:
    return [line for line in text.split("\n") if line]


def _dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def _pci_entry(line: str) -> dict[str, str | None]:
    slot, vendor, device, klass, numa = line.split(" ")
    return {"slot": slot, "vendor": vendor, **{k: (None if v == "-" else v) for k, v in
                                               (("device", device), ("class", klass), ("numa_node", numa))}}


def _limit(text: str) -> int | str:
    # /proc/self/limits gives bytes, as getrlimit does, or "unlimited".
    text = text.strip()
    return "unlimited" if text == "unlimited" else int(text)


def _statvfs_sections(sections: dict[str, dict[str, Any]]) -> None:
    """``stat -f`` over /dev/shm and the disk paths -> the document's ``shm`` and ``disk_free`` sections. A
    path that does not exist is free space ``None``, not a failed probe (a checkpoint folder not yet made)."""
    asked = sections.pop("disk_paths", None)
    statvfs = sections.pop("statvfs", None)
    if statvfs is None:
        return
    if statvfs.get("missing") or statvfs.get("timeout"):
        sections["statvfs"] = statvfs  # say so, under the tool's own name
        return
    measured: dict[str, tuple[int, int, int]] = {}
    for line in _lines(statvfs["out"]):
        parts = line.split(" ", 3)
        if len(parts) == 4 and all(p.isdigit() for p in parts[:3]):
            measured[parts[3]] = (int(parts[0]), int(parts[1]), int(parts[2]))
    cmd = statvfs["cmd"]
    shm = measured.get("/dev/shm")
    if shm is not None:
        frsize, blocks, available = shm
        sections["shm"] = {"cmd": cmd, "rc": 0, "out": _dumps({"total": frsize * blocks, "free": frsize * available}),
                           "err": "", "native": True}
    else:
        sections["shm"] = {"cmd": cmd, "rc": statvfs.get("rc"), "out": "", "native": True,
                           "err": next((e for e in statvfs["err"].split("\n") if "/dev/shm" in e), statvfs["err"])}
    paths = _lines(asked["out"]) if asked else []
    free = {p: (measured[p][0] * measured[p][2] if p in measured else None) for p in paths}
    sections["disk_free"] = {"cmd": cmd, "rc": 0, "out": _dumps(free), "err": "", "native": True}
