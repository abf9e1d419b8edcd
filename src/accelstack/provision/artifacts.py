"""The artifact repository: a folder or an http(s) mirror with a ``manifest.yml``, and checksums on both ends.

``manifest.yml`` is a list (or ``{artifacts: [...]}``) of entries ``{file, sha256, size, component, version}``;
``simulated: true`` marks a lab-only package. ``file`` is relative to the repository. Provisioning never reaches
any other place: a mirror is fetched file by file into a local cache keyed by sha256, and every file is checked
against the manifest before it leaves this machine and again on the host before anything runs it.
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import shutil
import tempfile
import threading
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ..errors import ConfigError
from ..yamlfile import load_marked, load_marked_file, read_text

MANIFEST = "manifest.yml"
DEFAULT_REMOTE_CACHE = "/opt/accelstack/cache"
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_NCCL_WHEEL = re.compile(r"^(nvidia[-_]nccl(?:[-_]cu\d+)?)-[^-]+-")


class ArtifactError(ConfigError):
    """A repository or manifest that cannot be used, or a file that does not match its manifest entry."""


@dataclass(frozen=True)
class Artifact:
    file: str
    sha256: str
    size: int
    component: str
    version: str
    simulated: bool = False

    @property
    def name(self) -> str:
        return Path(self.file).name

    @property
    def is_wheel(self) -> bool:
        return self.file.endswith(".whl")

    @property
    def nccl_wheel(self) -> str | None:
        """The distribution (``nvidia-nccl-cu13``) when this is an NCCL wheel, the NCCL a torch wheel loads."""
        match = _NCCL_WHEEL.match(self.name) if self.is_wheel else None
        return match.group(1).replace("_", "-") if match else None


def parse_manifest(data: Any, where: str) -> list[Artifact]:
    """Check the shape of a parsed manifest; every problem names the manifest and the entry."""
    entries = data.get("artifacts") if isinstance(data, dict) else data
    if not isinstance(entries, list):
        raise ArtifactError("a manifest is a list of entries {file, sha256, size, component, version}",
                            where=where)
    out: list[Artifact] = []
    for index, entry in enumerate(entries):
        at = f"{where}: entry {index + 1}"
        if not isinstance(entry, dict):
            raise ArtifactError("an entry must be a mapping", where=at)
        missing = [k for k in ("file", "sha256", "size", "component", "version") if k not in entry]
        if missing:
            raise ArtifactError(f"missing {', '.join(missing)}", where=at)
        file = str(entry["file"])
        if file.startswith("/") or ".." in Path(file).parts:
            raise ArtifactError(f"file {file!r} must be a relative path inside the repository", where=at)
        sha = str(entry["sha256"]).lower()
        if not _SHA256.match(sha):
            raise ArtifactError(f"sha256 of {file} is not 64 hex digits", where=at)
        try:
            size = int(entry["size"])
        except (TypeError, ValueError):
            raise ArtifactError(f"size of {file} is not a number", where=at) from None
        out.append(Artifact(file=file, sha256=sha, size=size, component=str(entry["component"]),
                            version=str(entry["version"]), simulated=bool(entry.get("simulated", False))))
    return out


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


class ArtifactRepository:
    """One repository, read once per run. ``local_path`` hands out a verified local copy of an artifact."""

    def __init__(self, location: str, artifacts: list[Artifact], *, cache_dir: Path | None = None) -> None:
        self.location = location
        self.artifacts = artifacts
        self.is_remote = location.startswith(("http://", "https://"))
        self.cache_dir = cache_dir or Path(os.environ.get("ACCELSTACK_ARTIFACT_CACHE",
                                                           Path.home() / ".cache" / "accelstack" / "artifacts"))
        self._verified: dict[str, Path] = {}
        self._lock = threading.Lock()

    @classmethod
    def open(cls, location: str, *, cache_dir: Path | None = None) -> ArtifactRepository:
        location = str(location).rstrip("/") if str(location) != "/" else "/"
        where = f"{location}/{MANIFEST}"
        if location.startswith(("http://", "https://")):
            try:
                with urllib.request.urlopen(where, timeout=30) as response:
                    text = response.read().decode("utf-8")
            except (urllib.error.URLError, OSError) as exc:
                raise ArtifactError(f"cannot read the manifest: {exc}", where=where,
                                    hint="check artifact_repo in the inventory or --repo") from None
        else:
            path = Path(location).expanduser() / MANIFEST
            if not path.is_file():
                raise ArtifactError("no manifest.yml in the artifact repository", where=str(path),
                                    hint="set artifact_repo (inventory) or --repo to a folder holding manifest.yml;"
                                         " the lab's is built by `inv repo.build`")
            text = read_text(path, where, error=ArtifactError)
        # The loader every other YAML input goes through: an alias bomb or nesting past its limit is refused at
        # its line, where yaml.safe_load would build it and then walk it for hours.
        data = load_marked(text, where, error=ArtifactError)
        return cls(location, parse_manifest(data, where), cache_dir=cache_dir)

    def find(self, component: str, version: str | None = None) -> list[Artifact]:
        return [a for a in self.artifacts if a.component == component and (version is None or a.version == version)]

    def local_path(self, artifact: Artifact) -> Path:
        """A local file with exactly the manifest's sha256 and size, or :class:`ArtifactError`.

        Hashed once per process: a 900 MB wheel is read once even when 32 hosts need it.
        """
        with self._lock:
            known = self._verified.get(artifact.sha256)
            if known is not None:
                return known
            path = self._fetch(artifact) if self.is_remote else Path(self.location).expanduser() / artifact.file
            if not path.is_file():
                raise ArtifactError(f"{artifact.file} is listed in the manifest but missing",
                                    where=f"{self.location}/{artifact.file}")
            size = path.stat().st_size
            if size != artifact.size:
                raise ArtifactError(f"{artifact.file} is {size} bytes, the manifest says {artifact.size}",
                                    where=f"{self.location}/{MANIFEST}",
                                    hint="the file or the manifest is stale or corrupt; rebuild the repository")
            actual = sha256_file(path)
            if actual != artifact.sha256:
                raise ArtifactError(f"{artifact.file} has sha256 {actual[:16]}..., the manifest says "
                                    f"{artifact.sha256[:16]}...", where=f"{self.location}/{MANIFEST}",
                                    hint="the file or the manifest is corrupt; nothing was installed from it")
            self._verified[artifact.sha256] = path
            return path

    def _fetch(self, artifact: Artifact) -> Path:
        target = self.cache_dir / artifact.sha256 / artifact.name
        if target.is_file() and target.stat().st_size == artifact.size:
            return target
        target.parent.mkdir(parents=True, exist_ok=True)
        url = f"{self.location}/{artifact.file}"
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".part-")
        try:
            with os.fdopen(fd, "wb") as out, urllib.request.urlopen(url, timeout=60) as response:
                shutil.copyfileobj(response, out, 1 << 20)
            os.replace(tmp, target)
        except (urllib.error.URLError, OSError) as exc:
            Path(tmp).unlink(missing_ok=True)
            raise ArtifactError(f"cannot fetch {artifact.file}: {exc}", where=url) from None
        return target


def remote_path(cache: str, artifact: Artifact) -> str:
    """Where an artifact lives on a host: by name under the host's artifact cache."""
    return f"{cache.rstrip('/')}/{artifact.name}"


def remote_verify_command(expected: dict[str, str]) -> str:
    """One command that fails unless every remote file has its expected sha256; prints the offenders."""
    checks = []
    for path, sha in sorted(expected.items()):
        quoted = shlex.quote(path)
        checks.append(f'[ "$(sha256sum -- {quoted} 2>/dev/null | cut -d" " -f1)" = {sha} ] || '
                      f'{{ echo "mismatch {quoted}"; bad=1; }}')
    return "bad=0; " + "; ".join(checks) + "; exit $bad"


def write_manifest(folder: Path, artifacts: list[Artifact]) -> Path:
    """Write ``manifest.yml`` atomically (tmp + rename), entries in file order."""
    entries = [{"file": a.file, "sha256": a.sha256, "size": a.size, "component": a.component,
                "version": a.version, "simulated": a.simulated} for a in sorted(artifacts, key=lambda a: a.file)]
    path = folder / MANIFEST
    tmp = folder / (MANIFEST + ".tmp")
    tmp.write_text(yaml.safe_dump({"artifacts": entries}, sort_keys=False), encoding="utf-8")
    os.replace(tmp, path)
    return path


def artifact_for_file(folder: Path, file: Path, component: str, version: str, *, simulated: bool = False) -> Artifact:
    """A manifest entry for a file already inside ``folder``."""
    rel = file.resolve().relative_to(folder.resolve()).as_posix()
    return Artifact(file=rel, sha256=sha256_file(file), size=file.stat().st_size, component=component,
                    version=version, simulated=simulated)


def add_dependency_wheels(folder: Path, *, download: Path | None = None) -> list[Artifact]:
    """Add the dependency wheels of every torch wheel in the repository (``wheels/deps/``, component
    ``python-dep``; the ``nvidia-nccl-cuXX`` wheel, the NCCL that torch loads, as component ``nccl``), so a
    ``--no-index`` install on a host resolves. The wheels come from ``download`` when given, else from ``pip
    download`` against this machine's configured (site) index."""
    import subprocess
    import sys

    manifest = load_marked_file(folder / MANIFEST, error=ArtifactError)
    artifacts = [a for a in parse_manifest(manifest, str(folder / MANIFEST))
                 if a.component != "python-dep" and not a.file.startswith("wheels/deps/")]
    torches = [folder / a.file for a in artifacts if a.component == "torch" and a.is_wheel]
    deps_dir = folder / "wheels" / "deps"
    deps_dir.mkdir(parents=True, exist_ok=True)
    if download is None:
        for wheel in torches:
            proc = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--only-binary", ":all:",
                                   "-d", str(deps_dir), str(wheel)], capture_output=True, text=True)
            if proc.returncode != 0:
                raise ArtifactError(f"pip download of {wheel.name}'s dependencies failed: "
                                    f"{proc.stderr.strip()[-400:]}", where=str(folder))
    else:
        for source in download.glob("*.whl"):
            target = deps_dir / source.name
            if not target.exists():
                shutil.copy2(source, target)
    torch_names = {p.name for p in torches}
    added = []
    for wheel in sorted(deps_dir.glob("*.whl")):
        if wheel.name in torch_names or wheel.name.startswith(("torch-", "torch_npu-")):
            wheel.unlink()
            continue
        version = wheel.name.split("-")[1]
        component = "nccl" if _NCCL_WHEEL.match(wheel.name) else "python-dep"
        added.append(artifact_for_file(folder, wheel, component, version))
    write_manifest(folder, artifacts + added)
    return added
