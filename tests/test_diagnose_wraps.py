"""A paste hard-wrapped at a fixed width (a terminal's, a tool's) reads as the log it was. Before the wraps were
joined back, wrapping the development part of the corpus at 120 columns turned 21 right first findings wrong, most
of them silent: an exception's message, a table's literal or a path fell apart across lines. Lines of one width
that do not go on on the next line (repeated records, box-drawn panels, rules) are left as they are."""

from __future__ import annotations

from pathlib import Path

import pytest

from accelstack.diagnose import diagnose_paths
from accelstack.diagnose.reader import dewrap, hard_wrap_width

LOGS = Path(__file__).parent / "data" / "logs"
EXCERPTS = sorted(p for p in LOGS.rglob("*.log") if "h100" not in p.parts)


def wrapped(lines: list[str], width: int) -> list[str]:
    return [piece for line in lines for piece in ([line[i:i + width] for i in range(0, len(line), width)] or [""])]


def first_cause(path: Path) -> str | None:
    found = diagnose_paths([str(path)]).first
    return found.cause if found is not None else None


@pytest.mark.parametrize("width", [100, 120])
def test_every_excerpt_that_reads_as_wrapped_reads_as_it_was(width: int, tmp_path: Path) -> None:
    checked = 0
    for path in EXCERPTS:
        lines = path.read_text(errors="replace").splitlines()
        pieces = wrapped(lines, width)
        if hard_wrap_width(pieces) is None:
            continue
        copy = tmp_path / path.name
        copy.write_text("\n".join(pieces) + "\n")
        assert first_cause(copy) == first_cause(path), path.name
        checked += 1
    assert checked >= 20  # the excerpts with long lines: the test reads a good number of them


def test_a_wrapped_traceback_gives_its_cause_on_the_files_own_line_numbers(tmp_path: Path) -> None:
    lines = ["step 41 loss 2.10",
             "Traceback (most recent call last):",
             '  File "/workspace/train.py", line 88, in <module>',
             "    loss.backward()",
             "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 GiB. GPU 0 has a total capacity of "
             "79.10 GiB of which 3.12 GiB is free. Including non-PyTorch memory, this process has 75.96 GiB memory in "
             "use. Of the allocated memory 74.20 GiB is allocated by PyTorch, and 1.22 GiB is reserved by PyTorch but "
             "unallocated."]
    pieces = wrapped(lines, 80)
    assert hard_wrap_width(pieces) == 80
    path = tmp_path / "wrapped.log"
    path.write_text("\n".join(pieces) + "\n")
    found = diagnose_paths([str(path)]).first
    assert found is not None and found.cause == "out-of-memory"
    assert found.first_line.lineno == pieces.index(lines[4][:80]) + 1  # the file's line, not the joined one's
    joined, starts = dewrap(pieces, 80)
    assert joined == lines and starts[4] == pieces.index(lines[4][:80]) + 1


@pytest.mark.parametrize("lines", [
    # an access log's records, all of one width
    ['INFO:     127.0.0.1:34658 - "POST /v1/chat/completions HTTP/1.1" 200 OK'] * 6,
    # a box-drawn panel (rich) and a rule
    ["╭" + "─" * 78 + "╮", "│ Training configuration" + " " * 56 + "│", "│ lr 3e-4, batch 32" + " " * 61 + "│",
     "╰" + "─" * 78 + "╯", "=" * 80, "=" * 80],
    # torchrun's summary: its rules are the widest lines, each followed by a line of its own
    ["=" * 60, "train.py FAILED", "-" * 60, "Failures:", "  <NO_OTHER_FAILURES>", "-" * 60],
    # records of one width, each followed by a record of its own
    ["2026-11-29 12:00:00,000 INFO  rank 0 step 100 loss 2.1033 lr 3.0e-04 grad_norm 1.02 tokens/s 81234.5",
     "2026-11-29 12:00:10,000 INFO  rank 0 step 110 loss 2.0987 lr 3.0e-04 grad_norm 0.98 tokens/s 81301.2",
     "2026-11-29 12:00:20,000 INFO  rank 0 step 120 loss 2.0911 lr 3.0e-04 grad_norm 0.97 tokens/s 81277.9"],
])
def test_lines_of_one_width_that_do_not_go_on_are_no_wrap(lines: list[str]) -> None:
    assert hard_wrap_width(lines) is None


def test_a_wrapped_paste_saved_with_windows_line_ends_reads_as_the_same_paste(tmp_path: Path) -> None:
    lines = ["RuntimeError: DataLoader worker (pid 47) is killed by signal: Bus",
             "error. It is possible that dataloader's workers are out of shared",
             "memory. Please try to raise your shared memory limit."]
    for name, end in (("lf.log", "\n"), ("crlf.log", "\r\n")):
        path = tmp_path / name
        path.write_bytes(end.join(lines).encode() + end.encode())
        found = diagnose_paths([str(path)]).first
        assert found is not None and (found.cause, found.first_line.lineno) == ("shm-too-small", 1), name


def test_a_line_a_launcher_tagged_is_never_the_rest_of_a_wrapped_one(tmp_path: Path) -> None:
    # srun -l: two messages an excerpt cut at one width, each followed by a line of its own with the task's tag
    cut = ("ValueError: You can't train a model that has been loaded with `device_map='auto'` in any distributed mode. "
           "Please rerun your script specifying `--num_processes=")
    lines = ["3: Traceback (most recent call last):", '3:   File "/pwd/finetune.py", line 360, in <module>',
             "3:     train()", f"3: {cut}", "3: Traceback (most recent call last):",
             '3:   File "/pwd/finetune.py", line 360, in <module>', "3:     train()", f"3: {cut}",
             "3: [2023-12-26 01:52:14,748] torch.distributed.elastic.multiprocessing.api: [WARNING] Sending process 949 "
             "closing signal SIGTERM"]
    assert hard_wrap_width(lines) is None
    path = tmp_path / "tagged.log"
    path.write_text("\n".join(lines) + "\n")
    found = diagnose_paths([str(path)]).first
    assert found is not None and (found.cause, found.first_line.lineno) == ("device-mapping", 4)


@pytest.mark.parametrize("width", [100, 120])
def test_a_healthy_excerpt_wrapped_stays_healthy(width: int, tmp_path: Path) -> None:
    for path in sorted((LOGS / "healthy").glob("*.log")):
        copy = tmp_path / path.name
        copy.write_text("\n".join(wrapped(path.read_text(errors="replace").splitlines(), width)) + "\n")
        assert diagnose_paths([str(copy)]).findings == [], path.name
