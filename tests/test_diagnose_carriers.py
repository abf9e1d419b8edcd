"""A log reads the same whatever carried it: Docker Compose's service column, the RFC 3339 stamp of `docker logs -t`
and `kubectl logs --timestamps`, journald's and syslog's head, `kubectl logs --prefix`, a Markdown quote, a paste
indented as a code block, and the tags of the launchers that gather many processes' output: pdsh's host (DeepSpeed's
multi-node runner), Open MPI's --tag-output, Ray's and vLLM's worker prefix. Before the carriers were read off, one log in ten of the corpus's development part lost
its right finding under one of them (most went silent); every excerpt of tests/data/logs must now give the same
first finding, or none, under each."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

from accelstack.diagnose import diagnose_lines
from accelstack.diagnose.reader import carrier_host, carrier_rank, split_carrier

from .helpers import first_cause

LOGS = Path(__file__).parent / "data" / "logs"
EXCERPTS = sorted(p for p in LOGS.rglob("*.log") if "h100" not in p.parts)

CARRIERS = {
    "compose": lambda lines: [f"trainer-1  | {line}" for line in lines],
    "compose-v1-stamped": lambda lines: [f"trainer_1   | 2026-11-26T10:00:00.123456789Z {line}" for line in lines],
    "kubectl-timestamps": lambda lines: [f"2026-11-26T10:00:{i % 60:02d}.123456789Z {line}"
                                         for i, line in enumerate(lines)],
    "journald": lambda lines: [f"Nov 26 10:00:00 node07 python3[4242]: {line}" for line in lines],
    "journald-iso": lambda lines: [f"2026-11-26T10:00:00+0000 node07 python3[4242]: {line}" for line in lines],
    "kubectl-prefix": lambda lines: [f"[pod/trainer-0/pytorch] {line}" for line in lines],
    "markdown-quote": lambda lines: [f"> {line}" for line in lines],
    "code-block": lambda lines: [f"    {line}" for line in lines],
    "pdsh": lambda lines: [f"worker-3: {line}" for line in lines],
    "pdsh-address": lambda lines: [f"10.0.0.12: {line}" for line in lines],
    "open-mpi-tag": lambda lines: [f"[1,3]<stderr>:{line}" for line in lines],
    "horovod-gloo-tag": lambda lines: [f"[3]<stdout>:{line}" for line in lines],
    "ray": lambda lines: [f"(RayWorkerWrapper pid=4242, ip=10.0.0.2) {line}" for line in lines],
    "vllm-worker": lambda lines: [f"(VllmWorker TP1 pid=77) {line}" for line in lines],
}


def read(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8", errors="replace").splitlines()


def test_there_are_excerpts_of_failures_and_of_healthy_runs():
    found = [first_cause(read(path)) for path in EXCERPTS]
    assert len(EXCERPTS) >= 100
    assert sum(f is not None for f in found) >= 60 and sum(f is None for f in found) >= 10


@functools.cache
def bare_cause(path: Path) -> tuple[str, str] | None:
    return first_cause(read(path))


@pytest.mark.parametrize("carrier", sorted(CARRIERS))
def test_every_excerpt_reads_the_same_under_a_carrier(carrier):
    changed = []
    for path in EXCERPTS:
        bare, carried = bare_cause(path), first_cause(CARRIERS[carrier](read(path)))
        if bare != carried:
            changed.append(f"{path.relative_to(LOGS)}: {bare} -> {carried}")
    assert changed == []


@pytest.mark.parametrize("line, carrier, rest", [
    ("trainer-1  | RuntimeError: x", "trainer-1  | ", "RuntimeError: x"),
    ("trainer_1   | 2026-11-26T10:00:00.5Z E1126 x", "trainer_1   | 2026-11-26T10:00:00.5Z ", "E1126 x"),
    ("2026-11-26T10:00:00.123456789Z [rank3]: x", "2026-11-26T10:00:00.123456789Z ", "[rank3]: x"),
    ("Nov  6 10:00:00 node07 kernel: NVRM: Xid (PCI:0000:17:00): 79", "Nov  6 10:00:00 node07 kernel: ",
     "NVRM: Xid (PCI:0000:17:00): 79"),
    ("2026-11-26T10:00:00+0100 gpu-3.cluster slurmstepd[77]: error: x",
     "2026-11-26T10:00:00+0100 gpu-3.cluster slurmstepd[77]: ", "error: x"),
    ("[pod/trainer-0/pytorch] Killed", "[pod/trainer-0/pytorch] ", "Killed"),
    (">     raise ValueError(x)", "> ", "    raise ValueError(x)"),
    ("worker-0: RuntimeError: x", "worker-0: ", "RuntimeError: x"),
    ("ip-10-0-0-7.ec2.internal: Traceback (most recent call last):", "ip-10-0-0-7.ec2.internal: ",
     "Traceback (most recent call last):"),
    ("192.168.1.20: [rank5]: x", "192.168.1.20: ", "[rank5]: x"),
    ("[1,22]<stdout>:node2:27:568 [6] NCCL INFO x", "[1,22]<stdout>:", "node2:27:568 [6] NCCL INFO x"),
    ("(RayTrainWorker pid=9, ip=10.0.0.2) [rank1]: x", "(RayTrainWorker pid=9, ip=10.0.0.2) ", "[rank1]: x"),
    ("(EngineCore_DP0 pid=1742) ERROR 09-28 15:47:24 [core.py:718] x", "(EngineCore_DP0 pid=1742) ",
     "ERROR 09-28 15:47:24 [core.py:718] x"),
])
def test_a_carrier_is_read_off_the_line(line, carrier, rest):
    assert split_carrier(line) == (carrier, rest)


@pytest.mark.parametrize("line", [
    "RuntimeError: CUDA error: out of memory",
    # a container runtime's stamp before a message that looks like a syslog head: "CUDA" is no host, "error" no ident
    "CUDA error: uncorrectable ECC error encountered",
    "2026-11-26 10:00:00,123 - ERROR - x",  # python logging's own stamp is the program's words
    "[rank3]:[E1126 10:00:00.000000 4242 ProcessGroupNCCL.cpp:616] x",
    "|  0  NVIDIA H200  On  | 00000000:17:00.0 Off |",  # nvidia-smi's table
    "Nov 26 was the day the job ran",
    # not hosts: an Ascend error code, slurmstepd's own name (it carries the node's), an exception class with a
    # digit, a word without one, srun -l's rank number
    "EI0006: 2024-08-05-18:15:21.270.506 Getting socket times out.",
    "slurmstepd-lab1: error: *** STEP 1.0 ON lab1 CANCELLED AT 2026-11-26T13:51:43 DUE TO TIME LIMIT ***",
    "HTTP2Error: stream reset",
    "Warning: x",
    "3: RuntimeError: x",
    "(see above) RuntimeError: x",
])
def test_a_program_line_keeps_its_words(line):
    assert split_carrier(line) == ("", line)
    assert split_carrier(f"2026-11-26T10:00:00.1Z {line}")[1] == line


def test_a_finding_keeps_the_time_and_host_its_carrier_gave():
    lines = ["Nov 26 10:00:07 node07 python3[4242]: Traceback (most recent call last):",
             'Nov 26 10:00:07 node07 python3[4242]:   File "train.py", line 3, in <module>',
             "Nov 26 10:00:07 node07 python3[4242]:     loss.backward()",
             "Nov 26 10:00:07 node07 python3[4242]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate "
             "2.00 GiB. GPU 0 has a total capacity of 79.11 GiB of which 1.06 GiB is free."]
    found = diagnose_lines(lines).first
    assert found is not None and found.cause == "out-of-memory"
    assert {line.host for line in found.evidence} == {"node07"}
    assert all(not line.text.startswith("Nov 26") for line in found.evidence)
    assert carrier_host("Nov 26 10:00:07 node07 python3[4242]: ") == "node07"
    assert carrier_host("gpu-12: ") == "gpu-12"
    assert carrier_host("(RayWorkerWrapper pid=4242, ip=10.0.0.2) ") == "10.0.0.2"
    stamped = [f"2026-11-26T10:00:0{i}.5Z {line.split(': ', 1)[1]}" for i, line in enumerate(lines)]
    found = diagnose_lines(stamped).first
    assert found is not None and found.cause == "out-of-memory"
    assert all(line.time and line.time.startswith("2026-11-26T10:00:0") for line in found.evidence)


def test_an_indented_paste_is_read_as_written_and_a_traceback_keeps_its_own_indent():
    traceback = ["Traceback (most recent call last):",
                 '  File "train.py", line 3, in <module>',
                 "    x = torch.load(path)",
                 "PermissionError: [Errno 13] Permission denied: '/ckpt/step100.pt'"]
    assert first_cause(traceback) == first_cause([f"    {line}" for line in traceback]) is not None
    # A log whose own lines are indented under a line that is not (a warning's source line) is no paste.
    warning = ["/opt/venv/lib/python3.11/site-packages/torch/cuda/__init__.py:61: FutureWarning: x is deprecated",
               "  import pynvml  # type: ignore[import]",
               "  RuntimeError: this is quoted in a warning, not raised"]
    assert diagnose_lines(warning).findings == []


def test_a_launchers_tag_keeps_each_ranks_traceback_its_own():
    """Open MPI's --tag-output interleaves the ranks' lines: each rank's traceback is read on its own, and the
    finding names the rank the tag gave."""
    tb3 = ["Traceback (most recent call last):", '  File "train.py", line 9, in <module>', "    step()",
           "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3 has a total capacity of "
           "79.11 GiB of which 1.06 GiB is free."]
    tb1 = ["Traceback (most recent call last):", '  File "train.py", line 9, in <module>', "    step()",
           "RuntimeError: Horovod has been shut down. This was caused by an exception on one of the ranks"]
    lines = []
    for three, one in zip(tb3, tb1, strict=True):
        lines += [f"[1,3]<stderr>:{three}", f"[1,1]<stderr>:{one}"]
    found = diagnose_lines(lines).first
    assert found is not None and found.cause == "out-of-memory"
    assert found.first_line.rank == 3
    assert carrier_rank("[1,3]<stderr>:") == 3 and carrier_rank("(RayTrainWorker rank=2 pid=9) ") == 2
    assert carrier_rank("worker-3: ") is None

