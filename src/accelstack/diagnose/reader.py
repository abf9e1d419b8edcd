"""Reading logs as a stream of clean lines: gzip by magic bytes, ``-`` for stdin, ANSI codes and rank prefixes.

Nothing here holds more than one line (capped at :data:`MAX_LINE_BYTES`) in memory, so a log of any size is read in
bounded memory. Parsing a line (:func:`clean_line`, :func:`rank_of`) is pure and tested on its own.
"""

from __future__ import annotations

import gzip
import io
import re
import sys
import zlib
from collections.abc import Iterator
from typing import IO, Any, cast

from ..errors import ConfigError

GZIP_MAGIC = b"\x1f\x8b"
# A line longer than this is cut; the rest up to the newline is skipped. Progress bars written with \r and
# binary junk can make "lines" of megabytes, which must not become one string in memory.
MAX_LINE_BYTES = 64 * 1024
MAX_EVIDENCE_CHARS = 600

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


def clean_line(raw: str) -> str:
    """The line without ANSI escape codes, carriage-return overdraws and trailing whitespace."""
    if "\x1b" in raw:
        raw = _ANSI.sub("", raw)
    if "\r" in raw:
        # A terminal shows only what was drawn after the last carriage return (progress bars).
        tail = raw.rstrip("\r\n")
        raw = tail.rsplit("\r", 1)[-1] if "\r" in tail else tail
    return raw.rstrip()


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


def _open_binary(path: str) -> tuple[IO[bytes], bool]:
    """The file (or stdin) as a binary stream, and whether it should be closed by us."""
    if path == "-":
        return sys.stdin.buffer, False
    try:
        # Closed by iter_log_lines, which also handles stdin that must stay open.
        return open(path, "rb"), True
    except OSError as err:
        reason = err.strerror or str(err)
        raise LogUnreadable(f"cannot read log: {reason}", where=path,
                            hint="check the path and permissions; '-' reads standard input") from None


def _maybe_gunzip(stream: IO[bytes]) -> IO[bytes]:
    # stdin replaced by a test or a wrapper may lack peek(); a BufferedReader over it has one.
    buffered = stream if isinstance(stream, io.BufferedReader) else io.BufferedReader(cast(Any, stream))
    # Decide by content, not by name: collected logs are often gzipped without a .gz suffix, or renamed.
    if buffered.peek(2)[:2] == GZIP_MAGIC:
        return gzip.GzipFile(fileobj=buffered, mode="rb")  # type: ignore[return-value]
    return buffered


def iter_log_lines(path: str) -> Iterator[tuple[int, str]]:
    """Yield ``(lineno, text)`` for each line of a log (1-based), decoded as UTF-8 with replacement."""
    stream, owned = _open_binary(path)
    lineno = 0
    try:
        data = _maybe_gunzip(stream)
        skipping = False
        while True:
            chunk = data.readline(MAX_LINE_BYTES)
            if not chunk:
                break
            complete = chunk.endswith(b"\n")
            if skipping:
                skipping = not complete
                continue
            lineno += 1
            skipping = not complete and len(chunk) >= MAX_LINE_BYTES
            yield lineno, chunk.decode("utf-8", errors="replace")
    except (OSError, EOFError, zlib.error) as err:
        # A truncated or corrupt gzip member shows up mid-stream; name where it happened.
        raise LogUnreadable(f"cannot read log after line {lineno}: {err}", where=path,
                            hint="the file may be truncated or not really gzip") from None
    finally:
        if owned:
            stream.close()
