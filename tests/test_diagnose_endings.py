"""How a job announces that it failed besides a Python traceback (issue 22 §1, "never silent on a failed job"):
a process that ended itself on a failed check (an assertion, a corrupt heap, a sanitizer, ROCclr's guarantee(), a
Go or Rust panic, MPI_ABORT), a container that Kubernetes OOM-killed, a launcher's non-zero exit, and a log whose
last events are error-level lines nothing came after. Each form has a healthy counterpart with the same word in a
context where the program went on: those give nothing."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from accelstack.diagnose import diagnose_lines, diagnose_paths
from accelstack.diagnose.reader import GREP_ENV, TAIL_BYTES
from accelstack.diagnose.structure import tail_kind

LOGS = Path(__file__).parent / "data" / "logs"
PROGRESS = [f"[rank0]: step {step} | loss 2.{step:04d} | 0.92 s/it" for step in range(1, 6)]


@pytest.mark.parametrize(("lines", "cause", "quoted"), [
    # ROCclr's guarantee() aborts; the table names the HIP error it quotes
    (['/src/rocclr/hip_code_object.cpp:120: guarantee(false && "hipErrorNoBinaryForGpu: Coudn\'t find binary for '
      'current devices!")'], "torch-build-mismatch", "hipErrorNoBinaryForGpu"),
    # glibc's assert, then the abort it raises
    (["python: /src/ext/pack.c:12: pack_rows: Assertion `n > 0' failed.", "Aborted (core dumped)"],
     "native-crash", "Assertion `n > 0' failed"),
    # glibc's heap checks, the stack protector, a sanitizer
    (["free(): double free detected in tcache 2"], "native-crash", "double free"),
    (["*** Error in `python': free(): invalid pointer: 0x00007f0000000010 ***"], "native-crash", "invalid pointer"),
    (["*** stack smashing detected ***: terminated"], "native-crash", "stack smashing"),
    (["==4242==ERROR: AddressSanitizer: heap-use-after-free on address 0x602000000010 at pc 0x7f"],
     "native-crash", "heap-use-after-free"),
    # Go's and Rust's panics, the Go runtime's fatal error
    (["panic: runtime error: index out of range [3] with length 3", "", "goroutine 1 [running]:", "main.main()",
      "\t/app/main.go:5 +0x1d", "exit status 2"], "unclassified", "index out of range"),
    (["fatal error: all goroutines are asleep - deadlock!"], "unclassified", "all goroutines are asleep"),
    (["thread 'main' panicked at src/main.rs:2:5:", "called `Option::unwrap()` on a `None` value"],
     "unclassified", "panicked at src/main.rs"),
    # Open MPI's report of a rank that called MPI_Abort
    (["MPI_ABORT was invoked on rank 3 in communicator MPI_COMM_WORLD", "with errorcode 1."],
     "unclassified", "MPI_ABORT was invoked on rank 3"),
    # the shell could not start the program
    (["/var/spool/slurmd/job42/slurm_script: line 5: torchrun: command not found"], "missing-module",
     "torchrun: command not found"),
    # Kubernetes's end of a container over its memory limit
    (["    Last State:     Terminated", "      Reason:       OOMKilled", "      Exit Code:    137"],
     "out-of-memory", "OOMKilled"),
    # CANN's error manager's messages, each with where it was raised, end the log (an NPU that would not open)
    (["(EngineCore pid=118)         rtGetDeviceCount execution failed, reason=driver error:internal error"
      "[FUNC:FuncErrorReason][FILE:error_message_manage.cc][LINE:65]",
      "(EngineCore pid=118)         get device count failed, runtime result = 507899.[FUNC:ReportCallError]"
      "[FILE:log_inner.cpp][LINE:148]"], "unknown-error-code", "rtGetDeviceCount execution failed"),
    # a library's own assertion macro, which aborts (ggml's two forms)
    (["GGML_ASSERT: llama.cpp/ggml-cuda/argsort.cu:48: (ncols & (ncols - 1)) == 0", "[New LWP 46883]",
      "[Thread debugging using libthread_db enabled]"], "unclassified", "argsort.cu:48"),
    (["/src/ggml.c:1234: GGML_ASSERT(ctx->mem_buffer != NULL) failed"], "unclassified", "GGML_ASSERT(ctx"),
    # a launcher's or a runtime's non-zero exit, alone
    (["worker-0 exited with code 1"], "unclassified", "exited with code 1"),
    # Open MPI's banner alone, as mpirun prints it before its block (or without one)
    (["-" * 74, "Primary job  terminated normally, but 1 process returned",
      "a non-zero exit code. Per user-direction, the job has been aborted.", "-" * 74],
     "unclassified", "Primary job  terminated normally"),
    (["Process finished with exit code 139"], "native-crash", "exit code 139"),
    # Windows' access violation, in hex, as Ollama reports its runner's end
    (['time=2024-05-10T22:52:42.838-04:00 level=ERROR source=sched.go:339 msg="error loading llama server" '
      'error="llama runner process has terminated: exit status 0xc0000005 "',
      '[GIN] 2024/05/10 - 22:52:42 | 500 |    2.7650401s |       127.0.0.1 | POST     "/api/chat"'],
     "native-crash", "0xc0000005"),
])
def test_a_process_that_ended_itself_is_a_failure(lines, cause, quoted):
    diagnosis = diagnose_lines([*PROGRESS, *lines])
    assert diagnosis.findings, lines
    first = diagnosis.findings[0]
    assert first.cause == cause
    assert quoted in first.extracted["error"] or any(quoted in line.text for line in first.evidence)


@pytest.mark.parametrize(("lines", "quoted"), [
    # glog's E, python logging's default and its basicConfig format, loguru's, tornado's
    (["E1126 12:00:01.123456 42 shard.cc:99] cannot open shard /data/x: bad header"], "bad header"),
    (["ERROR:root:Run failed: checksum mismatch in model.bin"], "checksum mismatch"),
    (["2026-11-26 12:00:01,000 - trainer - ERROR - data pipeline broke: shard 17 unreadable"], "shard 17"),
    (["2026-11-26 12:00:05.218 | CRITICAL | app:main:12 - model weights missing at /ckpt"], "weights missing"),
    (["[E 241126 12:00:05 train:42] dataset server unreachable"], "dataset server unreachable"),
    (['time="2026-11-26T12:00:05Z" level=fatal msg="cannot mount /data"'], "cannot mount /data"),
    # command-line tools' last word, with its stack or its exit after it
    (["Error: Cannot find module '/app/x.js'", "    at Module._resolveFilename (node:internal/modules/cjs:1077:15)",
      "{", "  code: 'MODULE_NOT_FOUND',", "}", "", "Node.js v18.17.0"], "Cannot find module"),
    (["fatal: unable to access 'https://example.com/x.git/': Could not resolve host: example.com"],
     "Could not resolve host"),
    # the first error of the block that ends the log is quoted (rustc's summary line follows the real error)
    (["error[E0425]: cannot find value `x` in this scope", " --> src/main.rs:2:13", "  |",
      "error: could not compile `foo` due to 1 previous error"], "cannot find value"),
    (["2026-11-26 12:00:06,000 ERROR ckpt: write failed: manifest is not valid JSON", "", "exit status 1"],
     "manifest is not valid JSON"),
    # CUDA's compiler driver, make, an exception's str() after a head that names no level
    (["nvcc fatal   : Unsupported gpu architecture 'compute_89'"], "Unsupported gpu architecture"),
    (["/usr/bin/ld: cannot find -lcudart", "make[2]: *** [CMakeFiles/ext.dir/build.make:97: ext.so] Error 1"],
     "Error 1"),
    (["[12:00:01] KeyError: 'labels'"], "KeyError: 'labels'"),
    # a handled traceback earlier (a retry) does not hide how the log ends
    (["WARNING: shard 12 unreadable, retrying", "Traceback (most recent call last):",
      '  File "/w/train.py", line 3, in <module>', "OSError: [Errno 5] Input/output error",
      "ERROR: giving up on /data: the mount is gone"], "the mount is gone"),
    # a server's or a launcher's teardown notice right after its error (TGI giving up on a shard that would not start)
    (["2024-03-06T17:53:31.149443Z ERROR text_generation_launcher: Shard 0 failed to start",
      "2024-03-06T17:53:31.149481Z  INFO text_generation_launcher: Shutting down shards"], "Shard 0 failed to start"),
    # a launcher prefix: the rank's own last lines count, another rank's idle lines do not hide them
    (["[rank1]:[E1126 12:00:01.123456 42 shard.cc:99] cannot open shard /data/x: bad header",
      "[rank1]: Aborting the rank"], "bad header"),
])
def test_a_log_that_ends_at_error_level_is_a_failure(lines, quoted):
    diagnosis = diagnose_lines([*PROGRESS, *lines])
    assert diagnosis.findings, lines
    first = diagnosis.findings[0]
    assert quoted in first.title or quoted in first.extracted["error"]
    assert first.actor in {"job", "config", "service", "node"}


@pytest.mark.parametrize("lines", [
    # an error-level line the program recovered from: progress, a success, an info line after it
    ["2026-11-26 12:00:01,000 - ERROR - fetch of shard 17 failed", "2026-11-26 12:00:02,000 - INFO - fetched shard 17",
     *PROGRESS],
    ["E1126 12:00:01.123456 42 io.cc:99] read timed out", "I1126 12:00:02.000000 42 io.cc:99] read done"],
    ["ERROR: push to the metrics gateway failed", "training finished, checkpoint saved"],
    # the error line itself says the program goes on
    ["ERROR: could not load the tensorboard plugin, continuing without it"],
    ["Error: cache server unreachable, falling back to the local cache"],
    # "error" in an info line, a warning that quotes an exception, counts of none
    ["INFO: validation error rate 0.8% (best so far)"],
    ["WARNING: caught ValueError while probing the tokenizer, using the slow one"],
    ["Ran 12 data checks, 0 errors, 0 failures"],
    # a progress bar, a success exit, a column header
    ["Epoch 1:  100%|##########| 1000/1000 [15:02<00:00,  1.11it/s]"],
    ["ERROR: a request timed out", " iteration      124/  250000 | lm loss: 2.559583E+00 | loss scale: 1.0"],
    ["Process finished with exit code 0", "worker-0 exited with code 0", "runner exited: exit status 0x0"],
    ["#       size         count      type   redop     time   algbw   busbw  error"],
    ["Top1 error: 100.0000 Top5 error: 100.0000", "the ValueError: raised by the probe was expected"],
    # the words of the abort forms in messages that are not those reports
    ["no panic: the loss spike was a data outlier", "guarantee: the run resumes from the last checkpoint", *PROGRESS],
    ["INFO: the pod was not OOMKilled this time", *PROGRESS],
    # TensorFlow's start-up, which logs its CUDA plugins' second registration at error level on every run, in both
    # of its loggers' forms
    ["2023-10-09 13:36:23.355516: E tensorflow/compiler/xla/stream_executor/cuda/cuda_dnn.cc:9342] Unable to "
     "register cuDNN factory: Attempting to register factory for plugin cuDNN when one has already been registered",
     "E0000 00:00:1736163964.090767 3415088 cuda_blas.cc:1418] Unable to register cuBLAS factory: Attempting to "
     "register factory for plugin cuBLAS when one has already been registered"],
    # an error a server went on from, then its ordinary end (a request that failed, then a Ctrl-C): an info line
    # after an error says the program went on, a teardown notice as much as any
    ["ERROR 11-29 10:00:00 serving_chat.py:12] Error in chat completion stream generator: client disconnected",
     "INFO:     Shutting down", "INFO:     Finished server process [42]"],
    # ... and so is one timed well after the error
    ["2024-03-06T17:53:31.149443Z ERROR api: request 12 failed: client went away",
     "2024-03-06T18:20:02.000000Z  INFO api: Shutting down"],
    # an assertion macro's name in a build note; Grappler's layout optimizer giving up on a graph it then runs
    ["INFO: built with -DGGML_ASSERT(x)=assert(x) failed-fast mode"],
    ["2023-07-19 10:00:00.123456: E tensorflow/core/grappler/optimizers/meta_optimizer.cc:954] layout failed: "
     "INVALID_ARGUMENT: Size of values 0 does not match size of permutation 4 @ fanin shape inmodel_5/dropout_10/"
     "dropout/SelectV2-2-TransposeNHWCToNCHW-LayoutOptimizer"],
    # a run that ends early on purpose after an error it logged
    ["ERROR: push to the metrics gateway failed", "INFO: Early stopping triggered at epoch 5", "INFO: exiting"],
])
def test_the_same_words_where_the_program_went_on_give_nothing(lines):
    assert diagnose_lines([*PROGRESS, *lines]).findings == []


def test_open_mpis_banner_and_its_block_are_one_report_of_the_first_failed_process():
    """The banner, "mpirun detected ..." and the first process's exit code are one report: nccl-tests' exit code 3
    (an NCCL call failed) still names it, as one finding."""
    lines = ["# nccl-tests version 2.13.8 nccl-headers=21903 nccl-library=21903",
             "#       size         count      type   redop    root     time   algbw   busbw #wrong",
             "-" * 74, "Primary job  terminated normally, but 1 process returned",
             "a non-zero exit code. Per user-direction, the job has been aborted.", "-" * 74,
             "mpirun detected that one or more processes exited with non-zero status, thus causing",
             "the job to be terminated. The first process to do so was:", "",
             "  Process name: [[4242,1],3]", "  Exit code:    3"]
    [found] = diagnose_lines(lines).findings
    assert found.id == "nccl:testNcclError"


def test_spawns_notice_that_it_ended_the_other_processes_is_no_signal_from_outside():
    """torch.multiprocessing.spawn sends the SIGTERM itself, after one process failed: the report is a failure,
    and its SIGTERM names no preemption."""
    notice = ("W0719 18:43:03.904000 131513588901696 torch/multiprocessing/spawn.py:145] Terminating process {} "
              "via signal SIGTERM")
    [found] = diagnose_lines([*PROGRESS, *(notice.format(pid) for pid in (25364, 25365, 25366))]).findings
    assert found.cause == "unclassified" and found.actor == "job"
    assert "spawn ended the other processes" in found.title
    assert "Only a launcher's or the scheduler's report" in found.explanation
    # the failed process's own error, where the log has it, is the finding
    lines = ["Traceback (most recent call last):", '  File "/w/train.py", line 3, in <module>', "KeyError: 'labels'",
             notice.format(25365)]
    assert [f.cause for f in diagnose_lines(lines).findings] == ["program-error"]


def test_deepspeeds_launcher_killing_its_ranks_is_one_report_with_its_return_code():
    """DeepSpeed's launcher kills every rank once one returned non-zero, then says which code: one report, named by
    the code where the paste holds it, and a failure where it is cut before it."""
    kills = [f"192.169.83.120: [2023-10-13 11:31:{28 + n}] [INFO] [launch.py:315:sigkill_handler] Killing subprocess "
             f"{249 + n}" for n in range(3)]
    code = ("192.169.83.120: [2023-10-13 11:31:40,600] [ERROR] [launch.py:321:sigkill_handler] ['/usr/bin/python', "
            "'-u', 'train.py', '--local_rank=1'] exits with return code = -9")
    [found] = diagnose_lines([*PROGRESS, *kills, code]).findings
    assert found.id == "linux:SIGKILL" and len(found.evidence) == 4
    [cut] = diagnose_lines([*PROGRESS, *kills]).findings
    assert cut.cause == "unclassified" and "DeepSpeed's launcher stopped every rank" in cut.title


def test_tensorflows_logger_ends_a_log_at_its_level():
    """TensorFlow's C++ logger (its date, then the level's letter): an E line that ends the log is a failure; the
    same message logged over and over as the program goes on (a probe that keeps failing) is not a last word."""
    stamp = "2023-10-30 00:30:{:02d}.{:06d}: E tensorflow/compiler/xla/stream_executor/cuda/cuda_driver.cc:1278] "
    [found] = diagnose_lines([*PROGRESS, stamp.format(39, 544727) + "could not open the model: bad header",
                              "2023-10-30 00:30:40.000001: W tensorflow/core/kernels/data/iterator_ops.cc:12] "
                              "iterator closed"]).findings
    assert found.extracted["error"].endswith("could not open the model: bad header")
    probe = "could not retrieve CUDA device count: CUDA_ERROR_NOT_INITIALIZED: initialization error"
    polling = [stamp.format(39 + step // 2, 100000 * step) + probe for step in range(6)]
    assert diagnose_lines([*PROGRESS, *polling]).findings == []
    # the same lines at one moment are several processes' last word: a failure
    at_once = [stamp.format(39, 544727 + step) + probe for step in range(6)]
    assert diagnose_lines([*PROGRESS, *at_once]).findings
    # and so are lines a second apart that differ but for their time (each names its worker)
    workers = [f"2024-05-01 10:00:0{n}.000 - ERROR - worker {n}: cannot open checkpoint shard: bad header"
               for n in range(1, 4)]
    assert diagnose_lines([*PROGRESS, *workers]).findings


def test_a_native_stack_ends_a_log_as_a_crash_and_stays_part_of_the_error_above_it():
    """A crashed process's frames (glibc's backtrace, Open MPI's signal handler, c10's, a Go crash's registers) are
    its error's trailer, however many; a paste that holds only the dump still shows the process died."""
    ompi = [f"[40a8c9673b05:1447852] [{n:2d}] /lib/x86_64-linux-gnu/libmpi.so.40(MPI_Bcast+0x121)[0x7fc1ff32d881]"
            for n in range(8, 16)]
    [found] = diagnose_lines(ompi).findings
    assert found.cause == "unclassified" and "native stack trace" in found.title
    assert found.first_line.lineno == 1
    glibc = ["2026-11-26 12:00:01,000 - ERROR - decoder crashed on shard 17",
             *(f"/lib/x86_64-linux-gnu/libc.so.6(+0x{n:x})[0x7f3b2c2{n:05x}]" for n in range(42520, 42530))]
    [found] = diagnose_lines([*PROGRESS, *glibc]).findings
    assert "decoder crashed on shard 17" in found.extracted["error"]
    registers = ["rax    0x0", "rbx    0x1b834e", "rcx    0x77f67e49eb1c", "rip    0x77f67e49eb1c", "rflags 0x246"]
    assert diagnose_lines([*PROGRESS, *registers]).findings
    # two frames are not a dump; a run that goes on after frames it printed is healthy
    assert diagnose_lines([*PROGRESS, *ompi[:2]]).findings == []
    assert diagnose_lines([*ompi, *PROGRESS]).findings == []
    # lines shaped like frames without a code address are a program's own output
    for healthy in (["[train.py:120] [0] epoch 1 step 100 loss 2.31", "[train.py:120] [0] epoch 1 step 200 loss 2.2",
                     "[train.py:120] [0] epoch 1 step 300 loss 2.1"],
                    [f"frame #{n}: decoded 1920x1080" for n in range(1, 4)], [f"rank 0x{n}" for n in range(3)]):
        assert diagnose_lines(healthy).findings == [], healthy
    went_on = ["ERROR: could not push metrics to wandb: timeout", "[train.py:120] [0] epoch 2 step 100 loss 2.31",
               "[train.py:120] [0] epoch 2 step 200 loss 2.21"]
    assert diagnose_lines(went_on).findings == []


def test_the_healthy_and_the_failing_ending_excerpts():
    assert diagnose_paths([str(LOGS / "healthy" / "endings-recovered.log")]).findings == []
    [found] = diagnose_paths([str(LOGS / "endings" / "final-logger-error.log")]).findings
    assert found.cause == "unclassified" and found.actor == "job"
    assert "manifest /ckpt/step-10/index.json is not valid JSON" in found.title
    assert found.first_line.lineno == 4


@pytest.mark.parametrize("grep", ["1", "0"])
@pytest.mark.parametrize("compressed", [False, True])
def test_the_end_of_a_long_log_is_read_whole(tmp_path, monkeypatch, grep, compressed):
    """The final error line holds no anchor of the prefilter, far past the first block; both readers and gzip keep
    the log's end, so it is found, with its line number; the same log with progress after the error is quiet."""
    monkeypatch.setenv(GREP_ENV, grep)
    body = "".join(f"[rank0]: step {step} | loss 1.{step % 10000:04d} | 0.92 s/it\n" for step in range(60_000))
    assert len(body) > 2 * TAIL_BYTES
    failing = body + "2026-11-26 12:00:06,000 - ERROR - shard index disagrees with its manifest\n"
    healthy = failing + "2026-11-26 12:00:07,000 - INFO - rebuilt the shard index, resuming\n" + body[:200]
    paths = []
    for name, text in (("failing.log", failing), ("healthy.log", healthy)):
        path = tmp_path / (name + (".gz" if compressed else ""))
        if compressed:
            path.write_bytes(gzip.compress(text.encode()))
        else:
            path.write_text(text)
        paths.append(path)
    [found] = diagnose_paths([str(paths[0])]).findings
    assert "shard index disagrees" in found.title and found.first_line.lineno == 60_001
    assert diagnose_paths([str(paths[1])]).findings == []


def test_a_log_without_a_final_newline_is_read_to_its_last_line(tmp_path):
    path = tmp_path / "cut.log"
    path.write_text("step 1 loss 2.0\nstep 2 loss 1.9\nERROR: lost the connection to the parameter server")
    [found] = diagnose_paths([str(path)]).findings
    assert found.first_line.lineno == 3


@pytest.mark.parametrize(("line", "kind"), [
    ("2026-11-26 12:00:01,000 - ERROR - x", "error"),
    ("ERROR 05-07 05:58:46 core.py:291] x", "error"),
    ("INFO 05-07 05:58:46 core.py:291] ERROR count 0", "progress"),  # the first level word is the line's
    ("W1126 12:00:01.000 42 x.cc:1] Warning: x", "neutral"),
    ("    at Object.<anonymous> (/app/x.js:1:1)", "trailer"),
    ("Segmentation fault (core dumped)", "trailer"),
    ("step 12 loss 2.0", "progress"),
    ("   iteration      124/  250000 | lm loss: 2.559583E+00", "progress"),  # indented, and progress
    ('  File "/w/train.py", line 9, in run_step', "trailer"),
    ("      Exit Code:    137", "trailer"),
    ("Exception: the loader gave up", "error"),
    ("Aborting the rank", "neutral"),
    ("INFO:     Shutting down", "teardown"),  # whose end it is, the tail decides by its time
    ("INFO 11-29 10:00:01 api_server.py:9] Application shutdown complete.", "teardown"),
    ("get device count failed, runtime result = 507899.[FUNC:ReportCallError][FILE:log_inner.cpp][LINE:148]",
     "error"),
    ("[WARNING] RUNTIME: slow path taken[FUNC:Launch][FILE:stream.cc][LINE:12]", "neutral"),  # its level first
    ("2020-05-26 14:57:35.273608: E horovod/common/operations.cc:516] Horovod background loop uncaught", "error"),
    ("2020-05-26 14:57:35.273608: W tensorflow/core/framework/op_kernel.cc:1318] OP_REQUIRES failed", "neutral"),
    # its level however long the file's path (the head read for a level is 100 characters)
    ("2020-05-26 14:57:35.273608: E tensorflow/stream_executor/platform/default/dso_loader.cc:64] Could not load "
     "dynamic library 'libcudart.so.11.0'", "error"),
    ("2020-05-26 14:57:35.273608: I tensorflow/core/common_runtime/gpu/gpu_device.cc:1700] Created device",
     "progress"),
    ("slurmstepd: error: _is_a_lwp: open() /proc/1/status failed", "neutral"),  # srun's lines: the tracker's rules
])
def test_what_a_line_at_the_end_says(line, kind):
    assert tail_kind(line) == kind
