"""The diagnosis engine: stream log lines past the signature catalog and rank what matched, root cause first.

State per signature is bounded (a count, the first few evidence lines, the first extraction), so the engine
runs in constant memory whatever the size of the logs. Decisions that need the whole log (is this an Ascend
host? was a checkpoint being saved? which error came first?) are taken once, at the end.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..errors import EXIT_FAIL, EXIT_OK
from .catalog import Catalog, Signature, load_catalog
from .reader import MAX_EVIDENCE_CHARS, clean_line, iter_log_lines, rank_of

EVIDENCE_CAP = 5
RANKS_CAP = 1024
# torch's default process-group timeouts (reference/nvidia.md §4.2): NCCL 10 min since torch 2.2, every other
# backend (HCCL included) 30 min.
DEFAULT_TIMEOUT_MS = {"NCCL": 600_000, "HCCL": 1_800_000}
# Heartbeat monitor defaults seen in logs: 600 s in older torch, 480 s in newer (reference/nvidia.md §4.2).
DEFAULT_HEARTBEAT_S = (480, 600)
_INT = re.compile(r"-?\d+")
_LAST_ERROR = re.compile(r"\bLast error:\s*(?P<text>.*)$")


@dataclass(frozen=True)
class EvidenceLine:
    path: str
    lineno: int
    rank: int | None
    text: str

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "lineno": self.lineno, "rank": self.rank, "text": self.text}

    def where(self) -> str:
        return f"{self.path}:{self.lineno}"


@dataclass
class Finding:
    id: str
    cause: str
    vendor: str
    title: str
    explanation: str
    remedy: str
    confirm_with: str
    priority: int
    source_ref: str
    evidence: list[EvidenceLine]
    evidence_count: int
    extracted: dict[str, Any]
    first_line: EvidenceLine
    consequence_of: str | None = None
    # True when the signature is usually the consequence of something else (a collective timeout).
    symptom: bool = False
    # Position of the first match across all logs read, in reading order: "which error came first".
    first_seq: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "cause": self.cause,
            "vendor": self.vendor,
            "title": self.title,
            "explanation": self.explanation,
            "remedy": self.remedy,
            "confirm_with": self.confirm_with,
            "priority": self.priority,
            "source_ref": self.source_ref,
            "symptom": self.symptom,
            "consequence_of": self.consequence_of,
            "first_line": self.first_line.to_dict(),
            "evidence": [line.to_dict() for line in self.evidence],
            "evidence_count": self.evidence_count,
            "extracted": dict(self.extracted),
        }


@dataclass
class Diagnosis:
    findings: list[Finding] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    lines_read: int = 0

    @property
    def root_cause(self) -> Finding | None:
        return self.findings[0] if self.findings else None

    @property
    def exit_code(self) -> int:
        return EXIT_FAIL if self.findings else EXIT_OK

    def confirm_validators(self) -> list[str]:
        """The validators that would confirm the findings on a host, root cause's first, without repeats."""
        names: list[str] = []
        for finding in self.findings:
            if finding.confirm_with not in names:
                names.append(finding.confirm_with)
        return names

    def to_dict(self) -> dict[str, Any]:
        return {"findings": [finding.to_dict() for finding in self.findings]}


@dataclass
class _Hits:
    count: int = 0
    first_seq: int = 0
    evidence: list[EvidenceLine] = field(default_factory=list)
    extracted: dict[str, Any] = field(default_factory=dict)
    ranks: set[int] = field(default_factory=set)


def _typed(groups: dict[str, str | None]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in groups.items():
        if value is None:
            continue
        value = value.strip()
        out[key] = int(value) if _INT.fullmatch(value) else value
    return out


class Scanner:
    """Feed lines one at a time; :meth:`result` ranks the findings. Used by both entry points."""

    def __init__(self, catalog: Catalog | None = None) -> None:
        self.catalog = catalog or load_catalog()
        self._hits: dict[str, _Hits] = {}
        self._aux: dict[str, dict[str, Any]] = {}
        self._contexts_seen: set[str] = set()
        self._seq = 0
        self._last_error: str | None = None
        self._want_last_error = False
        self._sources: list[str] = []

    def feed_source(self, source: str, lines: Iterable[tuple[int, str]]) -> None:
        self._sources.append(source)
        for lineno, raw in lines:
            self.feed(source, lineno, raw)

    def feed(self, path: str, lineno: int, raw: str) -> None:
        self._seq += 1
        text = clean_line(raw)
        if not text:
            return
        if self._want_last_error:
            # torch prints "Last error:" and the NCCL WARN that carries the real cause on the next line.
            self._last_error = text[:MAX_EVIDENCE_CHARS]
            self._want_last_error = False
        if self._last_error is None and "Last error:" in text:
            match = _LAST_ERROR.search(text)
            if match:
                if match.group("text").strip():
                    self._last_error = match.group("text").strip()[:MAX_EVIDENCE_CHARS]
                else:
                    self._want_last_error = True
        catalog = self.catalog
        if len(self._contexts_seen) < len(catalog.contexts) and catalog.context_prefilter.search(text):
            for name, patterns in catalog.contexts.items():
                if name not in self._contexts_seen and any(p.search(text) for p in patterns):
                    self._contexts_seen.add(name)
        if not catalog.prefilter.search(text):
            return
        rank: int | None = None
        rank_known = False
        for sig in catalog.signatures:
            for pattern in sig.patterns:
                match = pattern.search(text)
                if match is None:
                    continue
                groups = _typed(match.groupdict())
                if not _passes(sig, groups):
                    continue
                if not rank_known:
                    rank, rank_known = rank_of(text), True
                self._record(sig, groups, EvidenceLine(path, lineno, rank, text[:MAX_EVIDENCE_CHARS]))
                if sig.vendor == "ascend" and sig.requires_context is None:
                    # An Ascend-only error is Ascend context too; one that depends on the context must not
                    # vouch for itself.
                    self._contexts_seen.add("ascend")
                break
            if sig.extract_patterns:
                aux = self._aux.setdefault(sig.id, {})
                for pattern in sig.extract_patterns:
                    match = pattern.search(text)
                    if match:
                        for key, value in _typed(match.groupdict()).items():
                            aux.setdefault(key, value)

    def _record(self, sig: Signature, groups: dict[str, Any], line: EvidenceLine) -> None:
        hits = self._hits.get(sig.id)
        if hits is None:
            hits = self._hits[sig.id] = _Hits(first_seq=self._seq, extracted=groups)
        hits.count += 1
        if len(hits.evidence) < EVIDENCE_CAP:
            hits.evidence.append(line)
        for key, value in groups.items():
            # A later line may carry a field the first one lacked (the NCCL version, the interface).
            hits.extracted.setdefault(key, value)
        if line.rank is not None and len(hits.ranks) < RANKS_CAP:
            hits.ranks.add(line.rank)

    def result(self) -> Diagnosis:
        catalog = self.catalog
        kept: dict[str, _Hits] = {}
        for sig in catalog.signatures:
            hits = self._hits.get(sig.id)
            if hits is None:
                continue
            if sig.requires_context and sig.requires_context not in self._contexts_seen:
                continue
            if sig.unless_context and sig.unless_context in self._contexts_seen:
                continue
            kept[sig.id] = hits
        for sig in catalog.signatures:
            # The refining pattern is a subset of the general one, so equal counts mean the very same lines.
            refined = sig.refines
            if refined and sig.id in kept and refined in kept and kept[refined].count <= kept[sig.id].count:
                del kept[refined]

        findings = [self._finding(catalog.by_id(sig_id), hits) for sig_id, hits in kept.items()]
        findings.sort(key=lambda f: (-f.priority, f.first_seq))
        _mark_consequences(findings)
        return Diagnosis(findings=findings, sources=list(self._sources), lines_read=self._seq)

    def _finding(self, sig: Signature, hits: _Hits) -> Finding:
        extracted = dict(hits.extracted)
        for key, value in self._aux.get(sig.id, {}).items():
            extracted.setdefault(key, value)
        _derive(sig, extracted, self.catalog, self._last_error)
        if hits.ranks:
            extracted["ranks"] = sorted(hits.ranks)
        return Finding(
            id=sig.id,
            cause=sig.cause,
            vendor=sig.vendor,
            title=sig.title,
            explanation=sig.explanation,
            remedy=sig.remedy,
            confirm_with=sig.confirm_with,
            priority=sig.priority,
            source_ref=sig.source,
            evidence=list(hits.evidence),
            evidence_count=hits.count,
            extracted=extracted,
            first_line=hits.evidence[0],
            first_seq=hits.first_seq,
            symptom=sig.symptom,
        )


def _passes(sig: Signature, groups: dict[str, Any]) -> bool:
    return all(groups.get(key) in allowed for key, allowed in sig.when.items())


def _derive(sig: Signature, extracted: dict[str, Any], catalog: Catalog, last_error: str | None) -> None:
    """Fields that follow from what was extracted: is the timeout torch's default, what the codes mean."""
    for old, new in (("device_old", "device"), ("total_old", "total")):
        if old in extracted:
            extracted.setdefault(new, extracted.pop(old))
    timeout = extracted.get("timeout_ms")
    backend = extracted.get("backend")
    if isinstance(timeout, int) and backend in DEFAULT_TIMEOUT_MS:
        default = DEFAULT_TIMEOUT_MS[backend]
        extracted["default_timeout"] = timeout == default
        extracted["default_timeout_ms"] = default
        extracted["timeout_min"] = round(timeout / 60_000, 2)
        if backend == "NCCL" and timeout == 1_800_000:
            extracted["timeout_note"] = "30 min: torch <= 2.1 default or set explicitly"
    stuck = extracted.get("stuck_seconds")
    if isinstance(stuck, int):
        extracted["default_heartbeat"] = stuck in DEFAULT_HEARTBEAT_S
    if sig.cause in ("xid-fatal", "xid-warn"):
        if "xid" not in extracted:
            extracted["xid"] = 79  # the multi-line "fallen off the bus" form carries no number
        extracted["severity"] = "fatal" if sig.cause == "xid-fatal" else "warn"
    if sig.cause == "nccl-internal":
        names = {"ncclUnhandledCudaError": 1, "ncclSystemError": 2, "ncclInternalError": 3, "ncclRemoteError": 6}
        code = names.get(str(extracted.get("result_name")))
        if code is None:
            by_text = {text: num for num, text in catalog.nccl_result_codes.items()}
            code = by_text.get(str(extracted.get("result")))
        if code is not None:
            extracted["nccl_code"] = code
            extracted.setdefault("result", catalog.nccl_result_codes.get(code))
        if last_error:
            extracted["last_error"] = last_error


def _mark_consequences(findings: list[Finding]) -> None:
    roots = [f for f in findings if not f.symptom]
    for finding in findings:
        if not finding.symptom:
            continue
        earlier = [r for r in roots if r.priority > finding.priority and r.first_seq <= finding.first_seq]
        if not earlier:
            continue
        root = min(earlier, key=lambda r: r.first_seq)
        finding.consequence_of = root.cause
        finding.explanation += (
            f" Probably a consequence of the earlier {root.cause} ({root.title}, first at"
            f" {root.first_line.where()}): fix that first."
        )


def diagnose_lines(lines: Iterable[str], source: str = "<stdin>", catalog: Catalog | None = None) -> Diagnosis:
    """Diagnose lines already in hand (a string's splitlines, a captured output, a generator)."""
    scanner = Scanner(catalog)
    scanner.feed_source(source, enumerate(lines, start=1))
    return scanner.result()


def diagnose_paths(paths: list[str], catalog: Catalog | None = None) -> Diagnosis:
    """Diagnose log files (plain or gzip, ``-`` for stdin) together: ranks spread over files are one job."""
    scanner = Scanner(catalog)
    for path in paths:
        scanner.feed_source(path, iter_log_lines(path))
    return scanner.result()

