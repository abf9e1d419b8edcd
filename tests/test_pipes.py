"""A reader that leaves early (``| head``) ends no run and prints no traceback, under ``inv`` and ``accelstack``.

The run goes on with its output discarded: its records all reach the run folder and its exit code is the
verdict's, the same as a run whose output was read to the end.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from accelstack.tasks.stdout import PipeSafe

from .helpers import REPO, cli_env

LOG = REPO / "tests" / "data" / "logs" / "cuda-oom.log"


def _head(program: str, args: list[str], runs: Path) -> tuple[int, str]:
    """Run ``program ARGS | head -c 1``: read one byte of stdout, close the pipe, wait for the exit."""
    module = "accelstack" if program == "accelstack" else "invoke"
    proc = subprocess.Popen([sys.executable, "-m", module, *args], cwd=REPO, env=cli_env(runs=runs),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.read(1)
    proc.stdout.close()
    stderr = proc.stderr.read().decode()
    return proc.wait(timeout=300), stderr


def _records(runs: Path) -> list[tuple[str, str, str]]:
    [results] = list(runs.glob("*/results.jsonl"))
    records = [json.loads(line) for line in results.read_text().splitlines()]
    return sorted((r["host"], r["check"], r["status"]) for r in records)


@pytest.mark.parametrize("program", ["inv", "accelstack"])
def test_a_validate_run_whose_reader_left_finishes_with_every_record(program: str, tmp_path: Path) -> None:
    args = ["validate", "--tier", "health", "--json"]
    full = subprocess.run([sys.executable, "-m", "accelstack", *args], cwd=REPO, env=cli_env(runs=tmp_path / "full"),
                          capture_output=True, text=True, timeout=300)
    code, stderr = _head(program, args, tmp_path / "head")
    assert "Traceback" not in stderr and "BrokenPipe" not in stderr, stderr
    assert code == full.returncode
    assert _records(tmp_path / "head") == _records(tmp_path / "full")


@pytest.mark.parametrize("args", [["diagnose", "--json", str(LOG)], ["diagnose", "--help"], ["--list"]])
@pytest.mark.parametrize("program", ["inv", "accelstack"])
def test_a_closed_pipe_is_no_traceback(program: str, args: list[str], tmp_path: Path) -> None:
    code, stderr = _head(program, args, tmp_path)
    assert "Traceback" not in stderr and "BrokenPipe" not in stderr, stderr
    assert code == (1 if args[0] == "diagnose" and args[1] == "--json" else 0)


class _Closed(io.StringIO):
    def write(self, text: str) -> int:
        raise BrokenPipeError(32, "Broken pipe")

    def flush(self) -> None:
        raise BrokenPipeError(32, "Broken pipe")

    def fileno(self) -> int:
        raise io.UnsupportedOperation("no descriptor")


def test_the_wrapper_forwards_until_the_pipe_breaks_then_discards() -> None:
    open_stream = io.StringIO()
    safe = PipeSafe(open_stream)  # type: ignore[arg-type]
    assert safe.write("one\n") == 4 and open_stream.getvalue() == "one\n" and not safe.broken
    closed = PipeSafe(_Closed())  # type: ignore[arg-type]
    assert closed.write("two\n") == 4 and closed.broken
    closed.flush()
    assert closed.write("three\n") == 6
