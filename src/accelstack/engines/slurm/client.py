"""Slurm's client commands (``sinfo``, ``scontrol``, ``srun``, ``scancel``) as the Slurm engine runs them: the one
object every call goes through, as every command to a host goes through its transport.

:class:`SlurmClient` runs them on this machine with its environment (``SLURM_CONF`` included). Tests hand the
engine another object with the same three methods (one that replays captured output, one that records each call),
as they hand the SSH engine another transport; a site whose control side is not a Slurm client would hand it one
that runs them on a login node. The nodes keep their own records (their node file's ``runs_dir``): this run's
folder (``ACCELSTACK_RUNS``) is never passed on to a command.
"""

from __future__ import annotations

import codecs
import os
import queue
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ...errors import ConfigError

# What Slurm's own timeouts leave a client command that only asks (sinfo, scontrol): it answers in well under this.
QUERY_TIMEOUT_S = 15.0


class SlurmMissing(ConfigError):
    """A Slurm client command is not on PATH: ``--engine slurm`` cannot run here (exit 3, before any srun)."""


@dataclass
class Completed:
    """One client command's end: its exit status (124 when it gave no end in time and was stopped), what it
    printed (``stdout`` is empty for a streamed command: its lines went to the caller as they came)."""

    argv: list[str]
    returncode: int
    stdout: str = ""
    stderr: str = ""
    timed_out: bool = False

    @property
    def ok(self) -> bool:
        return self.returncode == 0


class Client(Protocol):
    """What the Slurm engine asks of Slurm's client commands."""

    def run(self, argv: Sequence[str], *, timeout: float, env: Mapping[str, str] | None = None) -> Completed:
        """Run a command to its end and return what it printed."""

    def stream(self, argv: Sequence[str], *, timeout: float, on_line: Callable[[str], None],
               env: Mapping[str, str] | None = None) -> Completed:
        """Run a long command (``srun``), handing each line of its stdout to ``on_line`` as it comes."""

    def cancel(self, name: str) -> None:
        """Cancel the job steps named ``name`` (``scancel --name``), quietly: their time limits end them anyway."""


def _missing(argv: Sequence[str]) -> SlurmMissing:
    return SlurmMissing(f"{argv[0]} is not on PATH: --engine slurm needs Slurm's client commands",
                        hint="apt-get install slurm-client, or run where sinfo and srun work")


def _text(value: Any) -> str:
    if value is None:
        return ""
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


class SlurmClient:
    """Slurm's client commands on this machine, with its environment and ``env`` over it."""

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        self.env = dict(env or {})

    def environment(self, env: Mapping[str, str] | None = None) -> dict[str, str]:
        full = {**os.environ, **self.env, **(env or {})}
        # The nodes keep their own copy in their node file's runs_dir; this run's folder is the control side's.
        full.pop("ACCELSTACK_RUNS", None)
        return full

    def run(self, argv: Sequence[str], *, timeout: float, env: Mapping[str, str] | None = None) -> Completed:
        """Run ``argv`` to its end (stopped after ``timeout`` seconds: 124). A command not on PATH is
        :class:`SlurmMissing`; Ctrl-C stops the command and goes on up."""
        argv = list(argv)
        try:
            proc = subprocess.run(argv, env=self.environment(env), capture_output=True, text=True, timeout=timeout,
                                  stdin=subprocess.DEVNULL)
        except FileNotFoundError:
            raise _missing(argv) from None
        except subprocess.TimeoutExpired as err:
            return Completed(argv, 124, _text(err.stdout),
                             _text(err.stderr) + f"\naccelstack: {argv[0]} gave no answer within {timeout:.0f} s",
                             timed_out=True)
        return Completed(argv, proc.returncode, proc.stdout, proc.stderr)

    def stream(self, argv: Sequence[str], *, timeout: float, on_line: Callable[[str], None],
               env: Mapping[str, str] | None = None) -> Completed:
        """Run ``argv``, handing each stdout line (without its end) to ``on_line`` as it is whole; stopped after
        ``timeout`` seconds (124). On Ctrl-C the command is stopped and nothing more is read.

        stdout is read in blocks (whatever the pipe holds, up to 64 KiB) and split into lines here: a thousand
        nodes print some ten thousand lines, and a queue hand-off per line cost more than parsing them."""
        argv = list(argv)
        try:
            proc = subprocess.Popen(argv, env=self.environment(env), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    stdin=subprocess.DEVNULL)
        except FileNotFoundError:
            raise _missing(argv) from None
        blocks: queue.Queue[bytes | None] = queue.Queue()
        errors: list[bytes] = []
        assert proc.stdout is not None and proc.stderr is not None
        readers = [threading.Thread(target=_pump, args=(proc.stdout, blocks.put, True), daemon=True),
                   threading.Thread(target=_pump, args=(proc.stderr, errors.append, False), daemon=True)]
        for reader in readers:
            reader.start()
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        partial = ""
        end = time.monotonic() + timeout
        timed_out = False
        try:
            while True:
                left = end - time.monotonic()
                if left <= 0:
                    timed_out = True
                    break
                try:
                    block = blocks.get(timeout=min(left, 0.5))
                except queue.Empty:
                    continue
                text = partial + (decoder.decode(block) if block is not None else decoder.decode(b"", final=True))
                lines = text.split("\n")
                partial = lines.pop() if block is not None else ""
                for line in lines:
                    on_line(line.rstrip("\r"))
                if block is None:
                    break
        except BaseException:
            _stop(proc)
            raise
        if timed_out:
            _stop(proc)
        code = proc.wait()
        readers[1].join(5)
        stderr = b"".join(errors).decode("utf-8", "replace") + \
            (f"\naccelstack: {argv[0]} gave no answer within {timeout:.0f} s" if timed_out else "")
        return Completed(argv, 124 if timed_out else code, "", stderr, timed_out=timed_out)

    def cancel(self, name: str) -> None:
        try:
            self.run(["scancel", f"--name={name}"], timeout=QUERY_TIMEOUT_S)
        except SlurmMissing:
            pass  # no scancel: srun's own end and the step's time limit stop it


def _pump(stream: Any, put: Callable[[Any], None], mark_end: bool) -> None:
    """Hand on what ``stream`` gives as it comes (a block at a time, not waiting for a full buffer), then
    ``None`` at its end when ``mark_end``."""
    while True:
        block = stream.read1(65536)
        if not block:
            break
        put(block)
    if mark_end:
        put(None)


def _stop(proc: subprocess.Popen[Any]) -> None:
    """srun ends: SIGTERM (it signals the tasks and exits), SIGKILL after a few seconds."""
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
