"""From failure events to findings: classify each failure the structure found with the tables, unless a signature
already explains it, and group the same error on several ranks into one finding.

A failure is classified from its own lines first (the exception line and its message, the chained exceptions, the
signal or exit code), the highest-ranked row winning (what broke under a wrapper outranks the wrapper); then from
the error lines just around it on the same rank. A failure no row names is ``unclassified``, its error quoted: a
job that failed never goes without a finding.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from .causes import UNCLASSIFIED, Cause, confirming_check
from .findings import EvidenceLine, Finding
from .lexicon import lexicon_row
from .structure import FailureEvent
from .tables import TableRow, Tables

# The lines around a failure that may name its cause when its own lines do not: before it (the errors logged on
# the way to the exception) and after it (a message printed after the traceback).
WINDOW_BEFORE = 30
WINDOW_AFTER = 10
LINE_HITS_CAP = 50_000
QUOTE_CHARS = 300
# Failure events that report how a process ended rather than what went wrong in it.
SYMPTOM_KINDS = frozenset({"signal", "exit", "torchrun", "slurm"})
# Exit codes above 128 are a shell's report of a signal (128 + N).
_SHELL_SIGNAL_BASE = 128
CUT_TRACEBACK_PRIORITY = 1
# A built-in exception class names the program's error only for want of anything better: its message may say more.
_GENERIC = ("python", "program-error")


def is_generic(row: TableRow) -> bool:
    """A row that only says the program raised a built-in exception (ValueError, AssertionError ...), or one its
    table marks ``generic`` (ENOENT's string, the C++ runtime's uncaught exception): the message may say more."""
    return ((row.table, row.cause) == _GENERIC and not row.literals) or row.generic


# What an errno row says ran out (ENOSPC, ENOMEM), which the message may place in shared memory.
_SPACE_CAUSES = frozenset({"disk-full", "out-of-memory"})


def message_row(event: FailureEvent) -> TableRow | None:
    """What the failure's own message says in words (the lexicon), for a failure no table names but by a generic
    class. A report of how a process ended (a signal, an exit code) has no message of its own to read."""
    if event.kind in SYMPTOM_KINDS:
        return None
    return lexicon_row(event.texts)  # its own lines: the exception line, its message's lines, the chained ones


@dataclass
class LineHits:
    """Lines of one log, in order, with what they matched: table rows, or a signature / error code."""

    linenos: list[int] = field(default_factory=list)
    ranks: list[int | None] = field(default_factory=list)
    values: list[Any] = field(default_factory=list)

    def add(self, lineno: int, rank: int | None, value: Any) -> None:
        if len(self.linenos) < LINE_HITS_CAP:
            self.linenos.append(lineno)
            self.ranks.append(rank)
            self.values.append(value)

    def between(self, first: int, last: int, rank: int | None) -> Iterable[tuple[int, Any]]:
        """(lineno, value) of the lines in [first, last] on ``rank`` (lines without a rank count for every rank)."""
        start = bisect.bisect_left(self.linenos, first)
        stop = bisect.bisect_right(self.linenos, last)
        for index in range(start, stop):
            line_rank = self.ranks[index]
            if rank is None or line_rank is None or line_rank == rank:
                yield self.linenos[index], self.values[index]


def is_covered(event: FailureEvent, signatures: LineHits | None) -> bool:
    """A signature or an error code explains the failure: it matched one of the failure's own lines (its message
    above it included, where it printed one there), or (not a symptom) a line just around it on the same rank."""
    if event.covered:
        return True
    if signatures is None:
        return False
    own = set(event.linenos) | set(range(event.first_lineno - event.message_above, event.first_lineno))
    first, last = event.first_lineno - WINDOW_BEFORE, event.last_lineno + WINDOW_AFTER
    for lineno, symptom in signatures.between(first, last, event.stream):
        if lineno in own or not symptom:
            return True
    return False


def signal_rows(tables: Tables) -> dict[int, TableRow]:
    """The rows of the signals (linux.yml's SIGKILL, SIGSEGV ...) by number, for exit codes that carry one."""
    return {int(row.code): row for row in tables.rows
            if row.table == "linux" and isinstance(row.code, int) and row.key.startswith("SIG")}


def classify(event: FailureEvent, tables: Tables, window: LineHits | None,
             by_signal: dict[int, TableRow]) -> tuple[TableRow | None, str]:
    """The row that names the failure's cause, and where it was found ("own", "window", "message": the lexicon
    read the failure's message; "" when none)."""
    found: list[TableRow] = []
    for text in event.texts:
        found.extend(row for _, row in tables.literal_hits(text) if not row.secondary)
    for exc_type in [event.exc_type or "", *(item.split(":", 1)[0] for item in event.chain)]:
        row = tables.exception_row(exc_type) if exc_type else None
        if row is not None and not row.secondary:
            found.append(row)
    if event.signal:
        found.extend(row for _, row in tables.literal_hits(event.signal))
    number = _signal_number(event.exitcode)
    if number is not None and number in by_signal:
        found.append(by_signal[number])
    near: list[TableRow] = []
    if window is not None and event.primary:  # a launcher's report sits among other ranks' lines: its own only
        first, last = event.first_lineno - WINDOW_BEFORE, event.last_lineno + WINDOW_AFTER
        # A traceback cut before its exception line (where an excerpt or the log ends) has no words of its own: the
        # error lines around it on any rank name it, since a job's ranks fail alike.
        stream = None if event.kind == "traceback" else event.stream
        near = [row for _, rows in window.between(first, last, stream) for row in rows if not row.secondary]
    if found and all(is_generic(row) for row in found):
        worded = message_row(event)
        if worded is not None:
            return worded, "message"
    if found:
        own = max(found, key=lambda row: row.priority)  # max keeps the first of equals: own lines first
        if own.cause in _SPACE_CAUSES:
            # "No space left on device" / "Cannot allocate memory" say that space ran out, the message's words say
            # where: in shared memory (/dev/shm), which has its own remedy.
            worded = message_row(event)
            if worded is not None and worded.cause == "shm-too-small":
                return worded, "message"
        if near and (event.kind in SYMPTOM_KINDS or own.reports):
            # A process that died (a signal, an exit code, a launcher's or the scheduler's report) says how, not
            # why: an error printed just before it on the same rank that ranks higher is the root cause
            # ("hipErrorNoBinaryForGpu ..." then "Aborted (core dumped)"). So for an exception that reports what
            # another program printed (ptxas's "Value 'sm_121a' is not defined ..." then Triton's PTXASError).
            root = max(near, key=lambda row: row.priority)
            if root.priority > own.priority:
                return root, "window"
        return own, "own"
    if near:
        return max(near, key=lambda row: row.priority), "window"
    worded = message_row(event)
    if worded is not None:
        return worded, "message"
    return None, ""


def _signal_number(exitcode: int | None) -> int | None:
    if exitcode is None:
        return None
    if exitcode < 0:
        return -exitcode
    if exitcode > _SHELL_SIGNAL_BASE:
        return exitcode - _SHELL_SIGNAL_BASE
    return None


@dataclass
class _Group:
    row: TableRow | None
    how: str
    events: list[FailureEvent] = field(default_factory=list)


def event_findings(events: list[FailureEvent], tables: Tables, causes: dict[str, Cause],
                   windows: dict[int, LineHits], signatures: dict[int, LineHits],
                   include: Callable[[FailureEvent], bool]) -> list[Finding]:
    """Findings for the failures ``include`` selects that no signature explains. The same error on several ranks is
    one finding."""
    by_signal = signal_rows(tables)
    groups: dict[str, _Group] = {}
    for event in events:
        if not include(event) or is_covered(event, signatures.get(event.source)):
            continue
        row, how = classify(event, tables, windows.get(event.source), by_signal)
        key = row.id if row is not None else f"{UNCLASSIFIED}:{event.exc_type or event.signal or event.kind}"
        groups.setdefault(key, _Group(row, how)).events.append(event)
    return [_finding(key, group, causes) for key, group in groups.items()]


def _quote(event: FailureEvent) -> str:
    if event.exc_type and event.message:
        text = f"{event.exc_type}: {event.message}"
    elif event.exc_type:
        text = event.exc_type
    else:
        text = event.texts[0] if event.texts else event.kind
    if event.exitcode is not None and not event.message and event.kind == "exception":
        # torchrun's summary: the failing rank and how it ended are the message.
        rank = f"rank {event.rank} " if event.rank is not None else ""
        signal = f" ({event.signal})" if event.signal else ""
        text = f"{text}: {rank}exited with code {event.exitcode}{signal}"
    return text if len(text) <= QUOTE_CHARS else text[: QUOTE_CHARS - 1] + "\u2026"


def _sentence(text: str) -> str:
    """``text`` ended as a sentence: a stop of its own is kept (a quoted message's), else one is added."""
    return text if text.endswith((".", "!", "?")) else f"{text}."


def _finding(key: str, group: _Group, causes: dict[str, Cause]) -> Finding:
    events = sorted(group.events, key=lambda e: e.seq)
    first = events[0]
    row = group.row
    quote = _quote(first)
    evidence: list[EvidenceLine] = []
    for event in events:
        for line in event.evidence:
            if isinstance(line, EvidenceLine) and len(evidence) < 5 and line not in evidence:
                evidence.append(line)
    first_line = first.first if isinstance(first.first, EvidenceLine) else evidence[0]
    ranks = sorted({r for r in ([e.rank for e in events] + [line.rank for line in evidence]) if r is not None})
    extracted: dict[str, Any] = {"error": quote}
    if first.frame:
        extracted["raised_at"] = first.frame
    if first.chain:
        extracted["chained_from"] = list(first.chain)
    if first.exitcode is not None:
        extracted["exitcode"] = first.exitcode
    if first.signal:
        extracted["signal"] = first.signal
    if ranks:
        extracted["ranks"] = ranks
    where = f" (raised at {first.frame})" if first.frame else ""
    ranks_text = f" on rank{'s' if len(ranks) > 1 else ''} {', '.join(map(str, ranks[:8]))}" if ranks else ""
    if row is not None:
        cause = causes[row.cause]
        extracted.update({"table": row.table, "key": row.key})
        found_near = " (named by the error lines just before it)" if group.how == "window" else ""
        meaning = _sentence(row.meaning)  # a note is a phrase
        explanation = f"{meaning} The job failed{ranks_text} with: {_sentence(f'{quote}{where}{found_near}')}"
        title, remedy, actor, priority = row.title, row.remedy, row.actor, row.priority
        if not row.literals:  # an exception class's row: its message says what the class alone does not
            title = f"{row.title}: {quote}"
            title = title if len(title) <= 120 else title[:119] + "\u2026"
        symptom, source, vendor, layer = row.symptom, f"{row.source} [{row.id}]", row.vendor, "table"
    else:
        cause = causes[UNCLASSIFIED]
        explanation = (f"The job failed{ranks_text} with an error that no signature or table names: "
                       f"{_sentence(f'{quote}{where}')} It is quoted here so that its owner can read it first.")
        title = quote if len(quote) <= 120 else quote[:119] + "\u2026"
        remedy, actor, priority, symptom = cause.remedy, cause.actor, cause.priority, cause.symptom
        if first.kind == "traceback" and not first.exc_type:
            # A traceback without its exception line (cut off, or a class no pattern reads) says only that something
            # failed: any finding that names a cause ranks above it (it is the finding only when there is no other).
            priority = CUT_TRACEBACK_PRIORITY
            if first.cut:
                deepest = f" (deepest frame: {first.frame.rsplit(' in ', 1)[-1]})" if first.frame else ""
                shown = f" (the deepest frame shown is {first.frame})" if first.frame else ""
                title = f"traceback cut off before its error{deepest}"
                explanation = (f"The job failed{ranks_text} in a traceback that ends before its exception line{shown}: "
                               "the log (or the paste of it) was cut there, so the error itself, which names the "
                               "cause, is not in what was read.")
                remedy = ("read the traceback's last line (the exception after the deepest frame) in the job's full "
                          "log, or diagnose the whole log; until then the job's owner is the one who can read it")
        source, vendor, layer = "the structure of the failure (data/diagnose/README.md)", "any", "structure"
    if not first.primary:
        explanation += (" Only a launcher's or the scheduler's report of the failure is in the logs: add the failing"
                        " rank's own log for its error.")
    earliest = min((line for line in evidence if line.ts is not None), key=lambda line: line.ts or 0.0,
                   default=None)
    return Finding(
        id=key if row is None else row.id, cause=cause.id, vendor=vendor, title=title, explanation=explanation,
        remedy=remedy, confirm_with=confirming_check(cause.id), priority=priority, source_ref=source,
        evidence=evidence, evidence_count=sum(len(e.texts) for e in events), extracted=extracted,
        first_line=first_line, actor=actor, layer=layer, symptom=symptom, first_seq=first.seq, earliest=earliest,
        files=sorted({line.path for line in evidence}), hosts=sorted({line.host for line in evidence if line.host}))
