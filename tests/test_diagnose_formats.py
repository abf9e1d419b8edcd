"""Forms of failure that other tools and older versions print (issue 22's fifth pass, written from the development
part of batch b10): torch's watchdog line before it carried SeqNum, NCCL's wrapped CUDA errors, compiler
diagnostics of an extension built at run time, the MPI launchers and their ssh, Horovod, nccl-tests' own check.
Each excerpt follows the public format cited beside it; none is copied from the corpus."""

from __future__ import annotations

from accelstack.diagnose import diagnose_lines

from .helpers import first_finding as first


def quiet(lines: list[str]) -> None:
    diagnosis = diagnose_lines(lines)
    assert diagnosis.findings == [], [(f.id, f.cause) for f in diagnosis.findings]


# ---- torch's watchdog line, every generation ----

def test_a_watchdog_timeout_of_a_torch_before_seqnum_is_a_collective_timeout():
    # torch <= 1.9 printed WorkNCCL(OpType=..., Timeout(ms)=...) without SeqNum; a terminal wider than the line
    # wraps it ("before timing" / "out."). ProcessGroupNCCL.cpp's history: https://github.com/pytorch/pytorch
    old = ["[E ProcessGroupNCCL.cpp:485] [Rank 6] Watchdog caught collective operation timeout: "
           "WorkNCCL(OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1802246 milliseconds before timing ",
           "out.   "]
    found = first(old)
    assert (found.id, found.cause, found.actor) == ("nccl-watchdog-timeout", "collective-timeout", "config")
    assert found.extracted["timeout_ms"] == 1800000 and "seq_num" not in found.extracted
    new = ["[rank3]:[E1126 10:00:00.000000 4242 ProcessGroupNCCL.cpp:616] [Rank 3] Watchdog caught collective "
           "operation timeout: WorkNCCL(SeqNum=91, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran "
           "for 600051 milliseconds before timing out."]
    assert first(new).extracted["seq_num"] == 91


# ---- NCCL's unhandled cuda error names the CUDA error it wraps ----

NCCL_CUDA = ["Traceback (most recent call last):",
             '  File "train.py", line 12, in <module>',
             "    dist.all_reduce(t)",
             "RuntimeError: NCCL Error 1: unhandled cuda error",
             "node1:50555:50555 [0] NCCL WARN Cuda failure '{}'",
             "node1:50555:50555 [0] NCCL INFO Bootstrap : Using eth0:172.17.0.2<0>"]


def test_ncclunhandledcudaerror_takes_the_cause_of_the_cuda_error_its_warn_quotes():
    # NCCL's CUDACHECK prints "Cuda failure 'cudaGetErrorString(err)'" (src/include/checks.h,
    # https://github.com/NVIDIA/nccl); the CUDA runtime table keys those strings.
    build = first([line.format("named symbol not found") for line in NCCL_CUDA])
    assert (build.cause, build.actor) == ("torch-build-mismatch", "config")
    assert build.extracted["named_by"] == "cuda-runtime:cudaErrorSymbolNotFound"
    ecc = first([line.format("uncorrectable ECC error encountered") for line in NCCL_CUDA])
    assert (ecc.cause, ecc.actor) == ("device-hardware", "node")


def test_ncclunhandledcudaerror_without_a_warn_stays_nccls():
    found = first([line for line in NCCL_CUDA if "WARN" not in line])
    assert found.cause == "nccl-internal"


# ---- a compiler's diagnostic ends the log ----

def test_a_header_the_build_cannot_find_is_the_environments():
    # GCC's "file:line:col: fatal error: NAME: No such file or directory", its caret lines, then "compilation
    # terminated." and ninja's stop (https://gcc.gnu.org/onlinedocs/gcc/Diagnostic-Message-Formatting-Options.html):
    # a DeepSpeed op built at run time on a host whose CUDA toolkit lacks the header.
    lines = ["Using /root/.cache/torch_extensions/py310_cu121 as PyTorch extensions root...",
             "[1/3] /usr/local/cuda/bin/nvcc -c /opt/ds/csrc/transformer/gelu_kernels.cu -o gelu_kernels.cuda.o",
             "/opt/ds/csrc/includes/custom_cuda_layers.h:12:10: fatal error: cusparse.h: No such file or directory",
             "   12 | #include <cusparse.h>",
             "      |          ^~~~~~~~~~~~",
             "compilation terminated.",
             "ninja: build stopped: subcommand failed."]
    found = first(lines)
    assert (found.cause, found.actor) == ("missing-module", "config")
    assert found.title == "a header the build includes is not installed"


def test_a_compile_error_of_the_programs_own_code_is_never_silent():
    # nvcc's "file.cu(LINE): error: ..." for the program's own kernel.
    lines = ["[2/3] nvcc -c my_kernels.cu -o my_kernels.o",
             'my_kernels.cu(41): error: identifier "blockDimx" is undefined',
             "1 error detected in the compilation of \"my_kernels.cu\".",
             "ninja: build stopped: subcommand failed."]
    assert first(lines).cause in ("unclassified", "compile-error", "program-error")


def test_a_build_that_warns_and_links_is_quiet():
    quiet(["/opt/ds/csrc/adam/cpu_adam.cpp:41:13: warning: unused variable 'x' [-Wunused-variable]",
           "[3/3] c++ cpu_adam.o -shared -o cpu_adam.so",
           "Loading extension module cpu_adam...",
           "Time to load cpu_adam op: 21.1 seconds",
           "step 1 loss 9.21"])


# ---- the MPI launchers and their ssh ----

def test_a_refused_launch_key_is_the_launchs_permission():
    found = first(["mpirun -np 16 -hostfile hosts ./build/all_reduce_perf -b 8 -e 1G",
                   "user@node07: Permission denied (publickey,password).",
                   "--------------------------------------------------------------------------",
                   "ORTE was unable to reliably start one or more daemons.",
                   "--------------------------------------------------------------------------"])
    assert (found.cause, found.actor) == ("permission-denied", "config")


def test_a_lost_daemon_ranks_below_the_kernel_oom_kill_that_caused_it():
    # The daemon-level banner is a symptom: the node's OOM kill before it says why the daemon was lost.
    found = first(["[Tue Nov 24 10:00:01 2026] Out of memory: Killed process 4242 (python) total-vm:812345kB",
                   "--------------------------------------------------------------------------",
                   "ORTE has lost communication with a remote daemon.",
                   "  HNP daemon   : [[16919,0],0] on node node01",
                   "  Remote daemon: [[16919,0],3] on node node04",
                   "--------------------------------------------------------------------------"])
    assert found.cause == "out-of-memory"


# ---- Horovod ----

def test_horovods_shutdown_follows_the_exception_of_the_rank_that_failed_first():
    # SHUT_DOWN_ERROR (horovod/common/operations.cc) on rank 0 after rank 1 raised: rank 1's error is the cause.
    found = first(["[1,1]<stderr>:Traceback (most recent call last):",
                   '[1,1]<stderr>:  File "train.py", line 30, in <module>',
                   "[1,1]<stderr>:    batch = next(it)",
                   "[1,1]<stderr>:KeyError: 'labels'",
                   "[1,0]<stderr>:tensorflow.python.framework.errors_impl.UnknownError:  Horovod has been shut down. "
                   "This was caused by an exception on one of the ranks or an attempt to allreduce, allgather or "
                   "broadcast a tensor after one of the ranks finished execution."])
    assert (found.cause, found.actor) == ("program-error", "job")


def test_horovods_mismatch_messages_are_the_programs():
    found = first(["[1,0]<stderr>:Traceback (most recent call last):",
                   '[1,0]<stderr>:  File "train.py", line 52, in <module>',
                   "[1,0]<stderr>:    hvd.allgather(x)",
                   "[1,0]<stderr>:RuntimeError: Mismatched allgather tensor shapes: One rank gathered a tensor of "
                   "rank 2, but another rank sent a tensor of rank 1."])
    assert (found.cause, found.actor) == ("collective-mismatch", "job")


# ---- nccl-tests' check ----

def test_nccl_tests_wrong_values_are_a_finding_and_its_passing_check_is_not():
    table = ["#       size         count    type     time   algbw   busbw  error",
             "  4294967296     134217728   float    29122  129.05  129.05  1e+00"]
    found = first([*table, " Out of bounds values : 2 FAILED", " Avg bus bandwidth    : 128.942"])
    assert (found.id, found.cause) == ("nccl-tests-wrong-values", "nccl-internal")
    assert found.extracted["wrong_values"] == 2
    quiet([*table, "# Out of bounds values : 0 OK", "# Avg bus bandwidth    : 128.942"])
