"""Compatibility matrices (``compat/*.yml``) as typed rules, and the checks that apply them.

:func:`check_components` takes any component -> version mapping (a stack's pins for preflight, a host's installed
versions for drift) and returns every :class:`Violation`: which rule broke, the source row it relies on, how sure
that row is, the nearest compatible choices and what the failure looks like at run time. Rule ids are stable and
appear in messages and records:

=========================  =============================================================
``torch_npu-cann``         torch_npu release <-> the CANN it is released against
``torch_npu-torch``        torch_npu release <-> the torch it is built for
``python-torch``           python series supported by a torch series
``cann-driver``            CANN <-> minimum Ascend HDK driver
``cann-firmware``          CANN <-> minimum Ascend HDK firmware
``<comp>-cann_toolkit``    kernels / NNAL must be the toolkit's CANN release
``cuda-driver``            CUDA toolkit <-> minimum NVIDIA driver
``torch_cuda-driver``      CUDA of the torch wheel <-> minimum NVIDIA driver
``torch-cuda-variant``     torch build tag <-> torch_cuda <-> published CUDA variants
``torch_cuda-cuda``        CUDA of the torch wheel <-> CUDA toolkit (same major)
``torch-nccl``             torch (+ CUDA) <-> the NCCL its wheel pins
``driver-branch``          a stack's driver branch <-> its driver version
``device-cuda``            device generation <-> minimum CUDA and driver
=========================  =============================================================
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from .. import paths as project_paths
from ..errors import StackError
from ..vendors import get_vendor, is_vendor, vendor_names, vendors
from ..yamlfile import MarkedDict, MarkedList, load_marked_file
from .model import Stack
from .versions import VersionError, in_minor_range, local_tag, parse_version, public, release_prefix

Confidence = Literal["verified", "single-source", "inferred", "background"]
CONFIDENCES: tuple[Confidence, ...] = ("verified", "single-source", "inferred", "background")
Severity = Literal["error", "warning"]

_CONFIDENCE_WORDS = {
    "single-source": "a single-source fact (one document says so, nothing corroborates it)",
    "inferred": "an inferred fact (our reading of the sources, not stated by them)",
    "background": "a background fact (known, not re-verified against a source)",
}


# --------------------------------------------------------------------------------------------------- data model


@dataclass(frozen=True)
class Fact:
    """Where a row comes from and how sure it is."""

    source_id: str
    source: str
    where: str
    confidence: Confidence = "verified"
    disputed: str | None = None
    note: str | None = None

    @property
    def uncertain(self) -> bool:
        return self.confidence != "verified" or self.disputed is not None

    def caveat(self) -> str | None:
        """The sentence a message carries when it relies on this row; None for a verified, undisputed row."""
        parts: list[str] = []
        if self.confidence != "verified":
            parts.append(f"relies on {_CONFIDENCE_WORDS[self.confidence]} at {self.where}")
        if self.disputed:
            parts.append(f"relies on a disputed fact at {self.where}: {self.disputed}")
        return "; ".join(parts) if parts else None

    def label(self) -> str:
        tags: list[str] = [self.confidence] if self.confidence != "verified" else []
        if self.disputed:
            tags.append(f"disputed: {self.disputed}")
        return f"{self.source_id}" + (f"; {'; '.join(tags)}" if tags else "")


@dataclass(frozen=True)
class Symptom:
    text: str
    fact: Fact


@dataclass(frozen=True)
class TorchNpuRow:
    torch_npu: str
    torch: str
    cann: str
    branch: str | None
    fact: Fact


@dataclass(frozen=True)
class PythonRow:
    torch: tuple[str, ...]
    python_min: str
    python_max: str
    vendors: tuple[str, ...]
    fact: Fact


@dataclass(frozen=True)
class HdkRow:
    cann: str
    devices: tuple[str, ...]
    driver: str
    firmware: str
    hdk: str | None
    fact: Fact


@dataclass(frozen=True)
class CannInternalRow:
    internal: str
    release: str
    fact: Fact


@dataclass(frozen=True)
class SameReleaseRow:
    component: str
    with_: str
    fact: Fact


@dataclass(frozen=True)
class CudaDriverRow:
    cuda: str
    driver: str
    fact: Fact


@dataclass(frozen=True)
class TorchCudaRow:
    torch: str
    cuda: tuple[str, ...]
    fact: Fact


@dataclass(frozen=True)
class NcclRow:
    torch: str
    cuda: tuple[str, ...]
    nccl: str
    fact: Fact


@dataclass(frozen=True)
class DeviceCudaRow:
    devices: tuple[str, ...]
    cuda: str
    driver: str
    fact: Fact


@dataclass
class Matrix:
    """Every table of every ``compat/*.yml``, typed. Load with :func:`load_matrix`."""

    torch_npu: list[TorchNpuRow] = field(default_factory=list)
    python: list[PythonRow] = field(default_factory=list)
    cann_hdk: list[HdkRow] = field(default_factory=list)
    cann_internal: list[CannInternalRow] = field(default_factory=list)
    same_release: list[SameReleaseRow] = field(default_factory=list)
    cuda_driver: list[CudaDriverRow] = field(default_factory=list)
    cuda_family: list[CudaDriverRow] = field(default_factory=list)
    torch_cuda: list[TorchCudaRow] = field(default_factory=list)
    nccl: list[NcclRow] = field(default_factory=list)
    device_cuda: list[DeviceCudaRow] = field(default_factory=list)
    symptoms: dict[str, Symptom] = field(default_factory=dict)
    sources: dict[str, Fact] = field(default_factory=dict)
    files: list[Path] = field(default_factory=list)

    def cann_release(self, text: str) -> str:
        """The CANN release for an internal version (``7.7.0.1.238`` -> ``8.1.RC1``); other text unchanged."""
        try:
            parts = parse_version(text).release
        except VersionError:
            return text
        # Releases have at most three numeric parts (8.0.0, 8.1.RC1); internal builds have five.
        if len(parts) >= 4:
            for row in self.cann_internal:
                if release_prefix(text, row.internal):
                    return row.release
        return text

    def same_cann(self, a: str, b: str) -> bool:
        return public(self.cann_release(a)) == public(self.cann_release(b))


@dataclass(frozen=True)
class Violation:
    """One broken rule: what, why we believe it (source, confidence), what to pick instead, what it looks like."""

    rule: str
    message: str
    source: str
    confidence: Confidence = "verified"
    severity: Severity = "error"
    components: tuple[str, ...] = ()
    nearest: tuple[str, ...] = ()
    symptom: str | None = None
    disputed: str | None = None
    where: str | None = None

    def describe(self) -> str:
        lines = [f"[{self.severity}] {self.rule}: {self.message}"]
        lines.append(f"    source: {self.source}" + (f" ({self.where})" if self.where else ""))
        if self.confidence != "verified" or self.disputed:
            lines.append(f"    confidence: {self.confidence}" + (f"; disputed: {self.disputed}" if self.disputed else ""))
        for index, choice in enumerate(self.nearest):
            lines.append(("    nearest: " if index == 0 else "             ") + choice)
        if self.symptom:
            lines.append(f"    symptom: {self.symptom}")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {
            "rule": self.rule, "severity": self.severity, "message": self.message, "source": self.source,
            "confidence": self.confidence, "disputed": self.disputed, "where": self.where,
            "components": list(self.components), "nearest": list(self.nearest), "symptom": self.symptom,
        }


# --------------------------------------------------------------------------------------------------- loading

_ROW_META = ("source", "confidence", "disputed", "note")
_TABLES = ("torch_npu", "python", "cann_hdk", "cann_internal", "same_release", "cuda_driver", "cuda_family",
           "torch_cuda", "nccl", "device_cuda")
_TOP = ("sources", "symptoms") + _TABLES


class _Reader:
    """Reads one compat file's rows with file:line errors."""

    def __init__(self, path: Path, sources: dict[str, str]) -> None:
        self.path = path
        self.sources = sources

    def error(self, line: int, message: str) -> StackError:
        return StackError(message, where=f"{self.path}:{line}")

    def text(self, row: MarkedDict, key: str, *, version: bool = False) -> str:
        value = row[key]
        if isinstance(value, bool) or not isinstance(value, str) or not value.strip():
            raise self.error(row.line_of(key), f"{key} must be a quoted string, got {value!r}")
        if version:
            try:
                parse_version(value)
            except VersionError as err:
                raise self.error(row.line_of(key), f"{key}: {err}") from None
        return value

    def texts(self, row: MarkedDict, key: str, *, version: bool = False, size: int | None = None) -> tuple[str, ...]:
        value = row[key]
        if not isinstance(value, MarkedList) or not value:
            raise self.error(row.line_of(key), f"{key} must be a non-empty list")
        if size is not None and len(value) != size:
            raise self.error(row.line_of(key), f"{key} must have {size} items, got {len(value)}")
        holder = MarkedDict()
        holder.key_lines = {}
        out = []
        for index, item in enumerate(value):
            holder[key] = item
            holder.line = value.line_of(index)
            out.append(self.text(holder, key, version=version))
        return tuple(out)

    def fact(self, row: MarkedDict) -> Fact:
        line = row.line
        if "source" not in row:
            raise self.error(line, "row has no source; every compatibility row must name where it comes from")
        source_id = row["source"]
        if source_id not in self.sources:
            raise self.error(row.line_of("source"),
                             f"source {source_id!r} is not defined under sources: in this file")
        confidence = row.get("confidence", "verified")
        if confidence not in CONFIDENCES:
            raise self.error(row.line_of("confidence"),
                             f"confidence {confidence!r} is not one of {', '.join(CONFIDENCES)}")
        disputed = self.text(row, "disputed") if "disputed" in row else None
        note = self.text(row, "note") if "note" in row else None
        return Fact(source_id=source_id, source=self.sources[source_id], where=f"{self.path.name}:{line}",
                    confidence=confidence, disputed=disputed, note=note)

    def rows(self, table: Any, line: int, name: str, required: Sequence[str],
             optional: Sequence[str] = ()) -> Iterable[MarkedDict]:
        if not isinstance(table, MarkedList):
            raise self.error(line, f"{name} must be a list of rows")
        allowed = set(required) | set(optional) | set(_ROW_META)
        for index, row in enumerate(table):
            if not isinstance(row, MarkedDict):
                raise self.error(table.line_of(index), f"{name}: each row must be a mapping")
            missing = [key for key in required if key not in row]
            if missing:
                raise self.error(row.line, f"{name}: row lacks {', '.join(missing)}")
            unknown = [key for key in row if key not in allowed]
            if unknown:
                raise self.error(row.line_of(unknown[0]), f"{name}: unknown field {unknown[0]!r}")
            yield row


def _load_file(path: Path, matrix: Matrix) -> None:
    data = load_marked_file(path, error=StackError)
    if not isinstance(data, MarkedDict):
        raise StackError("a compat file must be a mapping of tables", where=f"{path}:1")
    for key in data:
        if key not in _TOP:
            raise StackError(f"unknown table {key!r}", where=f"{path}:{data.line_of(key)}",
                             hint=f"tables: {', '.join(_TOP)}")
    raw_sources = data.get("sources") or MarkedDict()
    sources: dict[str, str] = {}
    for source_id, text in raw_sources.items():
        if not isinstance(text, str) or not text.strip():
            raise StackError(f"source {source_id!r} needs a citation", where=f"{path}:{raw_sources.line_of(source_id)}")
        sources[str(source_id)] = " ".join(text.split())
    reader = _Reader(path, sources)
    for source_id, text in sources.items():
        matrix.sources.setdefault(source_id, Fact(source_id, text, f"{path.name}:{raw_sources.line_of(source_id)}"))

    symptoms = data.get("symptoms") or MarkedDict()
    for key, spec in symptoms.items():
        if not isinstance(spec, MarkedDict):
            raise reader.error(symptoms.line_of(key), f"symptom {key!r} must be a mapping with text and source")
        for row in reader.rows(MarkedList([spec]), spec.line, f"symptoms.{key}", ("text",)):
            matrix.symptoms[str(key)] = Symptom(" ".join(reader.text(row, "text").split()), reader.fact(row))

    def table(name: str) -> tuple[Any, int]:
        return data.get(name, MarkedList()), data.line_of(name)

    if "torch_npu" in data:
        for row in reader.rows(*table("torch_npu"), "torch_npu", ("torch_npu", "torch", "cann"), ("branch",)):
            matrix.torch_npu.append(TorchNpuRow(
                reader.text(row, "torch_npu", version=True), reader.text(row, "torch", version=True),
                reader.text(row, "cann", version=True), reader.text(row, "branch") if "branch" in row else None,
                reader.fact(row)))
    if "python" in data:
        for row in reader.rows(*table("python"), "python", ("torch", "python", "vendors")):
            low, high = reader.texts(row, "python", version=True, size=2)
            vendors = reader.texts(row, "vendors")
            bad = [v for v in vendors if not is_vendor(v)]
            if bad:
                raise reader.error(row.line_of("vendors"), f"python: unknown vendor {bad[0]!r}")
            matrix.python.append(PythonRow(reader.texts(row, "torch", version=True), low, high, vendors,
                                           reader.fact(row)))
    if "cann_hdk" in data:
        for row in reader.rows(*table("cann_hdk"), "cann_hdk", ("cann", "devices", "driver", "firmware"), ("hdk",)):
            matrix.cann_hdk.append(HdkRow(
                reader.text(row, "cann", version=True), reader.texts(row, "devices"),
                reader.text(row, "driver", version=True), reader.text(row, "firmware", version=True),
                reader.text(row, "hdk") if "hdk" in row else None, reader.fact(row)))
    if "cann_internal" in data:
        for row in reader.rows(*table("cann_internal"), "cann_internal", ("internal", "release")):
            matrix.cann_internal.append(CannInternalRow(
                reader.text(row, "internal", version=True), reader.text(row, "release", version=True),
                reader.fact(row)))
    if "same_release" in data:
        for row in reader.rows(*table("same_release"), "same_release", ("component", "with")):
            matrix.same_release.append(SameReleaseRow(
                reader.text(row, "component"), reader.text(row, "with"), reader.fact(row)))
    for name, target in (("cuda_driver", matrix.cuda_driver), ("cuda_family", matrix.cuda_family)):
        if name in data:
            for row in reader.rows(*table(name), name, ("cuda", "driver")):
                target.append(CudaDriverRow(reader.text(row, "cuda", version=True),
                                            reader.text(row, "driver", version=True), reader.fact(row)))
    if "torch_cuda" in data:
        for row in reader.rows(*table("torch_cuda"), "torch_cuda", ("torch", "cuda")):
            matrix.torch_cuda.append(TorchCudaRow(
                reader.text(row, "torch", version=True), reader.texts(row, "cuda", version=True), reader.fact(row)))
    if "nccl" in data:
        for row in reader.rows(*table("nccl"), "nccl", ("torch", "cuda", "nccl")):
            matrix.nccl.append(NcclRow(
                reader.text(row, "torch", version=True), reader.texts(row, "cuda", version=True),
                reader.text(row, "nccl", version=True), reader.fact(row)))
    if "device_cuda" in data:
        for row in reader.rows(*table("device_cuda"), "device_cuda", ("devices", "cuda", "driver")):
            matrix.device_cuda.append(DeviceCudaRow(
                reader.texts(row, "devices"), reader.text(row, "cuda", version=True),
                reader.text(row, "driver", version=True), reader.fact(row)))
    matrix.files.append(path)


@functools.lru_cache(maxsize=8)
def _load_cached(stamp: tuple[tuple[str, float], ...]) -> Matrix:
    matrix = Matrix()
    for path, _ in stamp:
        _load_file(Path(path), matrix)
    return matrix


def matrix_files(root: Path | None = None) -> list[Path]:
    """Every ``compat/*.yml`` under the project root, and each vendor's rows it has no file for (the ones the
    vendor ships: Vendor.compat_file)."""
    root = root or project_paths.project_root()
    folder = root / "compat"
    files = sorted(folder.glob("*.yml")) if folder.is_dir() else []
    for vendor in vendors():
        path = vendor.compat_file(root)
        if path is not None and path not in files:
            files.append(path)
    return files


def load_matrix(root: Path | None = None) -> Matrix:
    """Every file of :func:`matrix_files`, merged; cached until a file changes."""
    files = matrix_files(root)
    if not files:
        folder = (root or project_paths.project_root()) / "compat"
        raise StackError("no compatibility matrices found", where=str(folder),
                         hint="compat/ascend.yml and compat/nvidia.yml ship with accelstack")
    stamp = tuple((str(path), path.stat().st_mtime) for path in files)
    return _load_cached(stamp)


# --------------------------------------------------------------------------------------------------- checks

# For the one rule that follows from version syntax alone (a cu124 build is a CUDA 12.4 build).
_UNSOURCED = Fact("version-tag", "torch's local version tag names the CUDA it was built with (cuXYZ = CUDA X.Y)",
                  "accelstack.stacks.versions")


def _readable(value: str | None) -> bool:
    if not value:
        return False
    try:
        parse_version(value)
    except VersionError:
        return False
    return True


def _violation(rule: str, message: str, fact: Fact, *, components: Sequence[str], nearest: Sequence[str] = (),
               symptom: Symptom | None = None, severity: Severity = "error",
               confidence: Confidence | None = None) -> Violation:
    caveat = fact.caveat()
    if confidence is not None and confidence != fact.confidence and confidence != "verified":
        caveat = (caveat + "; " if caveat else "") + f"relies on {_CONFIDENCE_WORDS[confidence]}"
    text = message + (f" (This check {caveat}.)" if caveat else "")
    symptom_text = None
    if symptom is not None:
        symptom_text = symptom.text
        if symptom.fact.confidence != "verified":
            symptom_text += f" [{symptom.fact.confidence}: {symptom.fact.source_id}]"
    return Violation(
        rule=rule, message=text, source=fact.source, confidence=confidence or fact.confidence, severity=severity,
        components=tuple(components), nearest=tuple(nearest), symptom=symptom_text, disputed=fact.disputed,
        where=fact.where,
    )


def _series(text: str) -> str:
    """``2.5.1+cpu`` -> ``2.5``: the series a torch release belongs to, for messages."""
    release = parse_version(text).release
    return ".".join(str(p) for p in release[:2])


def _sorted_unique(texts: Iterable[str], *, newest_first: bool = True) -> list[str]:
    seen: dict[Any, str] = {}
    for text in texts:
        seen.setdefault(parse_version(text), text)
    return [seen[key] for key in sorted(seen, reverse=newest_first)]


def _torch_npu_rows(matrix: Matrix, torch_npu: str) -> list[TorchNpuRow]:
    want = public(torch_npu)
    return [row for row in matrix.torch_npu if parse_version(row.torch_npu) == want]


def _choices_for_cann(matrix: Matrix, cann: str, torch: str | None) -> str:
    cann = matrix.cann_release(cann)
    rows = [row for row in matrix.torch_npu if matrix.same_cann(row.cann, cann)]
    if not rows:
        known = _sorted_unique(row.cann for row in matrix.torch_npu)
        return f"no torch_npu release is listed for CANN {cann}; listed CANN releases: {', '.join(known[:8])}"
    # The same torch series first: changing torch_npu alone is the smallest change.
    if torch:
        rows.sort(key=lambda row: not release_prefix(row.torch, _series(torch)))
    text = ", ".join(f"{row.torch_npu} (torch {row.torch}{'; ' + row.fact.label() if row.fact.uncertain else ''})"
                     for row in rows)
    return f"torch_npu for CANN {cann}: {text}"


def _check_torch_npu(c: Mapping[str, str], matrix: Matrix) -> list[Violation]:
    out: list[Violation] = []
    torch_npu, cann, torch = c.get("torch_npu"), c.get("cann_toolkit"), c.get("torch")
    if not torch_npu:
        return out
    rows = _torch_npu_rows(matrix, torch_npu)
    if not rows:
        nearest = []
        if cann:
            nearest.append(_choices_for_cann(matrix, cann, torch))
        if torch:
            same = [r.torch_npu for r in matrix.torch_npu if public(r.torch) == public(torch)]
            if same:
                nearest.append(f"torch_npu for torch {torch}: {', '.join(_sorted_unique(same))}")
        fact = matrix.sources.get("ascend-pytorch-compat") or Fact("compat", "compat/ascend.yml", "ascend.yml")
        out.append(_violation(
            "torch_npu-cann",
            f"torch_npu {torch_npu} is not in the compatibility matrix; its CANN and torch cannot be checked",
            fact, components=("torch_npu",), nearest=nearest, severity="warning"))
        return out
    best = min(rows, key=lambda row: (row.fact.uncertain, row.fact.confidence != "verified"))
    if cann:
        matching = [row for row in rows if matrix.same_cann(row.cann, cann)]
        if not matching:
            supported = _sorted_unique((row.cann for row in rows), newest_first=False)
            installed = parse_version(matrix.cann_release(cann))
            older = installed < parse_version(supported[0])
            direction = "older than any release" if older else "not a release"
            cann_choices = ", ".join(
                f"{row.cann}" + (f" ({row.fact.label()})" if row.fact.uncertain else "")
                for row in sorted(rows, key=lambda r: (r.fact.uncertain, parse_version(r.cann))))
            firm = [row.cann for row in rows if not row.fact.uncertain] or [best.cann]
            shaky = [row.cann for row in rows if row.fact.uncertain and row.cann not in firm]
            needs = " or ".join(firm) + (f" ({' or '.join(shaky)} per a less certain row)" if shaky else "")
            shown = cann if matrix.cann_release(cann) == cann else f"{cann} (release {matrix.cann_release(cann)})"
            out.append(_violation(
                "torch_npu-cann",
                f"torch_npu {torch_npu} needs CANN {needs}; CANN {shown} is {direction} it supports",
                best.fact, components=("torch_npu", "cann_toolkit"),
                nearest=(f"CANN for torch_npu {torch_npu}: {cann_choices}",
                         _choices_for_cann(matrix, cann, torch)),
                symptom=matrix.symptoms.get("torch_npu-cann/older" if older else "torch_npu-cann/newer")))
        elif all(row.fact.disputed for row in matching):
            row = matching[0]
            out.append(_violation(
                "torch_npu-cann",
                f"torch_npu {torch_npu} with CANN {cann} is allowed only by a disputed row",
                row.fact, components=("torch_npu", "cann_toolkit"), severity="warning",
                nearest=(f"CANN for torch_npu {torch_npu} per {best.fact.source_id}: {best.cann}",)))
    if torch and _readable(torch) and public(torch) != parse_version(best.torch):
        same_torch = [r for r in matrix.torch_npu if public(r.torch) == public(torch)]
        nearest = [f"torch for torch_npu {torch_npu}: {best.torch}"]
        if same_torch:
            nearest.append(f"torch_npu for torch {public(torch)}: " + ", ".join(
                f"{r.torch_npu} (CANN {r.cann})" for r in same_torch))
        out.append(_violation(
            "torch_npu-torch", f"torch_npu {torch_npu} is built for torch {best.torch}, not torch {torch}",
            best.fact, components=("torch_npu", "torch"), nearest=nearest,
            symptom=matrix.symptoms.get("torch_npu-torch")))
    return out


def _check_python(c: Mapping[str, str], vendor: str, matrix: Matrix) -> list[Violation]:
    python, torch = c.get("python"), c.get("torch")
    if not python or not torch:
        return []
    rows = [row for row in matrix.python
            if vendor in row.vendors and any(release_prefix(torch, series) for series in row.torch)]
    if not rows:
        return []
    row = rows[0]
    if in_minor_range(python, row.python_min, row.python_max):
        return []
    fits = [series for other in matrix.python if vendor in other.vendors
            and in_minor_range(python, other.python_min, other.python_max) for series in other.torch]
    nearest = [f"python for torch {_series(torch)}: {row.python_min} to {row.python_max}"]
    if fits:
        nearest.append(f"torch series for python {python}: {', '.join(_sorted_unique(fits))}")
    return [_violation(
        "python-torch",
        f"torch {torch} supports python {row.python_min} to {row.python_max} on {vendor}; python {python} is outside",
        row.fact, components=("python", "torch"), nearest=nearest, symptom=matrix.symptoms.get("python-torch"))]


def _device_fits(devices: Sequence[str] | None, row_devices: Sequence[str]) -> bool:
    if not devices:
        return True
    return any(d.upper().startswith(r.upper()) for d in devices for r in row_devices)


def _check_hdk(c: Mapping[str, str], matrix: Matrix, devices: Sequence[str] | None) -> list[Violation]:
    cann = c.get("cann_toolkit")
    if not cann:
        return []
    release = matrix.cann_release(cann)
    rows = [row for row in matrix.cann_hdk if _device_fits(devices, row.devices)]
    exact = [row for row in rows if matrix.same_cann(row.cann, release)]
    inferred = False
    if exact:
        row = exact[0]
    else:
        older = [r for r in rows if parse_version(r.cann) <= parse_version(release)]
        if not older:
            return []
        row = max(older, key=lambda r: parse_version(r.cann))
        inferred = True
    out: list[Violation] = []
    hdk = f"Ascend HDK {row.hdk}" if row.hdk else "its Ascend HDK"
    preamble = (f"no HDK row for CANN {release}; the floor of the nearest older release, CANN {row.cann}, applies. "
                if inferred else "")
    for component, needed, rule in (("ascend_driver", row.driver, "cann-driver"),
                                    ("ascend_firmware", row.firmware, "cann-firmware")):
        have = c.get(component)
        if not have or not _readable(have) or parse_version(have) >= parse_version(needed):
            continue
        supports = [r.cann for r in rows
                    if parse_version(have) >= parse_version(r.driver if component == "ascend_driver" else r.firmware)]
        kind = "driver" if component == "ascend_driver" else "firmware"
        nearest = [f"{kind} for CANN {release}: {needed} or newer ({hdk})"]
        nearest.append(f"CANN releases {kind} {have} supports: {', '.join(_sorted_unique(supports))}" if supports
                       else f"no listed CANN release supports {kind} {have}")
        out.append(_violation(
            rule, f"{preamble}CANN {release} needs {hdk} or newer: {kind} >= {needed}; {kind} {have} is older",
            row.fact, components=(component, "cann_toolkit"), nearest=nearest,
            symptom=matrix.symptoms.get(rule) or matrix.symptoms.get("cann-driver"),
            confidence="inferred" if inferred else None))
    return out


def _check_same_release(c: Mapping[str, str], matrix: Matrix) -> list[Violation]:
    out: list[Violation] = []
    for row in matrix.same_release:
        mine, theirs = c.get(row.component), c.get(row.with_)
        if not mine or not theirs or matrix.same_cann(mine, theirs):
            continue
        rule = f"{row.component}-{row.with_}"
        wanted = matrix.cann_release(theirs)
        out.append(_violation(
            rule, f"{row.component} {mine} is not the CANN release of {row.with_} {theirs}",
            row.fact, components=(row.component, row.with_),
            nearest=(f"{row.component} for {row.with_} {wanted}: {wanted}",
                     f"or {row.with_} {matrix.cann_release(mine)} to match {row.component}"),
            symptom=matrix.symptoms.get(rule)))
    return out


def _cuda_rows(matrix: Matrix, cuda: str) -> tuple[CudaDriverRow | None, CudaDriverRow | None]:
    row = next((r for r in matrix.cuda_driver if release_prefix(cuda, r.cuda)), None)
    family = next((r for r in matrix.cuda_family if release_prefix(cuda, r.cuda)), None)
    return row, family


def _check_cuda_driver(c: Mapping[str, str], matrix: Matrix) -> list[Violation]:
    driver = c.get("nvidia_driver")
    if not driver:
        return []
    out: list[Violation] = []
    have = parse_version(driver)
    for component in ("cuda", "torch_cuda"):
        cuda = c.get(component)
        if not cuda:
            continue
        row, family = _cuda_rows(matrix, cuda)
        below_family = family is not None and have < parse_version(family.driver)
        below_row = row is not None and have < parse_version(row.driver)
        if not (below_family or below_row):
            continue
        fully = [r.cuda for r in matrix.cuda_driver if have >= parse_version(r.driver)]
        rule = "cuda-driver" if component == "cuda" else "torch_cuda-driver"
        what = f"CUDA {cuda}" if component == "cuda" else f"the torch wheel's CUDA {cuda}"
        if below_family:
            assert family is not None
            needed, fact = (row.driver, row.fact) if row else (family.driver, family.fact)
            message = (f"{what} needs driver >= {needed}; driver {driver} is below even the minor-version-"
                       f"compatibility floor {family.driver} of CUDA {family.cuda}.x, so nothing CUDA {cuda} runs")
            severity: Severity = "error"
        else:
            assert row is not None
            needed, fact = row.driver, row.fact
            floor = f" (>= {family.driver} for {family.cuda}.x)" if family else ""
            message = (f"{what} ships with driver {row.driver}; driver {driver} is older and runs it only through "
                       f"minor-version compatibility{floor}, without PTX JIT of newer PTX")
            # A torch wheel carries SASS for the GPUs it targets, so it usually runs under MVC; a toolkit used to
            # build kernels does not get that grace.
            severity = "warning" if component == "torch_cuda" else "error"
        nearest = [f"driver for CUDA {cuda}: {needed} or newer"]
        nearest.append(f"CUDA releases driver {driver} runs fully: {', '.join(_sorted_unique(fully))}" if fully
                       else f"no listed CUDA release runs fully on driver {driver}")
        out.append(_violation(rule, message, fact, components=(component, "nvidia_driver"), nearest=nearest,
                              symptom=matrix.symptoms.get("cuda-driver"), severity=severity))
    return out


def _cuda_of_tag(tag: str) -> str | None:
    digits = tag[2:] if tag.startswith("cu") else ""
    if not digits.isdigit() or len(digits) < 2:
        return None
    return f"{int(digits[:-1])}.{digits[-1]}"


def _check_torch_cuda(c: Mapping[str, str], matrix: Matrix) -> list[Violation]:
    torch, torch_cuda, cuda = c.get("torch"), c.get("torch_cuda"), c.get("cuda")
    if not torch:
        return []
    out: list[Violation] = []
    tag = local_tag(torch)
    row = next((r for r in matrix.torch_cuda if release_prefix(torch, r.torch)), None)
    symptom_cpu = matrix.symptoms.get("torch-cuda-variant/cpu")
    if tag == "cpu" or not torch_cuda:
        fact = symptom_cpu.fact if symptom_cpu else (row.fact if row else None)
        if fact is None:
            return out
        builds = ", ".join(f"{public(torch)}+cu{v.replace('.', '')}" for v in row.cuda) if row else "none listed"
        how = "+cpu tag" if tag == "cpu" else "torch.version.cuda is empty"
        out.append(_violation(
            "torch-cuda-variant", f"torch {torch} is a CPU build ({how}) on an NVIDIA stack", fact,
            components=("torch", "torch_cuda"), nearest=(f"torch {public(torch)} CUDA builds: {builds}",),
            symptom=symptom_cpu))
        return out
    tagged = _cuda_of_tag(tag) if tag else None
    if tagged and parse_version(tagged) != parse_version(torch_cuda):
        out.append(_violation(
            "torch-cuda-variant", f"torch {torch} is the CUDA {tagged} build, but torch_cuda says {torch_cuda}",
            _UNSOURCED, components=("torch", "torch_cuda"),
            nearest=(f"torch {public(torch)}+cu{torch_cuda.replace('.', '')} for CUDA {torch_cuda}",
                     f"or torch_cuda {tagged} for torch {torch}")))
    if row and not any(release_prefix(torch_cuda, v) for v in row.cuda):
        others = [r.torch for r in matrix.torch_cuda if any(release_prefix(torch_cuda, v) for v in r.cuda)]
        nearest = [f"CUDA variants of torch {row.torch}: {', '.join(row.cuda)}"]
        if others:
            nearest.append(f"torch series with a CUDA {torch_cuda} wheel: {', '.join(_sorted_unique(others))}")
        out.append(_violation(
            "torch-cuda-variant", f"no torch {row.torch} wheel is published for CUDA {torch_cuda}",
            row.fact, components=("torch", "torch_cuda"), nearest=nearest))
    if cuda and parse_version(cuda).release[:1] != parse_version(torch_cuda).release[:1]:
        background = matrix.sources.get("nvidia-background")
        if background is not None:
            fact = Fact(background.source_id, background.source, background.where, "background")
            out.append(_violation(
                "torch_cuda-cuda",
                f"torch is built with CUDA {torch_cuda} but the toolkit is CUDA {cuda}: building CUDA extensions "
                f"against this torch fails on the major-version mismatch",
                fact, components=("torch_cuda", "cuda"), severity="warning",
                nearest=(f"cuda {_series(torch_cuda)} toolkit, or a torch wheel for CUDA {_series(cuda)}",)))
    return out


def _check_nccl(c: Mapping[str, str], matrix: Matrix) -> list[Violation]:
    torch, nccl, torch_cuda = c.get("torch"), c.get("nccl"), c.get("torch_cuda")
    if not torch or not nccl:
        return []
    rows = [r for r in matrix.nccl if release_prefix(torch, r.torch)
            and (not torch_cuda or any(release_prefix(torch_cuda, s) for s in r.cuda))]
    if not rows or len({parse_version(r.nccl) for r in rows}) > 1:
        return []
    row = rows[0]
    have, want = public(nccl), parse_version(row.nccl)
    if have == want:
        return []
    older = have < want
    pinning = [r.torch for r in matrix.nccl if parse_version(r.nccl) == have]
    nearest = [f"NCCL for torch {_series(torch)}" + (f" on CUDA {torch_cuda}" if torch_cuda else "") + f": {row.nccl}"]
    if pinning:
        nearest.append(f"torch series whose wheel pins NCCL {public(nccl)}: {', '.join(_sorted_unique(pinning))}")
    return [_violation(
        "torch-nccl",
        f"torch {torch} is built and tested with NCCL {row.nccl}; NCCL {nccl} is {'older' if older else 'newer'}",
        row.fact, components=("nccl", "torch"), nearest=nearest, symptom=matrix.symptoms.get("torch-nccl"),
        severity="error" if older else "warning")]


def _usable(components: Mapping[str, str | None]) -> tuple[dict[str, str], list[str]]:
    usable: dict[str, str] = {}
    unreadable: list[str] = []
    for key, value in components.items():
        if value is None or value == "":
            continue
        if _readable(value):
            usable[key] = value
        else:
            unreadable.append(key)
    return usable, unreadable


def check_components(components: Mapping[str, str | None], vendor: str, *,
                     devices: Sequence[str] | None = None, matrix: Matrix | None = None) -> list[Violation]:
    """Every rule a set of component versions breaks. ``None`` (not installed / not pinned) skips its rules.

    Used with a stack's pins (preflight) and with a host's installed versions (drift).
    """
    if not is_vendor(vendor):
        raise StackError(f"vendor {vendor!r} is not one of {', '.join(vendor_names())}")
    matrix = matrix or load_matrix()
    usable, _unreadable = _usable(components)
    out = _check_python(usable, vendor, matrix)
    for rule in get_vendor(vendor).compat_rules:
        if rule in COMPONENT_RULES:
            out.extend(COMPONENT_RULES[rule](usable, matrix, devices))
    return out


def _check_branch(stack: Stack, matrix: Matrix) -> list[Violation]:
    driver, branch = stack.components.get("nvidia_driver"), stack.fields.get("nvidia_driver_branch")
    if not driver or not branch:
        return []
    digits = branch.upper().lstrip("R")
    if digits.isdigit() and parse_version(driver).release[0] == int(digits):
        return []
    fact = Fact("driver-branches-doc", "NVIDIA data-center driver branches: branch Rnnn is driver major nnn",
                stack.where("nvidia_driver_branch"))
    return [_violation(
        "driver-branch", f"nvidia_driver {driver} is not on branch {branch}", fact,
        components=("nvidia_driver",),
        nearest=(f"nvidia_driver_branch: R{parse_version(driver).release[0]}",))]


def _check_devices(stack: Stack, matrix: Matrix) -> list[Violation]:
    out: list[Violation] = []
    cuda, driver = stack.components.get("cuda"), stack.components.get("nvidia_driver")
    for row in matrix.device_cuda:
        hit = [d for d in stack.devices if d.upper() in {r.upper() for r in row.devices}]
        if not hit:
            continue
        if cuda and parse_version(cuda) < parse_version(row.cuda):
            out.append(_violation(
                "device-cuda", f"{', '.join(hit)} need CUDA {row.cuda} or newer; the stack pins CUDA {cuda}",
                row.fact, components=("cuda",), nearest=(f"cuda {row.cuda} or newer, or drop {', '.join(hit)}",)))
        if driver and parse_version(driver) < parse_version(row.driver):
            out.append(_violation(
                "device-cuda", f"{', '.join(hit)} need driver {row.driver} or newer; the stack pins {driver}",
                row.fact, components=("nvidia_driver",), nearest=(f"nvidia_driver {row.driver} or newer",)))
    return out


def check_stack(stack: Stack, matrix: Matrix | None = None) -> list[Violation]:
    """Every rule a stack's pins break, including the stack-level ones (driver branch, device generation)."""
    matrix = matrix or load_matrix()
    out = check_components(stack.components, stack.vendor, devices=stack.devices, matrix=matrix)
    for rule in get_vendor(stack.vendor).compat_rules:
        if rule in STACK_RULES:
            out.extend(STACK_RULES[rule](stack, matrix))
    return out


# The rule sets a vendor names (accelstack.vendors: Vendor.compat_rules): those over component versions (a stack's
# pins, a host's installed versions), then those over a whole stack (its own fields, its device types).
ComponentRule = Callable[[Mapping[str, str], Matrix, "Sequence[str] | None"], list[Violation]]
COMPONENT_RULES: dict[str, ComponentRule] = {
    "torch_npu": lambda c, matrix, devices: _check_torch_npu(c, matrix),
    "cann_hdk": _check_hdk,
    "same_release": lambda c, matrix, devices: _check_same_release(c, matrix),
    "cuda_driver": lambda c, matrix, devices: _check_cuda_driver(c, matrix),
    "torch_cuda": lambda c, matrix, devices: _check_torch_cuda(c, matrix),
    "nccl": lambda c, matrix, devices: _check_nccl(c, matrix),
}
STACK_RULES: dict[str, Callable[[Stack, Matrix], list[Violation]]] = {
    "driver_branch": _check_branch,
    "device_cuda": _check_devices,
}
