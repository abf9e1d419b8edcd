"""The diagnosis: stream log lines past the catalog and rank what it found, root cause first.

Three layers decide, most specific first: the signatures (``signatures.yml``, with their remedies); the error
taxonomies (``data/diagnose/``), which name the cause of a failure; and the structure of a failure (a traceback's
last exception, torchrun's summary, a signal, the scheduler's job-end lines), so that a job that failed always gets
a finding, ``unclassified`` at worst, and a healthy log gets none. Every finding says who acts on it.

State is bounded (a count, the first few evidence lines, the first extraction per signature; capped lists of
failures and of the lines around them), so a diagnosis runs in constant memory whatever the size of the logs.
Decisions that need the whole log (is this an Ascend host? was a checkpoint being saved? which error came first?)
are taken once, at the end.
"""

from __future__ import annotations

import functools
import io
import itertools
import os
import re
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import IO, Any

from ..errors import EXIT_BAD_INPUT, EXIT_FAIL, EXIT_OK
from ..vendors import ANY, Vendor
from .actors import Context, decide_actors
from .catalog import Catalog, Signature, code_entry, load_catalog
from .causes import Cause, confirming_check, load_causes
from .failures import CUT_TRACEBACK_PRIORITY, LineHits, event_findings
from .findings import EvidenceLine, Finding
from .jobs import LogSource, expand_inputs
from .reader import (
    HEAD_LINES,
    MAX_EVIDENCE_CHARS,
    TAIL_LINES,
    ReadState,
    anchor_regex,
    carrier_host,
    carrier_rank,
    clean_line,
    host_of,
    indent_of,
    open_log,
    paste_indent,
    rank_of,
    read_dewrapped,
    read_head,
    read_hits,
    split_carrier,
    timestamp_of,
)
from .structure import FailureEvent, FailureTracker, split_prefix
from .tables import TableRow, load_tables

EVIDENCE_CAP = 5
RANKS_CAP = 1024
# How many of a log's first prefilter lines are read before its lines are (reader.paste_indent); where the log's own
# first lines cannot be read again (gzip, stdin), at least this many of them say how a paste indented it.
INDENT_SAMPLE = 16
INDENT_SAMPLE_MIN = 3
# torch's default process-group timeouts (https://pytorch.org/docs/stable/distributed.html#torch.distributed.
# init_process_group; pytorch PR #110947): NCCL 10 min since torch 2.2, every other backend (HCCL included) 30 min.
DEFAULT_TIMEOUT_MS = {"NCCL": 600_000, "HCCL": 1_800_000}
# Heartbeat monitor defaults seen in logs: 600 s in older torch, 480 s in newer (TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC,
# https://github.com/pytorch/pytorch/blob/main/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp).
DEFAULT_HEARTBEAT_S = (480, 600)
_INT = re.compile(r"-?\d+")
# An info or warning line: glog's I/W levels (torch's C++ logs, torchrun's), NCCL INFO, logging's WARNING.
_QUIET_LEVEL = re.compile(r"(?:^|[\s\[:])[IW]\d{4} \d\d:\d\d|\bNCCL INFO\b|\bWARNING\b|\bWarning:|\bINFO\b")
# Python's warnings module ("train.py:138: UserWarning: message"): a report the program went on after.
_PY_WARNING = re.compile(r":\d+: [A-Z]\w*Warning: ")
_LAST_ERROR = re.compile(r"\bLast error:\s*(?P<text>.*)$")
# NCCL's line for each rank joining a communicator (init.cc, NCCL_DEBUG=INFO): which GPU (PCI bus id) the rank is
# on, and the communicator's id.
_NCCL_INIT_RANK = re.compile(r"ncclCommInitRank comm \S+ rank (?P<rank>\d+) nranks (?P<nranks>\d+) cudaDev (?P<dev>\d+) "
                             r"(?:nvmlDev \d+ )?busId (?P<bus>\w+) commId (?P<comm>0x[0-9a-f]+)")
# A checkpoint save that says it is done ("checkpoint saved", "Saving done", "finished saving"): a timeout after
# it did not wait on that save.
_SAVE_DONE = re.compile(r"(?i:\bsaved\b|\bsav(?:e|ing) (?:is )?(?:done|complete[d]?|finished)\b|\bfinished saving\b)")
_NCCL_WARN = re.compile(r"\bNCCL WARN\s+(?P<text>.+)$")
WARN_CAP = 3
CODES_CAP = 64
SAVES_CAP = 256  # checkpoint saves begun or done, the latest kept
# How many lines under an error code's line are its detail (CANN's "TraceBack (most recent call last):" block).
CODE_DETAIL_LINES = 12
# Failure events that are a process's own error (not a launcher's or the scheduler's report of how it ended).
OWN_FAILURE_KINDS = frozenset({"exception", "traceback", "terminate", "fatal", "plog", "error-line", "device-assert",
                               "kernel", "abort", "final"})


@dataclass
class Diagnosis:
    findings: list[Finding] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    lines_read: int = 0
    # One line per log that ended early (a gzip cut while being written): where it ends. Findings before the
    # cut are kept.
    truncated: list[str] = field(default_factory=list)

    # Inputs that could not be read (a dangling link or a link loop in a job folder), each with why: the others
    # were read.
    skipped: list[str] = field(default_factory=list)

    @property
    def root_cause(self) -> Finding | None:
        return self.findings[0] if self.findings else None

    @property
    def first(self) -> Finding | None:
        """The first finding: the root cause, whom the report leads with (its ``cause`` and ``actor``)."""
        return self.root_cause

    @property
    def first_failure(self) -> Finding | None:
        """The finding that happened first (by time across files), among those that are not a consequence."""
        causes = [f for f in self.findings if not f.consequence_of and not f.symptom] or \
            [f for f in self.findings if not f.consequence_of]
        return min(causes, key=_EARLIEST_FIRST) if causes else None

    @property
    def exit_code(self) -> int:
        if self.findings:
            return EXIT_FAIL
        return EXIT_BAD_INPUT if self.truncated else EXIT_OK

    def confirm_validators(self) -> list[str]:
        """The validators that would confirm the findings on a host, root cause's first, without repeats."""
        names: list[str] = []
        for finding in self.findings:
            if finding.confirm_with and finding.confirm_with not in names:
                names.append(finding.confirm_with)
        return names

    def to_dict(self) -> dict[str, Any]:
        document: dict[str, Any] = {"findings": [finding.to_dict() for finding in self.findings]}
        if self.first is not None:
            root = self.first
            document["first"] = {"id": root.id, "cause": root.cause, "actor": root.actor, "layer": root.layer,
                                 **root.first_line.to_dict()}
        first = self.first_failure
        if first is not None:
            line = first.earliest or first.first_line
            document["first_failure"] = {"id": first.id, "cause": first.cause, **line.to_dict()}
        if self.truncated:
            document["truncated"] = list(self.truncated)
        if self.skipped:
            document["skipped"] = list(self.skipped)
        return document


@dataclass
class _Hits:
    count: int = 0
    first_seq: int = 0
    evidence: list[EvidenceLine] = field(default_factory=list)
    extracted: dict[str, Any] = field(default_factory=dict)
    ranks: set[int] = field(default_factory=set)
    earliest: EvidenceLine | None = None
    files: dict[str, None] = field(default_factory=dict)
    hosts: dict[str, None] = field(default_factory=dict)
    # For collective timeouts: the collective each rank was waiting in (seq_num, op_type) and the line that says so;
    # the ranks that reported more than one (several works pending, or several process groups), the process groups
    # the lines name (torch 2.3's "[PG 1 Rank 14]", 2.4's "[PG ID 2 PG GUID 5(tp) Rank 0]") and whether a line named
    # none.
    collectives: dict[int, tuple[Any, Any, EvidenceLine]] = field(default_factory=dict)
    several: set[int] = field(default_factory=set)
    groups: set[str] = field(default_factory=set)
    unnamed: bool = False


# The watchdog's own name for the rank that timed out: "[Rank 3] Watchdog caught" (torch < 2.4), "[PG ID 0 PG GUID
# 0(default_pg) Rank 3] Watchdog caught" (torch >= 2.4).
_WATCHDOG_RANK = re.compile(r"\[(?:PG [^\]]*? )?Rank (?P<rank>\d+)\] Watchdog caught")
# The process group whose sequence numbers a line's are, wherever on the line torch names it: torch 2.3's outer
# "[PG 1 Rank 14] Process group watchdog thread terminated with exception: [Rank 14] Watchdog caught ...", torch
# 2.4's "[PG ID 0 PG GUID 0(default_pg) Rank 3] Watchdog caught ...".
_PROCESS_GROUP = re.compile(r"\[PG (?:ID )?(?P<pg>\d+)\b[^\]]*?Rank \d+\]")


def _text_regex(anchors: tuple[str, ...]) -> re.Pattern[str]:
    """The reader's trie of literals, for text: does a line hold one of them (a few compares a position)."""
    return re.compile(anchor_regex(anchors).pattern.decode())


def _typed(groups: dict[str, str | None]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in groups.items():
        if value is None:
            continue
        value = value.strip()
        out[key] = int(value) if _INT.fullmatch(value) else value
    return out


class Scanner:
    """Feed logs (or lines); :meth:`result` ranks the findings. Used by every entry point."""

    def __init__(self, catalog: Catalog | None = None, contexts: Iterable[str] = ()) -> None:
        self.catalog = catalog or load_catalog()
        self.tables = self.catalog.tables or load_tables()
        self.causes: dict[str, Cause] = load_causes()
        self._tracker = FailureTracker(self.tables)
        # Per log: the lines a table row matched (for failures whose own lines name nothing) and the lines a
        # signature or an error code matched (a failure they explain is not reported twice).
        self._table_lines: dict[int, LineHits] = {}
        self._signature_lines: dict[int, LineHits] = {}
        self._anchors = anchor_regex(self.catalog.anchors)
        self._signature_gate = _text_regex(self.catalog.signature_anchors)
        self._context_gate = _text_regex(self.catalog.context_anchors)
        self._anchors_text = re.compile(self._anchors.pattern.decode())
        self._hits: dict[str, _Hits] = {}
        self._aux: dict[str, dict[str, Any]] = {}
        # Contexts known before a line is read (the host's vendor, from the inventory: ``diagnose --host``).
        unknown = sorted(set(contexts) - set(self.catalog.contexts))
        if unknown:
            raise ValueError(f"unknown diagnosis context {unknown[0]!r}; known: {', '.join(sorted(self.catalog.contexts))}")
        self._contexts_seen: set[str] = set(contexts)
        self._base = 0  # lines of the sources read before the current one
        self._last_error: str | None = None
        self._want_last_error = False
        self._sources: list[str] = []
        self._truncated: list[str] = []
        self._skipped: list[str] = []
        self._source_base: dict[str, int] = {}
        self._lines = 0
        self._warns: list[EvidenceLine] = []
        self._codes: dict[str, _Hits] = {}
        self._code_vendor: dict[str, Vendor] = {}  # whose code pattern found it
        self._coded: set[int] = set()  # the logs that hold a vendor's error code
        self._unconditional = {sig.id: not (sig.requires_failure or sig.requires_context or sig.unless_context)
                               for sig in self.catalog.signatures}
        self._source = LogSource(label="<lines>")
        self._indent = 0  # how much of each line's indent is the paste's (Scanner._read)
        self._carriers: dict[int, str] = {}  # what carriers put before the lines evidence may still be made of
        # Where checkpoint saves began and said they were done (positions in reading order): a collective that
        # timed out while one was under way waited on the save.
        self._saves: deque[tuple[int, bool]] = deque(maxlen=SAVES_CAP)
        self._save_patterns = self.catalog.contexts.get("checkpoint-save", ())
        # (host, communicator, GPU bus id) -> the first rank seen on it: a second rank there is two ranks on one GPU.
        self._comm_devices: dict[tuple[str, str, str], int] = {}

    # ---- input ----

    def feed_source(self, source: str, lines: Iterable[tuple[int, str]]) -> None:
        """Lines already in hand; the same prefilter as for files decides which reach the signatures."""
        self._begin(LogSource(label=source))
        tail: deque[tuple[int, str]] = deque(maxlen=TAIL_LINES)
        count = [0]
        head: list[str] = []  # the log's first lines, for how a paste indented it

        def hits() -> Iterator[tuple[int, str, bool]]:
            after_hit = False  # the previous line held an anchor: this one is the readers' "line after a hit"
            for lineno, raw in lines:
                count[0] = lineno
                tail.append((lineno, raw))
                if len(head) < HEAD_LINES:
                    head.append(raw)
                if self._anchors_text.search(raw):
                    yield lineno, raw, False
                    after_hit = True
                    continue
                if after_hit:
                    yield lineno, raw, True
                after_hit = False

        self._read(hits(), lambda: head)
        self._end(count[0], tail)

    def feed(self, path: str, lineno: int, raw: str) -> None:
        """One line (kept for callers that stream lines themselves)."""
        if self._source.label != path:
            self._begin(LogSource(label=path))
        if self._anchors_text.search(raw):
            self._line(lineno, raw)
            self._after_hit = True
        else:
            if self._after_hit and self._wants_context():
                self._line(lineno, raw)
            self._after_hit = False
        self._lines += 1

    def feed_log(self, source: LogSource) -> None:
        """One log file (or archive member), through the prefilter; a cut gzip keeps what was read."""
        if source.skipped:
            self._skipped.append(f"{source.label}: {source.skipped}; not read, the other logs were")
            return
        if source.truncated:
            self._truncated.append(f"{source.label}: {source.truncated}")
            return
        self._begin(source)
        direct = source.path if source.opener is None and source.path not in (None, "-") else None
        # A paste hard-wrapped at a fixed width is read with its wraps joined back; its evidence keeps the numbers
        # of the file's own lines (the first of each joined one).
        dewrapped = read_dewrapped(direct) if direct else None
        stream: IO[bytes]
        if dewrapped is not None:
            data, starts, physical_lines = dewrapped
            stream, owned, direct = io.BytesIO(data), True, None

            def physical(lineno: int) -> int:
                return starts[lineno - 1] if 0 < lineno <= len(starts) else lineno
        else:
            stream, owned = source.open() if source.opener else open_log(source.path or source.label)

            def physical(lineno: int) -> int:
                return lineno
        state = ReadState()
        try:
            hits = read_hits(stream, self.catalog.anchors, self._anchors, state, path=direct)
            self._read(((physical(hit.lineno), hit.raw.decode("utf-8", errors="replace"), hit.context)
                        for hit in hits), (lambda: read_head(direct)) if direct else None)
        finally:
            if owned:
                stream.close()
        lines = physical_lines if dewrapped is not None else state.lines
        if state.truncated:
            self._truncated.append(f"{source.label}: {state.truncated}; the log ends at line {lines},"
                                   " findings up to there are kept")
        self._end(lines, [(physical(lineno), text) for lineno, text in state.tail_lines()])

    def _read(self, hits: Iterable[tuple[int, str, bool]], head: Callable[[], Iterable[str]] | None = None) -> None:
        """The prefilter's lines of one log (number, text, whether it is only the line after a hit), in order.

        A log pasted as an indented block (a Markdown code block, a quoted mail, a YAML field) has every line
        indented alike, and an exception line indented is not one. The least indent of the log's first lines
        (``head``: every line up to the first prefilter lines read; else those prefilter lines, at least
        :data:`INDENT_SAMPLE_MIN` of them) is the paste's, and the rest of each line is read as written."""
        hits = iter(hits)
        sample = list(itertools.islice(hits, INDENT_SAMPLE))
        self._indent = (paste_indent(head()) if head is not None
                        else paste_indent((raw for _, raw, _ in sample), INDENT_SAMPLE_MIN))
        for lineno, raw, context in itertools.chain(sample, hits):
            if context and not self._wants_context():
                continue
            self._line(lineno, raw)

    def _program_line(self, raw: str) -> tuple[str, str]:
        """(what a carrier put before the line, the line as the program wrote it, without a paste's indent)."""
        line = clean_line(raw)
        carrier, text = split_carrier(line)
        if self._indent:
            if carrier:
                text = text[min(indent_of(text), self._indent):]
            else:
                # The paste's indent stands before everything on its lines, a carrier's prefix too (an indented
                # block of syslog lines): without it, the carrier may show.
                carrier, text = split_carrier(line[min(indent_of(line), self._indent):])
        if carrier:
            rank = carrier_rank(carrier)
            if rank is not None and split_prefix(text)[0] is None:
                # A launcher's tag names the rank (Open MPI's "[1,3]<stderr>:"): it is read as torch's own prefix,
                # the one form every reader of ranks knows, so that each rank's traceback stays its own.
                text = f"[rank{rank}]:{text}"
        return carrier, text

    def _wants_context(self) -> bool:
        """Whether the line after a hit is read although it holds no anchor: the NCCL WARN after "Last error:", the
        rest of an exception's message."""
        return self._want_last_error or self._tracker.wants_context()

    def _begin(self, source: LogSource) -> None:
        self._source_base.setdefault(source.label, self._base)
        self._source = source
        self._sources.append(source.label)
        self._want_last_error = False
        self._after_hit = False
        self._indent = 0
        self._carriers = {}
        self._tracker.begin(len(self._sources) - 1, self._base)

    def _end(self, lines: int, tail: Iterable[tuple[int, str]] = ()) -> None:
        tail = list(tail)
        # A traceback still open is cut where the log ends only if nothing but its own lines come after it.
        open_stack = self._tracker.open_tracebacks()
        cleaned = self._cleaned(tail) if open_stack else None
        self._tracker.end(cleaned)
        source = len(self._sources) - 1
        signatures = self._signature_lines.get(source)
        # A signature explains the log only where it is kept whatever else the log holds: one that needs a failure
        # or a context may be dropped at the end, and the log's ending may be what it needs.
        explained = source in self._coded or bool(signatures and any(
            not warning and self._unconditional.get(value, True) for value, warning in signatures.values))
        if cleaned is None and self._tracker.events:
            cleaned = self._cleaned(tail)
        if cleaned is not None:
            self._tracker.message_rest(cleaned)
        if not explained:
            # Nothing a signature or a code explains: how the log ends may show a failure the prefilter's lines did not.
            if not self._indent:
                # No line passed the prefilter to say how the paste is indented: the log's end says it.
                self._indent = paste_indent(raw for _, raw in tail)
                if self._indent:
                    cleaned = None  # read again without the paste's indent
            self._tracker.tail(cleaned if cleaned is not None else self._cleaned(tail), self._evidence)
        self._base += lines
        self._lines += lines

    def _cleaned(self, tail: list[tuple[int, str]]) -> list[tuple[int, str]]:
        """The log's last lines as the program wrote them (their carriers kept for the evidence)."""
        cleaned = []
        for lineno, raw in tail:
            carrier, text = self._program_line(raw)
            if carrier:
                self._carriers[lineno] = carrier
            cleaned.append((lineno, text))
        return cleaned

    # ---- one line that passed the prefilter ----

    def _line(self, lineno: int, raw: str) -> None:
        carrier, text = self._program_line(raw)
        if not text:
            return
        # Kept for the line's evidence (its time, its host): the current line's only, and the tail's.
        self._carriers = {lineno: carrier} if carrier else {}
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
        if (len(self._contexts_seen) < len(catalog.contexts) and self._context_gate.search(text)
                and catalog.context_prefilter.search(text)):
            for name, patterns in catalog.contexts.items():
                if name not in self._contexts_seen and any(p.search(text) for p in patterns):
                    self._contexts_seen.add(name)
        if self._save_patterns and ("sav" in text or "Sav" in text or "SAV" in text):
            done = bool(_SAVE_DONE.search(text))
            if (done or any(p.search(text) for p in self._save_patterns)) and (
                    not self._saves or self._saves[-1][1] != done):
                self._saves.append((self._base + lineno, done))
        evidence: EvidenceLine | None = None
        matched = False
        if self._signature_gate.search(text) and catalog.prefilter.search(text):
            for sig in catalog.signatures:
                for pattern in sig.patterns:
                    match = pattern.search(text)
                    if match is None:
                        continue
                    groups = _typed(match.groupdict())
                    if not _passes(sig, groups):
                        continue
                    evidence = evidence or self._evidence(lineno, text)
                    self._record(self._hits, sig.id, groups, evidence)
                    # A Python warning explains no failure around it (the program went on after it): it covers
                    # only a failure of its own line.
                    self._signature_lines.setdefault(len(self._sources) - 1, LineHits()).add(
                        lineno, split_prefix(text)[0], (sig.id, bool(_PY_WARNING.search(text))))
                    matched = True
                    if sig.vendor in catalog.contexts and sig.requires_context is None:
                        # A vendor's own error is that vendor's context too (Ascend's); one that depends on the
                        # context must not vouch for itself.
                        self._contexts_seen.add(sig.vendor)
                    break
                if sig.extract_patterns:
                    aux = self._aux.setdefault(sig.id, {})
                    for pattern in sig.extract_patterns:
                        match = pattern.search(text)
                        if match:
                            for key, value in _typed(match.groupdict()).items():
                                aux.setdefault(key, value)
        if "ncclCommInitRank" in text and len(self._comm_devices) < RANKS_CAP:
            self._comm_device(lineno, text)
        if not matched and len(self._warns) < WARN_CAP and "NCCL WARN" in text:
            self._warns.append(self._evidence(lineno, text))
        for vendor, code_pattern in catalog.code_patterns:
            for match in code_pattern.finditer(text):
                code = match.group("code")
                self._code_vendor.setdefault(code, vendor)
                if code in self._codes or len(self._codes) < CODES_CAP:
                    evidence = evidence or self._evidence(lineno, text)
                    self._record(self._codes, code, {"code": code}, evidence)
                    self._coded.add(len(self._sources) - 1)
                    if not self._wrapper_code(code, vendor):
                        # A code that names a cause explains the failure around it; a wrapper (torch_npu's
                        # "ERR00100 PTA call acl api failed") only says a call failed and leaves it to the failure's
                        # own lines ("error code is 507035").
                        self._signature_lines.setdefault(len(self._sources) - 1, LineHits()).add(
                            lineno, split_prefix(text)[0], (f"code:{code}", False))
        self._failure_line(lineno, text, evidence)

    def _failure_line(self, lineno: int, text: str, evidence: EvidenceLine | None) -> None:
        """The structure and the tables: is this line part of a failure, and which table rows does it name?"""
        source = len(self._sources) - 1
        made: list[EvidenceLine] = [evidence] if evidence is not None else []

        def line_evidence() -> EvidenceLine:
            if not made:
                made.append(self._evidence(lineno, text))
            return made[0]

        rows = tuple(row for _, row in self.tables.literal_hits(text))
        self._tracker.line(lineno, text, line_evidence, rows)
        if rows and not _QUIET_LEVEL.search(text):
            # Info and warning lines quote errors on the way to something that works (the IB probe that falls back
            # to sockets, a connect that is retried) or report the launcher's own cleanup ("Sending process 42
            # closing signal SIGTERM"): they name no failure's cause.
            self._table_lines.setdefault(source, LineHits()).add(lineno, split_prefix(text)[0], rows)

    def _evidence(self, lineno: int, text: str) -> EvidenceLine:
        source = self._source
        rank = rank_of(text)
        carrier = self._carriers.get(lineno, "")
        stamp = timestamp_of(text) or (timestamp_of(carrier) if carrier else None)
        return EvidenceLine(
            path=source.label, lineno=lineno, rank=rank if rank is not None else source.rank,
            text=text[:MAX_EVIDENCE_CHARS], host=host_of(text) or carrier_host(carrier) or source.host,
            ts=stamp[0] if stamp else None, time=stamp[1] if stamp else None)

    def _comm_device(self, lineno: int, text: str) -> None:
        """Two ranks of one communicator on one host that NCCL's init lines put on the same GPU: the device mapping
        NCCL refuses ("Duplicate GPU detected", or only "invalid usage" from a caller that hides its WARN)."""
        match = _NCCL_INIT_RANK.search(text)
        line = self._evidence(lineno, text) if match else None
        if match is None or line is None or line.host is None:
            return  # without the host, two ranks on "bus 1000" may be on two nodes
        rank = int(match.group("rank"))
        first = self._comm_devices.setdefault((line.host, match.group("comm"), match.group("bus").lower()), rank)
        if first != rank:
            groups = {"rank_a": first, "rank_b": rank, "device": match.group("dev")}
            self._record(self._hits, "duplicate-gpu", groups, line)

    def _record(self, table: dict[str, _Hits], key: str, groups: dict[str, Any], line: EvidenceLine) -> None:
        hits = table.get(key)
        if hits is None:
            hits = table[key] = _Hits(first_seq=self._base + line.lineno, extracted=dict(groups))
        hits.count += 1
        if len(hits.evidence) < EVIDENCE_CAP:
            hits.evidence.append(line)
        for name, value in groups.items():
            # A later line may carry a field the first one lacked (the NCCL version, the interface).
            hits.extracted.setdefault(name, value)
        if line.rank is not None and len(hits.ranks) < RANKS_CAP:
            hits.ranks.add(line.rank)
        if line.ts is not None and (hits.earliest is None or line.ts < (hits.earliest.ts or 0.0)):
            hits.earliest = line
        if len(hits.files) < RANKS_CAP:
            hits.files.setdefault(line.path, None)
        if line.host and len(hits.hosts) < RANKS_CAP:
            hits.hosts.setdefault(line.host, None)
        if "op_type" in groups and "seq_num" in groups and len(hits.collectives) < RANKS_CAP:
            # The rank is the launcher's prefix, or the watchdog's own "[Rank 3]" where no launcher tagged the line.
            said = _WATCHDOG_RANK.search(line.text)
            rank = line.rank if line.rank is not None else int(said.group("rank")) if said else None
            if rank is not None:
                waiting = hits.collectives.setdefault(rank, (groups["seq_num"], groups["op_type"], line))
                if waiting[0] != groups["seq_num"]:
                    hits.several.add(rank)
                group = _PROCESS_GROUP.search(line.text)
                if group is not None:
                    hits.groups.add(group.group("pg"))
                else:
                    hits.unnamed = True

    # ---- the verdict ----

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
        # A signature that needs the job to have failed: the structure's failures (a traceback, a signal, a
        # launcher's report), or a signature that is a failure of its own wherever it appears (the watchdog's
        # timeout, which takes its rank down, symptom of another cause as it may be); not one that reports what the
        # program goes on from (an Xid that is a warning, a line a Python warning printed).
        failed = self._tracker.failed() or any(_a_failure(catalog.by_id(sig_id), hits) for sig_id, hits in kept.items())
        for sig_id in [sig_id for sig_id in kept if catalog.by_id(sig_id).requires_failure and not failed]:
            del kept[sig_id]
        for sig in catalog.signatures:
            # The refining pattern is a subset of the general one, so equal counts mean the very same lines.
            refined = sig.refines
            if refined and sig.id in kept and refined in kept and kept[refined].count <= kept[sig.id].count:
                del kept[refined]

        findings = [self._finding(catalog.by_id(sig_id), hits) for sig_id, hits in kept.items()]
        findings.extend(self._code_findings(findings))
        findings.extend(self._failure_findings(findings, set(kept)))
        findings.extend(self._desync_findings(kept))
        self._name_nccl_warn(findings)
        self._timed_out_while_saving(findings)
        self._dialled_a_bridge(findings)
        _apply_follows(findings, {sig.id: sig.follows for sig in catalog.signatures})
        _warnings_below_failures(findings)
        findings.sort(key=functools.cmp_to_key(_rank_order))
        _mark_consequences(findings)
        decide_actors(findings, self._actor_context())
        return Diagnosis(findings=findings, sources=list(self._sources), lines_read=self._lines,
                         truncated=list(self._truncated), skipped=list(self._skipped))

    def _timed_out_while_saving(self, findings: list[Finding]) -> None:
        """A collective that timed out while a checkpoint save was under way (the save began before the timeout and
        had not said it was done) waited on that save: rank 0 gathering and writing the state past the process
        group's timeout, whatever the backend (NCCL's watchdog, Gloo's recv, HCCL's). That is the launch's timeout
        against the save's length, not a hung program; other causes (a rank that died saving) keep their finding."""
        if not self._saves:
            return
        cause = self.causes["checkpoint-save-timeout"]
        for finding in findings:
            if finding.cause != "collective-timeout":
                continue
            at = self._base_seq(finding.first_line)
            before = [done for seq, done in self._saves if seq < at]
            if not before or before[-1]:
                continue  # no save before the timeout, or the last one had finished
            _name_cause(finding, cause.id, cause.actor, cause.remedy,
                        " A checkpoint save was under way when it timed out (its start is logged before this line, its "
                        "end is not): the ranks waited on the save.")

    def _dialled_a_bridge(self, findings: list[Finding]) -> None:
        """A rank on one host that could not reach an address of Docker's default bridge (docker0, 172.17.0.0/16),
        which only the containers of one host share: a process told the others its container's bridge address (the
        store's MASTER_ADDR, a worker's node address, the interface NCCL or Gloo took), which no other host can
        reach. That is the interface the launch gave, not the network between the nodes."""
        cause = self.causes["network-interface"]
        for finding in findings:
            if finding.cause != "connect-timeout":
                continue
            dialled = {address for line in finding.evidence for address in _BRIDGE_ADDRESS.findall(line.text)}
            dialler = {host for host in finding.hosts if _IPV4.fullmatch(host) and not _BRIDGE_ADDRESS.fullmatch(host)}
            if not dialled or not dialler:
                continue
            _name_cause(finding, cause.id, cause.actor, cause.remedy,
                        f" The address it dialled ({sorted(dialled)[0]}) is on Docker's default bridge, which only the "
                        f"containers of one host reach, and the rank that dialled it is on {sorted(dialler)[0]}: a "
                        "process gave the others its container's bridge address. Run the containers with the host's "
                        "network, or name the interface that joins the hosts (MASTER_ADDR, NCCL_SOCKET_IFNAME, "
                        "GLOO_SOCKET_IFNAME).")

    def _actor_context(self) -> Context:
        """What the actor rules read besides the findings (see :mod:`.actors`)."""
        failed: set[int] = set()
        for event in self._tracker.events:
            if event.kind not in OWN_FAILURE_KINDS or not event.primary:
                continue
            rank = event.stream if event.stream is not None else getattr(event.first, "rank", None)
            if rank is not None:
                failed.add(rank)
        stopped = {rank for rank, how in self._tracker.summary_ranks.items() if how == "SIGTERM"}
        return Context(warns=list(self._warns), last_error=self._last_error, ranks_stopped=stopped,
                       ranks_failed=failed, contexts=set(self._contexts_seen))

    def _failure_findings(self, findings: list[Finding], kept: set[str]) -> list[Finding]:
        """Failures the structure found that no signature or error code explains, classified by the tables; the
        reports that only repeat a failure (torchrun's summary, an exit code) when the logs hold nothing else."""
        symptom = {sig.id: sig.symptom for sig in self.catalog.signatures if sig.id in kept}
        for finding in findings:
            if finding.id.split("-", 1)[0] in {vendor.name for vendor, _pattern in self.catalog.code_patterns}:
                codes = finding.extracted.get("codes") or [finding.extracted.get("code")]
                symptom.update({f"code:{code}": finding.symptom for code in codes if code})
        covering: dict[int, LineHits] = {}
        for source, lines in self._signature_lines.items():
            kept_lines = covering[source] = LineHits()
            for lineno, rank, (value, warning) in zip(lines.linenos, lines.ranks, lines.values, strict=True):
                if value in symptom:
                    kept_lines.add(lineno, rank, symptom[value] or warning)
        events = self._tracker.events
        out = event_findings(events, self.tables, self.causes, self._table_lines, covering,
                             lambda event: event.primary)
        if all(finding.symptom or finding.priority == CUT_TRACEBACK_PRIORITY for finding in (*findings, *out)):
            # Nothing but symptoms (a peer that closed the connection, a timeout), tracebacks cut before their
            # exception line (they say only that something failed) or nothing at all: the launcher's report of
            # which rank failed first and how (torchrun's root cause, a signal, an exit code) is the best account of
            # the failure the logs hold, where that rank left no error of its own.
            nothing = not findings and not out
            reported = {event.stream for event in events if event.primary and event.stream is not None}

            def adds(event: FailureEvent) -> bool:
                if event.primary:
                    return False
                if nothing:
                    return True
                if event.rank is not None:
                    return event.rank not in reported
                return event.signal is not None or (event.exitcode is not None and event.exitcode < 0)

            out += event_findings(events, self.tables, self.causes, self._table_lines, covering, adds)
        return out

    def _desync_findings(self, kept: dict[str, _Hits]) -> list[Finding]:
        """Ranks that timed out in different collectives (rank 1 in an all-gather, rank 0 in an all-reduce two
        collectives later) no longer issue the same sequence of collectives: the timeouts are the consequence of
        that desync, which is the program's (torch's desync debugger and flight recorder read it the same way)."""
        waiting: dict[int, tuple[Any, Any, EvidenceLine]] = {}
        several: set[int] = set()
        groups: set[str] = set()
        unnamed = False
        for sig_id, hits in kept.items():
            if self.catalog.by_id(sig_id).cause == "collective-timeout":
                for rank, item in hits.collectives.items():
                    waiting.setdefault(rank, item)
                several |= hits.several
                groups |= hits.groups
                unnamed = unnamed or hits.unnamed
        if len(groups) > 1:
            return []  # lines of several process groups: each counts its own collectives
        if len({op for _, op, _ in waiting.values()}) < 2 and (
                several or unnamed or not groups or len({seq for seq, _, _ in waiting.values()}) < 2):
            # Every rank waits in the same collective: a straggler or a dead rank, not a desync. The same kind of
            # collective at different sequence numbers (rank 0 in all-gather #7559, rank 1 in #7561) is a desync
            # too, where every line names the one process group they count in (a job with tensor- and
            # data-parallel groups counts each apart, and torch before 2.3 names none) and each rank reported
            # one collective (a rank that reported several has more than one pending).
            return []
        ranks = sorted(waiting)
        evidence = [waiting[rank][2] for rank in ranks][:EVIDENCE_CAP]
        shown = ", ".join(f"rank {rank} in {waiting[rank][1]} #{waiting[rank][0]}" for rank in ranks[:8])
        cause = self.causes["collective-mismatch"]
        return [Finding(
            id="collective-desync", cause=cause.id, vendor="any", title="ranks timed out in different collectives",
            explanation=(f"The ranks were not waiting in the same collective when they timed out ({shown}): they no "
                         "longer issue the same sequence of collectives, so each waits for one its peers never "
                         "call. The timeouts are the consequence; the code path that differs between ranks (a "
                         "rank-dependent branch, an extra collective in a checkpoint or evaluation step) is the "
                         "cause."),
            remedy=cause.remedy, confirm_with=None, priority=cause.priority,
            source_ref="torch ProcessGroupNCCL's WorkNCCL(SeqNum, OpType) in the watchdog's timeout lines; "
                       "https://pytorch.org/docs/stable/distributed.html#debugging-torch-distributed-applications",
            evidence=evidence, evidence_count=len(waiting),
            extracted={"ranks": ranks, "collectives": {str(r): f"{waiting[r][1]} #{waiting[r][0]}" for r in ranks}},
            first_line=evidence[0], actor=cause.actor, layer="signature",
            first_seq=min(self._base_seq(line) for line in evidence),
            earliest=min((line for line in evidence if line.ts is not None), key=lambda line: line.ts or 0.0,
                         default=None),
            files=sorted({line.path for line in evidence}), hosts=sorted({line.host for line in evidence if line.host}))]

    def _base_seq(self, line: EvidenceLine) -> int:
        """A line's place in reading order (the offset of its log among those read, plus its number)."""
        return self._source_base.get(line.path, 0) + line.lineno

    def _wrapper_code(self, code: str, vendor: Vendor) -> bool:
        """A code that wraps the real error (torch_npu's ERR02007 "DIST not found" beside "Failed to find function
        ..."), or a generic one (EH9999 "Inner Error"): it names no cause of its own."""
        entry = self.catalog.error_codes.get(code)
        return entry["cause"] == "unknown-error-code" if entry else code.startswith(vendor.error_code_wrappers)

    def _code_findings(self, findings: list[Finding]) -> list[Finding]:
        """A vendor's error codes (Ascend's): a known code gives its cause (unless a signature already named it), an
        unknown code is reported as such with its line."""
        out: list[Finding] = []
        causes = {f.cause for f in findings}
        lines = {(e.path, e.lineno) for f in findings for e in f.evidence}
        unknown: dict[Vendor, dict[str, _Hits]] = {}
        for code, hits in self._codes.items():
            entry = self.catalog.error_codes.get(code)
            vendor = self._code_vendor[code]
            # Codes that wrap the real error (torch_npu's ERR02007 "DIST not found" beside "Failed to find
            # function ..."), and generic codes (EH9999 "Inner Error") name none: both speak only when nothing
            # else in the logs does.
            if self._wrapper_code(code, vendor) and findings:
                continue
            if entry is None:
                unknown.setdefault(vendor, {})[code] = hits
                continue
            detail = self._code_detail(hits, entry["priority"])
            if detail is not None:
                # The lines the vendor prints under the code ("EZ9999: Inner Error!", then "Op Cast does not has
                # any binary") name what broke more precisely than the code's own entry: that row is the cause.
                entry = code_entry(detail)
            elif all((e.path, e.lineno) in lines for e in hits.evidence):
                continue
            if entry["cause"] in causes:
                continue
            causes.add(entry["cause"])
            extracted = {"code": code, "detail": detail.key} if detail is not None else {"code": code}
            out.append(self._synthetic(f"{vendor.name}-{code}", entry["cause"],
                                       f"{vendor.label} error {code}: {entry['title']}",
                                       entry["meaning"], entry["remedy"],
                                       entry["confirm_with"] or confirming_check(entry["cause"]),
                                       entry["priority"], entry["source"], hits, extracted,
                                       symptom=entry["symptom"], actor=entry.get("actor"), vendor=vendor.name))
        for vendor, found in unknown.items():
            out.append(self._unknown_codes(vendor, found))
        return out

    def _code_detail(self, hits: _Hits, priority: int) -> TableRow | None:
        """The row of a table that the lines just under a code's first line name in words, where it ranks above the
        code's own entry (CANN prints an error code, then the lines that say what failed). Another error code under
        it ("runtime result = 507033") is a call the first failure broke, never a more precise name for it."""
        first = hits.evidence[0] if hits.evidence else None
        if first is None or first.path not in self._sources:
            return None
        lines = self._table_lines.get(self._sources.index(first.path))
        if lines is None:
            return None
        rows = [row for _, found in lines.between(first.lineno, first.lineno + CODE_DETAIL_LINES, None)
                for row in found if not row.secondary and row.code is None and row.priority > priority]
        return max(rows, key=lambda row: row.priority) if rows else None

    def _unknown_codes(self, vendor: Vendor, unknown: dict[str, _Hits]) -> Finding:
        """One finding for the codes of a vendor that its tables do not list, with their lines."""
        first = min(unknown.values(), key=lambda h: h.first_seq)
        merged = _Hits(count=sum(h.count for h in unknown.values()), first_seq=first.first_seq,
                       evidence=sorted((e for h in unknown.values() for e in h.evidence),
                                       key=lambda e: (e.path, e.lineno))[:EVIDENCE_CAP],
                       ranks={r for h in unknown.values() for r in h.ranks},
                       earliest=min((h.earliest for h in unknown.values() if h.earliest),
                                    key=lambda e: e.ts or 0.0, default=None))
        codes = sorted(unknown)
        cause, actor, confirm, source = ("unknown-error-code", None, confirming_check("unknown-error-code"),
                                         vendor.error_code_source)
        explanation = (f"The log carries an {vendor.label} error code that the catalog does not know, so its cause is "
                       "not named here; the lines are shown so nothing is dropped.")
        if vendor.error_code_user and all(re.fullmatch(vendor.error_code_user, code) for code in codes):
            # The vendor's numbering says what kind of error each is: one the caller can fix (a call's arguments,
            # the environment, the versions chosen) names no fault of the node, so no host check is asked for it.
            cause, actor, confirm, source = "unclassified", "config", None, vendor.error_code_user_source
            explanation += (f" {vendor.label}'s numbering makes {'it an error' if len(codes) == 1 else 'each one'} "
                            "the user can fix, not an internal one: the launch (its arguments, environment or "
                            "versions) is where to look, not the node.")
        return self._synthetic(
            f"{vendor.name}-unknown-code", cause, f"{vendor.label} error code(s) not in the catalog: {', '.join(codes)}",
            explanation, vendor.error_code_lookup, confirm, 35, source, merged, {"codes": codes}, actor=actor,
            vendor=vendor.name)

    def _synthetic(self, sig_id: str, cause: str, title: str, explanation: str, remedy: str, confirm_with: str | None,
                   priority: int, source: str, hits: _Hits, extracted: dict[str, Any],
                   symptom: bool = False, actor: str | None = None, vendor: str = ANY) -> Finding:
        extracted = dict(extracted)
        if hits.ranks:
            extracted["ranks"] = sorted(hits.ranks)
        return Finding(id=sig_id, cause=cause, vendor=vendor, title=title, explanation=explanation,
                       remedy=remedy, confirm_with=confirm_with, priority=priority, source_ref=source,
                       evidence=list(hits.evidence), evidence_count=hits.count, extracted=extracted,
                       first_line=hits.evidence[0], first_seq=hits.first_seq, symptom=symptom,
                       actor=actor or self.causes[cause].actor, layer="table",
                       earliest=hits.earliest, files=sorted({e.path for e in hits.evidence}),
                       hosts=sorted({e.host for e in hits.evidence if e.host}))

    def _name_nccl_warn(self, findings: list[Finding]) -> None:
        """NCCL's generic result (unhandled system error...) is a symptom: name the WARN line that says why, and
        where that line or NCCL's "Last error:" is a limit of the host's environment a table names (a shared-memory
        segment it could not create, a process limit), take that cause: its remedy is the one that works. (Sockets,
        devices and verbs calls stay NCCL's finding; the actor rules read them.)"""
        for finding in findings:
            if finding.cause != "nccl-internal":
                continue
            said = [str(finding.extracted.get("last_error") or self._last_error or "")]
            if self._warns:
                warn = self._warns[0]
                finding.extracted.setdefault("nccl_warn", warn.text)
                finding.evidence.insert(0, warn)
                del finding.evidence[EVIDENCE_CAP:]
                finding.explanation += (" NCCL's warning before it says what broke: "
                                        f"{warn.text.split('NCCL WARN', 1)[-1].strip()}")
                said.append(warn.text)
            named = [row for text in said if text for _, row in self.tables.literal_hits(text)
                     if row.cause in NCCL_WRAPPED_LIMITS and not row.secondary and row.priority > finding.priority]
            # ncclUnhandledCudaError wraps a failed CUDA call, whose string NCCL quotes ("Cuda failure 'named symbol
            # not found'"): the CUDA error's own row names the cause (a build without the GPU's code, an ECC error),
            # unless where NCCL failed says more (NVLS's set-up: the fabric's state, not an invalid argument).
            named += [row for text in said for quoted in NCCL_CUDA_FAILURE.findall(text)
                      for _, row in self.tables.literal_hits(f"CUDA error: {quoted}")
                      if row.table in CUDA_ERROR_TABLES and not row.secondary and row.priority > finding.priority]
            if not named:
                continue
            row = max(named, key=lambda row: row.priority)
            if any(other is not finding and other.cause == row.cause for other in findings):
                continue  # another finding names it already (NCCL's WARN line was a failure of its own)
            _name_cause(finding, row.cause, row.actor, row.remedy,
                        f" What NCCL says broke is a {row.cause} ({row.title}): {row.meaning}")
            finding.priority, finding.symptom = row.priority, row.symptom
            finding.extracted["named_by"] = row.id

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
            actor=sig.actor or self.causes[sig.cause].actor,
            layer="signature",
            first_seq=hits.first_seq,
            symptom=sig.symptom,
            earliest=hits.earliest,
            files=list(hits.files),
            hosts=list(hits.hosts),
        )


# The limits of a host's environment that NCCL reports only as a failed system call (ncclSystemError, with the
# call's errno on its WARN line): /dev/shm, the per-process limits, a path it may not write or a full one.
NCCL_WRAPPED_LIMITS = frozenset({"shm-too-small", "resource-limit", "permission-denied", "disk-full"})
# NCCL's WARN for a CUDA call that failed: "Cuda failure 'STRING'" or "Cuda failure CODE 'STRING'" (its CUDACHECK
# macros, src/include/checks.h in https://github.com/NVIDIA/nccl), STRING being cudaGetErrorString's; the tables
# that key those strings.
NCCL_CUDA_FAILURE = re.compile(r"Cuda failure (?:\d+ )?'([^']{3,120})'")
CUDA_ERROR_TABLES = frozenset({"cuda-runtime", "cuda-driver"})


def _earlier(a: Finding, b: Finding) -> bool:
    """Did ``a`` first happen before ``b``? By time when both have one, else by reading order."""
    if a.earliest is not None and b.earliest is not None and a.earliest.ts != b.earliest.ts:
        return (a.earliest.ts or 0.0) < (b.earliest.ts or 0.0)
    return a.first_seq < b.first_seq


def _time_order(a: Finding, b: Finding) -> int:
    return -1 if _earlier(a, b) else (1 if _earlier(b, a) else 0)


_EARLIEST_FIRST = functools.cmp_to_key(_time_order)


def _rank_order(a: Finding, b: Finding) -> int:
    if a.priority != b.priority:
        return -1 if a.priority > b.priority else 1
    if _earlier(a, b):
        return -1
    return 1 if _earlier(b, a) else 0


# Causes whose signatures report what a job goes on from (an Xid the driver recovered from).
NOT_FAILURES = frozenset({"xid-warn"})


def _a_failure(sig: Signature, hits: _Hits) -> bool:
    """Whether a signature's lines show the job failed by themselves (what ``requires_failure`` waits for)."""
    return (not sig.requires_failure and sig.cause not in NOT_FAILURES
            and any(not _PY_WARNING.search(line.text) for line in hits.evidence))


# Docker's default bridge network, 172.17.0.0/16 (https://docs.docker.com/engine/network/drivers/bridge/), and an
# IPv4 address as a carrier names its host (Ray's "ip=10.0.1.75", pdsh's "10.0.0.12: ").
_BRIDGE_ADDRESS = re.compile(r"(?<![\d.])172\.17\.\d{1,3}\.\d{1,3}(?!\.?\d)")
_IPV4 = re.compile(r"\d{1,3}(?:\.\d{1,3}){3}")


def _name_cause(finding: Finding, cause: str, actor: str, remedy: str, why: str) -> None:
    """Give a finding the cause the rest of the log names (NCCL's WARN under its generic error, a save under way at a
    timeout): that cause's actor, remedy and confirming check, and why, after its own explanation."""
    finding.cause, finding.actor, finding.remedy = cause, actor, remedy
    finding.confirm_with = confirming_check(cause)
    finding.explanation += why


def _apply_follows(findings: list[Finding], follows: dict[str, tuple[str, ...]]) -> None:
    """A finding that comes after one of the causes it follows (a heartbeat monitor firing after the collective
    timed out) is that cause's consequence and ranks below it."""
    for finding in findings:
        causes = follows.get(finding.id, ())
        earlier = [f for f in findings if f.cause in causes and f is not finding and not _earlier(finding, f)]
        if not earlier:
            continue
        first = min(earlier, key=_EARLIEST_FIRST)
        finding.priority = min(finding.priority, first.priority - 1)
        finding.consequence_of = first.cause
        finding.explanation += (
            f" Here it fired after the {first.cause} ({first.title}, first at {first.first_line.where()}):"
            " a consequence of it, not the cause.")


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


def _warnings_below_failures(findings: list[Finding]) -> None:
    """A signature that matched only Python warnings ("x.py:138: UserWarning: ...") did not stop the program: it
    went on after them. Where the logs show the failure the job ended with (an exception, a signal, an error a
    table names), that failure leads and the warning follows it as context."""
    failures = [f for f in findings if f.layer != "signature" and not f.symptom and not _only_warnings(f)]
    if not failures:
        return
    floor = max(f.priority for f in failures)
    for finding in findings:
        if finding.layer == "signature" and finding.priority >= floor and _only_warnings(finding):
            finding.priority = floor - 1
            finding.explanation += (" Here it was a warning only (the program went on after it): the failure the"
                                    " job ended with leads.")


def _only_warnings(finding: Finding) -> bool:
    return bool(finding.evidence) and all(_PY_WARNING.search(line.text) for line in finding.evidence)


def _mark_consequences(findings: list[Finding]) -> None:
    roots = [f for f in findings if not f.symptom]
    for finding in findings:
        if not finding.symptom:
            continue
        if finding.consequence_of:
            continue
        earlier = [r for r in roots if r.priority > finding.priority and not _earlier(finding, r)]
        if not earlier:
            continue
        root = min(earlier, key=_EARLIEST_FIRST)
        finding.consequence_of = root.cause
        finding.explanation += (
            f" Probably a consequence of the earlier {root.cause} ({root.title}, first at"
            f" {root.first_line.where()}): fix that first."
        )


def diagnose_lines(lines: Iterable[str], source: str = "<stdin>", catalog: Catalog | None = None,
                   contexts: Iterable[str] = ()) -> Diagnosis:
    """Diagnose lines already in hand (a string's splitlines, a captured output, a generator); ``contexts`` as for
    :func:`diagnose_paths`."""
    scanner = Scanner(catalog, contexts)
    scanner.feed_source(source, enumerate(lines, start=1))
    return scanner.result()


def diagnose_paths(paths: Iterable[str | os.PathLike[str]], catalog: Catalog | None = None,
                   contexts: Iterable[str] = ()) -> Diagnosis:
    """Diagnose logs together as one job: files (plain or gzip, ``-`` for stdin), job folders (every log in them,
    rotated and gzipped ones too) and .tar/.tar.gz archives of them, each named by a ``str`` or a ``pathlib.Path``.
    ``contexts``: what is known of the job besides its logs (``ascend``: it ran on an Ascend host), as if a line had
    said it."""
    scanner = Scanner(catalog, contexts)
    for source in expand_inputs(paths):
        scanner.feed_log(source)
    return scanner.result()

