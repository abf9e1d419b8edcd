"""The lab's artifact repository: SIMULATED vendor packages for every version the stacks pin, the REAL torch
CPU wheel (linked or copied from pip's find-links folder, never downloaded), a simulated torch_npu wheel per
Ascend stack, and ``manifest.yml`` (``{artifacts: [{file, sha256, size, component, version, simulated}]}``).

Building is deterministic: the same inputs give the same bytes, so a rebuild rewrites nothing whose sha256
is already right, and the compiled libraries and the torch wheel's digest are cached under ``.build-cache/``.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import yaml

from accelstack.errors import ConfigError
from accelstack.paths import project_root
from accelstack.provision.artifacts import sha256_file

from . import packages, versions, wheel

MANIFEST = "manifest.yml"
CACHE_DIR = ".build-cache"
TORCH_VERSION = "2.13.0"
COMPONENTS = ("ascend_driver", "ascend_firmware", "cann_toolkit", "cann_kernels", "nnal", "nvidia_driver", "cuda",
              "system_nccl", "torch", "torch_npu")

# Used when no stacks/*.yml is found: the CANN releases and NVIDIA branches the project targets.
DEFAULT_ASCEND = (("8.0.RC2", "2.1.0.post6"), ("8.0.0", "2.4.0.post2"), ("8.1.RC1", "2.5.1"), ("8.2.RC1", "2.6.0"))
DEFAULT_NVIDIA = (("550.54.15", "12.4", "2.21.5"), ("570.124.06", "12.8", "2.26.2"), ("580.65.06", "13.0", "2.28.9"))


@dataclass(frozen=True)
class Entry:
    file: str
    sha256: str
    size: int
    component: str
    version: str
    simulated: bool

    def as_dict(self) -> dict[str, Any]:
        return {"file": self.file, "sha256": self.sha256, "size": self.size, "component": self.component,
                "version": self.version, "simulated": self.simulated}


@dataclass(frozen=True)
class _Job:
    """One artifact to produce: a builder of (file name, bytes), or a real file to link in."""

    component: str
    version: str
    build: Callable[[], tuple[str, bytes]] | None = None
    source: Path | None = None


# ----- what to build ------------------------------------------------------------------------------------

def _pin(value: Any) -> str | None:
    if isinstance(value, dict):
        value = value.get("version")
    return None if value is None else str(value)


def load_stack_pins(stacks: list[str], stacks_dir: Path | None = None) -> list[dict[str, str]]:
    """The ``components`` of each named stack (a name under ``stacks/`` or a path); all stacks when empty.

    Raises ConfigError for a named stack that does not exist or does not parse.
    """
    folder = stacks_dir or project_root() / "stacks"
    if stacks:
        paths = [Path(s) if s.endswith((".yml", ".yaml")) or os.sep in s else folder / f"{s}.yml" for s in stacks]
    else:
        paths = sorted(folder.glob("*.yml")) if folder.is_dir() else []
    pins = []
    for path in paths:
        try:
            doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise ConfigError(f"cannot read stack {path}: {exc}", hint="name a stack in stacks/") from None
        except yaml.YAMLError as exc:
            raise ConfigError(f"stack {path} is not valid YAML: {exc}") from None
        components = doc.get("components") if isinstance(doc, dict) else None
        if not isinstance(components, dict):
            raise ConfigError(f"stack {path} has no components mapping")
        pins.append({k: v for k, v in ((k, _pin(v)) for k, v in components.items()) if v is not None})
    return pins


def _run(make: Callable[..., packages.BuiltPackage], *args: Any, **kwargs: Any) -> tuple[str, bytes]:
    built = make(*args, **kwargs)
    return built.file, built.data


def _jobs(pins: list[dict[str, str]], torch_wheel: Path | None, arch: str, cache: Path,
          fault_fixtures: bool) -> list[_Job]:
    native_cache = cache / "native"
    jobs: dict[tuple[str, str], _Job] = {}

    def add(component: str, version: str, build: Callable[[], tuple[str, bytes]]) -> None:
        jobs.setdefault((component, version), _Job(component, version, build=build))

    if not pins:
        pins = [{"cann_toolkit": c, "cann_kernels": c, "nnal": c, "torch_npu": t,
                 "ascend_driver": versions.HDK_FOR_CANN[c][0], "ascend_firmware": versions.HDK_FOR_CANN[c][1]}
                for c, t in DEFAULT_ASCEND]
        pins += [{"nvidia_driver": d, "cuda": c, "system_nccl": n} for d, c, n in DEFAULT_NVIDIA]
    any_ascend = False
    for p in pins:
        driver, cann, cuda = p.get("ascend_driver"), p.get("cann_toolkit"), p.get("cuda")
        if driver:
            add("ascend_driver", driver, partial(_run, packages.ascend_driver, driver, arch))
        if p.get("ascend_firmware"):
            add("ascend_firmware", p["ascend_firmware"],
                partial(_run, packages.ascend_firmware, p["ascend_firmware"], driver))
        if cann:
            any_ascend = True
            add("cann_toolkit", cann, partial(_run, packages.cann_toolkit, cann, arch, cache_dir=native_cache))
        if p.get("cann_kernels"):
            add("cann_kernels", p["cann_kernels"], partial(_run, packages.cann_kernels, p["cann_kernels"], arch))
        if p.get("nnal"):
            add("nnal", p["nnal"], partial(_run, packages.nnal, p["nnal"], arch))
        if p.get("torch_npu"):
            add("torch_npu", p["torch_npu"],
                partial(wheel.torch_npu_wheel, p["torch_npu"], cann or "unknown", arch=arch))
        if p.get("nvidia_driver"):
            add("nvidia_driver", p["nvidia_driver"], partial(_run, packages.nvidia_driver, p["nvidia_driver"]))
        if cuda:
            add("cuda", cuda, partial(_run, packages.cuda, cuda, cache_dir=native_cache))
        if p.get("system_nccl"):
            # The system NCCL package (role system_nccl). The NCCL torch loads (component nccl) comes as torch's
            # nvidia-nccl wheel, which the lab's CPU torch has none of.
            add("system_nccl", p["system_nccl"],
                partial(_run, packages.nccl, p["system_nccl"], cuda or "12.4", cache_dir=native_cache))
    if any_ascend and fault_fixtures:
        fixture = versions.FAULT_FIXTURE_CANN
        add("cann_toolkit", fixture, partial(_run, packages.cann_toolkit, fixture, arch, cache_dir=native_cache))
    torch = torch_wheel or find_torch_wheel()
    if torch is None:
        raise ConfigError(f"no torch {TORCH_VERSION} wheel found in pip's find-links folders",
                          hint="pass torch_wheel=, or put the wheel in the folder `pip config list` names as find-links")
    match = re.match(r"torch-([^-]+)-", torch.name)
    jobs[("torch", "real")] = _Job("torch", match.group(1) if match else TORCH_VERSION, source=torch)
    return list(jobs.values())


def find_links() -> list[Path]:
    """pip's find-links folders: ``$PIP_FIND_LINKS``, else what ``pip config list`` reports."""
    text = os.environ.get("PIP_FIND_LINKS", "")
    if not text:
        proc = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True)
        for line in proc.stdout.splitlines():
            key, _, value = line.partition("=")
            if key.strip().endswith("find-links"):
                text += " " + value.strip().strip("'\"")
    folders = []
    for item in text.split():
        item = item.removeprefix("file://")
        if item and Path(item).is_dir():
            folders.append(Path(item))
    return folders


def find_torch_wheel(version: str = TORCH_VERSION) -> Path | None:
    machine = platform.machine()
    tag = f"cp{sys.version_info.major}{sys.version_info.minor}"
    for folder in find_links():
        found = sorted(folder.glob(f"torch-{version}*-{tag}-*{machine}.whl"))
        cpu = [p for p in found if "+cpu" in p.name] or found
        if cpu:
            return cpu[0]
    return None


# ----- writing ------------------------------------------------------------------------------------------

class _DigestCache:
    """sha256 of large files keyed by (path, size, mtime, inode), so a rebuild does not re-read the torch wheel."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            self.data: dict[str, Any] = json.loads(path.read_text())
        except (OSError, ValueError):
            self.data = {}

    def sha256(self, file: Path) -> str:
        st = file.stat()
        key = str(file.resolve())
        stamp = [st.st_size, st.st_mtime_ns, st.st_ino]
        known = self.data.get(key)
        if known and known[0] == stamp:
            return str(known[1])
        digest = sha256_file(file)
        self.data[key] = [stamp, digest]
        return digest

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.data, indent=1, sort_keys=True))
        os.replace(tmp, self.path)


def _write_if_changed(path: Path, data: bytes, digests: _DigestCache) -> str:
    sha = hashlib.sha256(data).hexdigest()
    if path.is_file() and path.stat().st_size == len(data) and digests.sha256(path) == sha:
        return sha
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".part")
    tmp.write_bytes(data)
    tmp.chmod(0o755 if path.suffix == ".run" else 0o644)
    os.replace(tmp, path)
    digests.sha256(path)
    return sha


def _link_in(source: Path, target: Path, digests: _DigestCache) -> str:
    sha = digests.sha256(source)
    if target.is_file() and (target.samefile(source) or digests.sha256(target) == sha):
        return sha
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".part")
    tmp.unlink(missing_ok=True)
    try:
        os.link(source, tmp)
    except OSError:  # another filesystem, or links not allowed: a copy is just as good
        shutil.copyfile(source, tmp)
    os.replace(tmp, target)
    return sha


def write_manifest(dest: Path, entries: list[Entry]) -> Path:
    path = dest / MANIFEST
    body = yaml.safe_dump({"artifacts": [e.as_dict() for e in sorted(entries, key=lambda e: e.file)]},
                          sort_keys=False)
    text = ("# The accelstack lab's artifact repository (accelstack_lab.simulated.build_lab_repository).\n"
            "# simulated: true marks a SIMULATED lab-only package; never part of a production stack.\n" + body)
    if path.is_file() and path.read_text(encoding="utf-8") == text:
        return path
    tmp = path.with_name(MANIFEST + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
    return path


def build_lab_repository(dest: Path, *, torch_wheel: Path | None, stacks: list[str],
                         stacks_dir: Path | None = None, arch: str = "x86_64",
                         fault_fixtures: bool = True) -> Path:
    """Build (or bring up to date) the lab's artifact repository in ``dest`` and return ``dest``.

    ``stacks``: stack names (``stacks/<name>.yml``) or paths; empty means every stack in ``stacks_dir``
    (default: the project's ``stacks/``), and the built-in defaults when there is none. ``torch_wheel``: the
    real torch wheel; None looks for torch 2.13.0 in pip's find-links folders. ``fault_fixtures`` adds the
    CANN toolkit whose libhccl lacks HcclCommInitRootInfoConfig (:data:`versions.FAULT_FIXTURE_CANN`).
    Files already right (by sha256) are not rewritten. Raises ConfigError for a missing stack, wheel or gcc.
    """
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    cache = dest / CACHE_DIR
    digests = _DigestCache(cache / "sha256.json")
    entries = []
    for job in _jobs(load_stack_pins(stacks, stacks_dir), torch_wheel, arch, cache, fault_fixtures):
        if job.source is not None:
            rel = f"wheels/{job.source.name}"
            sha = _link_in(job.source, dest / rel, digests)
            entries.append(Entry(rel, sha, (dest / rel).stat().st_size, job.component, job.version, False))
            continue
        assert job.build is not None
        name, data = job.build()
        rel = f"wheels/{name}" if name.endswith(".whl") else name
        sha = _write_if_changed(dest / rel, data, digests)
        entries.append(Entry(rel, sha, len(data), job.component, job.version, True))
    digests.save()
    write_manifest(dest, entries)
    return dest


_PACKAGED = frozenset({"ascend_driver", "ascend_firmware", "cann_toolkit", "cann_kernels", "nnal", "torch_npu",
                       "nvidia_driver", "cuda", "system_nccl"})


def repository_covers(dest: Path, stacks: list[str], stacks_dir: Path | None = None) -> bool:
    """Whether the repository in ``dest`` already holds every lab package the stacks pin, torch included."""
    from accelstack.errors import AccelstackError
    from accelstack.provision.artifacts import parse_manifest

    manifest = Path(dest) / "manifest.yml"
    if not manifest.is_file():
        return False
    try:
        entries = parse_manifest(yaml.safe_load(manifest.read_text(encoding="utf-8")), str(manifest))
    except (OSError, yaml.YAMLError, AccelstackError):
        return False
    have = {(a.component, a.version) for a in entries}
    if not any(a.component == "python-dep" for a in entries):
        return False  # torch would not install with --no-index
    pins = load_stack_pins(stacks, stacks_dir)
    wanted = {(k, v) for p in pins for k, v in p.items() if k in _PACKAGED}
    torch_pins = {p["torch"].split("+")[0] for p in pins if p.get("torch")} or {TORCH_VERSION.split("+")[0]}
    has_torch = any(a.component == "torch" and a.version.split("+")[0] in torch_pins for a in entries)
    return has_torch and wanted <= have


def ensure_lab_repository(dest: Path, stack: str) -> tuple[Path, bool]:
    """The lab's repository in ``dest``, built for ``stack`` (with torch's dependency wheels) only when it does
    not hold that stack's packages yet. Returns the folder and whether it was built now."""
    from accelstack.provision.artifacts import add_dependency_wheels

    if repository_covers(dest, [stack]):
        return Path(dest), False
    build_lab_repository(dest, torch_wheel=None, stacks=[stack], fault_fixtures=False)
    add_dependency_wheels(dest)
    return Path(dest), True
