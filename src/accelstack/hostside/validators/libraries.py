#!/usr/bin/env python3
# Declared in accelstack/validate/checks/libraries.py (tier, python, timeout, config keys, judge, help).
"""Libraries: the symbols torch_npu / torch need are exported by the communication library that would load.

torch_npu dlsym()s HcclCommInitRootInfoConfig from libhccl.so at the first communicator; a CANN older than the
torch_npu build expects lacks it, and the job dies only then ("Failed to find function ..."). Here the library
is resolved the way the dynamic loader would for a training job (the env file's LD_LIBRARY_PATH first) and its
ELF dynamic symbol table is read in pure Python: no dlopen, so a broken library cannot crash the check.

Only the library that will load is judged. When the stack names where its library lives (the venv's NCCL wheel,
the CANN lib64) and the stack is not installed there at all (no venv, no CANN home), a copy in the loader's
default folders is a different library (the H100's system libnccl 2.28.3, with the stack's venv absent): `error`
(not provisioned), never a `pass` on the wrong file.
"""

import glob
import mmap
import os
import struct
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # _common.py lies beside this script
from _common import main_entry, results_for

CHECK = "libraries"
SHT_DYNSYM = 11
SHN_UNDEF = 0
result = results_for(CHECK)


def elf_dynamic_symbols(path):
    """Names of the defined symbols in an ELF file's .dynsym (what dlsym can find). The file is mapped, not read:
    only the pages of its headers and dynamic symbol tables are touched (the NCCL torch loads is a few hundred MB,
    and this runs in the health check every few minutes)."""
    with open(path, "rb") as handle:
        if os.fstat(handle.fileno()).st_size < 64:
            raise ValueError("%s is not an ELF file" % path)
        data = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
    try:
        return _dynamic_symbols(data, path)
    finally:
        data.close()


def _dynamic_symbols(data, path):
    if data[:4] != b"\x7fELF":
        raise ValueError("%s is not an ELF file" % path)
    is64 = data[4] == 2
    end = "<" if data[5] == 1 else ">"
    if is64:
        shoff, = struct.unpack_from(end + "Q", data, 0x28)
        shentsize, shnum = struct.unpack_from(end + "HH", data, 0x3A)
    else:
        shoff, = struct.unpack_from(end + "I", data, 0x20)
        shentsize, shnum = struct.unpack_from(end + "HH", data, 0x2E)
    sections = []
    for i in range(shnum):
        off = shoff + i * shentsize
        if is64:
            _n, stype, _f, _a, soff, ssize, link, _i, _al, entsize = struct.unpack_from(end + "IIQQQQIIQQ", data, off)
        else:
            _n, stype, _f, _a, soff, ssize, link, _i, _al, entsize = struct.unpack_from(end + "IIIIIIIIII", data, off)
        sections.append((stype, soff, ssize, link, entsize))
    names = set()
    for stype, soff, ssize, link, entsize in sections:
        if stype != SHT_DYNSYM or not entsize:
            continue
        str_off = sections[link][1]
        for j in range(ssize // entsize):
            sym = soff + j * entsize
            if is64:
                name_off, _info, _other, shndx = struct.unpack_from(end + "IBBH", data, sym)
            else:
                name_off, = struct.unpack_from(end + "I", data, sym)
                shndx, = struct.unpack_from(end + "H", data, sym + 14)
            if shndx == SHN_UNDEF or not name_off:
                continue
            stop = data.find(b"\0", str_off + name_off)
            if stop < 0:
                raise ValueError("%s: a symbol name runs past the end of the file" % path)
            names.add(data[str_off + name_off:stop].decode("ascii", "replace"))
    return names


def env_file_library_path(env_file):
    """LD_LIBRARY_PATH after sourcing the env file, as a login shell of a training job would have it."""
    if not env_file or not os.path.exists(env_file):
        return None
    script = '. "$1" >/dev/null 2>&1; printf %s "$LD_LIBRARY_PATH"'
    try:
        out = subprocess.run(["/bin/sh", "-c", script, "sh", env_file], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, timeout=20)
        return out.stdout.decode("utf-8", "replace")
    except (OSError, subprocess.TimeoutExpired):
        return None


def loader_dirs():
    """What ld.so.cache would add after LD_LIBRARY_PATH, roughly: the configured and default folders."""
    dirs = []
    for conf in ["/etc/ld.so.conf"] + sorted(glob.glob("/etc/ld.so.conf.d/*.conf")):
        try:
            with open(conf) as handle:
                for line in handle:
                    line = line.strip()
                    if line and not line.startswith(("#", "include")):
                        dirs.append(line)
        except OSError:
            continue
    return dirs + ["/lib64", "/usr/lib64", "/lib", "/usr/lib", "/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu",
                   "/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu"]


def fixed_root(pattern):
    """The part of a folder glob before its first wildcard: /opt/venv/lib of /opt/venv/lib/python3*/site-packages."""
    parts = []
    for part in pattern.split("/"):
        if any(c in part for c in "*?["):
            break
        parts.append(part)
    return "/".join(parts) or "/"


def resolve(library, search):
    """(path, the search folder it was found in), or (None, None)."""
    for folder in search:
        candidate = os.path.join(folder, library)
        if os.path.isfile(candidate):
            return candidate, folder
    return None, None


def main(config):
    required = config.get("required_symbols") or {}
    if not required:
        return [result("skip", "the %s stack names no communication library symbols to check (gloo is built "
                       "into torch)" % config.get("stack", "?"))]
    ld_path = env_file_library_path(config.get("env_file"))
    source = "env file %s" % config.get("env_file")
    if ld_path is None:
        ld_path = os.environ.get("LD_LIBRARY_PATH", "")
        source = "the login environment (no env file rendered)"
    patterns = list(config.get("library_dirs") or [])
    stack_dirs = []
    for pattern in patterns:
        stack_dirs.extend(sorted(glob.glob(pattern)))
    env_dirs = [d for d in ld_path.split(":") if d]
    search = env_dirs + stack_dirs + loader_dirs()
    missing_all = {}
    problems = []
    evidence = {"LD_LIBRARY_PATH_from": source, "LD_LIBRARY_PATH": ld_path, "search_head": search[:12],
                "stack_library_dirs": patterns, "stack_library_dirs_found": stack_dirs, "libraries": {}}
    for library, symbols in sorted(required.items()):
        path, folder = resolve(library, search)
        if path is None:
            evidence["libraries"][library] = None
            problems.append("%s is nowhere on the search path (%s)" % (library, ", ".join(search[:6])))
            continue
        origin = ("LD_LIBRARY_PATH" if folder in env_dirs else "the stack's folder" if folder in stack_dirs
                  else "the loader's default folders")
        real = os.path.realpath(path)
        info = {"path": path, "realpath": real, "found_in": origin}
        evidence["libraries"][library] = info
        roots = [fixed_root(p) for p in patterns]
        if roots and origin == "the loader's default folders" and not any(os.path.isdir(r) for r in roots):
            # The stack is not installed where it says (no venv, no CANN home): what its torch will load is not
            # here to check, and this copy (a system one) is a different library.
            problems.append("%s: the stack's %s is missing (not provisioned), and %s is a different library "
                            "from the one its torch will load, so it is not checked in its place"
                            % (library, " / ".join(roots), real))
            continue
        try:
            exported = elf_dynamic_symbols(real)
        except (OSError, ValueError, IndexError, struct.error) as exc:
            problems.append("%s: cannot read its symbols: %s" % (real, exc))
            continue
        missing = [s for s in symbols if s not in exported]
        info.update({"exported_symbols": len(exported), "missing": missing})
        if missing:
            missing_all[library] = missing
    metrics = {"libraries": len(required), "missing": sum(len(v) for v in missing_all.values())}
    if missing_all:
        parts = ["%s: %s" % (lib, ", ".join(syms)) for lib, syms in sorted(missing_all.items())]
        return [result("fail", "missing from the library the stack's environment loads: " + "; ".join(parts),
                       metrics, evidence, config.get("remedy"))]
    if problems:
        return [result("error", "not checked: " + "; ".join(problems), metrics, evidence,
                       "install the stack so its library is where torch loads it from (inv provision --limit %s), "
                       "then validate again" % config.get("host", "HOST"))]
    found = ", ".join("%s (%s)" % (lib, info["realpath"]) for lib, info in evidence["libraries"].items())
    return [result("pass", "all %d required symbol(s) exported by %s"
                   % (sum(len(v) for v in required.values()), found), metrics, evidence)]


if __name__ == "__main__":
    main_entry("libraries", main)
