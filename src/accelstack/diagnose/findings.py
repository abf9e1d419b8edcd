"""What diagnosis hands back: the lines that prove a finding, and the finding itself (cause, who acts, why, what
to do), whichever layer found it: a signature, a table row, or the structure of a failure."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class EvidenceLine:
    path: str
    lineno: int
    rank: int | None
    text: str
    host: str | None = None
    # Seconds into the year (see reader.timestamp_of) and the stamp as written, when the line carries one.
    ts: float | None = None
    time: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "lineno": self.lineno, "rank": self.rank, "host": self.host,
                "time": self.time, "text": self.text}

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
    confirm_with: str | None  # the check that confirms the cause on a host; None where no host check can
    priority: int
    source_ref: str
    evidence: list[EvidenceLine]
    evidence_count: int
    extracted: dict[str, Any]
    first_line: EvidenceLine
    # Who acts: node (drain or repair, once a host check confirms), job, config or service (causes.yml).
    actor: str = "job"
    # Which layer found it: signature, table (a row named the failure's error) or structure (a failure no row names).
    layer: str = "signature"
    consequence_of: str | None = None
    # True when the signature is usually the consequence of something else (a collective timeout).
    symptom: bool = False
    # Position of the first match across all logs read, in reading order: "which error came first" when the
    # lines carry no time.
    first_seq: int = 0
    # The earliest matching line that carries a timestamp: across files, time decides what came first.
    earliest: EvidenceLine | None = None
    files: list[str] = field(default_factory=list)
    hosts: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "cause": self.cause,
            "actor": self.actor,
            "layer": self.layer,
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
            "earliest": self.earliest.to_dict() if self.earliest else None,
            "files": list(self.files),
            "hosts": list(self.hosts),
            "evidence": [line.to_dict() for line in self.evidence],
            "evidence_count": self.evidence_count,
            "extracted": dict(self.extracted),
        }
