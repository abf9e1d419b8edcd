"""Forms of failure that other tools and older versions print (issue 22's fifth pass, written from the development
part of batch b10): torch's watchdog line before it carried SeqNum, NCCL's wrapped CUDA errors, compiler
diagnostics of an extension built at run time, the MPI launchers and their ssh, Horovod, nccl-tests' own check.
Each excerpt follows the public format cited beside it; none is copied from the corpus."""

from __future__ import annotations

import pytest

from accelstack.diagnose import diagnose_lines

from .helpers import DATA, quiet, raised
from .helpers import first_finding as first

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

def horovod_traceback(rank: int, line: int, call: str, exception: str) -> list[str]:
    """A rank's traceback as horovodrun (Open MPI's --tag-output) prints it: "[1,<rank>]<stderr>:" on each line."""
    tag = f"[1,{rank}]<stderr>:"
    return [f"{tag}Traceback (most recent call last):", f'{tag}  File "train.py", line {line}, in <module>',
            f"{tag}    {call}", f"{tag}{exception}"]


def test_horovods_shutdown_follows_the_exception_of_the_rank_that_failed_first():
    # SHUT_DOWN_ERROR (horovod/common/operations.cc) on rank 0 after rank 1 raised: rank 1's error is the cause.
    found = first(horovod_traceback(1, 30, "batch = next(it)", "KeyError: 'labels'") + [
                   "[1,0]<stderr>:tensorflow.python.framework.errors_impl.UnknownError:  Horovod has been shut down. "
                   "This was caused by an exception on one of the ranks or an attempt to allreduce, allgather or "
                   "broadcast a tensor after one of the ranks finished execution."])
    assert (found.cause, found.actor) == ("program-error", "job")


def test_horovods_mismatch_messages_are_the_programs():
    found = first(horovod_traceback(0, 52, "hvd.allgather(x)",
                                    "RuntimeError: Mismatched allgather tensor shapes: One rank gathered a tensor of "
                                    "rank 2, but another rank sent a tensor of rank 1."))
    assert (found.cause, found.actor) == ("collective-mismatch", "job")


# ---- nccl-tests' check ----

def test_nccl_tests_wrong_values_are_a_finding_and_its_passing_check_is_not():
    table = ["#       size         count    type     time   algbw   busbw  error",
             "  4294967296     134217728   float    29122  129.05  129.05  1e+00"]
    found = first([*table, " Out of bounds values : 2 FAILED", " Avg bus bandwidth    : 128.942"])
    assert (found.id, found.cause) == ("nccl-tests-wrong-values", "nccl-internal")
    assert found.extracted["wrong_values"] == 2
    quiet([*table, "# Out of bounds values : 0 OK", "# Avg bus bandwidth    : 128.942"])


# ---- sixth pass (written from the development part of batch b12) ----

def test_a_gpu_the_driver_says_must_be_reset_is_the_nodes():
    # The driver's status NV_ERR_RESET_REQUIRED ("Reset required", nvstatuscodes.h of open-gpu-kernel-modules).
    found = first(["[Sun Jan 11 09:52:01 2026] NVRM: nvAssertOkFailedNoLog: Assertion failed: Reset required "
                   "[NV_ERR_RESET_REQUIRED] (0x00000062) returned from status @ kernel_channel.c:2874"])
    assert (found.id, found.cause, found.actor) == ("kernel:NV_ERR_RESET_REQUIRED", "device-hardware", "node")
    quiet(["[Sun Jan 11 09:50:00 2026] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.54.15",
           "[Sun Jan 11 09:50:01 2026] nvidia-modeset: Loading NVIDIA Kernel Mode Setting Driver"])


def test_a_failed_check_of_nccl_tests_is_a_failure_named_by_the_cuda_error_it_quotes():
    # nccl-tests' CUDACHECK prints "Test CUDA failure <file>:<line> '<cudaGetErrorString>'" and ends the test.
    found = first(["sichek nccltest -g 1,0", "Test CUDA failure common.cu:1007",
                   "'CUDA-capable device(s) is/are busy or unavailable'"])
    assert (found.cause, found.actor) == ("device-busy", "node")
    quiet(["# nThread 1 nGpus 8 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20",
           "#  Rank  0 Group  0 Pid  4242 on    node01 device  0 [0x17] NVIDIA H200",
           "# Out of bounds values : 0 OK", "# Avg bus bandwidth    : 361.2"])


def test_torchs_shared_memory_file_that_cannot_be_written_is_dev_shm_not_a_disk():
    shm = ["Traceback (most recent call last):",
           '  File "/usr/lib/python3.10/multiprocessing/queues.py", line 244, in _feed',
           "    obj = _ForkingPickler.dumps(obj)",
           "RuntimeError: unable to write to file </torch_739_144252761_4>: No space left on device (28)"]
    found = first(shm)
    assert (found.cause, found.actor) == ("shm-too-small", "config")
    disk = shm[:-1] + ["RuntimeError: unable to write to file </data/ckpt/step_100.pt>: No space left on device (28)"]
    assert first(disk).cause == "disk-full"


def test_open_mpis_tcp_transport_on_an_interface_that_joins_no_nodes_is_the_launchs():
    # opal/mca/btl/tcp/btl_tcp_endpoint.c; Open MPI's TCP tuning page names the fix (btl_tcp_if_include/exclude).
    found = first(["[node2][[39817,1],2][btl_tcp_endpoint.c:638:mca_btl_tcp_endpoint_recv_connect_ack] received "
                   "unexpected process identifier [[39817,1],3]"])
    assert (found.cause, found.actor) == ("network-interface", "config")
    found = first(["[node2][[38971,1],2][btl_tcp_endpoint.c:796:mca_btl_tcp_endpoint_complete_connect] connect() to "
                   "172.17.0.1 failed: Connection refused (111)"])
    assert (found.cause, found.actor) == ("network-interface", "config")
    quiet(["mpirun -np 16 -H node1:8,node2:8 --mca btl_tcp_if_include ens1f0 python train.py",
           "[1,0]<stdout>:step 10 loss 2.01"])


def test_an_extension_built_with_another_cuda_than_torchs_is_the_environments():
    # torch.utils.cpp_extension's message runs over two lines; apex's setup.py words it its own way.
    torch_words = ["Traceback (most recent call last):", '  File "setup.py", line 3, in <module>', "RuntimeError:",
                   "The detected CUDA version (12.1) mismatches the version that was used to compile",
                   "PyTorch (11.8). Please make sure to use the same CUDA versions."]
    apex_words = ['  File "setup.py", line 50, in check_cuda_torch_binary_vs_bare_metal',
                  "RuntimeError: Cuda extensions are being compiled with a version of Cuda that does not match the "
                  "version used to compile Pytorch binaries.  Pytorch binaries were compiled with Cuda 11.3."]
    for lines in (torch_words, apex_words):
        found = first(lines)
        assert (found.cause, found.actor) == ("torch-build-mismatch", "config"), lines[-1]
    other = ["Traceback (most recent call last):", '  File "serve.py", line 3, in <module>',
             "RuntimeError: CUDA version 12.1 found; the model file is corrupt"]
    assert first(other).cause != "torch-build-mismatch"


def test_a_cuda_failure_in_nvls_set_up_is_the_fabrics_not_an_invalid_argument():
    nvls = ["node23:12098:12141 [2] transport/nvls.cc:244 NCCL WARN Cuda failure 1 'invalid argument'",
            "node23:12098:12141 [2] NCCL INFO transport/nvls.cc:394 -> 1",
            "node23:12098:12141 [2] NCCL INFO init.cc:1196 -> 1"]
    found = first(nvls)
    assert (found.cause, found.actor) == ("nccl-internal", "node")
    elsewhere = ["node23:12098:12141 [2] enqueue.cc:1033 NCCL WARN Cuda failure 1 'invalid argument'",
                 "node23:12098:12141 [2] NCCL INFO enqueue.cc:1050 -> 1"]
    assert first(elsewhere).cause == "program-error"


def test_a_job_submitit_saw_preempted_is_the_schedulers_and_a_plain_signal_is_not():
    # submitit's handler (job_environment.py): "Caught signal SIGUSR1 on <host>: this job is preempted."
    found = first(["submitit INFO (2021-04-01 02:26:27,643) - Job has not timed out. Ran 61 minutes out of "
                   "requested 120 minutes.",
                   "submitit WARNING (2021-04-01 02:26:27,643) - Caught signal SIGUSR1 on learnfair4096: this job is "
                   "preempted.",
                   "submitit INFO (2021-04-01 02:26:28,004) - Requeued job 39025082 (3 remaining timeouts)"])
    assert (found.id, found.cause, found.actor) == ("submitit-preempted", "preempted", "service")
    quiet(["submitit WARNING (2021-04-01 02:26:27,643) - Bypassing signal SIGCONT",
           "submitit INFO (2021-04-01 02:30:00,000) - Job completed successfully"])


OOM_NEW = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
           "79.11 GiB of which {free} is free. Process 4242 has {other} memory in use. Including non-PyTorch memory, "
           "this process has {own} memory in use. Of the allocated memory 30.00 GiB is allocated by PyTorch, and "
           "1.00 GiB is reserved by PyTorch but unallocated.")


def test_an_oom_on_a_device_other_processes_hold_is_where_the_job_was_placed():
    head = ["Traceback (most recent call last):", '  File "train.py", line 9, in <module>', "    loss.backward()"]
    held = first(head + [OOM_NEW.format(free="120.00 MiB", other="46.50 GiB", own="32.40 GiB")])
    assert (held.cause, held.actor) == ("out-of-memory", "config")
    assert "other processes held the rest" in held.extracted["actor_reason"]
    own = first(head + [OOM_NEW.format(free="120.00 MiB", other="0.50 GiB", own="78.40 GiB")])
    assert (own.cause, own.actor) == ("out-of-memory", "job")
    # torch < 2.1 and torch_npu count only the caching allocator: the process's other memory is not told apart.
    old = first(head + ["RuntimeError: NPU out of memory. Tried to allocate 22.00 MiB (NPU 0; 60.97 GiB total "
                        "capacity; 10.24 GiB already allocated; 10.24 GiB current active; 19.52 MiB free; 10.65 GiB "
                        "reserved in total by PyTorch)"])
    assert (old.cause, old.actor) == ("out-of-memory", "job")


# ---- the seventh pass (from b13's development part) ----

def test_a_verbs_call_that_fails_is_the_hcas_whatever_errno_it_quotes():
    # NCCL's ibvwrap.cc: "Call to ibv_<verb> failed with error <strerror>". The literal "Call to ibv_" names every
    # verb; "No such device" there is the HCA's, not a GPU's.
    found = first(["gpu7:76786:77145 [3] misc/ibvwrap.cc:284 NCCL WARN Call to ibv_modify_qp failed with error No "
                   "such device",
                   "gpu7:76786:77145 [3] NCCL INFO transport/net_ib.cc:395 -> 2",
                   "gpu7:76786:77145 [3] NCCL INFO init.cc:840 -> 2"])
    assert (found.cause, found.actor) == ("rdma", "node")
    plain = first(["Traceback (most recent call last):", '  File "probe.py", line 3, in <module>',
                   "OSError: [Errno 19] No such device: '/dev/nvidia3'"])
    assert plain.cause == "no-device"


def test_a_watchdog_line_a_paste_cut_after_its_operation_is_still_the_timeout():
    cut = ["[rank1]:[E ProcessGroupNCCL.cpp:563] [Rank 1] Watchdog caught collective operation timeout: "
           "WorkNCCL(SeqNum=15037, OpType=_ALLGATHER_BASE, NumelIn=131072512, NumelOut=524290048, Timeo",
           "ut(ms)=600000) ran for 600059 milliseconds before timing out."]
    found = first(cut)
    assert (found.id, found.cause) == ("nccl-watchdog-timeout", "collective-timeout")
    assert found.extracted["op_type"] == "_ALLGATHER_BASE" and found.extracted["seq_num"] == 15037
    quiet(["[rank1]:[I ProcessGroupNCCL.cpp:900] [Rank 1] ProcessGroupNCCL watchdog thread started, timeout 600000"])


def test_a_model_spread_by_device_map_under_a_distributed_launch_is_the_launchs():
    # accelerate's check in Accelerator.prepare (src/accelerate/accelerator.py).
    head = ["Traceback (most recent call last):", '  File "finetune.py", line 353, in train', "    trainer.train()"]
    found = first(head + ["ValueError: You can't train a model that has been loaded with `device_map='auto'` in any "
                          "distributed mode. Please rerun your script specifying `--num_processes=1` or by launching "
                          "with `python {{myscript.py}}`."])
    assert (found.cause, found.actor) == ("device-mapping", "config")
    other = first(head + ["ValueError: device_map must be a dict or one of 'auto', 'balanced', 'sequential'"])
    assert other.cause != "device-mapping"


def test_the_lines_under_an_ascend_code_name_its_cause_in_words():
    # CANN prints the code, then what failed: an operator without a kernel binary is the CANN install's.
    lines = ["RuntimeError: call aclnnCast failed, detail:EZ9999: Inner Error!",
             "EZ9999: 2024-06-28-13:05:55.631.066  Parse dynamic kernel config fail.",
             "        TraceBack (most recent call last):",
             "        AclOpKernelInit failed opType",
             "        Op Cast does not has any binary.",
             "        launch failed for Cast, errno:561000."]
    found = first(lines)
    assert (found.id, found.cause, found.actor) == ("ascend-EZ9999", "cann-mismatch", "node")
    assert found.extracted["detail"] == "does not has any binary"
    aicore = ["EZ9999: Inner Error!",
              "EZ9999  Kernel task happen error, retCode=0x26, [aicore exception].",
              "        TraceBack (most recent call last):",
              "        The error from device(2), serial number is 37, there is an aicore error, core id is 0"]
    assert (first(aicore).cause, first(aicore).actor) == ("device-assert", "job")


def test_what_slurmds_prolog_epilog_or_spank_plugin_could_not_do_is_the_nodes():
    # slurmd runs them around every job (https://slurm.schedmd.com/prolog_epilog.html); the carrier is journald's.
    head = "Feb 16 19:30:06 gpu-117 slurmd[53634]: "
    found = first([head + "spank-epilog: error: pyxis: couldn't execute enroot command",
                   head + "spank-epilog: error: pyxis:     mkdir: cannot create directory "
                          "'/opt/dlami/nvme/tmp/enroot/data': Permission denied",
                   head + "error: spank: required plugin spank_pyxis.so: job_epilog() failed with rc=-1"])
    assert (found.cause, found.actor) == ("permission-denied", "node")
    assert "prolog, an epilog or a SPANK plugin" in found.extracted["actor_reason"]
    # Quoted in a reply, with the reply's indent before journald's carrier: still the node's daemon.
    quoted = first([">     " + head + "spank-epilog: error: pyxis:     mkdir: cannot create directory "
                    "'/opt/dlami/nvme/tmp/enroot/data': Permission denied",
                    ">     " + head + "error: spank: required plugin spank_pyxis.so: job_epilog() failed with rc=-1"])
    assert (quoted.cause, quoted.actor) == ("permission-denied", "node")
    job = first(["Traceback (most recent call last):", '  File "train.py", line 3, in <module>',
                 "PermissionError: [Errno 13] Permission denied: '/opt/dlami/nvme/ckpt'"])
    assert (job.cause, job.actor) == ("permission-denied", "config")


def test_tensorrts_error_level_and_a_tools_named_error_end_a_log():
    trt = ["[I] [TRT] Loaded engine size: 1234 MiB",
           "[E] [TRT] 1: [defaultAllocator.cpp::allocate::20] Error Code 1: Cuda Runtime (out of memory)"]
    assert first(trt).cause == "out-of-memory"
    quiet(["[W] [TRT] Unable to determine GPU memory usage", "[I] [TRT] Loaded engine size: 1234 MiB"])
    docker = ["$ docker run --gpus all -p 8000:8000 tritonserver",
              "docker: Error response from daemon: driver failed programming external connectivity on endpoint x: "
              "Bind for 0.0.0.0:8000 failed: port is already allocated."]
    assert (first(docker).cause, first(docker).actor) == ("address-in-use", "config")
    assert first(["nvidia-container-cli: initialization error: nvml error: driver not loaded: unknown."]).actor == "node"
    quiet(["docker: Error response from daemon: x", "Status: Downloaded newer image for tritonserver:24.01",
           "I1126 10:00:00.000000 1 server.cc:100] Started GRPCInferenceService at 0.0.0.0:8001"])


def test_hydras_bad_termination_report_is_a_failure_and_its_exit_string_names_the_signal():
    # MPICH's and Intel MPI's mpiexec (Hydra) print this block when a rank died (src/pm/hydra).
    block = ["===================================================================================",
             "=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES",
             "=   PID 12345 RUNNING AT node1",
             "=   EXIT CODE: 9",
             "=   CLEANING UP REMAINING PROCESSES",
             "==================================================================================="]
    assert first(block) is not None
    signalled = first(block[:4] + ["YOUR APPLICATION TERMINATED WITH THE EXIT STRING: Segmentation fault (signal 11)"])
    assert (signalled.cause, signalled.actor) == ("native-crash", "job")
    # Open MPI's report of a rank that died of a signal names it by number too.
    assert first(["mpirun noticed that process rank 3 with PID 0 on node gpu-12 exited on signal 6."]).cause == \
        "native-crash"
    quiet(["=   EXIT CODE: 0"])


def test_a_driver_that_could_not_count_the_gpus_is_the_nodes_and_no_gpus_is_its_consequence():
    # torch's warning quotes the CUDA error cudaGetDeviceCount() returned (c10/cuda/CUDAFunctions.cpp).
    warning = ("/opt/venv/lib/python3.11/site-packages/torch/cuda/__init__.py:107: UserWarning: CUDA initialization: "
               "Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions before calling "
               "NumCudaDevices() that might have already set an error? Error 802: system not yet initialized "
               "(Triggered internally at ../c10/cuda/CUDAFunctions.cpp:109.)")
    failed = ["Traceback (most recent call last):", '  File "train.py", line 3, in <module>',
              "RuntimeError: No CUDA GPUs are available"]
    found = first([warning, *failed])
    assert (found.id, found.cause, found.actor) == ("cuda-init-failed", "no-device", "node")
    hidden = warning.replace("Error 802: system not yet initialized", "Error 100: no CUDA-capable device is detected")
    assert (first([hidden, *failed]).cause, first([hidden, *failed]).actor) == ("device-mapping", "config")
    quiet([warning, "falling back to the CPU", "step 1 loss 2.0"])


def test_a_driver_api_result_a_library_prints_by_number_names_its_cause():
    # A library that calls the driver API itself prints the CUresult's number (cuda.h's enum): 2 is
    # CUDA_ERROR_OUT_OF_MEMORY. One rank's allocation failed; the other ranks' watchdog fired later.
    oom = "(WorkerDict pid=4242) [memory_saver.cpp] CUresult error  result=2 file=csrc/memory_saver.cpp func=cu_mem_create"
    watchdog = ("(WorkerDict pid=4243) [rank1]:[E1126 10:30:00.000000 4243 ProcessGroupNCCL.cpp:629] [Rank 1] Watchdog "
                "caught collective operation timeout: WorkNCCL(SeqNum=7, OpType=ALLGATHER, NumelIn=1, NumelOut=2, "
                "Timeout(ms)=600000) ran for 600012 milliseconds before timing out.")
    found = first([oom, watchdog])
    assert (found.id, found.cause) == ("cuda-driver:CUDA_ERROR_OUT_OF_MEMORY", "out-of-memory")
    # A number the enum has no error for (0 is CUDA_SUCCESS) names nothing; the watchdog stays the finding.
    assert first([oom.replace("result=2", "result=0"), watchdog]).cause == "collective-timeout"


def test_a_spank_plugin_that_failed_in_slurmstepd_is_a_failure_named_by_what_it_quotes():
    # pyxis (the SPANK container plugin) logs enroot's output under slurmstepd's error prefix when an import fails
    # (https://github.com/NVIDIA/pyxis); the step never starts, and srun may print nothing else.
    failed = ["pyxis: importing docker image ...",
              "slurmstepd: error: pyxis: child 4242 failed with error code: 1",
              "slurmstepd: error: pyxis: failed to import docker image",
              "slurmstepd: error: pyxis: printing contents of log file ...",
              "slurmstepd: error: pyxis:     [INFO] Creating squashfs filesystem...",
              "slurmstepd: error: pyxis:     Write failed because No space left on device"]
    assert first(failed).cause == "disk-full"
    spank = ["slurmstepd: error: spank: required plugin pyxis.so: task_init_privileged() failed with rc=-1"]
    assert first(spank) is not None
    # slurmstepd's complaints about its own functions are not a failure of the step (a /proc read that raced).
    quiet(["slurmstepd: error: _is_a_lwp: open() /proc/4242/status failed: No such file or directory"])


def test_a_transfer_of_awss_ofi_plugin_that_completed_with_an_error_is_the_fabrics():
    # aws-ofi-nccl's WARN (src/nccl_ofi_net.c) with libfabric's EFA provider error after it.
    efa = ["node-1:35:89 [5] ofi_process_cq:1039 NCCL WARN NET/OFI Request 0x7fbb944701b8 completed with error. RC: "
           "20. Error: unknown error. Completed length: 0, Request: { buffer_index: 255, dev: 1, size: 0 }",
           "libfabric:35:1668017255::efa:cq:rxr_cq_write_tx_error():243<warn> rxr_cq_write_tx_error: err: 20"]
    assert first(efa).cause == "rdma"
    quiet(["node-1:35:89 [5] NCCL INFO NET/OFI Selected Provider is efa (found 4 nics)"])


# Python prints "RuntimeError: " alone when str(exc) starts with a newline; a library's explanation follows, and its
# later lines name the cause (here a loader that did not find a library: bitsandbytes's form).
MESSAGE_ON_NEXT_LINES = ["RuntimeError: ",
                         "        The library could not set up its GPU support. Please run the following",
                         "command to get more information:",
                         "",
                         "        python -m somepackage",
                         "",
                         "        Inspect the output of the command and see if you can locate CUDA",
                         "libraries. You might need to add them",
                         "        to your LD_LIBRARY_PATH. If you suspect a bug, open an issue."]


def test_an_exception_whose_message_starts_on_the_next_line_is_read_whole():
    failed = ["╰──────────────────────────────────────────╯", *MESSAGE_ON_NEXT_LINES]
    found = first(failed)
    assert (found.cause, found.actor) == ("missing-module", "config")
    # The message's first line alone names nothing: it stays the program's own error, quoted.
    assert first(failed[:3]).cause == "unclassified"
    quiet(["RuntimeError", "step 1 loss 2.0"])


def test_torchruns_summary_pasted_without_its_header_names_the_rank_that_failed():
    # The block ChildFailedError prints (torch.distributed.elastic.multiprocessing.errors), pasted from "Failures:".
    block = ["------------------------------------------------------------",
             "Failures:",
             "  <NO_OTHER_FAILURES>",
             "------------------------------------------------------------",
             "Root Cause (first observed failure):",
             "[0]:",
             "  time      : 2026-11-26_10:00:00",
             "  host      : gpu-node07",
             "  rank      : 3 (local_rank: 3)",
             "  exitcode  : 1 (pid: 4242)",
             "  error_file: <N/A>",
             "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html"]
    found = first(block)
    assert found.cause == "unclassified" and found.extracted["ranks"] == [3] and found.extracted["exitcode"] == 1
    killed = [line.replace("exitcode  : 1 (pid: 4242)", "exitcode  : -9 (pid: 4242)") for line in block]
    # torchrun writes a signal as a negative exit code: SIGKILL, most often the kernel's OOM killer.
    assert (first(killed).id, first(killed).cause) == ("linux:SIGKILL", "out-of-memory")
    quiet(["Root Cause analysis of the loss spike: the learning rate", "step 2 loss 1.9"])


def test_nvidia_smi_that_cannot_reach_one_gpu_names_that_gpu_lost():
    # nvidia-smi reaches the driver but not this GPU (fallen off the bus or hung; Xid 79 in the kernel log).
    lost = ["$ nvidia-smi", "Unable to determine the device handle for GPU0000:03:00.0: Unknown Error"]
    assert (first(lost).cause, first(lost).actor) == ("device-hardware", "node")
    quiet(["$ nvidia-smi -L", "GPU 0: NVIDIA H200 (UUID: GPU-1b2c3d4e-0000-0000-0000-000000000000)"])


def test_a_bus_error_in_a_training_job_is_shared_memory_as_a_rule():
    # SIGBUS (BUS_ADRERR, "nonexistent physical address") is a page of /dev/shm the tmpfs could not back, as a rule.
    torchrun = ["Bus error: nonexistent physical address",
                "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -7) local_rank: 0 (pid: 4242) "
                "of binary: /usr/bin/python"]
    assert (first(torchrun).cause, first(torchrun).actor) == ("shm-too-small", "config")
    assert first(["Fatal Python error: Bus error", "", "Current thread 0x00007f (most recent call first):"]).cause == \
        "shm-too-small"
    # A segmentation fault stays the program's native crash.
    assert first(["Segmentation fault (core dumped)"]).cause == "native-crash"


def test_an_exception_a_logger_quotes_as_a_warning_is_one_the_program_went_on_from():
    # torch._dynamo with suppress_errors logs the compiler's failure as a warning and runs the frame eagerly.
    warned = ["[2026-11-26 10:00:00,504] torch._dynamo.convert_frame: [WARNING] torch._dynamo.exc."
              "BackendCompilerFailed: backend='inductor' raised:",
              "[2026-11-26 10:00:00,504] torch._dynamo.convert_frame: [WARNING] RuntimeError: Found Tesla P40 which is "
              "too old to be supported by the triton GPU compiler, which is used as the backend. Triton only supports "
              "devices of CUDA Capability >= 7.0, but your device is of CUDA capability 6.1"]
    quiet(warned)
    raised = [line.replace("[WARNING]", "[ERROR]") for line in warned]
    assert first(raised).cause == "torch-build-mismatch"


def test_a_paste_indented_before_its_carrier_is_read_as_the_carrier_and_the_program_line():
    # An indented block of syslog lines (a Markdown code block): the carrier is found once the paste's indent is gone.
    lines = ["Nov 26 10:00:00 gpu-node07 slurmd[4242]: spank-prolog: error: pyxis: couldn't create directory",
             "Nov 26 10:00:00 gpu-node07 slurmd[4242]: spank-prolog: error: pyxis:     mkdir: cannot create "
             "directory '/raid/enroot/data': Permission denied"]
    plain, indented = first(lines), first(["    " + line for line in lines])
    assert (plain.cause, plain.actor) == ("permission-denied", "node")
    assert (indented.cause, indented.actor) == (plain.cause, plain.actor)
    assert indented.evidence[0].host == plain.evidence[0].host


def test_a_traceback_a_logger_prints_at_warning_level_is_one_the_program_went_on_from():
    # torch's inductor cannot write its cache (a full disk) and logs the traceback as glog warnings of two ranks,
    # interleaved; it compiles in memory and the run goes on.
    def block(pid: str) -> list[str]:
        head = f"W1129 03:55:24.184000 {pid} site-packages/torch/_inductor/codecache.py:2193] [0/0] "
        return [head + "fx graph unable to write to cache", head + "Traceback (most recent call last):",
                head + '  File "/usr/lib/python3.11/site-packages/torch/_inductor/codecache.py", line 541, in write_atomic',
                head + "    f.write(content)",
                head + "OSError: [Errno 28] No space left on device"]
    warned = [*block("2007"), *block("2006"), "[rank0] step 5 loss 0.3654", "[rank1] done"]
    quiet(warned)
    # The same traceback at error level is the failure.
    raised = [line.replace("W1129", "E1129") for line in warned[:5]]
    assert first(raised).cause == "disk-full"


def test_a_canonical_status_code_opening_the_last_line_is_the_error_the_log_ended_in():
    # Triton's Python backend, in docker with its default /dev/shm (triton-inference-server/server#6195).
    lines = ["# tritonserver --model-repository=/mnt/model-repository",
             "UNAVAILABLE: Internal: Unable to initialize shared memory key 'triton_python_backend_shm_region_3' to "
             "requested size (67108864 bytes). If you are running Triton inside docker, use '--shm-size' flag to "
             "control the shared memory region size. Error: No space left on device",
             "| cuda_memory_pool_byte_size{0}    | 67108864"]
    found = first(lines)
    # ENOSPC says space ran out; the message's words say it was shared memory.
    assert (found.cause, found.actor) == ("shm-too-small", "config")
    assert first(["RESOURCE_EXHAUSTED: Out of memory while trying to allocate 17179869184 bytes."]).cause == \
        "out-of-memory"
    # A full disk stays a full disk, and a status code in the middle of a healthy line is no error.
    assert first(["ERROR: could not save the checkpoint: [Errno 28] No space left on device: '/ckpt/step-9.pt'"]).cause \
        == "disk-full"
    quiet(["step 12: request UNAVAILABLE: retrying in 1 s", "step 13 loss 2.01"])


def test_a_command_the_node_lacks_names_the_environment_in_either_case():
    lines = ["slurmstepd: error: pyxis: container start failed with error code: 1",
             "slurmstepd: error: pyxis: printing enroot log file:",
             "slurmstepd: error: pyxis:     [ERROR] Command not found: nvidia-container-cli, see "
             "https://github.com/NVIDIA/libnvidia-container",
             "slurmstepd: error: pyxis: couldn't start container"]
    assert first(lines).cause == "missing-module"


def test_srun_labels_on_every_line_keep_an_exceptions_message_whole():
    # srun --label tags each line with its task ("3: "); an empty line of the message is "3:" once pasted.
    lines = [f"3: {line}".rstrip() for line in MESSAGE_ON_NEXT_LINES]
    assert "3:" in lines
    assert first(lines).cause == "missing-module"


# ---- a collective that timed out while a checkpoint save was under way (batch b18's dev part) ----

SAVE_THEN_TIMEOUT = [
    "[rank0] step 199 loss 2.3101",
    "[rank1] step 199 loss 2.2975",
    "[rank0] Saving model checkpoint to /ckpt/checkpoint-200",
    "[rank1]: Traceback (most recent call last):",
    '[rank1]:   File "train.py", line 90, in main',
    "[rank1]:     dist.all_reduce(grad)",
    "[rank1]: RuntimeError: [../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:78] Timed out waiting "
    "1800000ms for recv operation to complete"]


def test_a_timeout_while_a_checkpoint_save_is_under_way_waited_on_the_save_whatever_the_backend():
    # Rank 0 gathers and writes the state while the others wait in the next collective: Gloo's recv timeout as
    # much as NCCL's watchdog (https://github.com/pytorch/pytorch/issues/143536). The launch's timeout is short
    # for the save.
    found = first(SAVE_THEN_TIMEOUT)
    assert (found.cause, found.actor) == ("checkpoint-save-timeout", "config")
    nccl = SAVE_THEN_TIMEOUT[:3] + [
        "[rank1]:[E1126 10:00:00.000000 4242 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective "
        "operation timeout: WorkNCCL(SeqNum=9120, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran "
        "for 600051 milliseconds before timing out."]
    assert first(nccl).cause == "checkpoint-save-timeout"


def test_a_timeout_after_the_save_said_it_was_done_or_with_no_save_stays_a_collective_timeout():
    done = SAVE_THEN_TIMEOUT[:3] + ["[rank0] Model weights saved in /ckpt/checkpoint-200/model.safetensors",
                                    "[rank0] step 200 loss 2.3007"] + SAVE_THEN_TIMEOUT[3:]
    assert first(done).cause == "collective-timeout"
    no_save = SAVE_THEN_TIMEOUT[:2] + SAVE_THEN_TIMEOUT[3:]
    assert first(no_save).cause == "collective-timeout"
    later = SAVE_THEN_TIMEOUT[:2] + SAVE_THEN_TIMEOUT[3:] + [SAVE_THEN_TIMEOUT[2]]
    assert first(later).cause == "collective-timeout"


# ---- Slurm's refusal as the client prints it, with or without "Unable to allocate resources:" ----

def test_a_refusal_srun_or_sbatch_prints_on_its_own_is_the_requests():
    # slurm_strerror's strings (src/common/slurm_errno.c, https://github.com/SchedMD/slurm): srun prints the
    # refusal alone for a bad --gres, sbatch after "Batch job submission failed:".
    for line in ("srun: error: Invalid generic resource (gres) specification",
                 "sbatch: error: Batch job submission failed: Invalid partition name specified"):
        found = first([line])
        assert (found.cause, found.actor) == ("unclassified", "config"), line


def test_an_srun_complaint_it_goes_on_from_stays_quiet():
    quiet(["srun: error: couldn't chdir to `/home/ana/run': No such file or directory: going to /tmp instead",
           "[node1] step 1 loss 2.31", "[node1] training finished, checkpoint written"])


# ---- two ranks of one communicator on one GPU, from NCCL's init lines ----

def _init_line(host: str, pid: int, rank: int, bus: str, comm: str = "0xaa9becea043c4e6c") -> str:
    # NCCL_DEBUG=INFO's line for each rank joining a communicator (src/init.cc, https://github.com/NVIDIA/nccl)
    return (f"{host}:{pid}:{pid} [0] NCCL INFO ncclCommInitRank comm 0x7a1225{pid} rank {rank} nranks 2 cudaDev 0 "
            f"nvmlDev 0 busId {bus} commId {comm} - Init START")


INVALID_USAGE = ["RuntimeError: [TensorRT-LLM][ERROR] Assertion failed: Failed, NCCL error "
                 "../tensorrt_llm/runtime/ncclCommunicator.cpp:90 'invalid usage (run with NCCL_DEBUG=WARN for details)'"]


def test_two_ranks_nccl_puts_on_one_gpu_of_one_host_are_the_device_mapping():
    found = first([_init_line("node1", 42, 0, "100000"), _init_line("node1", 43, 1, "100000"), *INVALID_USAGE])
    assert (found.id, found.cause, found.actor) == ("duplicate-gpu", "device-mapping", "config")
    assert (found.extracted["rank_a"], found.extracted["rank_b"]) == (0, 1)
    # NCCL's own WARN cut short where a paste ends still names the mapping
    assert first(["NCCL WARN Duplicate GPU detected : rank 5 and rank 0 b"]).cause == "device-mapping"


def test_the_same_bus_id_on_two_hosts_or_in_two_communicators_is_no_duplicate():
    hosts = first([_init_line("node1", 42, 0, "100000"), _init_line("node2", 43, 1, "100000"), *INVALID_USAGE])
    assert hosts.cause != "device-mapping"
    comms = first([_init_line("node1", 42, 0, "100000"), _init_line("node1", 42, 1, "100000", comm="0x1234"),
                   *INVALID_USAGE])
    assert comms.cause != "device-mapping"
    quiet([_init_line("node1", 42, 0, "18000"), _init_line("node1", 43, 1, "2a000"),
           "node1:42:42 [0] NCCL INFO comm 0x7a122542 rank 0 nranks 2 cudaDev 0 busId 18000 - Init COMPLETE"])


# ---- a paste that ends at the raise, before Python's own exception line ----

CUT_AT_RAISE = ['  File "/venv/lib/python3.11/site-packages/trainer/models/llama.py", line 1878, in from_pretrained',
                "    raise RuntimeError('Trainer does not support this setup yet')"]


def test_a_traceback_cut_after_its_raise_is_the_exception_that_raise_names():
    for lines in (CUT_AT_RAISE, ["Traceback (most recent call last):", *CUT_AT_RAISE]):
        found = first(lines)
        assert found.extracted["error"] == "RuntimeError: Trainer does not support this setup yet", found.extracted
        assert found.extracted["raised_at"].endswith("llama.py:1878 in from_pretrained")
        assert found.first_line.lineno == len(lines)


def test_the_exception_line_after_the_raise_is_still_the_one_read():
    whole = first(["Traceback (most recent call last):", *CUT_AT_RAISE,
                   "ValueError: Trainer does not support this setup yet (2 GPUs visible)"])
    assert whole.extracted["error"].startswith("ValueError: Trainer does not support this setup yet (2 GPUs")
    quiet(["W1126 10:00:00.000000 42 trainer.py:88] Traceback (most recent call last):",
           *[f"W1126 10:00:00.000000 42 trainer.py:88] {line}" for line in CUT_AT_RAISE],
           "step 10 loss 2.31", "training finished"])


# ---- srun could not launch the task on a node ----

def test_a_task_launch_a_nodes_slurmd_did_not_answer_is_the_nodes():
    # srun's launch report and slurm_strerror's ESLURM_PROTOCOL_SOCKET_IMPL_TIMEOUT (src/srun/, src/common/
    # slurm_errno.c, https://github.com/SchedMD/slurm)
    found = first(["srun: error: slurm_receive_msgs: [[n4]:6818] failed: Socket timed out on send/recv operation",
                   "srun: error: Task launch for StepId=34.0 failed on node n4: Socket timed out on send/recv operation",
                   "srun: error: Application launch failed: Socket timed out on send/recv operation",
                   "srun: Job step aborted: Waiting up to 32 seconds for job step to finish."])
    assert (found.cause, found.actor) == ("connect-timeout", "node")


def test_the_controller_not_answering_a_submission_is_the_services():
    found = first(["sbatch: error: Batch job submission failed: Socket timed out on send/recv operation"])
    assert (found.cause, found.actor) == ("connect-timeout", "service")
    quiet(["srun: error: slurm_receive_msg: Socket timed out on send/recv operation",
           "[n1] step 1 loss 2.31", "[n1] training finished, checkpoint written"])


def test_tensorflows_op_not_registered_in_the_binary_is_a_library_the_environment_lacks():
    # tensorflow/core/framework/op.cc (https://github.com/tensorflow/tensorflow)
    found = first(["Traceback (most recent call last):", '  File "train.py", line 61, in main',
                   "tensorflow.python.framework.errors_impl.NotFoundError: Op type not registered 'NcclAllReduce' in "
                   "binary running on host1. Make sure the Op and Kernel are registered in the binary running in this "
                   "process."])
    assert (found.cause, found.actor) == ("missing-module", "config")
    other = first(["Traceback (most recent call last):", '  File "train.py", line 61, in main',
                   "ValueError: callback 'on_step' is not registered with the trainer"])
    assert other.cause != "missing-module"


def test_slurms_refusals_name_who_acts_the_request_or_the_scheduler():
    # slurm_strerror's table (src/common/slurm_errno.c, https://github.com/SchedMD/slurm)
    cases = {"srun: error: Unable to allocate resources: Invalid feature specification": ("unclassified", "config"),
             "sbatch: error: Batch job submission failed: Unable to contact slurm controller (connect failure)":
                 ("connect-timeout", "service"),
             "srun: error: Unable to allocate resources: Required node not available (down, drained or reserved)":
                 ("unclassified", "service"),
             "srun: error: Task launch for StepId=7.0 failed on node n2: Protocol authentication error":
                 ("unclassified", "node")}
    for line, expected in cases.items():
        found = first([line])
        assert (found.cause, found.actor) == expected, line


# ---- b19's dev part: ROCr's page fault, NCCL's init refused, the CUDA samples' checks, nccl-tests' exit code ----

def test_rocrs_gpu_page_fault_is_a_kernels_bad_address_not_a_native_crash():
    # ROCR-Runtime's VM fault handler (https://github.com/ROCm/ROCR-Runtime), then the abort it causes
    found = first(["step 0: train loss 4.2862, val loss 4.2811",
                   "Memory access fault by GPU node-1 (Agent handle: 0x55e92f082620) on address (nil). Reason: Page "
                   "not present or supervisor privilege.",
                   "Aborted (core dumped)"])
    assert (found.cause, found.actor) == ("device-assert", "job")
    assert first(["step 0: train loss 4.2862", "Aborted (core dumped)"]).cause == "native-crash"


def test_nccl_refusing_a_communicators_init_as_invalid_usage_is_the_device_mapping():
    # Horovod's binding names the call (horovod/common/ops/nccl_operations.cc); NCCL's init.cc refuses two ranks
    # on one GPU with ncclInvalidUsage
    found = first(horovod_traceback(1, 40, "hvd.broadcast_parameters(model.state_dict(), root_rank=0)",
                                    "horovod.common.exceptions.HorovodInternalError: ncclCommInitRank failed: "
                                    "invalid usage"))
    assert (found.cause, found.actor) == ("device-mapping", "config")
    # a collective's invalid usage is not the init's
    other = first(["[1,1]<stderr>:horovod.common.exceptions.HorovodInternalError: ncclAllReduce failed: invalid "
                   "usage"])
    assert other.cause != "device-mapping"


def test_the_cuda_samples_checks_are_failures_and_802_stays_the_nodes_in_a_container():
    # vectorAdd.cu and helper_cuda.h (https://github.com/NVIDIA/cuda-samples), as the GPU Operator's validator
    # runs them in a pod; CUDA's 802 is the fabric manager's, which a container without its GPUs never sees
    lines = ["Failed to allocate device vector A (error code system not yet initialized)!",
             "$ kubectl get po -n gpu-operator",
             "NAME                                READY   STATUS       RESTARTS   AGE",
             "nvidia-cuda-validator-7x2lq         0/1     Init:Error   3          5m",
             "gpu-feature-discovery-dzmlj         1/1     Running      0          15m"]
    found = first(lines)
    assert (found.cause, found.actor) == ("no-device", "node")
    helper = first(["CUDA error at bandwidthTest.cu:686 code=802(cudaErrorSystemNotReady) \"cudaSetDevice(0)\""])
    assert (helper.cause, helper.actor) == ("no-device", "node")
    # the container rule still holds for a device the container was not given
    unseen = first(["docker run --rm my-image python train.py",
                    "Failed to allocate device vector A (error code no CUDA-capable device is detected)!"])
    assert (unseen.cause, unseen.actor) == ("no-device", "config")
    quiet(["[Vector addition of 50000 elements]", "Copy input data from the host memory to the CUDA device",
           "CUDA kernel launch with 196 blocks of 256 threads", "Test PASSED", "Done"])


OMPI_EXIT = ["-------------------------------------------------------",
             "Primary job  terminated normally, but 1 process returned",
             "a non-zero exit code. Per user-direction, the job has been aborted.",
             "-------------------------------------------------------",
             "--------------------------------------------------------------------------",
             "mpirun detected that one or more processes exited with non-zero status, thus causing",
             "the job to be terminated. The first process to do so was:",
             "",
             "  Process name: [[11192,1],8]",
             "  Exit code:    {code}",
             "--------------------------------------------------------------------------"]


def ompi_exit(code: int) -> list[str]:
    """Open MPI's summary of a run whose first failed process exited with ``code``."""
    return [line.format(code=code) for line in OMPI_EXIT]


NCCL_TESTS_HEAD = ["# nThread 1 nGpus 1 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20",
                   "#  Rank  0 Group  0 Pid  44741 on node05 device  0 [0x1b] NVIDIA A100-SXM4-80GB",
                   "#                                                     out-of-place                       in-place",
                   "#       size         count    type   redop     time   algbw   busbw  error     time   algbw   "
                   "busbw  error"]


def test_nccl_tests_exit_code_is_its_result_when_the_launchers_summary_is_all_that_is_left():
    # nccl-tests' testResult_t (src/common.h, https://github.com/NVIDIA/nccl-tests): 3 an NCCL call, 4 a timeout;
    # Open MPI's summary names the first process's exit code
    ncclerr = first(NCCL_TESTS_HEAD + ompi_exit(3))
    assert ncclerr.cause == "nccl-internal" and ncclerr.extracted["exitcode"] == 3
    assert first(NCCL_TESTS_HEAD + ompi_exit(4)).cause == "collective-timeout"
    # 5 and 6: options this build does not implement, or refused as invalid: the launch's to fix, never the node's
    for code in (5, 6):
        refused = first(NCCL_TESTS_HEAD + ompi_exit(code))
        assert (refused.cause, refused.actor, refused.extracted["exitcode"]) == ("unclassified", "config", code)
    # 1 and 2 say only that something failed: not named from the code alone
    assert first(NCCL_TESTS_HEAD + ompi_exit(2)).actor != "config"
    # another program's exit code 3 is its own: the failure is quoted, not named
    other = first(["python train.py --epochs 3"] + ompi_exit(3))
    assert other.cause == "unclassified" and other.extracted["exitcode"] == 3


# ---- a failed Abseil status, as XLA, JAX, TensorFlow and gRPC quote it ----

def test_a_failed_abseil_status_is_an_error_line_whatever_the_logger_and_a_warning_is_not():
    # absl::Status::ToString is "<CODE>: <message>" (absl/status/status.h, https://github.com/abseil/abseil-cpp);
    # XLA's autotuner quotes each cuDNN engine's failure after the engine's name, with no level word of its own
    autotune = ["Original error: INTERNAL: All algorithms tried for %cudnn-conv failed. Falling back to default "
                "algorithm.  Per-algorithm errors:",
                "  Profiling failure on cuDNN engine 1#TC: UNKNOWN: CUDNN_STATUS_EXECUTION_FAILED",
                "  Profiling failure on cuDNN engine 7: UNKNOWN: CUDNN_STATUS_EXECUTION_FAILED"]
    found = first(autotune)
    assert found.id == "cuda-libraries:CUDNN_STATUS_EXECUTION_FAILED" and found.evidence_count == 2
    # one the logger calls a warning is a library the program goes on without (TensorFlow's optional ones)
    quiet(["W0301 10:00:00.000000 1234 dso_loader.cc:64] NOT_FOUND: libnvinfer.so.8: cannot open shared object "
           "file: No such file or directory; TensorRT is optional, going on without it"])
    # a word in capitals before a colon is not a status
    quiet(["INFO: loading libnvinfer.so.8: cannot open shared object file, TensorRT disabled",
           "UNKNOWN_KEY: CUDNN_STATUS_EXECUTION_FAILED counters reset"])


# ---- a result the loaded NCCL cannot name; a binding's own report of a failed NCCL call ----

def test_an_nccl_result_the_loaded_nccl_cannot_name_is_a_version_the_launch_must_align():
    # ncclGetErrorString's default (src/init.cc, https://github.com/NVIDIA/nccl), as TensorRT-LLM's NCCLCHECK prints
    # a failed call: "Failed, NCCL error <file>:<line> '<string>'", no level word
    plugin = "Failed, NCCL error /src/cpp/tensorrt_llm/plugins/ncclPlugin/allreducePlugin.cpp:183 'unknown result code'"
    found = first([plugin, plugin])
    assert (found.id, found.cause, found.actor) == ("nccl:unknown result code", "nccl-internal", "config")
    # ncclTimeout (8), as CuPy's NcclError names it
    timeout = first(["Traceback (most recent call last):", '  File "run.py", line 9, in <module>',
                     "    comm.allReduce(a.data.ptr, b.data.ptr, a.size, nccl.NCCL_FLOAT32, nccl.NCCL_SUM, s.ptr)",
                     "cupy_backends.cuda.libs.nccl.NcclError: NCCL_ERROR_TIMEOUT: timeout"])
    assert timeout.cause == "collective-timeout"
    # the words alone, where a program explains a setting, are no failure
    quiet(["Setting TORCH_NCCL_ASYNC_ERROR_HANDLING=1: an NCCL error ends the job instead of hanging it",
           "nccl check: unknown result code table loaded (8 codes)"])


# ---- XLA's and TensorFlow's check of the cuDNN they loaded ----

def test_a_cudnn_older_than_the_one_xla_was_built_with_names_the_build_not_the_traceback():
    # xla/stream_executor/cuda/cuda_dnn.cc (https://github.com/openxla/xla) logs it at E level; the traceback that
    # follows ends in whatever call first needed a convolution (a notebook's XlaRuntimeError header, no message)
    log = ["2023-07-31 01:53:45.016563: E external/xla/xla/stream_executor/cuda/cuda_dnn.cc:427] Loaded runtime CuDNN "
           "library: 8.5.0 but source was compiled with: 8.6.0.  CuDNN library needs to have matching major version "
           "and equal or higher minor version.",
           "XlaRuntimeError                           Traceback (most recent call last)",
           "Cell In[4], line 29",
           "---> 29 state = create_train_state(jax.random.PRNGKey(0))"]
    found = first(log)
    assert (found.cause, found.actor) == ("torch-build-mismatch", "config")
    # the info line of a cuDNN that loaded fine is no failure
    quiet(["2023-07-31 01:53:46.000000: I external/xla/xla/stream_executor/cuda/cuda_dnn.cc:440] Loaded cuDNN "
           "version 8600"])


def test_a_connect_to_127_0_1_1_is_the_host_name_resolved_to_loopback_not_a_peer_that_died():
    # Debian's and Ubuntu's /etc/hosts give the host's own name 127.0.1.1, and gloo publishes the address its host
    # name resolves to (pair.cc's "connect [addr]:port: reason"): other nodes' ranks are sent to themselves
    gloo = ["terminate called after throwing an instance of 'gloo::IoException'",
            "  what():  [../third_party/gloo/gloo/transport/tcp/pair.cc:724] connect [127.0.1.1]:41007: Connection "
            "refused",
            "Aborted (core dumped)"]
    found = first(gloo)
    assert (found.cause, found.actor) == ("network-interface", "config")
    assert "/etc/hosts" in found.remedy
    # a peer at 127.0.1.1 that closed a connection it had made is a peer that died, on a node's own loopback
    found = first(["Traceback (most recent call last):", '  File "train.py", line 30, in <module>',
                   "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:598] Connection closed by peer "
                   "[127.0.1.1]:41007"])
    assert found.cause == "peer-exited"
    # 127.0.0.1 is any single-node job's own rendezvous: a refused connect there is not this mapping
    found = first(gloo[:1] + ["  what():  [../third_party/gloo/gloo/transport/tcp/pair.cc:724] connect "
                              "[127.0.0.1]:41007: Connection refused", gloo[2]])
    assert found.cause != "network-interface"


# ---- from the development part of b22 ----

def test_a_bare_loader_error_at_the_end_of_a_log_is_the_import_that_failed():
    # dlerror's own words ("<file>.so: undefined symbol: <name>"), quoted where a paste cut the ImportError's head
    found = first(["$ accelerate launch -m train config.yml", "...",
                   "/opt/venv/lib/python3.10/site-packages/fused_dense_lib.cpython-310-x86_64-linux-gnu.so: "
                   "undefined symbol: _ZN3c106detail14torchCheckFailEPKcS2_jRKSs"])
    assert (found.cause, found.actor) == ("torch-build-mismatch", "config")
    found = first(["python serve.py", "libcudnn_cnn_infer.so.8: cannot open shared object file: No such file or "
                                      "directory"])
    assert (found.cause, found.actor) == ("missing-module", "config")
    # torchvision's warning quotes the same words and the program goes on
    quiet(["/opt/venv/lib/python3.10/site-packages/torchvision/io/image.py:13: UserWarning: Failed to load image "
           "Python extension: '/opt/venv/lib/python3.10/site-packages/torchvision/image.so: undefined symbol: "
           "_ZN3c1017RegisterOperatorsD1Ev'", "Epoch 1: 100%|##########| 50/50 [00:03<00:00, 14.2it/s, loss=0.71]"])


def test_a_toolkit_older_than_the_gpu_is_the_environments_and_names_the_exception_that_reports_it():
    # ptxas's option check, then Triton's PTXASError that reports it (triton/runtime/errors.py)
    log = ["ptxas fatal   : Value 'sm_120a' is not defined for option 'gpu-name'",
           "Internal Triton PTX codegen error",
           "triton.runtime.errors.PTXASError: PTXAS error: Internal Triton PTX codegen error"]
    found = first(log)
    assert (found.cause, found.actor) == ("compile-error", "config")
    assert "TRITON_PTXAS_PATH" in found.remedy
    # nvcc's own words for the same
    found = first(["nvcc fatal   : Unsupported gpu architecture 'compute_90'",
                   "ninja: build stopped: subcommand failed."])
    assert (found.cause, found.actor) == ("compile-error", "config")
    # a PTXASError whose ptxas line names a kernel's own error stays the kernel's
    found = first(["ptxas error   : Entry function 'kernel_0' uses too much shared data (0x1c000 bytes, 0xc000 max)",
                   "triton.runtime.errors.PTXASError: PTXAS error: Internal Triton PTX codegen error"])
    assert (found.cause, found.actor) == ("compile-error", "job")


def test_nccl_sockets_over_a_containers_bridge_are_the_interface_and_nothing_else_changes():
    finding = first((DATA / "logs" / "nccl-system-error-virtual-interface.log").read_text().splitlines())
    assert (finding.id, finding.cause, finding.actor) == ("nccl-system-error-virtual-interface", "network-interface",
                                                          "config")
    assert finding.extracted["interface"] == "br-3f9c2a71d0e4"
    listing = ("node2:4121:4121 [0] NCCL INFO NET/Socket : Using [0]eth0:10.10.4.12<0> "
               "[1]br-3f9c2a71d0e4:172.18.0.1<0>")
    # the listing alone, in a job that ran, is no failure
    quiet([listing, "node2:4121:4121 [0] NCCL INFO comm 0x5581 rank 0 nranks 2 cudaDev 0 busId 1000 - Init COMPLETE",
           "step 10 loss 2.31"])
    # /dev/shm that NCCL could not grow is still the cause it names, whatever interfaces were listed
    found = first([listing,
                   "node2:4121:4188 [0] misc/shmutils.cc:72 NCCL WARN Error: failed to extend /dev/shm/nccl-Ab12Cd to "
                   "9637892 bytes",
                   "RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled system error, NCCL version 2.20.5",
                   "ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error."])
    assert found.cause == "shm-too-small"


# ---- from the development part of b23 ----

def test_a_launchers_signal_outranks_a_traceback_cut_before_its_exception_line():
    # torchrun's own traceback, cut by the paste before ChildFailedError: the agent's line says how the rank died
    log = ["W1214 08:06:54.772000 100 torch/distributed/elastic/multiprocessing/api.py:897] Sending process 103 "
           "closing signal SIGTERM",
           "E1214 08:06:55.807000 100 torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: -9) "
           "local_rank: 0 (pid: 102) of binary: /usr/bin/python3",
           "Traceback (most recent call last):",
           '  File "/usr/local/lib/python3.11/dist-packages/torch/distributed/run.py", line 922, in <module>',
           "    main()"]
    found = first(log)
    assert (found.cause, found.actor) == ("out-of-memory", "job")
    # a cut traceback alone still says that something failed
    assert first(log[2:]).id == "unclassified:traceback"


def test_tensorrts_builder_skipping_a_tactic_it_cannot_give_memory_goes_on():
    build = ["[08/31/2026-07:26:35] [TRT] [I] [MemUsageChange] Init builder kernel library: CPU +496, GPU +2, now: CPU "
             "14204, GPU 2301 (MiB)",
             "[08/31/2026-07:26:44] [TRT] [E] [virtualMemoryBuffer.cpp::resizePhysical::153] Error Code 2: OutOfMemory "
             "(Requested size was 1677721600 bytes.)",
             "[08/31/2026-07:26:44] [TRT] [W] Requested amount of GPU memory (1677721600 bytes) could not be allocated. "
             "There may not be enough free memory for allocation to succeed."]
    quiet(build)
    quiet(build[:2] + ["[08/31/2026-07:26:44] [TRT] [W] Skipping tactic 3 due to insufficient memory on requested "
                       "size of 1677721600 detected for tactic 0x0000000000000004."])
    # the build that then fails is a failure
    found = first(build + ["[08/31/2026-07:27:10] [TRT] [E] 10: Could not find any implementation for node "
                           "/model.0/conv/Conv.",
                           "[08/31/2026-07:27:10] [TRT] [E] 2: [builder.cpp::buildSerializedNetwork::751] Error Code 2: "
                           "Internal Error (Assertion engine != nullptr failed. )"])
    assert found is not None


# ---- from the development part of b24 ----

PMIX_NOISE = ["[gpu07.cluster:600229] PMIX ERROR: BAD-PARAM in file base/bfrop_base_unpack.c at line 692",
              "[gpu07.cluster:600229] PMIX ERROR: BAD-PARAM in file dstore_base.c at line 2225"]


def test_pmixs_unpack_complaints_of_mismatched_versions_neither_fail_nor_end_a_log():
    quiet(["$ srun -N 2 -n 8 ./build/all_reduce_perf -b 8 -e 1G", *PMIX_NOISE])
    quiet([*PMIX_NOISE, "#  Avg bus bandwidth    : 182.45"])
    # a job that then fails still fails, for its own reason
    found = first([*PMIX_NOISE, "srun: error: gpu07: task 3: Killed", "srun: Terminating StepId=4242.0"])
    assert found.cause == "out-of-memory"


def test_a_framework_whose_gpu_backend_failed_and_that_runs_on_the_cpu_is_a_finding():
    found = first(["CUDA backend failed to initialize: Unable to use CUDA because of the following issues with CUDA "
                   "components:", "Outdated cuDNN installation found.", "[CpuDevice(id=0)]"])
    assert (found.cause, found.actor) == ("missing-module", "config")
    # a CPU install's notice is not
    quiet(["An NVIDIA GPU may be present on this machine, but a CUDA-enabled jaxlib is not installed. Falling back to "
           "cpu.", "[CpuDevice(id=0)]"])


def test_a_progress_bar_the_shells_report_was_written_straight_after_is_read_as_that_report():
    # tqdm draws without a newline; the shell then writes "Killed" on the same terminal line
    found = first(["Loading checkpoint shards:  50%|█████     | 1/2 [00:41<00:41, 41.02s/it]Killed"])
    assert (found.cause, found.actor) == ("out-of-memory", "job")
    # a bar followed by the program's own words is still the program going on
    quiet(["100%|██████████| 2/2 [00:05<00:00,  2.51s/it]Some weights of the model checkpoint were not used",
           "step 10 loss 2.31"])


# ---- from the development part of b25 ----

def test_an_uncaught_cpp_exception_is_named_by_its_what_line_when_that_says_what_failed():
    found = first(["terminate called after throwing an instance of 'std::runtime_error'",
                   '  what():  In listenFromLoop at tensorpipe/transport/uv/uv.h:176 "rv < 0: address already in use"',
                   "SIGABRT(6), PID: 11052, Thread 11052: "])
    assert (found.cause, found.actor) == ("address-in-use", "config")
    # a what() that names nothing stays the native crash
    found = first(["terminate called after throwing an instance of 'c10::Error'",
                   "  what():  invariant violated in the custom op's dispatch",
                   "Aborted (core dumped)"])
    assert found.cause == "native-crash"


def test_the_first_nccl_tests_check_form_is_a_failure_named_by_its_result():
    found = first(["# NCCL Tests compiled with NCCL 1.0",
                   "#      bytes             N    type      op     time  algbw  busbw      res",
                   "NCCL failure all_reduce.cu:95 'unhandled cuda error'"])
    assert found.cause == "nccl-internal"
    # the words inside a line of the program's own are no check of nccl-tests'
    quiet(["# a line such as NCCL failure all_reduce.cu:95 'x' is what the tests print when a call fails",
           "#  Avg bus bandwidth    : 182.45"])


# ---- from the development part of b26 ----

@pytest.mark.parametrize("heap", [
    # glibc's malloc_printerr messages (malloc/malloc.c): each aborts the process
    "free(): corrupted unsorted chunks", "munmap_chunk(): invalid pointer", "corrupted size vs. prev_size",
    "malloc_consolidate(): invalid chunk size", "realloc(): invalid next size", "corrupted double-linked list",
])
def test_every_heap_check_of_glibc_is_a_native_crash_with_or_without_the_abort_after_it(heap):
    for log in ([heap, "Aborted (core dumped)"], ["step 3 loss 2.1", heap]):
        found = first(log)
        assert (found.cause, found.actor) == ("native-crash", "job"), log


def test_open_mpis_signal_report_in_a_launched_process_is_how_it_died():
    # opal/util/stacktrace.c, in every process mpirun started
    found = first(["step 5 loss 1.0",
                   "[rack1-93-slot7:186363] *** Process received signal ***",
                   "[rack1-93-slot7:186363] Signal: Aborted (6)",
                   "[rack1-93-slot7:186363] Signal code:  (-6)"])
    assert (found.cause, found.actor) == ("native-crash", "job")
    found = first(["[node1:4242] *** Process received signal ***", "[node1:4242] Signal: Segmentation fault (11)",
                   "[node1:4242] Signal code: Address not mapped (1)", "[node1:4242] Failing at address: 0x10"])
    assert found.id == "linux:SIGSEGV"
    # a program's own words about signals are no signal it received
    quiet(["INFO Signal: SIGTERM handler installed", "The word corrupted appears in this data file name",
           "step 1 loss 2.0"])


def test_a_commands_own_report_of_a_failed_system_call_at_the_end_names_its_cause():
    # perror(3)/err(3)'s form, then srun's report of the task's exit (a pyxis container with a read-only root)
    found = first(["$ srun --container-image=debian sh -c 'touch /foobar'",
                   "pyxis: importing docker image ...",
                   "touch: cannot touch '/foobar': Read-only file system",
                   "srun: error: node-01: task 0: Exited with exit code 1"])
    assert (found.cause, found.actor) == ("read-only-filesystem", "config")
    found = first(["cp: cannot create regular file '/ckpt/model.pt': No space left on device"])
    assert found.cause == "disk-full"
    # the same form that the job went on after, or a path a script probes, is no failure
    quiet(["bash: /etc/profile.d/conda.sh: Permission denied", "step 1 loss 2.0", "step 2 loss 1.9"])
    quiet(["ls: cannot access '/data/cache': No such file or directory", "building the cache", "step 1 loss 2.0"])


# ---- from the development part of b27 ----

def test_a_library_built_on_cuda_that_words_its_check_with_a_capital_e_is_an_error_line():
    # FlashInfer's check ("CUDA Error: <string> (<code>) <file>: line N at function <call>")
    found = first(["CUDA Error: no kernel image is available for execution on the device (209) /tmp/flashinfer/"
                   "include/flashinfer/attention/handler.cuh: line 169 at function cudaOccupancyMaxActiveBlocks"
                   "PerMultiprocessor(&num_blocks_per_sm, kernel, num_threads, smem_size)",
                   "Process Process-1"])
    assert (found.cause, found.actor) == ("torch-build-mismatch", "config")


def test_an_environment_variable_the_launch_did_not_set_is_the_launchs():
    found = first(raised("ValueError: paddle.distributed initialize error, environment variable FLAGS_selected_gpus "
                         "is needed, but not set."))
    assert (found.cause, found.actor) == ("unclassified", "config")
    assert "launcher" in found.remedy
    # a value the program read from its environment and found wrong is the program's input
    found = first(raised("ValueError: batch size must be positive, got 0"))
    assert (found.cause, found.actor) == ("program-error", "job")


# ---- from the development part of b29 ----

def test_the_cuda_check_macro_most_cuda_programs_copy_is_an_error_line():
    # "CUDA error <code> at <file>:<line>: <cudaGetErrorString>" (ggml before 2024, and CUDA programs at large)
    found = first(["CUDA error 222 at /home/runner/work/ctransformers/models/ggml/ggml-cuda.cu:6045: the provided PTX "
                   "was compiled with an unsupported toolchain."])
    assert found.cause == "driver-too-old"
    found = first(["CUDA error 2 at ggml-cuda.cu:7026: out of memory", "current device: 0"])
    assert found.cause == "out-of-memory"
    # its cuBLAS twin prints the status's number alone ("cuBLAS error 13 at ggml-cuda.cu:7001")
    found = first(["cuBLAS error 13 at /tmp/llama.cpp/ggml-cuda.cu:7001", "current device: 0"])
    assert found.cause == "device-assert"
    # a number that is no CUDA error, and the words quoted in a message, are no failure of their own
    quiet(["CUDA error 0 at ggml-cuda.cu:10: no error", "step 1 loss 2.0"])
    quiet(["note: a failed call is reported as 'CUDA error 2 at file:line' by the kernels", "step 1 loss 2.0"])


def test_a_hub_that_refuses_the_model_is_the_launchs_and_a_hub_out_of_reach_the_services():
    refused = [
        "huggingface_hub.errors.GatedRepoError: 403 Client Error. (Request ID: Root=1-65) Cannot access gated repo "
        "for url https://huggingface.co/meta-llama/Llama-2-7b-hf/resolve/main/config.json.",
        "huggingface_hub.utils._errors.RepositoryNotFoundError: 401 Client Error. (Request ID: Root=1-64) Repository "
        "Not Found for url: https://huggingface.co/api/models/org/modle-7b.",
        "huggingface_hub.errors.RevisionNotFoundError: 404 Client Error. Revision Not Found for url: "
        "https://huggingface.co/api/models/org/model-7b/revision/v9.",
        "OSError: org/modle-7b is not a local folder and is not a valid model identifier listed on "
        "'https://huggingface.co/models'"]
    for line in refused:
        found = first(raised(line))
        assert (found.cause, found.actor) == ("unclassified", "config"), line
        assert "token" in found.remedy or "revision" in found.remedy
    # the Hub out of reach stays the service's: the network, not the launch's model id
    found = first(raised("OSError: We couldn't connect to 'https://huggingface.co' to load this file, couldn't find "
                         "it in the cached files and it looks like org/model-7b is not the path to a directory "
                         "containing a file named config.json."))
    assert (found.cause, found.actor) == ("unclassified", "service")


def test_nccl_before_2_4_wrote_its_warn_without_its_name():
    found = first(["seyun:17283:17549 [3] include/socket.h:371 WARN Connection closed by remote peer",
                   "seyun:17283:17549 [3] INFO transport/net_socket.cu:166 -> 2",
                   "seyun:17281:17552 [1] INFO init.cu:536 -> 2"])
    assert found.cause == "peer-exited"
    assert found.hosts == ["seyun"]
    # its INFO lines, and a WARN word inside a message, are no failure
    quiet(["seyun:17283:17549 [3] INFO NET : Using interface eno2:115.145.173.234<0>",
           "seyun:17283:17549 [3] INFO NET/Socket : 1 interfaces found",
           "step 1: WARN Connection closed by remote peer was seen once and retried"])
    # a logger's own "time [thread] file:line WARN" lines are no NCCL's, whatever they say
    quiet(["10:00:01 [3] main.cc:40 WARN Connection closed by remote peer",
           "12:01:33 [12] trainer.py:88 WARN Call to ibv_open_device failed; falling back to TCP",
           "12:01:40 [12] trainer.py:90 INFO step 1 loss 2.0"])


# ---- from the development part of b30 ----

def test_a_controller_that_reports_a_failed_replica_or_job_is_a_failure_never_silence():
    # `kubectl describe tfjob`: the training operator's JobFailed condition, and a Job past its retries
    found = first(["Status:", "  Conditions:",
                   "    Message:               TFJob myjob has failed because 1 Worker replica(s) failed.",
                   "    Reason:                TFJobFailed", "    Type:                  Failed"])
    assert (found.cause, found.actor) == ("unclassified", "job")
    assert "failing rank's own log" in found.explanation
    assert "failed.." not in found.explanation
    found = first(["Events:", "  Warning  BackoffLimitExceeded  2m  job-controller  Job has reached the specified "
                   "backoff limit"])
    assert found.cause == "unclassified"
    # a job that completed reports no replica as failed
    quiet(["    Message:               TFJob myjob successfully completed.", "    Reason:                TFJobSucceeded",
           "  Replica Statuses:", "    Worker:", "      Succeeded:  2"])


STORE_TIMEOUT = ("({who}) [E socket.cpp:922] [c10d] The client socket has timed out after 1800s while trying to "
                 "connect to ({address}, 44737).")
WATCHDOG = ("(ActorModelRayActor pid=207260, ip=10.0.1.75) [E ProcessGroupNCCL.cpp:475] [Rank 3] Watchdog caught "
            "collective operation timeout: WorkNCCL(SeqNum=3856, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
            "Timeout(ms)=1800000) ran for 1800268 milliseconds before timing out.")


def test_a_store_that_could_not_be_reached_counts_when_a_watchdog_took_a_rank_down():
    # c10d retries its connect and says so on every attempt: alone it is no failure, and the watchdog's timeout,
    # which takes its rank down, is one
    lines = [STORE_TIMEOUT.format(who="RayWorkerVllm pid=207931, ip=10.0.1.8", address="10.0.1.75"), WATCHDOG]
    found = first(lines)
    assert (found.id, found.cause) == ("c10d-store-connect-timeout", "connect-timeout")
    quiet(lines[:1] + ["(RayWorkerVllm pid=207931, ip=10.0.1.8) INFO step 1 loss 2.0"])
    # an Xid the driver recovered from, or a Python warning, is no failure the store's retries could wait for
    for noise in ("NVRM: Xid (PCI:0000:3b:00): 63, pid=1234, Row Remapper: New row marked for remapping",
                  "/opt/venv/lib/python3.11/site-packages/torch/cuda/__init__.py:128: UserWarning: CUDA initialization: "
                  "Unexpected error from cudaGetDeviceCount()"):
        ids = [f.id for f in diagnose_lines([lines[0], noise, "INFO step 1 loss 2.0", "INFO step 2 loss 1.9"]).findings]
        assert "c10d-store-connect-timeout" not in ids, noise


def test_a_rank_that_dialled_dockers_bridge_from_another_host_was_given_the_wrong_interface():
    found = first([STORE_TIMEOUT.format(who="RayWorkerVllm pid=207931, ip=10.0.1.75", address="172.17.0.2"), WATCHDOG])
    assert (found.cause, found.actor) == ("network-interface", "config")
    assert "172.17.0.2" in found.explanation and "10.0.1.75" in found.explanation
    # a rank on the bridge itself (containers of one host), or one whose own address the log does not give, may
    # have dialled a peer that was not up: the store's own reading stands
    same_host = first([STORE_TIMEOUT.format(who="RayWorkerVllm pid=207931, ip=172.17.0.3", address="172.17.0.2"),
                       WATCHDOG])
    assert same_host.cause == "connect-timeout"
    unknown = first([STORE_TIMEOUT.format(who="RayWorkerVllm pid=207931", address="172.17.0.2"), WATCHDOG])
    assert unknown.cause == "connect-timeout"
    # an address that ends a sentence is the same address
    ended = first(["(RayWorkerVllm pid=207931, ip=10.0.1.75) [E socket.cpp:922] [c10d] The client socket has timed "
                   "out after 1800s while trying to connect to (172.17.0.2, 44737); the store is at 172.17.0.2.",
                   WATCHDOG])
    assert ended.cause == "network-interface"


# ---- from the development part of b31 ----

def test_error_lines_after_the_run_said_it_was_done_are_its_teardown():
    teardown = ["(RayTrainWorker pid=82395) [ERROR] TBE Subprocess[task_distribute] raise error[], main process "
                "disappeared!"] * 3
    quiet(["Training result: Result(", "  metrics={'loss': 0.0114, 'epoch': 4.0, 'step': 500},",
           "  checkpoint=Checkpoint(filesystem=local, path=/root/ray_results/checkpoint_000004)", ")"] + teardown)
    quiet(["{'train_runtime': 812.4, 'train_loss': 1.93, 'epoch': 3.0}",
           "Training completed. Do not forget to share your model on huggingface.co/models =)",
           "ERROR:root:TBE Subprocess[task_distribute] raise error[], main process disappeared!"])
    # the same errors where the run never said so end the log in them, and so do words that only sound like it
    found = first(["{'loss': 1.93, 'epoch': 1.0}"] + teardown)
    assert found.cause == "unclassified"
    for said in ("epoch 1 training done, starting validation", "Training completed with errors: 3 ranks failed",
                 "[INFO] checking whether training is done"):
        found = first([said, "ERROR: worker 3 lost connection to the coordinator"])
        assert found.cause == "unclassified", said
    # and a failure with a traceback after the run's last words is a failure (the final save)
    found = first(["Training completed. Do not forget to share your model on huggingface.co/models =)"]
                  + raised("OSError: [Errno 28] No space left on device"))
    assert found.cause == "disk-full"
