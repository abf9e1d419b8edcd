"""Who acts, decided from the whole log (diagnose/actors.py): each rule with a log where it applies and one where it
must not, and the structure that finds the failures those rules read (an OSError printed alone, IPython's header,
an InfiniBand port that went down, a GPU the driver could not bring up)."""

from __future__ import annotations

import dataclasses

from accelstack.diagnose import diagnose_lines
from accelstack.diagnose.actors import Context, decide_actors
from accelstack.diagnose.findings import Finding

from .helpers import first_finding as first
from .helpers import raised

TIMEOUT = ("[rank{r}]:[E1126 10:00:00.000000 1 ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog caught collective operation"
           " timeout: WorkNCCL(SeqNum=9, OpType=ALLREDUCE, NumelIn=4, NumelOut=4, Timeout(ms)=600000) ran for 600001"
           " milliseconds before timing out.")
XID79 = "[Tue Nov 26 09:59:00 2026] NVRM: Xid (PCI:0000:07:00): 79, pid=4410, name=python, GPU has fallen off the bus."


def by_cause(lines: list[str], cause: str) -> Finding:
    found = [f for f in diagnose_lines(lines).findings if f.cause == cause]
    assert found, [f.cause for f in diagnose_lines(lines).findings]
    return found[0]


# ---- a consequence is acted on by whoever acts on its cause ----

def test_a_timeout_after_a_ranks_own_error_is_acted_on_by_that_errors_actor():
    findings = diagnose_lines(["[rank1]: Traceback (most recent call last):",
                               '[rank1]:   File "train.py", line 9, in step',
                               "[rank1]: KeyError: 'labels'",
                               TIMEOUT.format(r=0)]).findings
    assert [f.cause for f in findings][:2] == ["program-error", "collective-timeout"]
    timeout = findings[1]
    assert timeout.consequence_of == "program-error" and timeout.actor == "job"
    assert "program-error" in timeout.extracted["actor_reason"]


def test_a_timeout_that_follows_nothing_is_not_revised_by_it():
    timeout = first([TIMEOUT.format(r=0), TIMEOUT.format(r=1)])
    assert timeout.consequence_of is None and timeout.actor == "config"


# ---- failed hardware on the host: the downstream reports are the node's ----

def test_a_timeout_beside_failed_hardware_is_the_nodes():
    timeout = by_cause([XID79, TIMEOUT.format(r=0), TIMEOUT.format(r=1)], "collective-timeout")
    assert timeout.actor == "node" and "xid-fatal" in timeout.extracted["actor_reason"]
    assert "Who acts: node" in timeout.explanation
    # The hardware leads; the timeout is its consequence.
    assert diagnose_lines([XID79, TIMEOUT.format(r=0)]).first.cause == "xid-fatal"
    # Where the timeout was not read as the Xid's consequence (it came first in the logs), the host's hardware
    # still makes it the node's.
    findings = diagnose_lines([XID79, TIMEOUT.format(r=0)]).findings
    xid = next(f for f in findings if f.cause == "xid-fatal")
    timeout = dataclasses.replace(next(f for f in findings if f.cause == "collective-timeout"), actor="config",
                                  consequence_of=None, extracted={})
    decide_actors([xid, timeout], Context())
    assert timeout.actor == "node" and "Xid" in timeout.extracted["actor_reason"]


def test_a_timeout_without_hardware_or_beside_another_hosts_hardware_keeps_its_actor():
    alone = by_cause([TIMEOUT.format(r=0), TIMEOUT.format(r=1)], "collective-timeout")
    assert alone.actor == "config" and "actor_reason" not in alone.extracted
    # Both findings name their host and the hosts differ: the other host's GPU says nothing of this one.
    findings = diagnose_lines([XID79, TIMEOUT.format(r=0)]).findings
    timeout = next(f for f in findings if f.cause == "collective-timeout")
    xid = next(f for f in findings if f.cause == "xid-fatal")
    timeout = dataclasses.replace(timeout, actor="config", hosts=["gpu-01"], extracted={}, consequence_of=None)
    xid = dataclasses.replace(xid, hosts=["gpu-02"])
    decide_actors([xid, timeout], Context())
    assert timeout.actor == "config"


# ---- a rendezvous that could not be reached: the service's ----

STORE = "[rank0]: torch.distributed.DistStoreError: Timed out after 901 seconds waiting for clients. 1/2 clients joined."


def test_a_dead_peer_beside_an_unreachable_store_is_the_services():
    findings = diagnose_lines([STORE, "[rank1]: RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled "
                                      "system error, NCCL version 2.19.3"]).findings
    nccl = next(f for f in findings if f.cause == "nccl-internal")
    assert any(f.cause == "connect-timeout" for f in findings)
    assert nccl.actor == "service" and "connect-timeout" in nccl.extracted["actor_reason"]
    # Not read as a consequence, the unreachable store still makes it the service's.
    store = next(f for f in findings if f.cause == "connect-timeout")
    nccl = dataclasses.replace(nccl, actor="node", consequence_of=None, extracted={})
    decide_actors([store, nccl], Context())
    assert nccl.actor == "service" and "rendezvous" in nccl.extracted["actor_reason"]


def test_nccls_own_socket_failure_is_not_the_rendezvous():
    nccl = by_cause(["[rank1]: torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:2027, unhandled"
                     " system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.21.5",
                     "[rank1]: Last error:",
                     "[rank1]: socketStartConnect: Connect to 10.0.0.2<45763> failed : Software caused connection "
                     "abort"], "nccl-internal")
    assert nccl.actor == "config" and "rendezvous" not in nccl.extracted.get("actor_reason", "")


# ---- NCCL's generic results ----

def test_ncclS_generic_error_without_a_warn_is_the_launchs():
    found = first(["Test NCCL failure common.cu:1012 'internal error - please report this issue to the NCCL "
                   "developers / '"])
    assert (found.cause, found.actor) == ("nccl-internal", "config")
    assert "NCCL_DEBUG=WARN" in found.extracted["actor_reason"]


def test_ncclS_generic_error_whose_warn_names_the_device_keeps_its_actor():
    found = by_cause(["gpu-3:11:22 [0] enqueue.cc:58 NCCL WARN Cuda failure 'unspecified launch failure'",
                      "ncclInternalError: Internal check failed. This is either a bug in NCCL or due to memory "
                      "corruption"], "nccl-internal")
    # Not the launch's: what the WARN names (here the CUDA failure it follows) decides.
    assert found.actor != "config" and "NCCL_DEBUG" not in found.extracted.get("actor_reason", "")


# ---- a collective that timed out while its peers were elsewhere ----

GLOO = ["[rank0]: Traceback (most recent call last):",
        '[rank0]:   File "/work/job.py", line 54, in main',
        "[rank0]:     dist.all_reduce(p.grad)",
        "[rank0]: RuntimeError: [/pytorch/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:78] Timed out waiting"
        " 10000ms for recv operation to complete"]
SUMMARY = ["torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
           "============================================================",
           "/work/job.py FAILED",
           "------------------------------------------------------------",
           "Failures:",
           "[1]:",
           "  time      : 2026-11-26_13:43:42",
           "  host      : localhost",
           "  rank      : 1 (local_rank: 1)",
           "  exitcode  : -15 (pid: 20649)  (SIGTERM)",
           "  error_file: <N/A>",
           "  traceback : Signal 15 (SIGTERM) received by PID 20649",
           "------------------------------------------------------------",
           "Root Cause (first observed failure):",
           "[0]:",
           "  time      : 2026-11-26_13:43:42",
           "  host      : localhost",
           "  rank      : 0 (local_rank: 0)",
           "  exitcode  : 1 (pid: 20648)",
           "  error_file: <N/A>",
           "============================================================"]


def test_a_timeout_whose_peer_only_the_launcher_stopped_is_the_programs():
    found = first(GLOO + SUMMARY)
    assert (found.cause, found.actor) == ("collective-timeout", "job")
    assert "rank(s) 1" in found.extracted["actor_reason"]


def test_a_timeout_on_every_rank_keeps_its_actor():
    rank1 = [line.replace("[rank0]", "[rank1]").replace("recv operation", "send operation") for line in GLOO]
    found = first(GLOO + rank1 + SUMMARY)
    assert (found.cause, found.actor) == ("collective-timeout", "config")
    # No launcher summary at all: nothing says a peer was elsewhere.
    assert first(GLOO).actor == "config"


# ---- a read-only filesystem ----

def test_a_read_only_system_directory_is_where_the_job_was_told_to_write():
    found = first(["OSError: [Errno 30] Read-only file system: '/opt/eos/measurement.json'"])
    assert (found.cause, found.actor) == ("read-only-filesystem", "config")
    assert "/opt/eos/measurement.json" in found.extracted["actor_reason"]
    assert first(["OSError: [Errno 30] Read-only file system: '/spareparts'"]).actor == "config"


def test_a_data_mount_that_turned_read_only_is_the_storages():
    found = first(["OSError: [Errno 30] Read-only file system: '/mnt/lustre/ckpt/step10.pt'"])
    assert (found.cause, found.actor) == ("read-only-filesystem", "service")
    assert "actor_reason" not in found.extracted


# ---- an error no table names: the actor its exception class implies ----

def test_an_unnamed_error_takes_the_actor_its_class_names():
    config = first(["lightning_fabric.utilities.exceptions.MisconfigurationException: `accumulate_grad_batches`",
                    " must be a positive integer, got 'auto'"])
    assert (config.cause, config.actor) == ("unclassified", "config")
    assert "MisconfigurationException" in config.extracted["actor_reason"]
    service = first(["Traceback (most recent call last):", '  File "a.py", line 1, in <module>',
                     "mylib.RemoteServiceError: the upstream answered 503"])
    assert (service.cause, service.actor) == ("unclassified", "service")


def test_an_unnamed_error_of_an_ordinary_class_is_the_programs():
    found = first(["Traceback (most recent call last):", '  File "a.py", line 1, in <module>',
                   "mylib.DataShapeError: rows differ"])
    assert (found.cause, found.actor) == ("unclassified", "job") and "actor_reason" not in found.extracted


# ---- the structure the rules read ----

def test_an_oserror_printed_alone_is_a_failure():
    found = first(["[Errno 13] Permission denied: '/.cache'"])
    assert (found.cause, found.actor) == ("permission-denied", "config")
    assert first(["[Errno 28] No space left on device: '/ckpt/step_100.pt'"]).cause == "disk-full"


def test_an_errno_quoted_inside_a_message_the_program_went_on_after_is_not():
    assert not diagnose_lines(["Could not cache non-existence of file. Will ignore error and continue. Error: [Errno 13]"
                               " Permission denied: '/models/hub/models--x/.no_exist'"]).findings


def test_ipythons_header_names_the_exception_of_a_cut_traceback():
    found = first(["RayTaskError(PermissionError)             Traceback (most recent call last)",
                   "Cell In [26], line 2",
                   "      1 #call the above cell as a remote ray function",
                   "----> 2 ray.get(train_fn.remote())"])
    assert found.cause == "permission-denied"
    # A header that is no exception class is a logger's prefix, as before.
    logged = first(["ERROR 05-07 05:58:46 core.py:291] Traceback (most recent call last):",
                    'ERROR 05-07 05:58:46 core.py:291]   File "x.py", line 3, in f',
                    "ERROR 05-07 05:58:46 core.py:291] KeyError: 'step'"])
    assert logged.cause == "program-error"


def test_an_infiniband_port_that_went_down_is_the_fabrics():
    found = first(["host-3:11:22 [0] transport/net_ib.cc:93 NCCL WARN NET/IB : Got async event : port error"])
    assert (found.cause, found.actor) == ("rdma", "node")
    catastrophic = first(["host-3:11:22 [0] transport/net_ib.cu:80 NCCL WARN NET/IB : Got async event : local "
                          "catastrophic error"])
    assert catastrophic.cause == "rdma"


def test_an_infiniband_port_that_came_up_is_no_failure():
    assert not diagnose_lines(["host-3:11:22 [0] transport/net_ib.cc:93 NCCL WARN NET/IB : Got async event : port "
                               "active"]).findings


def test_a_gpu_the_driver_could_not_bring_up_is_the_nodes():
    found = first(["[Sun Apr 14 12:48:42 2024] NVRM: GPU 0000:81:00.0: RmInitAdapter failed! (0x25:0x40:1470)",
                   "[Sun Apr 14 12:48:42 2024] NVRM: GPU 0000:81:00.0: rm_init_adapter failed, device minor number 0"])
    assert (found.cause, found.actor) == ("device-hardware", "node")
    assert not diagnose_lines(["[Sun Apr 14 12:40:01 2024] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.54.14"
                               ]).findings


def test_an_oom_whose_message_names_the_engines_launch_arguments_is_the_launchs():
    # vLLM refuses to start: its memory share (--gpu-memory-utilization) or context (--max-model-len) does not fit.
    share = ["(EngineCore_DP0 pid=17374) ERROR 09-28 15:47:24 [core.py:718] ValueError: Free memory on device "
             "(3.22/4.0 GiB) on startup is less than desired GPU memory utilization (0.9, 3.6 GiB). Decrease GPU "
             "memory utilization or reduce GPU memory used by other processes."]
    found = first(share)
    assert (found.cause, found.actor) == ("out-of-memory", "config")
    assert "gpu memory utilization" in found.extracted["actor_reason"].lower()
    context = ["ValueError: The model's max seq len (131072) is larger than the maximum number of tokens that can be "
               "stored in KV cache (24480). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` "
               "when initializing the engine."]
    assert (first(context).cause, first(context).actor) == ("out-of-memory", "config")
    # SGLang's and TGI's words for the same share (--mem-fraction-static, --cuda-memory-fraction)
    sglang = ["RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. Current value: "
              "self.server_args.mem_fraction_static=0.2"]
    assert (first(sglang).cause, first(sglang).actor) == ("out-of-memory", "config")
    tgi = ["RuntimeError: Not enough memory to handle 4096 prefill tokens. You need to decrease "
           "`--max-batch-prefill-tokens`"]
    assert (first(tgi).cause, first(tgi).actor) == ("out-of-memory", "config")
    lmdeploy = ["RuntimeError: not enough memory for the kv cache: lower cache_max_entry_count (0.8) or the session "
                "length"]
    assert (first(lmdeploy).cause, first(lmdeploy).actor) == ("out-of-memory", "config")
    # A training step that ran out of memory names no launch argument: the program's size.
    step = ["torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
            "79.11 GiB of which 1.06 GiB is free. Including non-PyTorch memory, this process has 78.00 GiB memory in "
            "use."]
    assert (first(step).cause, first(step).actor) == ("out-of-memory", "job")


def test_a_disk_full_in_the_nodes_scratch_directory_is_where_the_launch_let_the_job_write():
    scratch = first(["FATAL:   while extracting /data/images/medaka.img: root filesystem extraction failed: failed to "
                     "copy content in staging file: write /tmp/rootfs-589451147/archive-970364270: no space left on "
                     "device"])
    assert (scratch.cause, scratch.actor) == ("disk-full", "config")
    assert "TMPDIR" in scratch.extracted["actor_reason"]
    var_tmp = first(raised("OSError: [Errno 28] No space left on device: '/var/tmp/torchinductor_user/ab/cab.py'"))
    assert (var_tmp.cause, var_tmp.actor) == ("disk-full", "config")
    # the shared storage the job saves to stays the storage's
    shared = first(raised("OSError: [Errno 28] No space left on device: '/lustre/ckpt/step_900/model.pt'"))
    assert (shared.cause, shared.actor) == ("disk-full", "service")
    # a path that only holds "tmp" in a later part is no scratch directory
    nested = first(raised("OSError: [Errno 28] No space left on device: '/data/run/tmp/shard_3.arrow'"))
    assert nested.actor == "service"
    # a launcher's summary that names its own error file under /tmp says nothing of where the write went
    summary = first(raised("OSError: [Errno 28] No space left on device: '/lustre/ckpt/model.pt'")
                    + ["torch.distributed.elastic.multiprocessing.errors.ChildFailedError:",
                       "  error_file: /tmp/torchelastic_ab12/none_x/attempt_0/0/error.json"])
    assert (summary.cause, summary.actor) == ("disk-full", "service")
