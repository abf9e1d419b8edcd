"""A failed job is never silent: the structure of a failure (a traceback's last exception, torchrun's summary, a
signal, the scheduler's job-end lines, an Ascend plog's ERROR lines) always gives a finding, and a healthy log
(warnings, handled tracebacks, retries that succeed) gives none."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from accelstack.diagnose import diagnose_lines, diagnose_paths
from accelstack.diagnose.reader import GREP_ENV
from accelstack.diagnose.structure import split_prefix

LOGS = Path(__file__).parent / "data" / "logs"

NOISE = [
    "[rank0]: step 120 | loss 2.0311 | lr 3.0e-04 | 0.92 s/it",
    "Epoch 1:  12%|#2        | 120/1000 [01:50<13:31,  1.08it/s]",
    "gpu-node01:31001:31093 [0] NCCL INFO Channel 00/32 :    0   1   2   3",
    "/usr/lib/python3.11/site-packages/torch/utils/data/dataloader.py:558: UserWarning: This DataLoader will create "
    "16 worker processes in total.",
    "[W1123 10:00:00.000000 ProcessGroupNCCL.cpp:1575] Warning: a deprecated argument was used",
]
CLASSES = ["KeyError", "ValueError", "RuntimeError", "AssertionError", "mypkg.losses.NaNLossError",
           "trainer.callbacks.EarlyStopException", "KeyboardInterrupt", "Boom", "torch.AcceleratorError",
           "deepspeed.runtime.zero.ZeroParamError", "OSError", "SystemExit"]


def traceback_lines(exc_type: str, message: str, prefix: str = "") -> list[str]:
    head = f"{exc_type}: {message}" if message else exc_type
    return [f"{prefix}Traceback (most recent call last):",
            f'{prefix}  File "/workspace/train.py", line 88, in <module>',
            f"{prefix}    main()",
            f'{prefix}  File "/workspace/train.py", line 61, in main',
            f"{prefix}    step(batch)",
            f"{prefix}{head}"]


@pytest.mark.slow  # 300 generated logs diagnosed
def test_a_log_that_ends_in_a_traceback_is_never_without_a_finding():
    rng = random.Random(22)
    for case in range(300):
        exc_type = rng.choice(CLASSES)
        message = rng.choice(["", "boom", "'input_ids'", "shape mismatch (3, 4) vs (4, 3)", "Something went wrong"])
        prefix = rng.choice(["", "[rank3]: ", "[default1]:", "7: "])
        lines = rng.sample(NOISE, k=rng.randint(0, len(NOISE))) + traceback_lines(exc_type, message, prefix)
        if rng.random() < 0.3:
            lines.append(rng.choice(NOISE))  # a line of another rank after the traceback
        diagnosis = diagnose_lines(lines)
        assert diagnosis.findings, (case, lines)
        first = diagnosis.first
        assert first is not None and first.actor in ("node", "job", "config", "service")
        if prefix:
            assert first.first_line.rank == split_prefix(prefix + "x")[0], (case, lines)


def test_every_excerpt_that_ends_in_a_traceback_has_a_finding(monkeypatch):
    checked = 0
    for path in sorted(LOGS.rglob("*.log")):
        lines = [line for line in path.read_text(errors="replace").splitlines() if line.strip()]
        tail = lines[-8:]
        if not any("Traceback (most recent call last):" in line for line in tail):
            continue
        checked += 1
        for grep in ("1", "0"):
            monkeypatch.setenv(GREP_ENV, grep)
            assert diagnose_paths([str(path)]).findings, path
    assert checked >= 3


def test_an_unclassified_failure_quotes_its_error_where_it_was_raised():
    lines = traceback_lines("trainer.callbacks.EarlyStopException", "validation loss is NaN at step 4000", "[rank2]: ")
    diagnosis = diagnose_lines(lines)
    [found] = diagnosis.findings
    assert found.cause == "unclassified" and found.actor == "job" and found.layer == "structure"
    assert found.extracted["error"] == "trainer.callbacks.EarlyStopException: validation loss is NaN at step 4000"
    assert found.extracted["raised_at"] == "/workspace/train.py:61 in main"
    assert found.extracted["ranks"] == [2] and found.first_line.lineno == 6
    assert diagnosis.to_dict()["first"] == {**found.first_line.to_dict(), "id": found.id, "cause": "unclassified",
                                            "actor": "job", "layer": "structure"}


def test_a_class_no_pattern_knows_still_fails_the_job():
    # "Boom" ends in nothing an exception name ends in: the traceback without its exception line is the failure.
    diagnosis = diagnose_lines(traceback_lines("Boom", "") + ["[rank0]: step 121 | loss 2.0"])
    assert [f.cause for f in diagnosis.findings] == ["unclassified"]
    assert diagnosis.findings[0].first_line.lineno == 1


def test_a_traceback_cut_before_its_error_says_so_and_names_its_deepest_frame():
    """A paste that stops inside the stack: the finding does not quote "Traceback (most recent call last):" as if it
    were the error; it says the error line is missing and where the stack had got to."""
    cut = traceback_lines("RuntimeError", "CUDA out of memory", "[rank0]: ")[:-1]
    [found] = diagnose_lines(cut).findings
    assert found.cause == "unclassified" and found.actor == "job"
    assert found.title == "traceback cut off before its error (deepest frame: main)"
    assert "ends before its exception line" in found.explanation
    assert "/workspace/train.py:61 in main" in found.explanation
    assert "exception after the deepest frame" in found.remedy
    # the whole traceback names its error as before; one whose exception line is there, in a form no pattern
    # reads, is not said to be cut
    [whole] = diagnose_lines(traceback_lines("trainer.BoomError", "x", "[rank0]: ")).findings
    assert "cut off" not in whole.title and "cut off" not in whole.explanation
    [unread] = diagnose_lines(traceback_lines("mypkg.Boom", "the shard map is stale")).findings
    assert unread.cause == "unclassified" and "cut off" not in unread.title and "cut" not in unread.explanation


def test_a_paste_that_starts_and_ends_inside_a_stack_is_a_cut_traceback():
    """Frames with neither header nor exception line, that the log ends in, several deep: a traceback the paste cut
    at both ends (a host's prefix on every line, as pdsh writes it)."""
    frames = [f'gpu003:   File "/w/{name}.py", line {n}, in {name}' for n, name in ((5, "main"), (31, "run_exp"),
                                                                                      (2104, "main_process_first"))]
    lines = [line for frame in frames for line in (frame, "gpu003:     step()")]
    [found] = diagnose_lines(lines).findings
    assert found.cause == "unclassified" and found.title == ("traceback cut off before its error "
                                                            "(deepest frame: main_process_first)")
    # two frames may be a stack quoted in a message; frames the log goes on after are no end of it
    assert diagnose_lines(lines[:4]).findings == []
    assert diagnose_lines([*lines, "gpu003: step 12 | loss 2.01"]).findings == []
    # a stack printed on purpose under its own header (logging's stack_info) is no traceback
    stack_info = ["WARNING:root:deprecated call", "Stack (most recent call last):",
                  *(line.removeprefix("gpu003: ") for line in lines)]
    assert diagnose_lines(stack_info).findings == []


def test_a_chained_traceback_is_one_failure_classified_by_any_of_its_blocks():
    lines = [*traceback_lines("OSError", "[Errno 28] No space left on device"), "",
             "During handling of the above exception, another exception occurred:", "",
             *traceback_lines("RuntimeError", "checkpoint save failed")]
    diagnosis = diagnose_lines(lines)
    [found] = diagnosis.findings
    assert found.cause == "disk-full" and found.actor == "service"
    assert found.extracted["chained_from"] == ["OSError: [Errno 28] No space left on device"]
    assert found.extracted["error"] == "RuntimeError: checkpoint save failed"


def test_the_same_error_on_every_rank_is_one_finding():
    lines = []
    for rank in range(4):
        lines += traceback_lines("KeyError", "'labels'", f"[rank{rank}]: ")
    [found] = diagnose_lines(lines).findings
    assert found.cause == "program-error" and found.extracted["ranks"] == [0, 1, 2, 3]


@pytest.mark.parametrize("lines", [
    # logging's warning with exc_info before a retry, then the program goes on
    ["2026-11-23 10:00:01,100 WARNING loader: shard 12 unreadable, retrying in 1 s",
     *traceback_lines("FileNotFoundError", "[Errno 2] No such file or directory: '/data/shard-12.bin'"),
     "2026-11-23 10:00:01,300 INFO loader: step 13 loss 1.2"],
    # a retry notice right after the traceback
    [*traceback_lines("ConnectionResetError", "[Errno 104] Connection reset by peer"),
     "Retrying download in 5 s (attempt 2/5)", "download complete"],
    # the interpreter's report of an exception it could not raise, at shutdown
    ["Exception ignored in: <function _MultiProcessingDataLoaderIter.__del__ at 0x7f>",
     *traceback_lines("AttributeError", "'NoneType' object has no attribute 'python_exit_status'")],
    # a warning's own format is not an exception line
    ["/opt/x.py:12: FutureWarning: `resume_download` is deprecated", "  warnings.warn("],
    # the kernel's and the shell's words inside messages
    ["cleanup: Killed 0 stale processes", "Aborted runs are kept for 7 days", "Terminated: no"],
    # slurmstepd's complaint about a process that raced its exit
    ["slurmstepd: error: _is_a_lwp: open() /proc/1234/status failed: No such file or directory"],
    # NCCL's probe of a transport it then does without
    ["node1:1:1 [0] NCCL INFO misc/ibvwrap.cc:190 Call to ibv_open_device failed",
     "node1:1:1 [0] NCCL INFO NET/IB : No device found.", "node1:1:1 [0] NCCL INFO Using network Socket"],
    # an error-level line that no table names
    ["ERROR: could not find the tensorboard plugin, continuing without it", "step 1 loss 2.0"],
])
def test_healthy_lines_give_nothing(lines):
    assert diagnose_lines(lines).findings == []


def test_torchruns_root_cause_speaks_when_the_rank_left_no_error_of_its_own():
    # Rank 1 was killed without a word; rank 0 only saw its peer close the connection.
    lines = [
        "[rank0]: RuntimeError: [../gloo/transport/tcp/pair.cc:553] Connection closed by peer [10.0.0.2]:42124",
        "W1126 13:43:26.786000 20307 api.py:1028] Sending process 20349 closing signal SIGTERM",
        "E1126 13:43:26.804000 20307 api.py:1002] failed (exitcode: -9) local_rank: 1 (pid: 20350) of binary: python",
        "Traceback (most recent call last):",
        '  File "/usr/bin/torchrun", line 8, in <module>',
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
        "Failures:", "[1]:",
        "  rank      : 0 (local_rank: 0)", "  exitcode  : -15 (pid: 20349)", "  traceback : Signal 15 (SIGTERM) received by PID 20349",
        "Root Cause (first observed failure):", "[0]:",
        "  rank      : 1 (local_rank: 1)", "  exitcode  : -9 (pid: 20350)", "  traceback : Signal 9 (SIGKILL) received by PID 20350",
    ]
    diagnosis = diagnose_lines(lines)
    first = diagnosis.first
    assert first is not None and first.cause == "out-of-memory" and first.id == "linux:SIGKILL"
    assert first.extracted["ranks"] == [1] and "peer-exited" in [f.cause for f in diagnosis.findings]


def test_torchruns_summary_is_silent_when_the_failing_rank_said_why():
    lines = [*traceback_lines("ValueError", "bad config", "[rank0]: "),
             "E1126 api.py:1002] failed (exitcode: 1) local_rank: 0 (pid: 2) of binary: python",
             "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
             "Root Cause (first observed failure):", "[0]:",
             "  rank      : 0 (local_rank: 0)", "  exitcode  : 1 (pid: 2)"]
    assert [f.cause for f in diagnose_lines(lines).findings] == ["program-error"]


def test_a_launchers_exit_report_alone_is_a_finding():
    diagnosis = diagnose_lines(["srun: error: gpu-node03: task 5: Exited with exit code 3"])
    [found] = diagnosis.findings
    assert found.cause == "unclassified" and "add the failing rank's own log" in found.explanation


@pytest.mark.parametrize(("line", "cause"), [
    ("/var/spool/slurmd/job1/slurm_script: line 9: 4242 Killed                  python train.py", "out-of-memory"),
    ("Segmentation fault (core dumped)", "native-crash"),
    ("Illegal instruction (core dumped)", "torch-build-mismatch"),
    ("Fatal Python error: Segmentation fault", "native-crash"),
    ("*** SIGSEGV received at time=1700000000 on cpu 3 ***", "native-crash"),
    ("slurmstepd: error: *** STEP 12.0 ON node2 CANCELLED AT 2026-11-23T10:00:00 DUE TO NODE FAILURE, SEE SLURMCTLD "
     "LOG FOR DETAILS ***", "node-failure"),
    ("slurmstepd: error: *** JOB 12 ON node2 CANCELLED AT 2026-11-23T10:00:00 DUE TO PREEMPTION ***", "preempted"),
    ("slurmstepd: error: Detected 1 oom_kill event in StepId=12.0. Some of the step tasks have been OOM Killed.",
     "out-of-memory"),
    ("srun: error: node2: task 0: Out Of Memory", "out-of-memory"),
    ("[ERROR] HCCL(3608,python):2025-05-13-02:25:58.068.817 [op_base.cc:974][Init]HcclCommInitRootInfo failed.",
     "hccl-api-error"),
    ("node1:7:9 [1] include/shm.h:28 NCCL WARN Call to posix_fallocate failed : No space left on device",
     "shm-too-small"),
    ("/b/THCTensorIndex.cu:321: indexSelect: block: [18,0,0], thread: [64,0,0] Assertion `srcIndex < size` failed.",
     "device-assert"),
    ("RuntimeError: CUDA error: no kernel image is available for execution on the device", "torch-build-mismatch"),
])
def test_a_failure_without_a_traceback_is_found_and_classified(line, cause):
    diagnosis = diagnose_lines(["[rank0]: step 1 loss 2.0", line])
    assert diagnosis.first is not None and diagnosis.first.cause == cause, [f.id for f in diagnosis.findings]


def test_terminate_called_takes_its_cause_from_what():
    lines = ["terminate called after throwing an instance of 'c10::Error'",
             "  what():  CUDA error: an illegal instruction was encountered"]
    first = diagnose_lines(lines).first
    assert first is not None and first.cause == "device-assert"


def test_a_plog_failure_is_one_event_per_process_named_by_its_code():
    lines = ["[ERROR] RUNTIME(5102,python3):2026-11-23-10:01:00.000.001 [stream.cc:1042] 5102 stream sync failed",
             "[ERROR] RUNTIME(5102,python3):2026-11-23-10:01:00.000.002 [api_c.cc:88] 5102 aclrtSynchronizeStream: "
             "error code is 507015"]
    [found] = diagnose_lines(lines).findings
    assert found.cause == "device-assert" and found.evidence_count == 2


def test_the_first_is_the_earliest_failing_ranks_error_ahead_of_the_timeouts_it_caused():
    lines = [*traceback_lines("IndexError", "index 7 is out of bounds", "[rank2]: "),
             "[rank0]:[E1123 10:30:00.000000 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective operation "
             "timeout: WorkNCCL(SeqNum=9, OpType=ALLREDUCE, NumelIn=8, NumelOut=8, Timeout(ms)=600000) ran for 600010 "
             "milliseconds before timing out."]
    diagnosis = diagnose_lines(lines)
    assert [f.cause for f in diagnosis.findings] == ["program-error", "collective-timeout"]
    assert diagnosis.findings[1].consequence_of == "program-error"


def test_ranks_that_time_out_in_different_collectives_are_a_desync():
    timeout = ("[rank{r}]:[E1123 10:39:0{r}.000000 ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog caught collective "
               "operation timeout: WorkNCCL(SeqNum={s}, OpType={op}, NumelIn=8, NumelOut=8, Timeout(ms)=600000) ran "
               "for 600011 milliseconds before timing out.")
    desync = diagnose_lines([timeout.format(r=1, s=313, op="_ALLGATHER_BASE"),
                             timeout.format(r=0, s=315, op="ALLREDUCE")])
    assert [f.cause for f in desync.findings] == ["collective-mismatch", "collective-timeout"]
    assert desync.first is not None and desync.first.actor == "job"
    assert desync.first.extracted["collectives"] == {"0": "ALLREDUCE #315", "1": "_ALLGATHER_BASE #313"}
    assert desync.findings[1].consequence_of == "collective-mismatch"
    # Every rank waiting in the same collective is a straggler or a dead rank: no desync is claimed.
    same = diagnose_lines([timeout.format(r=r, s=88, op="ALLREDUCE") for r in range(4)])
    assert [f.cause for f in same.findings] == ["collective-timeout"]


def test_ranks_that_time_out_in_the_same_kind_of_collective_at_different_sequence_numbers_are_a_desync():
    """Rank 1 two all-gathers ahead of rank 0, in the one process group every line names: they no longer issue the
    same collectives. Where the lines name no group (torch before 2.3) or several, the numbers tell nothing: a job
    with tensor- and data-parallel groups counts each apart."""
    grouped = ("[rank{r}]:[E1123 10:39:00.000000 ProcessGroupNCCL.cpp:632] [PG ID {g} PG GUID {g}({name}) Rank "
               "{q}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum={s}, OpType={op}, NumelIn=8, "
               "NumelOut=8, Timeout(ms)=600000) ran for 600011 milliseconds before timing out.")
    one_group = diagnose_lines([grouped.format(r=r, g=0, name="default_pg", q=r, s=7559 + 2 * r,
                                               op="_ALLGATHER_BASE") for r in range(2)])
    assert [f.cause for f in one_group.findings] == ["collective-mismatch", "collective-timeout"]
    assert one_group.first is not None and one_group.first.actor == "job"
    assert one_group.first.extracted["collectives"] == {"0": "_ALLGATHER_BASE #7559", "1": "_ALLGATHER_BASE #7561"}
    # torch < 2.3: the watchdog names the rank ("[Rank 1]") but no group
    plain = ("[E ProcessGroupNCCL.cpp:719] [Rank {r}] Watchdog caught collective operation timeout: "
             "WorkNCCL(SeqNum={s}, OpType=_ALLGATHER_BASE, Timeout(ms)=1800000) ran for 1806456 milliseconds "
             "before timing out.")
    unnamed = diagnose_lines([plain.format(r=0, s=7559), plain.format(r=1, s=7561)])
    assert [f.cause for f in unnamed.findings] == ["collective-timeout"]
    # torch 2.3 names the group in the line's outer bracket: two groups count apart, whatever the kinds
    outer = ("[rank{r}]:[E ProcessGroupNCCL.cpp:1414] [PG {g} Rank {r}] Process group watchdog thread terminated "
             "with exception: [Rank {r}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum={s}, "
             "OpType={op}, NumelIn=8, NumelOut=8, Timeout(ms)=600000) ran for 600098 milliseconds before timing out.")
    two_groups = diagnose_lines([outer.format(r=0, g=0, s=40, op="ALLREDUCE"),
                                 outer.format(r=1, g=2, s=913, op="_ALLGATHER_BASE")])
    assert [f.cause for f in two_groups.findings] == ["collective-timeout"]
    # a rank that reports several pending works (#96117 and #96125): nothing is claimed from the numbers
    several = diagnose_lines([grouped.format(r=0, g=0, name="default_pg", q=0, s=seq, op="ALLREDUCE")
                              for seq in (96117, 96125)]
                             + [grouped.format(r=7, g=0, name="default_pg", q=7, s=64088, op="ALLREDUCE")])
    assert [f.cause for f in several.findings] == ["collective-timeout"]


def test_a_c10_error_is_read_with_its_message_above_it():
    """c10 prints what() first, then "Exception raised from ... (most recent call first):" and the C++ frames: the
    watchdog's timeout line above it is that error's message, so the timeout explains it (it is no second,
    unclassified failure that outranks the timeout)."""
    lines = [
        "[rank14]:[E ProcessGroupNCCL.cpp:1414] [PG 1 Rank 14] Process group watchdog thread terminated with "
        "exception: [Rank 14] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=15734, OpType=ALLREDUCE, "
        "NumelIn=220084533, NumelOut=220084533, Timeout(ms)=600000) ran for 600098 milliseconds before timing out.",
        "Exception raised from checkTimeout at ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:565 (most recent "
        "call first):",
        "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x57 (0x7f0bf5f7a897 in libc10.so)",
    ]
    assert [f.cause for f in diagnose_lines(lines).findings] == ["collective-timeout"]
    # A message no signature names, above the same line: the failure is still found, and quoted; so it is where a
    # timeout stands above that message (the timeout is not this error's message)
    [found] = diagnose_lines(["[rank0]:[E ProcessGroupGloo.cpp:12] the shard map is stale", *lines[1:]]).findings
    assert found.cause == "unclassified" and "checkTimeout" in found.title
    both = diagnose_lines([lines[0], "[rank14]:[E shard.cpp:12] the shard map is stale", *lines[1:]]).findings
    assert sorted(f.cause for f in both) == ["collective-timeout", "unclassified"]


def test_two_ranks_writing_one_line_at_once_still_name_their_class():
    lines = ["Traceback (most recent call last):", "Traceback (most recent call last):",
             '  File "/app/train.py", line 9, in <module>', "KeyErrorKeyError: : 'input_ids_j'"]
    first = diagnose_lines(lines).first
    assert first is not None and first.cause == "program-error" and first.id == "python:KeyError"


@pytest.mark.parametrize(("lines", "cause", "raised_at"), [
    # vLLM logs each line of a traceback through its logger: the prefix is learned from the header and stripped.
    (["ERROR 05-07 05:58:46 core.py:291] EngineCore hit an exception: Traceback (most recent call last):",
      'ERROR 05-07 05:58:46 core.py:291]   File "/vllm/v1/engine/core.py", line 282, in run_engine_core',
      "ERROR 05-07 05:58:46 core.py:291]     engine_core = EngineCoreProc(*args, **kwargs)",
      "ERROR 05-07 05:58:47 core.py:291] ValueError: max seq len (32768) is larger than the KV cache holds"],
     "program-error", "/vllm/v1/engine/core.py:282 in run_engine_core"),
    # journald's prefix on every line
    (["Nov 23 10:00:01 node1 python3[4242]: Traceback (most recent call last):",
      'Nov 23 10:00:01 node1 python3[4242]:   File "/a.py", line 1, in <module>',
      "Nov 23 10:00:01 node1 python3[4242]: PermissionError: [Errno 13] Permission denied: '/data'"],
     "permission-denied", "/a.py:1 in <module>"),
    # Ray's worker prefix, and its wrapper class around the remote error's
    (["(RayWorkerWrapper pid=4242, ip=10.0.0.2) Traceback (most recent call last):",
      '(RayWorkerWrapper pid=4242, ip=10.0.0.2)   File "/w.py", line 3, in execute',
      "ray.exceptions.RayTaskError(OutOfMemoryError): ray::RayWorkerWrapper.execute_method() (pid=4242)"],
     "out-of-memory", "/w.py:3 in execute"),
    # IPython's header has the class first and no colon
    (["---------------------------------------------------------------------------",
      "ModuleNotFoundError                       Traceback (most recent call last)", "Cell In[3], line 1",
      "----> 1 import deepspeed", "ModuleNotFoundError: No module named 'deepspeed'"],
     "missing-module", None),
])
def test_tracebacks_behind_a_loggers_prefix_are_read(lines, cause, raised_at):
    first = diagnose_lines(lines).first
    assert first is not None and first.cause == cause
    assert first.extracted.get("raised_at") == raised_at


@pytest.mark.parametrize("lines", [
    ["[launch.py:351:main] Process 4242 exits with return code = 0"],
    ["2026-11-23 10:00:01 ERROR uploader: Connection refused, retrying in 5 s", "uploaded on attempt 2"],
    ["[  101.2] blk_update_request: I/O error, dev fd0, sector 0 op 0x0:(READ) flags 0x0 phys_seg 1 prio class 0"],
])
def test_reports_of_success_and_recovered_errors_give_nothing(lines):
    assert diagnose_lines(lines).findings == []
