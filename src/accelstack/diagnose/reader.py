"""Reading logs fast: only the lines that hold an anchor of the catalog reach Python, with their numbers.

A log is read in blocks (gzip by magic bytes, several members, ``-`` for stdin) and the blocks go through one
literal prefilter: ``grep -E`` of the literals when the system has grep (the speed of grep), else a search of each
block with one combined regex. Either way memory holds a block, never the log, and a line is capped at
:data:`MAX_LINE_BYTES`. A gzip cut short (a job killed while writing) yields everything before the cut, then
:class:`LogTruncated`. Parsing a line (:func:`clean_line`, :func:`rank_of`, :func:`timestamp_of`) is pure.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tarfile
import threading
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import IO

from ..errors import ConfigError

GZIP_MAGIC = b"\x1f\x8b"
# A line longer than this is cut; the rest up to the newline is skipped. Progress bars written with \r and
# binary junk can make "lines" of megabytes, which must not become one string in memory.
MAX_LINE_BYTES = 64 * 1024
MAX_EVIDENCE_CHARS = 600
BLOCK_BYTES = 1 << 20
# How much of a log's end is kept whole (ReadState.tail): enough for a failure's last lines and what follows them.
TAIL_BYTES = 8 * 1024
TAIL_LINES = 40
# A log's first lines, read again where the log is a plain file: how a paste indented it (Scanner._read).
HEAD_LINES = 200
# Set to 0 to scan with the pure-Python block search even where grep exists (tests run both readers).
GREP_ENV = "ACCELSTACK_DIAGNOSE_GREP"
_GZIP_INPUT = 64 * 1024

_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
# Rank prefixes as launchers write them: torch's `[rank3]:`, torchrun --tee's `[default0]:`, srun -l / pdsh's
# `3: ` (possibly after a timestamp). The search is bounded to the start of the line so a rank number quoted in
# a message body is not taken as the prefix.
_RANK_BRACKET = re.compile(r"\[(?:rank|default)(\d{1,6})\]:")
# What may stand before a bracketed prefix: a timestamp or a launcher's tag, at most two words.
_BEFORE_PREFIX = re.compile(r"(?:\S+\s+){0,2}")
_RANK_NUMERIC = re.compile(
    r"^(?:\d{4}-\d\d-\d\d[T ][\d:.,]+Z?\s+|\d\d:\d\d:\d\d(?:[.,]\d+)?\s+)?(\d{1,6}): "
)
_PREFIX_WINDOW = 80


class LogUnreadable(ConfigError, OSError):
    """A log file that cannot be opened or decompressed (exit code 3)."""


# A tqdm bar ("45%|####5     | 450/1000 [01:02<01:16,  7.2it/s]") that the next output was written straight after,
# with no newline between them: the shell's "Killed" of the process that drew it, a traceback's first line.
_BAR_THEN = re.compile(r"^.*?\d+%\|[^|]*\| *\d+/\d+ \[[^\]]*\](?=\S)")


def clean_line(raw: str) -> str:
    """The line without ANSI escape codes, carriage-return overdraws, a progress bar the next output was written
    straight after, and trailing whitespace."""
    if "\x1b" in raw:
        raw = _ANSI.sub("", raw)
    if "\r" in raw:
        # A terminal shows only what was drawn after the last carriage return (progress bars).
        tail = raw.rstrip("\r\n")
        raw = tail.rsplit("\r", 1)[-1] if "\r" in tail else tail
    if "%|" in raw:
        bar = _BAR_THEN.match(raw)
        if bar:
            raw = raw[bar.end():]
    return raw.rstrip()


# What the systems that carry a log put before each of its lines, none of it the program's own words: Docker
# Compose's service column ("trainer-1  | ", https://docs.docker.com/reference/cli/docker/compose/logs/), the
# RFC 3339 stamp of `docker logs --timestamps`, `kubectl logs --timestamps` and CI runners
# (https://kubernetes.io/docs/reference/kubectl/generated/kubectl_logs/), syslog's and journald's head
# ("Nov 26 12:00:00 node01 python[1234]: ", `journalctl -o short`, `-o short-precise` and `-o short-iso`,
# https://www.freedesktop.org/software/systemd/man/latest/journalctl.html), `kubectl logs --prefix`'s source
# ("[pod/trainer-0/pytorch] "), and a Markdown quote ("> ") around a pasted log. Read before anything else, so that
# every pattern sees the line as the program wrote it.
# journald's short-iso stamp carries an offset (+0000); a bare "Z" stamp is a container runtime's.
_SYSLOG_HEAD = (r"(?:[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d(?:\.\d+)?|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:[.,]\d+)?[+-]\d\d:?\d\d)"
                r" (?P<host>[A-Za-z][\w.-]*) [\w./@-]+(?:\[\d+\])?: ")
_SYSLOG = re.compile(_SYSLOG_HEAD)
# The launchers that gather many processes' output into one stream tag each line with where it came from:
# - Open MPI's --tag-output, "[jobid,rank]<stderr>:" (horovodrun's gloo launcher writes "[rank]<stderr>:"),
#   https://docs.open-mpi.org/en/v5.0.x/man-openmpi/man1/mpirun.1.html;
# - Ray's worker prefix, "(RayWorkerWrapper pid=4242, ip=10.0.0.2) ", which vLLM's workers ("(VllmWorker TP0
#   pid=7)", "(EngineCore_DP0 pid=1742)") and Ray Train's ("(RayTrainWorker pid=9, ip=...)") share,
#   https://docs.ray.io/en/latest/ray-observability/user-guides/configure-logging.html;
# - pdsh's "host: " (DeepSpeed's multi-node runner starts its ranks through pdsh,
#   https://www.deepspeed.ai/getting-started/#resource-configuration-multi-node). A host is told from a word that
#   ends in a colon by a digit in its name (node07, gpu-3, worker-0, ip-10-0-0-7) or by being an IPv4 address; an
#   Ascend error code (EI0006:), slurmstepd's own name and an exception's class are not hosts.
_MPI_TAG = r"\[(?:\d+,)?(?P<mpirank>\d+)\]<std(?:out|err|diag)>: ?"
_RAY = r"\((?:[\w.-]+ ){0,2}(?:rank=(?P<rayrank>\d+) )?pid=\d+(?:, ip=(?P<ip>[\d.]+))?\) "
_PDSH = (r"(?![A-Z]{1,3}\d+: |slurmstepd)(?P<pdsh>[A-Za-z][\w-]*\d[\w.-]*|\d{1,3}(?:\.\d{1,3}){3})"
         r"(?<!Error)(?<!Exception)(?<!Warning): ")
# Every carrier, the syslog head first (its short-iso stamp would otherwise be read as a runtime's); carriers nest
# (a compose column before a stamp, a pod's prefix before a launcher's tag), so the line's start is matched again
# after each.
_CARRIER = re.compile("|".join(f"(?:{part})" for part in (
    _SYSLOG_HEAD,
    r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,9})?(?:Z|[+-]\d\d:?\d\d) ",
    r"[A-Za-z][\w.-]*?[-_]\d+\s+\| ",
    r"\[pod/[\w.-]+/[\w.-]+\] ",
    r">+ ?",
    _MPI_TAG,
    _RAY,
    _PDSH,
)))
_CARRIERS_NESTED = 4
# How each carrier starts: most lines have none, and this one test lets them by (the prefilter's hot path).
_CARRIER_GATE = re.compile(r"^(?:[A-Z][a-z]{2} [ \d]\d |\d{4}-\d\d-\d\dT|[A-Za-z][\w.-]*?\d[\w.-]*(?:\s+\| |: )|"
                           r"\[pod/|>|\[\d+(?:,\d+)?\]<|\(|\d{1,3}\.\d)")


def split_carrier(line: str) -> tuple[str, str]:
    """(what a carrier put before the line, the line as the program wrote it); ("", line) for a bare line."""
    if not _CARRIER_GATE.match(line):
        return "", line
    end = 0
    for _ in range(_CARRIERS_NESTED):
        match = _CARRIER.match(line, end)
        if match is None:
            break
        end = match.end()
    return line[:end], line[end:]


def _carrier_groups(carrier: str) -> Iterator[dict[str, str | None]]:
    end = 0
    while end < len(carrier):
        match = _CARRIER.match(carrier, end)
        if match is None or match.end() == end:
            return
        yield match.groupdict()
        end = match.end()


def carrier_host(carrier: str) -> str | None:
    """The host a carrier names: syslog's or journald's head, pdsh's prefix, the address in Ray's."""
    for groups in _carrier_groups(carrier) if carrier else ():
        host = groups["host"] or groups["pdsh"] or groups["ip"]
        if host:
            return host
    return None


def carrier_rank(carrier: str) -> int | None:
    """The rank a launcher's tag names (Open MPI's "[1,3]<stderr>:", Ray's "rank=3")."""
    for groups in _carrier_groups(carrier) if carrier else ():
        rank = groups["mpirank"] or groups["rayrank"]
        if rank:
            return int(rank)
    return None


def indent_of(text: str) -> int:
    """How many blanks (spaces, tabs) a line starts with."""
    return len(text) - len(text.lstrip(" \t"))


# The least indent that is a paste's (a Markdown code block's is 4; a traceback's own frames are indented 2 under a
# line that is not).
MIN_PASTE_INDENT = 2


def paste_indent(raws: Iterable[str], least_lines: int = 1) -> int:
    """How much of every line's indent a paste added (a Markdown code block, a quoted mail, a YAML field): the least
    indent of the non-blank lines, read without their carrier, where it is at least MIN_PASTE_INDENT and at least
    ``least_lines`` lines say so; else 0."""
    indents = [indent_of(text) for text in (split_carrier(clean_line(raw))[1] for raw in raws) if text.strip()]
    if len(indents) < max(least_lines, 1) or min(indents) < MIN_PASTE_INDENT:
        return 0
    return min(indents)


def rank_of(line: str) -> int | None:
    """The rank named by the line's launcher prefix, or None."""
    head = line[:_PREFIX_WINDOW]
    match = _RANK_BRACKET.search(head)
    if match and _BEFORE_PREFIX.fullmatch(head[: match.start()]):
        return int(match.group(1))
    match = _RANK_NUMERIC.match(head)
    if match:
        return int(match.group(1))
    return None



# Timestamps, for ordering findings across files. glog (torch's C++ logs, `[rank3]:[E1123 10:30:00.123456 ...]`
# or a bare `E1123 10:30:00.123456`) has no year; ISO-like stamps (`2026-11-23 07:09:11`, NCCL 2.28's
# `[2026-11-23 07:09:11]`, python logging's `2026-11-23 07:09:11,123`) have one. Both become a key that
# compares month, day and time: jobs do not span new year often enough to pay for more.
_GLOG_TS = re.compile(r"(?:^|[\[\s:])[IWEF](?P<mo>\d\d)(?P<d>\d\d) (?P<h>\d\d):(?P<mi>\d\d):(?P<s>\d\d(?:\.\d+)?)")
_ISO_TS = re.compile(
    r"\b\d{4}-(?P<mo>\d\d)-(?P<d>\d\d)[T _-](?P<h>\d\d):(?P<mi>\d\d):(?P<s>\d\d(?:[.,:]\d+)?)")
_TS_WINDOW = 120


def timestamp_of(line: str) -> tuple[float, str] | None:
    """The first timestamp near the start of a line: (seconds into the year, the stamp as written), or None.

    glog carries no year, so ISO stamps drop theirs too: month, day and time order a job's lines.
    """
    head = line[:_TS_WINDOW]
    match = _GLOG_TS.search(head) or _ISO_TS.search(head)
    if match is None:
        return None
    # Fractions come as .123456, ,123 (python logging) or :444.436 (Ascend plogs): keep what reads as one.
    seconds = re.match(r"\d\d(?:[.,]\d+)?", match.group("s"))
    try:
        month, day = int(match.group("mo")), int(match.group("d"))
        hour, minute = int(match.group("h")), int(match.group("mi"))
        secs = float(seconds.group(0).replace(",", ".")) if seconds else 0.0
    except ValueError:
        return None
    if not (1 <= month <= 12 and 1 <= day <= 31 and hour < 24 and minute < 60):
        return None
    key = ((month * 31 + day) * 24 + hour) * 3600 + minute * 60 + secs
    return key, match.group(0).lstrip("[ :")


# NCCL's prefix `host:pid:tid [dev]` names the host (after a timestamp or a rank prefix, or at the start).
_NCCL_HOST = re.compile(r"(?:^|[\s\]:])(?P<host>[A-Za-z][\w.-]*):\d+:\d+ \[\d+\] ")


def host_of(line: str) -> str | None:
    match = _NCCL_HOST.search(line[:_PREFIX_WINDOW + 40])
    return match.group("host") if match else None


class LogTruncated(Exception):
    """A compressed log ends before its end-of-stream marker: everything before the cut was read."""


@dataclass
class Hit:
    lineno: int
    raw: bytes
    # True for the line after a hit that holds no anchor itself (grep -A1): read only when the diagnosis asks.
    context: bool = False


class ReadState:
    """What the reader knows when it is done: how many lines, and whether (and why) the log was cut."""

    def __init__(self) -> None:
        self.lines = 0
        self.truncated: str | None = None
        # The log's last TAIL_BYTES: how it ends is read whole, not only through the prefilter (a final error line
        # that holds no anchor, what came after it).
        self.tail = b""

    def keep_tail(self, block: bytes) -> None:
        if len(block) >= TAIL_BYTES:
            self.tail = block[-TAIL_BYTES:]
        else:
            self.tail = (self.tail + block)[-TAIL_BYTES:]

    def tail_lines(self) -> list[tuple[int, str]]:
        """The log's last lines (at most TAIL_LINES), numbered, decoded; a line cut by the window's start is left
        out."""
        data = self.tail
        if not data:
            return []
        pieces = data.split(b"\n")
        if pieces and pieces[-1] == b"":
            pieces.pop()
        if len(data) >= TAIL_BYTES and pieces:
            pieces.pop(0)
        pieces = pieces[-TAIL_LINES:]
        first = self.lines - len(pieces) + 1
        return [(first + index, piece[:MAX_LINE_BYTES].decode("utf-8", errors="replace"))
                for index, piece in enumerate(pieces)]


def read_head(path: str, lines: int = HEAD_LINES, size: int = 64 * 1024) -> list[str]:
    """The first lines of a plain log file, decoded (an unreadable file has none: its reading reports it)."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(size)
    except OSError:
        return []
    pieces = data.split(b"\n")
    if len(data) == size and len(pieces) > 1:
        pieces.pop()  # cut by the window
    return [piece[:MAX_LINE_BYTES].decode("utf-8", errors="replace") for piece in pieces[:lines]]


# ----- a paste hard-wrapped at a fixed width ------------------------------------------------------------------------
# A log copied from a terminal (or a tool that wraps) splits every long line at the same column: an exception's
# message, a table's literal, a path fall apart across lines. A small plain log whose longest lines all end at one
# column, several of them continued on the next line, is read with those lines joined back.
DEWRAP_MAX_BYTES = 2 * 1024 * 1024  # pastes are small; a real log of this size is not read whole
DEWRAP_MIN_WIDTH = 60
DEWRAP_MIN_LINES = 2  # full-width lines continued on the next line
_RECORD_START = re.compile(
    # an indent (a wrap may fall just before one space, not before two or a tab), a bracket or quote mark, a date or
    # time, a level word, an exception class, a traceback's frame, a shell prompt, a rule, a box-drawing edge
    r"^(?:\t| {2}|\[|\(|<|>|#|\$|\*|-{2}|={2}|[|│╭╰┃]|\d{2,4}[-/:.]\d|"
    r"(?:INFO|INF|WARN|WARNING|ERROR|ERR|DEBUG|TRACE|FATAL|CRITICAL|NOTICE|[IWEF]\d{4})\b|"
    r"[A-Za-z_][\w.]*(?:Error|Exception|Warning)\b|Traceback|File \")")


def _continues(line: str, after: str) -> bool:
    """``after`` goes on with the full-width ``line`` (a wrap), rather than starting a line of its own: it does not
    open as a log record opens (a timestamp, a bracket, a level or class word, an indent, a box-drawing edge) and
    not as ``line`` itself does (repeated records of one width), and ``line`` is not one repeated character."""
    if not after or len(set(line.strip())) <= 1:
        return False
    if after[:8] == line[:8] or _RECORD_START.match(after):
        return False
    # A launcher's or a carrier's tag (srun -l's "3: ", torch's "[rank3]:", Open MPI's, a pod's) is put before each
    # line the program wrote, never before the rest of a wrapped one. (pdsh's "host: " is not told from a wrapped
    # "fp16: ..." by itself, so it counts only where the wrapped line carries the same tag.)
    if _RANK_NUMERIC.match(after) or _RANK_BRACKET.match(after):
        return False
    carrier = split_carrier(after)[0]
    if carrier and (split_carrier(line)[0] == carrier
                    or not all(groups["pdsh"] for groups in _carrier_groups(carrier))):
        return False
    return True


def hard_wrap_width(lines: list[str]) -> int | None:
    """The column a paste was wrapped at, or None: its longest lines all share one length, and at least
    :data:`DEWRAP_MIN_LINES` of them go on on the next line (:func:`_continues`)."""
    width = max((len(line) for line in lines), default=0)
    if width < DEWRAP_MIN_WIDTH:
        return None
    continued = sum(1 for line, after in zip(lines, lines[1:], strict=False)
                    if len(line) == width and _continues(line, after))
    return width if continued >= DEWRAP_MIN_LINES else None


def dewrap(lines: list[str], width: int) -> tuple[list[str], list[int]]:
    """The lines with each wrap joined back, and the number (1-based) of the first physical line of each."""
    joined: list[str] = []
    starts: list[int] = []
    previous = ""
    for number, line in enumerate(lines, start=1):
        if joined and len(previous) == width and _continues(previous, line):
            joined[-1] += line
        else:
            joined.append(line)
            starts.append(number)
        previous = line
    return joined, starts


def read_dewrapped(path: str) -> tuple[bytes, list[int], int] | None:
    """A small plain log file hard-wrapped at a fixed width, joined back: its bytes, each joined line's first
    physical line number, and how many lines the file has. None for any other file."""
    try:
        if os.path.getsize(path) > DEWRAP_MAX_BYTES:
            return None
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError:
        return None
    if data[:2] == GZIP_MAGIC:
        return None
    # A paste saved with Windows' line ends wraps the same: its carriage returns are no part of a line's width, and
    # one left inside a joined line would hide what came before it (clean_line keeps what follows a \r).
    lines = [line.removesuffix("\r") for line in data.decode("utf-8", errors="replace").split("\n")]
    width = hard_wrap_width(lines)
    if width is None:
        return None
    joined, starts = dewrap(lines, width)
    physical = len(lines) - 1 if data.endswith(b"\n") else len(lines)
    return "\n".join(joined).encode("utf-8"), starts, physical


def open_log(path: str) -> tuple[IO[bytes], bool]:
    """The file (or stdin) as a binary stream, and whether it should be closed by us."""
    if path == "-":
        return sys.stdin.buffer, False
    try:
        return open(path, "rb"), True
    except OSError as err:
        reason = err.strerror or str(err)
        raise LogUnreadable(f"cannot read log: {reason}", where=path,
                            hint="check the path and permissions; '-' reads standard input") from None


def iter_blocks(stream: IO[bytes]) -> Iterator[bytes]:
    """Decompressed blocks of a log; gzip by content (several members too). Raises LogTruncated after the cut.

    Compressed input goes in by 64 KiB and each call inflates at most a block: a log that compresses 1000:1
    still never becomes more than a block in memory, and the unconsumed input zlib hands back stays small.
    """
    first = stream.read(BLOCK_BYTES)
    if first[:2] != GZIP_MAGIC:
        while first:
            yield first
            first = stream.read(BLOCK_BYTES)
        return
    pending = first
    inflater = zlib.decompressobj(wbits=31)
    while True:
        if not pending:
            pending = stream.read(_GZIP_INPUT)
            if not pending:
                break
        feed, pending = pending[:_GZIP_INPUT], pending[_GZIP_INPUT:]
        try:
            out = inflater.decompress(feed, BLOCK_BYTES)
            while True:
                if out:
                    yield out
                # At a member's end zlib leaves the rest in unused_data (and, with a max_length, a copy of it in
                # unconsumed_tail): only unused_data counts then.
                if inflater.eof or not inflater.unconsumed_tail:
                    break
                out = inflater.decompress(inflater.unconsumed_tail, BLOCK_BYTES)
        except zlib.error as err:
            raise LogTruncated(f"corrupt gzip data ({err})") from None
        if inflater.eof:
            pending = inflater.unused_data + pending
            inflater = zlib.decompressobj(wbits=31)
            if not pending:
                pending = stream.read(_GZIP_INPUT)
                if not pending:
                    return  # clean end after a complete member
            if pending[:2] != GZIP_MAGIC:
                return  # trailing garbage after the last member, as gzip(1) ignores it
    tail = inflater.flush()
    if tail:
        yield tail
    raise LogTruncated("the gzip stream ends before its end marker (cut while being written?)")


def _whole_lines(blocks: Iterable[bytes], state: ReadState) -> Iterator[bytes]:
    """Blocks cut at line ends; a line longer than MAX_LINE_BYTES is kept as its head only (memory stays bounded)."""
    carry = b""
    overflow = False
    for block in blocks:
        state.keep_tail(block)
        if overflow:
            cut = block.find(b"\n")
            if cut < 0:
                continue
            state.lines += 1
            yield carry + b"\n"
            carry, overflow, block = b"", False, block[cut + 1:]
        buf = carry + block if carry else block
        cut = buf.rfind(b"\n")
        if cut < 0:
            carry = buf
        else:
            state.lines += buf.count(b"\n", 0, cut + 1)
            yield buf[: cut + 1]
            carry = buf[cut + 1:]
        if len(carry) > MAX_LINE_BYTES:
            carry, overflow = carry[:MAX_LINE_BYTES], True
    if carry:
        state.lines += 1
        yield carry + b"\n"


def anchor_regex(anchors: Iterable[str]) -> re.Pattern[bytes]:
    """One regex of all anchors, shaped as a trie so that a position is rejected after a few byte compares."""
    trie: dict = {}
    for anchor in anchors:
        node = trie
        for byte in anchor.encode():
            node = node.setdefault(byte, {})
        node[-1] = {}

    def emit(node: dict) -> bytes:
        if -1 in node:
            return b""  # an anchor ends here: the shorter one is enough
        alts = [re.escape(bytes([byte])) + emit(sub) for byte, sub in sorted(node.items())]
        return alts[0] if len(alts) == 1 else b"(?:" + b"|".join(alts) + b")"

    return re.compile(emit(trie) if trie else b"(?!x)x")


_ANSI_BYTES = re.compile(rb"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b\n]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")


def scan_blocks(blocks: Iterable[bytes], anchors: re.Pattern[bytes], state: ReadState) -> Iterator[Hit]:
    """The lines holding an anchor, and the line after each (as context), by searching whole blocks."""
    base = 0  # lines before the current buffer
    want_context = False
    for buf in _whole_lines(blocks, state):
        if b"\x1b" in buf:
            # An ANSI code inside an anchor would hide it; codes never span lines, so numbering is unchanged.
            buf = _ANSI_BYTES.sub(b"", buf)
        if want_context:
            end = buf.find(b"\n")
            if not anchors.search(buf, 0, end):
                yield Hit(base + 1, buf[:end][:MAX_LINE_BYTES], context=True)
            want_context = False
        pos = counted_pos = 0
        counted = base  # lines before counted_pos
        while True:
            match = anchors.search(buf, pos)
            if match is None:
                break
            start = buf.rfind(b"\n", 0, match.start()) + 1
            end = buf.find(b"\n", match.start())
            counted += buf.count(b"\n", counted_pos, start)
            counted_pos = start
            yield Hit(counted + 1, buf[start:end][:MAX_LINE_BYTES])
            pos = end + 1
            nxt = buf.find(b"\n", pos)
            if nxt < 0:
                want_context = True
            elif not anchors.search(buf, pos, nxt):
                yield Hit(counted + 2, buf[pos:nxt][:MAX_LINE_BYTES], context=True)
        base += buf.count(b"\n")


def grep_available() -> str | None:
    if os.environ.get(GREP_ENV, "1") == "0":
        return None
    return shutil.which("grep")


def grep_hits(blocks: Iterable[bytes] | None, path: str | None, anchors: Iterable[str], state: ReadState,
              grep: str) -> Iterator[Hit]:
    """The same hits as :func:`scan_blocks`, found by ``grep`` (all anchors in one pass).

    A plain file is grep's to read (``path``); decompressed ``blocks`` are fed to its stdin from a thread (zlib
    releases the GIL, so decompression and grep run on two cores). Either way a thread counts the lines.
    """
    # One extended regex of the literal anchors: GNU grep runs it twice as fast as -F with the same strings
    # (measured: 600 vs 300 MB/s on bench/diagnose.py's log). "--" group separators are skipped by _split_grep.
    argv = [grep, "-a", "-n", "-E", "-A1", "-e", "|".join(_ere_escape(anchor) for anchor in anchors)]
    if path is not None:
        argv.extend(("--", path))
    # LC_ALL=C: byte matching, several times faster than a UTF-8 locale and what the anchors are.
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE if blocks is not None else subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, "LC_ALL": "C"})
    failure: list[BaseException] = []

    def count(chunks: Iterable[bytes], sink: IO[bytes] | None) -> None:
        last = b"\n"
        try:
            for chunk in chunks:
                if not chunk:
                    continue
                state.lines += chunk.count(b"\n")
                state.keep_tail(chunk)
                last = chunk[-1:]
                if sink is not None:
                    sink.write(chunk)
        except BrokenPipeError:
            pass
        except BaseException as err:  # handed to the reading thread, raised there
            failure.append(err)
        finally:
            if last != b"\n":
                state.lines += 1
            if sink is not None:
                try:
                    sink.close()
                except BrokenPipeError:
                    pass

    if blocks is not None:
        feeder = threading.Thread(target=count, args=(blocks, proc.stdin), name="diagnose-feed", daemon=True)
    else:
        feeder = threading.Thread(target=count, args=(_file_blocks(path or ""), None), name="diagnose-count",
                                  daemon=True)
    feeder.start()
    assert proc.stdout is not None
    try:
        skipping = False
        while True:
            line = proc.stdout.readline(MAX_LINE_BYTES)
            if not line:
                break
            complete = line.endswith(b"\n")
            if skipping:
                skipping = not complete
                continue
            skipping = not complete
            number, sep, text = _split_grep(line)
            if number is not None:
                yield Hit(number, text.rstrip(b"\n"), context=sep == b"-")
    finally:
        proc.stdout.close()
        feeder.join()
        proc.wait()
        assert proc.stderr is not None
        complaint = proc.stderr.read(2000).decode(errors="replace").strip()
        proc.stderr.close()
    if failure:
        raise failure[0]
    if proc.returncode not in (0, 1):  # 1: no line matched; anything else: grep itself failed
        # Never a quiet "no finding" from a prefilter that did not run.
        raise LogUnreadable(f"grep failed (exit {proc.returncode}): {complaint or 'no message'}",
                            where=path or "log", hint=f"set {GREP_ENV}=0 to scan without grep")


_ERE_SPECIAL = re.compile(r"([.\[\]()*+?{}|^$\\])")


def _ere_escape(literal: str) -> str:
    """A literal as a POSIX extended regex (Python's re.escape adds backslashes ERE does not define)."""
    return _ERE_SPECIAL.sub(r"\\\1", literal)


def _file_blocks(path: str) -> Iterator[bytes]:
    with open(path, "rb") as handle:
        while True:
            block = handle.read(BLOCK_BYTES)
            if not block:
                return
            yield block


_GREP_PREFIX = re.compile(rb"(\d+)([:-])")


def _split_grep(line: bytes) -> tuple[int | None, bytes, bytes]:
    match = _GREP_PREFIX.match(line)
    if match is None:
        return None, b"", line
    return int(match.group(1)), match.group(2), line[match.end():]


def read_hits(stream: IO[bytes], anchors: tuple[str, ...], anchor_re: re.Pattern[bytes], state: ReadState,
              path: str | None = None) -> Iterator[Hit]:
    """Hits of one log, by grep where there is one; LogTruncated is caught here and noted in ``state``.

    ``path`` names a regular file that may be handed to grep as it is (when it is not gzip).
    """
    grep = grep_available()
    if grep and path is not None and os.path.isfile(path):
        with open(path, "rb") as probe:
            plain = probe.read(2) != GZIP_MAGIC
        if plain:
            yield from grep_hits(None, path, anchors, state, grep)
            return
    blocks = _truncation_noted(iter_blocks(stream), state)
    if grep:
        yield from grep_hits(blocks, None, anchors, state, grep)
    else:
        yield from scan_blocks(blocks, anchor_re, state)


def _truncation_noted(blocks: Iterator[bytes], state: ReadState) -> Iterator[bytes]:
    try:
        yield from blocks
    except LogTruncated as err:
        state.truncated = str(err)
    except OSError as err:
        state.truncated = f"read error: {err.strerror or err}"
    except (EOFError, tarfile.TarError, zlib.error) as err:
        # An archive member cut short: its stream (tarfile's over gzip) ends before the member does.
        state.truncated = f"the archive ends inside this log ({err})"
