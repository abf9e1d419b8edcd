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

Which rules judge a stack is its vendor's choice (``accelstack.vendors``): the rule sets it names
(``Vendor.compat_rules``: Ascend's ``torch_npu``, ``cann_hdk``, ``same_release``) and the toolkit rules, which take
their component names, tables and words from the vendor's ``ToolkitRules`` (NVIDIA's CUDA: the ``cuda-*`` ids above;
a vendor with another toolkit gets the same rules under its own names, from its own tables).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from .. import paths as project_paths
from ..errors import StackError
from ..vendors import ToolkitRules, get_vendor, is_vendor, vendor_names, vendors
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
class ToolkitDriverRow:
    """A toolkit release and the driver it needs (``cuda_driver``, ``cuda_family``: the key is the toolkit's)."""

    toolkit: str
    driver: str
    fact: Fact


@dataclass(frozen=True)
class TorchVariantRow:
    """A torch series and the toolkit builds published for it (``torch_cuda``)."""

    torch: str
    toolkit: tuple[str, ...]
    fact: Fact


@dataclass(frozen=True)
class TorchLibraryRow:
    """A torch series (on these toolkit releases) and the collective library its wheel pins (``nccl``)."""

    torch: str
    toolkit: tuple[str, ...]
    library: str
    fact: Fact


@dataclass(frozen=True)
class DeviceToolkitRow:
    """Device types and the toolkit and driver they need at least (``device_cuda``)."""

    devices: tuple[str, ...]
    toolkit: str
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
    # The toolkit rules' tables, by name (``cuda_driver``, ``torch_cuda``, ...: see accelstack.vendors.ToolkitRules).
    tables: dict[str, list[Any]] = field(default_factory=dict)
    symptoms: dict[str, Symptom] = field(default_factory=dict)
    sources: dict[str, Fact] = field(default_factory=dict)
    files: list[Path] = field(default_factory=list)

    def table(self, name: str) -> list[Any]:
        """A toolkit table's rows (empty when no file has it)."""
        return self.tables.get(name, [])

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
_TABLES = ("torch_npu", "python", "cann_hdk", "cann_internal", "same_release")


def toolkit_tables() -> dict[str, tuple[str, ToolkitRules]]:
    """Every toolkit table a vendor's rules read, by name: (its kind, the vendor's ToolkitRules)."""
    out: dict[str, tuple[str, ToolkitRules]] = {}
    for vendor in vendors():
        t = vendor.toolkit
        if t is None:
            continue
        out[f"{t.toolkit}_driver"] = ("driver", t)
        out[f"{t.toolkit}_family"] = ("driver", t)
        out[f"torch_{t.toolkit}"] = ("variant", t)
        if t.library:
            out[t.library] = ("library", t)
        out[f"device_{t.toolkit}"] = ("device", t)
    return out


def _top() -> tuple[str, ...]:
    return ("sources", "symptoms", *_TABLES, *toolkit_tables())


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
    top = _top()
    for key in data:
        if key not in top:
            raise StackError(f"unknown table {key!r}", where=f"{path}:{data.line_of(key)}",
                             hint=f"tables: {', '.join(top)}")
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
    for name, (kind, t) in toolkit_tables().items():
        if name in data:
            matrix.tables.setdefault(name, []).extend(_toolkit_rows(reader, table(name), name, kind, t))
    matrix.files.append(path)


def _toolkit_rows(reader: _Reader, table: tuple[Any, int], name: str, kind: str, t: ToolkitRules) -> list[Any]:
    """One toolkit table's rows, each keyed by the vendor's own component names (``cuda:``, ``nccl:``)."""
    key = t.toolkit
    if kind == "driver":
        return [ToolkitDriverRow(reader.text(row, key, version=True), reader.text(row, "driver", version=True),
                                 reader.fact(row)) for row in reader.rows(*table, name, (key, "driver"))]
    if kind == "variant":
        return [TorchVariantRow(reader.text(row, "torch", version=True), reader.texts(row, key, version=True),
                                reader.fact(row)) for row in reader.rows(*table, name, ("torch", key))]
    if kind == "library":
        library = str(t.library)
        return [TorchLibraryRow(reader.text(row, "torch", version=True), reader.texts(row, key, version=True),
                                reader.text(row, library, version=True), reader.fact(row))
                for row in reader.rows(*table, name, ("torch", key, library))]
    return [DeviceToolkitRow(reader.texts(row, "devices"), reader.text(row, key, version=True),
                             reader.text(row, "driver", version=True), reader.fact(row))
            for row in reader.rows(*table, name, ("devices", key, "driver"))]


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
_UNSOURCED = Fact("version-tag", "torch's local version tag names the toolkit it was built with (cuXYZ = CUDA X.Y, "
                  "rocmX.Y = ROCm X.Y)", "accelstack.stacks.versions")


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


def _driver_rows(matrix: Matrix, t: ToolkitRules,
                 version: str) -> tuple[ToolkitDriverRow | None, ToolkitDriverRow | None]:
    row = next((r for r in matrix.table(f"{t.toolkit}_driver") if release_prefix(version, r.toolkit)), None)
    family = next((r for r in matrix.table(f"{t.toolkit}_family") if release_prefix(version, r.toolkit)), None)
    return row, family


def _check_toolkit_driver(c: Mapping[str, str], matrix: Matrix, t: ToolkitRules) -> list[Violation]:
    """The toolkit, and the toolkit torch was built with, against the driver each needs (``cuda-driver``,
    ``torch_cuda-driver``); below the family's floor nothing of the release runs at all."""
    driver = c.get(t.driver)
    if not driver:
        return []
    out: list[Violation] = []
    have = parse_version(driver)
    for component in (t.toolkit, t.torch_build):
        version = c.get(component)
        if not version:
            continue
        row, family = _driver_rows(matrix, t, version)
        below_family = family is not None and have < parse_version(family.driver)
        below_row = row is not None and have < parse_version(row.driver)
        if not (below_family or below_row):
            continue
        fully = [r.toolkit for r in matrix.table(f"{t.toolkit}_driver") if have >= parse_version(r.driver)]
        rule = f"{component}-driver"
        what = f"{t.label} {version}" if component == t.toolkit else f"the torch wheel's {t.label} {version}"
        if below_family:
            assert family is not None
            needed, fact = (row.driver, row.fact) if row else (family.driver, family.fact)
            message = (f"{what} needs driver >= {needed}; driver {driver} is below even the minor-version-"
                       f"compatibility floor {family.driver} of {t.label} {family.toolkit}.x, so nothing {t.label} "
                       f"{version} runs")
            severity: Severity = "error"
        else:
            assert row is not None
            needed, fact = row.driver, row.fact
            floor = f" (>= {family.driver} for {family.toolkit}.x)" if family else ""
            message = (f"{what} ships with driver {row.driver}; driver {driver} is older and runs it only through "
                       f"minor-version compatibility{floor}, without PTX JIT of newer PTX")
            # A torch wheel carries SASS for the GPUs it targets, so it usually runs under MVC; a toolkit used to
            # build kernels does not get that grace.
            severity = "warning" if component == t.torch_build else "error"
        nearest = [f"driver for {t.label} {version}: {needed} or newer"]
        nearest.append(f"{t.label} releases driver {driver} runs fully: {', '.join(_sorted_unique(fully))}" if fully
                       else f"no listed {t.label} release runs fully on driver {driver}")
        out.append(_violation(rule, message, fact, components=(component, t.driver), nearest=nearest,
                              symptom=matrix.symptoms.get(f"{t.toolkit}-driver"), severity=severity))
    return out


def _toolkit_of_tag(tag: str, prefix: str) -> str | None:
    """torch's local version tag -> the toolkit release it names: ``cu124`` -> 12.4, ``rocm6.2`` -> 6.2."""
    rest = tag[len(prefix):] if tag.startswith(prefix) else ""
    if "." in rest:
        return rest if _readable(rest) else None
    if not rest.isdigit() or len(rest) < 2:
        return None
    return f"{int(rest[:-1])}.{rest[-1]}"


def _check_torch_variant(c: Mapping[str, str], matrix: Matrix, t: ToolkitRules, label: str) -> list[Violation]:
    """torch's build tag, the toolkit torch says it was built with and the builds published for its series
    (``torch-cuda-variant``), and a toolkit of another major release than torch's (``torch_cuda-cuda``)."""
    torch, built, toolkit = c.get("torch"), c.get(t.torch_build), c.get(t.toolkit)
    if not torch:
        return []
    out: list[Violation] = []
    rule = f"torch-{t.toolkit}-variant"
    tag = local_tag(torch)
    row = next((r for r in matrix.table(f"torch_{t.toolkit}") if release_prefix(torch, r.torch)), None)
    symptom_cpu = matrix.symptoms.get(f"{rule}/cpu")
    if tag == "cpu" or not built:
        fact = symptom_cpu.fact if symptom_cpu else (row.fact if row else None)
        if fact is None:
            return out
        builds = ", ".join(f"{public(torch)}+{t.tag_prefix}{_tag_of(v, t)}" for v in row.toolkit) if row else \
            "none listed"
        how = "+cpu tag" if tag == "cpu" else f"torch.version.{t.torch_attr} is empty"
        out.append(_violation(
            rule, f"torch {torch} is a CPU build ({how}) on an {label} stack", fact,
            components=("torch", t.torch_build), nearest=(f"torch {public(torch)} {t.label} builds: {builds}",),
            symptom=symptom_cpu))
        return out
    tagged = _toolkit_of_tag(tag, t.tag_prefix) if tag else None
    if tagged and not _same_release(tagged, built):
        out.append(_violation(
            rule, f"torch {torch} is the {t.label} {tagged} build, but {t.torch_build} says {built}",
            _UNSOURCED, components=("torch", t.torch_build),
            nearest=(f"torch {public(torch)}+{t.tag_prefix}{_tag_of(built, t)} for {t.label} {built}",
                     f"or {t.torch_build} {tagged} for torch {torch}")))
    if row and not any(_same_release(built, v) for v in row.toolkit):
        others = [r.torch for r in matrix.table(f"torch_{t.toolkit}") if any(_same_release(built, v) for v in r.toolkit)]
        nearest = [f"{t.label} variants of torch {row.torch}: {', '.join(row.toolkit)}"]
        if others:
            nearest.append(f"torch series with a {t.label} {built} wheel: {', '.join(_sorted_unique(others))}")
        out.append(_violation(
            rule, f"no torch {row.torch} wheel is published for {t.label} {built}",
            row.fact, components=("torch", t.torch_build), nearest=nearest))
    if toolkit and parse_version(toolkit).release[:1] != parse_version(built).release[:1]:
        background = matrix.sources.get(t.background_source or "")
        if background is not None:
            fact = Fact(background.source_id, background.source, background.where, "background")
            out.append(_violation(
                f"{t.torch_build}-{t.toolkit}",
                f"torch is built with {t.label} {built} but the toolkit is {t.label} {toolkit}: building {t.label} "
                f"extensions against this torch fails on the major-version mismatch",
                fact, components=(t.torch_build, t.toolkit), severity="warning",
                nearest=(f"{t.toolkit} {_series(built)} toolkit, or a torch wheel for {t.label} {_series(toolkit)}",)))
    return out


def _same_release(a: str, b: str) -> bool:
    """Whether two readings of a toolkit release agree at the precision of the less precise one: torch's
    ``torch.version.hip`` says ``6.2`` for the wheel tagged ``+rocm6.2.4`` (CUDA's readings have one precision, so
    for them this is equality)."""
    return release_prefix(a, b) or release_prefix(b, a)


def _tag_of(version: str, t: ToolkitRules) -> str:
    """How torch's tag writes a toolkit release: ``12.4`` -> ``124`` after ``cu``; ``6.2`` stays after ``rocm``."""
    return version.replace(".", "") if t.tag_prefix == "cu" else version


def _check_torch_library(c: Mapping[str, str], matrix: Matrix, t: ToolkitRules) -> list[Violation]:
    """The collective library torch loads against the one its wheel pins for its series and toolkit
    (``torch-nccl``)."""
    library = t.library
    if library is None:
        return []
    torch, have_text, built = c.get("torch"), c.get(library), c.get(t.torch_build)
    if not torch or not have_text:
        return []
    rows = [r for r in matrix.table(library) if release_prefix(torch, r.torch)
            and (not built or any(release_prefix(built, s) for s in r.toolkit))]
    if not rows or len({parse_version(r.library) for r in rows}) > 1:
        return []
    row = rows[0]
    have, want = public(have_text), parse_version(row.library)
    if have == want:
        return []
    older = have < want
    name = library.upper()
    pinning = [r.torch for r in matrix.table(library) if parse_version(r.library) == have]
    nearest = [f"{name} for torch {_series(torch)}" + (f" on {t.label} {built}" if built else "") + f": {row.library}"]
    if pinning:
        nearest.append(f"torch series whose wheel pins {name} {public(have_text)}: {', '.join(_sorted_unique(pinning))}")
    rule = f"torch-{library}"
    return [_violation(
        rule,
        f"torch {torch} is built and tested with {name} {row.library}; {name} {have_text} is "
        f"{'older' if older else 'newer'}",
        row.fact, components=(library, "torch"), nearest=nearest, symptom=matrix.symptoms.get(rule),
        severity="error" if older else "warning")]


def _check_branch(stack: Stack, matrix: Matrix, t: ToolkitRules) -> list[Violation]:
    """A stack's driver branch (``nvidia_driver_branch: R580``) against its driver's major version."""
    if t.branch_field is None:
        return []
    driver, branch = stack.components.get(t.driver), stack.fields.get(t.branch_field)
    if not driver or not branch:
        return []
    digits = branch.upper().lstrip("R")
    if digits.isdigit() and parse_version(driver).release[0] == int(digits):
        return []
    fact = Fact("driver-branches-doc", t.branch_source, stack.where(t.branch_field))
    return [_violation(
        "driver-branch", f"{t.driver} {driver} is not on branch {branch}", fact,
        components=(t.driver,),
        nearest=(f"{t.branch_field}: R{parse_version(driver).release[0]}",))]


def _check_devices(stack: Stack, matrix: Matrix, t: ToolkitRules) -> list[Violation]:
    """The stack's device types against the toolkit and driver they need (``device-cuda``)."""
    out: list[Violation] = []
    toolkit, driver = stack.components.get(t.toolkit), stack.components.get(t.driver)
    for row in matrix.table(f"device_{t.toolkit}"):
        hit = [d for d in stack.devices if d.upper() in {r.upper() for r in row.devices}]
        if not hit:
            continue
        rule = f"device-{t.toolkit}"
        if toolkit and parse_version(toolkit) < parse_version(row.toolkit):
            out.append(_violation(
                rule, f"{', '.join(hit)} need {t.label} {row.toolkit} or newer; the stack pins {t.label} {toolkit}",
                row.fact, components=(t.toolkit,),
                nearest=(f"{t.toolkit} {row.toolkit} or newer, or drop {', '.join(hit)}",)))
        if driver and parse_version(driver) < parse_version(row.driver):
            out.append(_violation(
                rule, f"{', '.join(hit)} need driver {row.driver} or newer; the stack pins {driver}",
                row.fact, components=(t.driver,), nearest=(f"{t.driver} {row.driver} or newer",)))
    return out


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
    plugin = get_vendor(vendor)
    out = _check_python(usable, vendor, matrix)
    for rule in plugin.compat_rules:
        if rule in COMPONENT_RULES:
            out.extend(COMPONENT_RULES[rule](usable, matrix, devices))
    t = plugin.toolkit
    if t is not None:
        out += (_check_toolkit_driver(usable, matrix, t) + _check_torch_variant(usable, matrix, t, plugin.label)
                + _check_torch_library(usable, matrix, t))
    return out


def check_stack(stack: Stack, matrix: Matrix | None = None) -> list[Violation]:
    """Every rule a stack's pins break, including the stack-level ones (driver branch, device generation)."""
    matrix = matrix or load_matrix()
    out = check_components(stack.components, stack.vendor, devices=stack.devices, matrix=matrix)
    t = get_vendor(stack.vendor).toolkit
    if t is not None:
        out += _check_branch(stack, matrix, t) + _check_devices(stack, matrix, t)
    return out


# The rule sets a vendor names (accelstack.vendors: Vendor.compat_rules), over component versions (a stack's pins,
# a host's installed versions): a torch plugin's (torch_npu) release pairs, a toolkit's hardware floor per device
# family (Ascend's HDK), components that must be one release. The toolkit rules above come with Vendor.toolkit.
ComponentRule = Callable[[Mapping[str, str], Matrix, "Sequence[str] | None"], list[Violation]]
COMPONENT_RULES: dict[str, ComponentRule] = {
    "torch_npu": lambda c, matrix, devices: _check_torch_npu(c, matrix),
    "cann_hdk": _check_hdk,
    "same_release": lambda c, matrix, devices: _check_same_release(c, matrix),
}
