"""The general rules that decide a finding's cause and actor from what the logs show (issue 22): each on an excerpt
written from the public source that documents the behaviour (cited beside it), none copied from the corpus."""

from __future__ import annotations

from accelstack.diagnose import diagnose_lines

from .helpers import first_finding as first

# ---- lowercase exception classes ----

def test_a_lowercase_class_a_table_names_is_an_exception_line():
    # CPython < 3.10 prints socket.timeout by its own (lowercase) name: Lib/socket.py. Format as in
    # https://github.com/huggingface/transformers/issues/30589 (a Hub download that timed out).
    lines = ["Traceback (most recent call last):",
             '  File "/opt/venv/lib/python3.9/ssl.py", line 1099, in read',
             "    return self._sslobj.read(len, buffer)",
             "socket.timeout: The read operation timed out"]
    found = first(lines)
    assert (found.cause, found.actor) == ("unclassified", "service")
    assert "pre-fetch" in found.remedy
    # A lowercase name no table lists is no exception line outside a traceback.
    assert diagnose_lines(["socket.settimeout: value set to 30"]).findings == []


# ---- Python warnings ----

WARNING = ("/opt/venv/lib/python3.9/site-packages/torch/cuda/__init__.py:138: UserWarning: CUDA initialization: The "
           "NVIDIA driver on your system is too old (found version 10020). Please update your GPU driver by "
           "downloading and installing a new version from the URL: http://www.nvidia.com/Download/index.aspx")


def test_a_warning_does_not_explain_the_failure_after_it():
    # torch/cuda/__init__.py warns and goes on (torch.cuda.is_available() is False); the job then died of
    # something else: that failure leads, the warning follows as context.
    lines = [WARNING,
             "  return torch._C._cuda_getDeviceCount() > 0",
             "Traceback (most recent call last):",
             '  File "train.py", line 12, in <module>',
             "    main()",
             "KeyError: 'encoder.layer.0.weight'"]
    diagnosis = diagnose_lines(lines)
    assert [f.cause for f in diagnosis.findings] == ["program-error", "driver-too-old"]
    assert "warning only" in diagnosis.findings[1].explanation


def test_a_warning_alone_is_still_a_finding_where_nothing_else_failed():
    lines = [WARNING, "Traceback (most recent call last):", '  File "train.py", line 3, in <module>',
             "RuntimeError: No CUDA GPUs are available"]
    causes = [f.cause for f in diagnose_lines(lines).findings]
    assert "driver-too-old" in causes


# ---- who acts on a rendezvous that cannot be reached ----

def test_a_rendezvous_whose_name_does_not_resolve_is_the_launchs():
    # torch/csrc/distributed/c10d/socket.cpp logs getaddrinfo's answer before the connect times out; EAI_NONAME
    # ("Name or service not known", getaddrinfo(3)) means the name given does not exist.
    head = ("[W1123 09:12:01.114210000 socket.cpp:764] [c10d] The IPv6 network addresses of (trainer-0, 29500) "
            "cannot be retrieved (gai error: -2 - Name or service not known).")
    timeout = ("[E1123 09:13:01.120400000 socket.cpp:1028] [c10d] The client socket has timed out after 60000ms "
               "while trying to connect to (trainer-0, 29500).")
    tail = ["Traceback (most recent call last):", '  File "main.py", line 21, in <module>',
            "torch.distributed.DistNetworkError: The client socket has timed out after 60000ms while trying to "
            "connect to (trainer-0, 29500)."]
    found = first([head, timeout, *tail])
    assert (found.id, found.cause, found.actor) == ("c10d-master-addr-unresolved", "connect-timeout", "config")
    # The same timeout where the name resolved (a firewall, rank 0 not up) stays the network's.
    assert first([timeout, *tail]).actor == "service"
    # DNS that did not answer (EAI_AGAIN) is a service too.
    dns = head.replace("-2 - Name or service not known", "-3 - Temporary failure in name resolution")
    assert first([dns, timeout, *tail]).actor == "service"
    # c10d warns on every retry: a rendezvous that then worked gives nothing.
    assert diagnose_lines([head, "[rank0] step 1 loss 2.3"]).findings == []


# ---- the device: whose fault is an Xid ----

def test_an_xid_13_or_43_alone_is_the_applications_and_never_drains():
    # NVIDIA's Xid documentation (https://docs.nvidia.com/deploy/xid-errors/index.html): Xid 13 Graphics Engine
    # Exception and 43 GPU stopped processing are user application errors as a rule; 45 is the cleanup after one.
    xid13 = ("[Mon Nov 23 10:11:09 2026] NVRM: Xid (PCI:0000:9b:00): 13, pid='<unknown>', name=<unknown>, Graphics "
             "SM Warp Exception on (GPC 2, TPC 0, SM 1): Illegal Instruction Encoding")
    found = first([xid13])
    assert (found.id, found.cause, found.actor) == ("xid-application", "device-assert", "job")
    xid45 = "[Mon Nov 23 10:11:10 2026] NVRM: Xid (PCI:0000:9b:00): 45, pid=3112, name=python3, Ch 00000008"
    assert [f.id for f in diagnose_lines([xid13, xid45]).findings] == ["xid-application", "xid-cleanup"]
    # A hardware Xid is still the node's.
    xid79 = "NVRM: Xid (PCI:0000:9b:00): 79, pid=3112, name=python3, GPU has fallen off the bus."
    assert first([xid13, xid79]).actor == "node"


def test_a_math_librarys_internal_error_is_the_build_not_the_node():
    # cuDNN's and cuFFT's INTERNAL_ERROR went away with another torch build in
    # https://github.com/pytorch/pytorch/issues/52263 and https://github.com/pytorch/pytorch/issues/88038.
    for error in ("RuntimeError: cuDNN error: CUDNN_STATUS_INTERNAL_ERROR",
                  "RuntimeError: cuFFT error: CUFFT_INTERNAL_ERROR",
                  "RuntimeError: CUDA error: CUBLAS_STATUS_INTERNAL_ERROR when calling `cublasCreate(handle)`"):
        found = first(["Traceback (most recent call last):", '  File "train.py", line 9, in step', error])
        assert (found.cause, found.actor) == ("torch-build-mismatch", "config"), error


# ---- storage: who acts on an I/O error ----

def test_an_io_error_the_program_sees_is_the_storages_and_the_kernels_is_the_nodes():
    # nfs(5): a network filesystem returns EIO to the program when its server does not answer; the kernel's
    # EXT4-fs error (fs/ext4/super.c) names a local filesystem on the node.
    program = first(["Traceback (most recent call last):", '  File "train.py", line 80, in save',
                     "OSError: [Errno 5] Input/output error: '/mnt/shared/ckpt/step-400.pt'"])
    assert (program.cause, program.actor) == ("io-error", "service")
    kernel = first(["[81234.120001] EXT4-fs error (device nvme0n1p1): ext4_find_entry:1455: inode #2: comm python:"
                    " reading directory lblock 0"])
    assert (kernel.cause, kernel.actor) == ("io-error", "node")


# ---- NCCL's generic results ----

def test_ncclsystemerror_is_the_launchs_environment_first():
    # NCCL's troubleshooting guide: ncclSystemError is a failed system call, its Networking and Sharing Data
    # sections the launch's settings (interfaces, /dev/shm); torch's message from ProcessGroupNCCL.
    found = first(["RuntimeError: NCCL error in: /opt/pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970,"
                   " unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.19.3"])
    assert (found.id, found.cause, found.actor) == ("nccl-system-error", "nccl-internal", "config")
    # A framework that calls NCCL itself (cupy's NcclError, as vLLM's pynccl raises it) reads the same.
    cupy = first(["cupy_backends.cuda.libs.nccl.NcclError: NCCL_ERROR_SYSTEM_ERROR: unhandled system error (run "
                  "with NCCL_DEBUG=INFO for details)"])
    assert (cupy.cause, cupy.actor) == ("nccl-internal", "config")
    # An internal error with no WARN saying what broke is the launch's first too (tests/test_diagnose_actors.py);
    # one whose WARN names the device stays the node's.
    internal = first(["RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1970, internal error - please report this "
                      "issue to the NCCL developers, NCCL version 2.19.3"])
    assert (internal.id, internal.actor) == ("nccl-error", "config") and "NCCL_DEBUG=WARN" in \
        internal.extracted["actor_reason"]
    device = first(["host-1:2201:2290 [0] enqueue.cc:58 NCCL WARN Cuda failure 'unspecified launch failure'",
                    "RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1970, internal error - please report this "
                    "issue to the NCCL developers, NCCL version 2.19.3"])
    assert device.actor != "config"
    # What broke under it, named on the WARN line, still leads.
    shm = first(["host-1:2201:2290 [0] NCCL WARN Error while creating shared memory segment /dev/shm/nccl-a1 (size "
                 "9637888)",
                 "RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled system error, NCCL version 2.19.3"])
    assert shm.cause == "shm-too-small"


# ---- the scheduler ----

SUBMIT = ["[2026-11-23T08:00:01.120] _slurm_rpc_submit_batch_job: JobId=5513 InitPrio=4294901759 usec=811",
          "[2026-11-23T08:00:01.402] sched: Allocate JobId=5513 NodeList=gpu-09 #CPUs=16 Partition=gpu"]


def test_the_controllers_record_of_a_job_ended_by_a_signal_is_a_failure():
    # src/slurmctld/job_mgr.c, _job_complete: "%pJ WTERMSIG %d" / "%pJ WEXITSTATUS %d".
    killed = diagnose_lines([*SUBMIT, "[2026-11-23T09:14:44.910] _job_complete: JobId=5513 WTERMSIG 9",
                             "[2026-11-23T09:14:44.911] _job_complete: JobId=5513 done"])
    assert (killed.first.cause, killed.first.actor) == ("unclassified", "service")
    assert "kernel log" in killed.first.remedy
    # Slurm's own time-limit kill says so (job_time_limit).
    limit = diagnose_lines([*SUBMIT, "[2026-11-23T10:00:02.000] job_time_limit: Time limit exhausted for JobId=5513",
                            "[2026-11-23T10:00:32.000] _job_complete: JobId=5513 WTERMSIG 15"])
    assert limit.first.cause == "time-limit"
    # A non-zero exit is a failure the job's own output explains; alone, it is still not silent.
    exited = diagnose_lines([*SUBMIT, "[2026-11-23T09:14:44.910] _job_complete: JobId=5513 WEXITSTATUS 2"])
    assert exited.first is not None
    # A job that exited 0 is no failure.
    assert diagnose_lines([*SUBMIT, "[2026-11-23T09:14:44.910] _job_complete: JobId=5513 WEXITSTATUS 0"]).findings == []


def test_a_request_slurm_refuses_is_the_launchs():
    # slurm_strerror's strings (src/common/slurm_errno.c) after srun's "Unable to create step for job".
    for reason in ("Invalid generic resource (gres) specification", "Memory required by task is not available",
                   "Requested node configuration is not available"):
        found = first([f"srun: error: Unable to create step for job 88120: {reason}"])
        assert (found.cause, found.actor) == ("unclassified", "config"), reason
        assert "request" in found.remedy


def test_a_batch_script_the_node_cannot_execute_from_its_spool_is_the_nodes():
    # slurmstepd executes the script slurmd wrote into SlurmdSpoolDir/job<id>/slurm_script.
    found = first(["slurmstepd: error: execve(): /var/spool/slurmd/job00412/slurm_script: Permission denied"])
    assert (found.cause, found.actor) == ("unclassified", "node") and "SlurmdSpoolDir" in found.remedy
    # A step's own program that is not on the node's PATH is the launch's.
    program = first(["slurmstepd: error: execve(): torchrun: No such file or directory"])
    assert (program.cause, program.actor) == ("missing-module", "config")


def test_the_kernel_tells_a_failing_disk_from_a_network_filesystem_that_gave_up():
    # block/blk-core.c's blk_errors names a medium error on the node's own device; net/sunrpc/clnt.c's call_timeout
    # a soft NFS mount whose server stopped answering.
    disk = first(["[912345.101] I/O error, dev nvme1n1, sector 1953525 op 0x0:(READ) flags 0x80700 phys_seg 1 prio "
                  "class 2",
                  "[912345.102] critical medium error, dev nvme1n1, sector 1953525 op 0x0:(READ) flags 0x0 phys_seg 1"])
    assert (disk.cause, disk.actor) == ("io-error", "node")
    nfs = first(["[912399.551] nfs: server filer-02 not responding, timed out"])
    assert (nfs.cause, nfs.actor) == ("io-error", "service")
    # A hard mount that waits, then recovers, is no failure.
    assert diagnose_lines(["[912399.551] nfs: server filer-02 not responding, still trying",
                           "[912421.010] nfs: server filer-02 OK"]).findings == []
