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

A ``.tar.gz`` is unpacked into a temporary folder that is removed when the analysis ends, however it ends. A bundle
that is cut short (a copy that stopped), damaged, or lacks a file its ``bundle.json`` lists is bad input: one line
and exit 3, never a half-read verdict (a missing ``lspci`` output would read as a host with no devices).
"""

from __future__ import annotations

import json
import re
import shutil
import tarfile
import tempfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ... import __version__
from ...diagnose import diagnose_lines
from ...errors import ConfigError, HostError
from ...facts import Facts, ProbeOptions, parse_probe_document
from ...facts.probe import embedded_script_command, probe_command, read_probe_output
from ...results.records import Record, Status, utc_now
from ...stacks import drift_records, load_matrix, load_stack
from ...transport.connection import Transport

COLLECT_SCRIPT = "collect_probe.py"
SEPARATOR = "@@ACCELSTACK-COLLECT@@"
COLLECT_TIMEOUT = 180.0
# A bundle is text: a few MB. More than this unpacked is not one (or is a decompression bomb).
MAX_UNPACKED_BYTES = 1 << 30


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


@contextmanager
def opened_bundle(path: Path) -> Iterator[Path]:
    """The bundle folder of ``path`` (itself, or its one host folder), or its ``.tar.gz`` unpacked into a temporary
    folder that is removed afterwards. A bundle that cannot be read whole is a ConfigError (exit 3)."""
    if path.is_dir():
        yield _bundle_folder(path, shown=path)
        return
    if not path.exists():
        raise ConfigError("no such bundle", where=str(path))
    target = Path(tempfile.mkdtemp(prefix="accelstack-bundle-"))
    try:
        _unpack(path, target)
        yield _bundle_folder(target, shown=path)
    finally:
        shutil.rmtree(target, ignore_errors=True)


def _unpack(path: Path, target: Path) -> None:
    try:
        with tarfile.open(path, "r:*") as tar:
            members = tar.getmembers()  # reads the whole archive: a cut-short one fails here, before anything
            if sum(member.size for member in members) > MAX_UNPACKED_BYTES:
                raise ConfigError(f"not a support bundle: it unpacks to more than {MAX_UNPACKED_BYTES >> 20} MiB",
                                  where=str(path))
            tar.extractall(target, members=members, filter="data")
    except EOFError:
        raise ConfigError("the bundle is cut short (its archive ends early)", where=str(path),
                          hint="copy it again whole, or collect it again: inv collect --limit HOST") from None
    except (tarfile.ReadError, zlib.error):
        # tarfile's own text lists every compression it tried, on five lines: the person needs one.
        raise ConfigError("not a support bundle (a .tar.gz or a folder from inv collect), or a damaged one",
                          where=str(path)) from None
    except (tarfile.TarError, OSError) as exc:
        raise ConfigError(f"cannot read the bundle: {exc}", where=str(path)) from None


def _bundle_folder(path: Path, *, shown: Path) -> Path:
    if (path / "bundle.json").exists():
        return path
    inner = [p for p in path.iterdir() if (p / "bundle.json").exists()]
    if len(inner) == 1:
        return inner[0]
    raise ConfigError("not a support bundle: no bundle.json" if not inner else
                      f"holds {len(inner)} bundles ({', '.join(p.name for p in inner)}): name one", where=str(shown))


def _meta(folder: Path) -> dict[str, Any]:
    """``bundle.json``, checked for what analysis reads; a cut-short or edited one is a ConfigError."""
    where = str(folder / "bundle.json")
    try:
        meta = json.loads((folder / "bundle.json").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ConfigError(f"bundle.json cannot be read (cut short?): {exc}", where=where) from None
    if not isinstance(meta, dict) or not isinstance(meta.get("host"), str):
        raise ConfigError("bundle.json names no host: not a bundle that inv collect wrote", where=where)
    for key in ("sections", "files", "commands"):
        if not isinstance(meta.get(key) or {}, dict):
            raise ConfigError(f"bundle.json: {key} is not a mapping", where=where)
    return meta


def _text(folder: Path, relative: Any) -> str:
    """A file the bundle lists, inside the bundle; one that is not there means the bundle is not whole."""
    path = (folder / str(relative)).resolve()
    if not path.is_relative_to(folder.resolve()):
        raise ConfigError(f"bundle.json lists {relative!r}, outside the bundle", where=str(folder / "bundle.json"))
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        raise ConfigError(f"the bundle lacks {relative}, which its bundle.json lists (cut short?)",
                          where=str(folder), hint="copy it again whole, or collect it again") from None


def bundle_facts(folder: Path, meta: dict[str, Any] | None = None) -> Facts:
    """Facts from a bundle's saved outputs, through the same parsers as a live run."""
    meta = _meta(folder) if meta is None else meta
    sections = {name: {**info, "out": _text(folder, info.get("file"))}
                for name, info in (meta.get("sections") or {}).items()}
    for relative, info in (meta.get("commands") or {}).items():
        # The stack python's pip list: it names the NCCL wheel torch loads when the probe's own look is absent.
        if info.get("cmd") == "pip list" and info.get("rc") == 0 and (folder / relative).exists():
            sections.setdefault("pip_list", {**info, "out": _text(folder, relative)})
    files = {path: _text(folder, rel) for path, rel in (meta.get("files") or {}).items()}
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
    chosen = load_stack(stack) if stack is not None else None  # a bad --stack: exit 3 before the bundle is read
    with opened_bundle(path) as folder:
        return _analyze(folder, chosen, expect_devices)


def _analyze(folder: Path, chosen: Any, expect_devices: int | None) -> tuple[Facts, list[Record], Any]:
    meta = _meta(folder)
    host = meta["host"]
    facts = bundle_facts(folder, meta)
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
        if log.is_file():
            lines.extend(log.read_text(errors="replace").splitlines())
    diagnosis = diagnose_lines(lines, source=f"{host} bundle")
    return facts, records, diagnosis
