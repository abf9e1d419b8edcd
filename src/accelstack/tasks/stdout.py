"""Standard output that a closed pipe cannot break: ``accelstack validate --json | head -1`` runs on.

When the reader of a pipe goes away (``head``, ``less`` quit early, a closed ssh session), the next write raises
``BrokenPipeError``. Python's advice (the "Note on SIGPIPE" in the ``signal`` module's documentation,
https://docs.python.org/3/library/signal.html#note-on-sigpipe) is to point standard output at ``/dev/null`` and go
on; restoring the default SIGPIPE action instead would also kill the process on a write to a closed SSH socket,
which this tool must survive. So a run whose reader left still finishes: every record reaches the run folder, the
hosts' processes are stopped as usual, and the exit code is the verdict's, not a traceback.

:func:`guard_stdout` wraps ``sys.stdout`` once per process (both ``inv`` and the console script import the tasks,
which call it); everything that prints (``print``, rich's consoles, which resolve ``sys.stdout`` when they write)
goes through the wrapper.
"""

from __future__ import annotations

import os
import sys
from typing import Any, TextIO


class PipeSafe:
    """A text stream that forwards to ``stream`` until its reader is gone, then discards what is written."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self.broken = False

    def _close_pipe(self) -> None:
        self.broken = True
        try:  # later writes by anything holding file descriptor 1 (a child, C code) go nowhere, quietly
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self._stream.fileno())
            os.close(devnull)
        except (OSError, ValueError):
            pass

    def write(self, text: str) -> int:
        if self.broken:
            return len(text)
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            self._close_pipe()
            return len(text)

    def flush(self) -> None:
        if self.broken:
            return
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._close_pipe()

    def __getattr__(self, name: str) -> Any:  # encoding, isatty, fileno, buffer ...: the stream's own
        return getattr(self._stream, name)


def guard_stdout() -> None:
    """Wrap ``sys.stdout`` in :class:`PipeSafe` (once; a stream already wrapped, or none, is left alone)."""
    stream = sys.stdout
    if stream is not None and not isinstance(stream, PipeSafe):
        sys.stdout = PipeSafe(stream)
