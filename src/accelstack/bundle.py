"""Support bundles: everything a person needs about one host, gathered in one round trip, analyzable offline.

Layout of a bundle folder (and of its ``.tar.gz``), documented in the README:

    <host>/bundle.json          host, time, accelstack version, stack, and an index: probe section -> file
    <host>/commands/<cmd>.txt   stdout of each command, named after the command ("npu-smi info -t board -i 0"
                                -> "npu-smi_info_-t_board_-i_0.txt"); exit codes and stderr are in bundle.json
    <host>/probe/<section>.txt  what the facts probe computed itself (hostname, pci, disk_free, ...)
    <host>/files/<path>         version files and rendered config, at their absolute path below files/
    <host>/env.txt              the environment of the collecting session, secrets masked

Secrets (variables whose name contains KEY, TOKEN, SECRET or PASSWORD) are masked on the host, before anything
leaves it. ``analyze_bundle`` runs the fact parsers, the checks that work offline, and the diagnosis over a
bundle as if the host were there.
"""

from __future__ import annotations

import json
import re
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import __version__
from .diagnose import diagnose_lines
from .errors import ConfigError, HostError
from .facts import Facts, ProbeOptions, parse_probe_document
from .facts.probe import embedded_script_command, probe_command, read_probe_output
from .results.records import Record, Status, utc_now
from .stacks import drift_records, load_matrix, load_stack
from .transport.connection import Transport

COLLECT_SCRIPT = "collect_probe.py"
SEPARATOR = "@@ACCELSTACK-COLLECT@@"
COLLECT_TIMEOUT = 180.0


def command_file_name(command: str) -> str:
    """The file a command's output is saved under: the command itself, made safe as one path component."""
    safe = re.sub(r"[^A-Za-z0-9._=+-]+", "_", command.strip()).strip("_")
    return (safe or "output")[:150] + ".txt"


def collect_command(options: ProbeOptions) -> str:
    """The facts probe and the collector, in one shell line: one round trip per host."""
    missing = json.dumps({"collect": 1, "fatal": "python3 not found on PATH"})
    collector = embedded_script_command(COLLECT_SCRIPT, json.dumps({"python": options.python}), missing)
    return f"{{ {probe_command(options)}; printf '\\n%s\\n' {SEPARATOR}; {collector}; }}"


@dataclass
class Bundle:
    host: str
    path: Path
    facts: Facts


def collect(transport: Transport, options: ProbeOptions, dest: Path, *, stack: str | None = None) -> Bundle:
    """Gather one host's bundle into ``dest/<host>/`` and ``dest/<host>.tar.gz``."""
    host = transport.host.name
    result = transport.run(collect_command(options), timeout=COLLECT_TIMEOUT)
    probe_text, sep, collect_text = result.stdout.partition(f"\n{SEPARATOR}\n")
    if not sep:
        raise HostError(f"the collector printed no separator (exit {result.exit_status}): "
                        f"{(result.stderr or result.stdout).strip()[-300:]}", host=host, command="collect")
    try:
        probe_doc = read_probe_output(probe_text)
        collected = json.loads(collect_text)
    except ValueError as exc:
        raise HostError(f"the collector's output is not readable: {exc}", host=host, command="collect") from None
    folder = dest / host
    folder.mkdir(parents=True, exist_ok=True)
    index: dict[str, dict[str, Any]] = {}
    commands: dict[str, dict[str, Any]] = {}
    for name, section in (probe_doc.get("sections") or {}).items():
        cmd = str(section.get("cmd") or name)
        native = bool(section.get("native"))
        relative = f"probe/{name}.txt" if native else f"commands/{command_file_name(cmd)}"
        _write(folder / relative, section.get("out") or "")
        # Everything but the output, so the bundle reads back into the very document the probe printed.
        index[name] = {"file": relative, **{k: v for k, v in section.items() if k != "out"}}
        if not native:
            commands[relative] = index[name]
    for cmd, section in (collected.get("commands") or {}).items():
        relative = f"commands/{command_file_name(cmd)}"
        _write(folder / relative, section.get("out") or "")
        commands[relative] = {"cmd": cmd, **{k: v for k, v in section.items() if k != "out"}}
    files = {**(probe_doc.get("files") or {}), **(collected.get("files") or {})}
    present = {}
    for path, text in files.items():
        if text is not None:
            _write(folder / "files" / path.lstrip("/"), text)
            present[path] = f"files/{path.lstrip('/')}"
    env = collected.get("env") or {}
    _write(folder / "env.txt", "".join(f"{k}={v}\n" for k, v in sorted(env.items())))
    meta = {
        "host": host, "collected_at": utc_now(), "accelstack": __version__, "stack": stack,
        "sections": index, "files": present, "commands": commands,
        "probe_errors": list(probe_doc.get("errors") or []),
        "fatal": probe_doc.get("fatal"),
        "collect_errors": [collected["fatal"]] if collected.get("fatal") else [],
    }
    _write(folder / "bundle.json", json.dumps(meta, indent=1, sort_keys=True))
    with tarfile.open(dest / f"{host}.tar.gz", "w:gz") as tar:
        tar.add(folder, arcname=host)
    return Bundle(host, folder, parse_probe_document(probe_doc))


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def open_bundle(path: Path) -> Path:
    """A bundle folder: ``path`` itself, or a ``.tar.gz`` unpacked into a temporary folder."""
    if path.is_dir():
        if (path / "bundle.json").exists():
            return path
        inner = [p for p in path.iterdir() if (p / "bundle.json").exists()]
        if len(inner) == 1:
            return inner[0]
        raise ConfigError("not a support bundle: no bundle.json", where=str(path))
    if not path.exists():
        raise ConfigError("no such bundle", where=str(path))
    try:
        with tarfile.open(path, "r:*") as tar:
            target = Path(tempfile.mkdtemp(prefix="accelstack-bundle-"))
            tar.extractall(target, filter="data")
    except (tarfile.TarError, OSError) as exc:
        raise ConfigError(f"cannot read the bundle: {exc}", where=str(path)) from None
    return open_bundle(target)


def bundle_facts(folder: Path) -> Facts:
    """Facts from a bundle's saved outputs, through the same parsers as a live run."""
    meta = json.loads((folder / "bundle.json").read_text())
    sections = {name: {**info, "out": (folder / info["file"]).read_text()} for name, info in meta["sections"].items()}
    for relative, info in (meta.get("commands") or {}).items():
        # The stack python's pip list: it names the NCCL wheel torch loads when the probe's own look is absent.
        if info.get("cmd") == "pip list" and info.get("rc") == 0 and (folder / relative).exists():
            sections.setdefault("pip_list", {**info, "out": (folder / relative).read_text()})
    files = {path: (folder / rel).read_text() for path, rel in meta["files"].items()}
    doc = {"probe": 1, "sections": sections, "files": files, "errors": meta.get("probe_errors") or []}
    if meta.get("fatal"):
        doc["fatal"] = meta["fatal"]
    return parse_probe_document(doc)


def analyze_bundle(path: Path, *, expect_devices: int | None = None,
                   stack: str | Path | None = None) -> tuple[Facts, list[Record], Any]:
    """Facts, offline check records, and the diagnosis of the bundle's logs (dmesg and any ``*.log`` in it).

    The installed versions are judged against ``stack`` (a name under ``stacks/`` or a stack file) when given,
    else against the stack the bundle was collected for; the records are the ``versions.*`` a live validate
    gives. A ``stack`` that does not load raises ConfigError (bad input); the bundle's own stack that does not
    load here gives a ``versions`` error record.
    """
    folder = open_bundle(path)
    meta = json.loads((folder / "bundle.json").read_text())
    host = meta["host"]
    chosen = load_stack(stack) if stack is not None else None
    facts = bundle_facts(folder)
    records: list[Record] = [Record(host, "facts", "pass", facts.summary(), evidence={"facts": facts.to_dict()})]
    if chosen is None and meta.get("stack"):
        try:
            chosen = load_stack(meta["stack"])
        except ConfigError as err:
            records.append(Record(host, "versions", "error", f"stack {meta['stack']!r}: {err.message}",
                                  remedy="name a stack that pins this host with analyze --stack NAME|FILE"))
    if chosen is not None:
        for record in drift_records(host, chosen, facts.components(), load_matrix()):
            record.check = "versions." + record.check.split(".", 1)[-1]
            records.append(record)
    if expect_devices is not None:
        seen = len(facts.accelerators)
        status: Status = "pass" if seen == expect_devices else "fail"  # as the live devices check judges
        records.append(Record(host, "devices", status, f"{seen} accelerator(s) on the PCI bus, {expect_devices} "
                              "expected", metrics={"count": seen, "expected": expect_devices},
                              remedy=None if status == "pass" else "reseat or replace the missing device; "
                              "check dmesg in the bundle for PCIe and Xid errors" if seen < expect_devices
                              else "the host has more devices than expect_devices says: correct the inventory"))
    logs = [folder / "commands" / command_file_name("dmesg"), *sorted(folder.rglob("*.log"))]
    lines: list[str] = []
    for log in logs:
        if log.exists():
            lines.extend(log.read_text(errors="replace").splitlines())
    diagnosis = diagnose_lines(lines, source=f"{host} bundle")
    return facts, records, diagnosis
