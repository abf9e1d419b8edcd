"""How diagnosis reads failures that frameworks word themselves (issue 22, fourth pass): the lexicon of error
messages (data/lexicon.yml), tracebacks pasted without their header, a traceback cut before its exception, a JSON
error report, a device a container was not given. Each with the healthy or counter example it must not mistake."""

from __future__ import annotations

import pytest

from accelstack.diagnose import diagnose_lines
from accelstack.diagnose.lexicon import lexicon_row, load_lexicon, parse_lexicon
from accelstack.errors import ConfigError

from .helpers import first_cause as first


def traceback(exception: str) -> list[str]:
    return ["Traceback (most recent call last):", '  File "serve.py", line 12, in <module>', "    main()",
            exception]


# ---- the lexicon: a generic class whose message names the cause in words ----

@pytest.mark.parametrize(("exception", "cause"), [
    ("ValueError: Free memory on device (3.1/16.0 GiB) on startup is less than desired GPU memory utilization "
     "(0.9, 14.4 GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes.",
     "out-of-memory"),
    ("RuntimeError: Not enough memory on the accelerator to hold the KV cache for 32768 tokens", "out-of-memory"),
    ("mylib.errors.LaunchError: requested device index 3 but only 2 devices are visible", "device-mapping"),
    ("RuntimeError: Timed out waiting 1800000ms for the all_gather of bucket 12", "collective-timeout"),
    ("RuntimeError: could not connect to the rendezvous at node01:29500 (connection refused)", "connect-timeout"),
    ("RuntimeError: failed to bind the metrics server: address already in use", "address-in-use"),
    ("AssertionError: not enough shared memory for the batch (64 MB); raise the container's shm size",
     "shm-too-small"),
    ("RuntimeError: checkpoint writer: Disk quota exceeded", "disk-full"),
    ("AttributeError: module 'torch_npu' has no attribute '_npu_flash_attention'", "torch-build-mismatch"),
])
def test_a_generic_class_whose_message_names_the_cause_gets_that_cause(exception, cause):
    assert first(traceback(exception))[0] == cause


@pytest.mark.parametrize("exception", [
    "ValueError: Expected input batch_size (16) to match target batch_size (8).",
    "IndexError: index out of range in self",
    "AttributeError: 'dict' object has no attribute 'to'",
    "AttributeError: module 'mytrainer.utils' has no attribute 'build_optimizer'",
    "KeyError: 'memory'",
])
def test_a_generic_class_whose_message_names_nothing_stays_the_programs(exception):
    assert first(traceback(exception)) == ("program-error", "job")


def test_the_lexicon_never_outranks_a_row_that_names_the_failure():
    # "device" and "requested" are there, but the CUDA string names the cause verbatim.
    found = first(traceback("RuntimeError: CUDA error: invalid device ordinal (requested device 1, only 1 device)"))
    assert found == ("device-mapping", "config")
    found = first(traceback("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB; requested "
                            "device 0 only has 1.2 GiB free"))
    assert found == ("out-of-memory", "job")


def test_a_message_that_says_the_memory_was_shared_is_not_the_devices():
    assert first(traceback("RuntimeError: unable to write to file </torch_1_0>: not enough shared memory"))[0] \
        == "shm-too-small"
    assert lexicon_row(["cudaHostRegister failed: not enough memory"]) is None  # pinned memory: a limit, not OOM


def test_a_healthy_log_that_talks_about_memory_stays_quiet():
    lines = ["INFO 11-26 12:00:01 [gpu_worker.py:201] Available KV cache memory: 14.2 GiB, less than the 16 GiB asked",
             "INFO 11-26 12:00:02 [api_server.py:88] Started server process", "step 1 loss 2.1"]
    assert first(lines) is None


def test_every_shipped_rule_parses_names_a_cause_and_cites_a_source():
    rules = load_lexicon()
    assert len(rules) >= 10
    assert all(rule.row.source and rule.row.meaning for rule in rules)


@pytest.mark.parametrize(("rule", "problem"), [
    ({"cause": "no-such-cause", "all": [["x"]], "note": "n", "source": "s"}, "is not in causes.yml"),
    ({"cause": "out-of-memory", "all": [["x"]], "note": "n"}, "missing source"),
    ({"cause": "out-of-memory", "all": [[]], "note": "n", "source": "s"}, "non-empty list"),
    ({"cause": "out-of-memory", "all": [["x"]], "note": "n", "source": "s", "typo": 1}, "unknown field"),
    ({"cause": "unclassified", "actor": "admin", "all": [["x"]], "note": "n", "source": "s"}, "is not one of"),
])
def test_a_bad_rule_is_refused_with_where_it_is(rule, problem):
    with pytest.raises(ConfigError, match=problem) as raised:
        parse_lexicon({"id": "lexicon", "title": "t", "source": "s", "rules": [rule]}, "lexicon.yml")
    assert "rule #1" in str(raised.value)


# ---- a traceback pasted without its header ----

VLLM = "(EngineCore_DP0 pid=1742) ERROR 09-28 15:47:24 [core.py:718] "


def test_a_traceback_whose_header_was_cut_off_is_still_read_behind_a_loggers_prefix():
    lines = [VLLM + '  File "/venv/lib/python3.10/site-packages/vllm/v1/worker/gpu_worker.py", line 180, in init_device',
             VLLM + "    raise ValueError(",
             VLLM + "ValueError: Free memory on device (3.22/4.0 GiB) on startup is less than desired GPU memory "
                    "utilization (0.9, 3.6 GiB)."]
    diagnosis = diagnose_lines(lines)
    assert diagnosis.first is not None and diagnosis.first.cause == "out-of-memory"
    assert "gpu_worker.py:180" in diagnosis.first.extracted["raised_at"]


def test_frames_without_an_exception_after_them_are_no_failure():
    # A stack printed on purpose (traceback.print_stack, a warning's stack) ends in no exception.
    lines = ['  File "train.py", line 40, in <module>', "    trainer.fit()",
             '  File "trainer.py", line 12, in fit', "    self.log_stack()", "step 100 loss 0.3"]
    assert first(lines) is None


def test_a_frame_quoted_by_a_warning_opens_no_traceback():
    lines = ['WARNING 11-26 12:00:01 [utils.py:9]   File "x.py", line 3, in f',
             "WARNING 11-26 12:00:01 [utils.py:9] ValueError: shown for information only", "step 1 loss 2.0"]
    assert first(lines) is None


# ---- a traceback cut before its exception ranks below anything that names a cause ----

def test_a_cut_traceback_ranks_below_a_named_failure_and_is_the_finding_when_alone():
    prefix = "(RayWorkerWrapper pid=11305) ERROR 08-27 05:12:18 worker_base.py:382] "
    named = [prefix + "RuntimeError: NCCL error: unhandled cuda error (run with NCCL_DEBUG=INFO for details)"]
    cut = ["(RayWorkerWrapper pid=11934) ERROR 08-27 05:12:18 worker_base.py:382] Traceback (most recent call last):",
           '(RayWorkerWrapper pid=11934) ERROR 08-27 05:12:18 worker_base.py:382]   File "w.py", line 374, in run']
    assert first(named + cut)[0] == "nccl-internal"
    assert first(cut) == ("unclassified", "job")


# ---- a JSON error report ----

def test_an_api_servers_json_error_report_is_a_failure_a_table_names():
    line = ('{"error":{"message":"llama runner process has terminated: CUDA error: uncorrectable ECC error '
            'encountered","type":"api_error","param":null,"code":null}}')
    assert first([line]) == ("device-hardware", "node")


def test_a_json_answer_without_an_error_stays_quiet():
    assert first(['{"error": null, "result": "uncorrectable ECC error encountered: 0 (ok)"}', "done"]) is None


# ---- a device a container was not given ----

NO_DRIVER = traceback("RuntimeError: Found no NVIDIA driver on your system. Please check that you have an NVIDIA "
                      "GPU and installed a driver from http://www.nvidia.com/Download/index.aspx")


def test_no_driver_found_on_the_host_is_the_nodes():
    assert first(NO_DRIVER) == ("no-device", "node")


def test_no_driver_found_inside_a_container_is_the_launchs():
    found = diagnose_lines(["Creating trainer_docker_run_1 ... done", *NO_DRIVER]).first
    assert (found.cause, found.actor) == ("no-device", "config")
    assert "container" in found.extracted["actor_reason"]


# ---- torch.save's writer ----

def test_torch_saves_writer_failing_is_a_full_filesystem():
    lines = traceback("RuntimeError: [enforce fail at inline_container.cc:471] . PytorchStreamWriter failed "
                      "writing file data/228: file write failed")
    assert first(lines) == ("disk-full", "service")


# ---- torch's C++ error without its Python traceback ----

UNIQUE_ID = ("[7] is setting up NCCL communicator and retrieving ncclUniqueId from [0] via c10d key-value store by key "
             "'0', but store->get('0') got error: Socket Timeout")
RAISED = "Exception raised from recvBytes at ../torch/csrc/distributed/c10d/Utils.hpp:604 (most recent call first)"


def test_torchs_cpp_error_alone_is_a_failure_the_lines_before_it_name():
    assert first([UNIQUE_ID, RAISED]) == ("collective-timeout", "config")
    assert first(["store->get('rank3') got error: Socket Timeout", RAISED]) == ("connect-timeout", "service")


def test_torchs_cpp_error_inside_a_traceback_is_one_failure():
    lines = traceback(f"torch.distributed.DistBackendError: {UNIQUE_ID}") + [RAISED, "frame #0: c10::Error::Error()"]
    diagnosis = diagnose_lines(lines)
    assert [f.cause for f in diagnosis.findings] == ["collective-timeout"]


def test_the_words_socket_timeout_in_a_log_that_goes_on_are_no_failure():
    assert first(["[W socket.cpp:601] store->get('0') got error: Socket Timeout, retrying", "step 1 loss 2.0"]) is None


# ---- a process death reported in the shell's own language ----

@pytest.mark.parametrize("death", ["Aborted (Speicherabzug geschrieben)", "Aborted (core dumped)",
                                   "Segmentation fault (image mémoire créée)"])
def test_a_death_reported_in_another_language_is_read_with_the_error_before_it(death):
    lines = ['"hipErrorNoBinaryForGpu: Unable to find code object for all current devices!"', death]
    assert first(lines) == ("torch-build-mismatch", "config")


def test_a_sentence_that_starts_with_aborted_is_no_death():
    assert first(["Aborted (by the user) the download of optional weights, using the cached ones",
                  "step 1 loss 2.0"]) is None


# ---- NCCL's generic error over a limit of the host's environment ----

SHM_LAST_ERROR = [
    "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:317, unhandled "
    "system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.21.5",
    "ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error. ",
    "Last error:",
    "Error while creating shared memory segment /dev/shm/nccl-S2vapn (size 9637888)",
]


def test_ncclS_last_error_over_shared_memory_names_shared_memory():
    found = diagnose_lines(SHM_LAST_ERROR).first
    assert (found.cause, found.actor) == ("shm-too-small", "config")
    assert found.extracted["named_by"].startswith("nccl:")


def test_ncclS_last_error_over_a_socket_stays_ncclS_finding():
    lines = [*SHM_LAST_ERROR[:3], "socketStartConnect: Connect to 10.0.0.2<41235> failed : Software caused "
                                  "connection abort"]
    generic = [f for f in diagnose_lines(lines).findings if f.id == "nccl-system-error"]
    assert [f.cause for f in generic] == ["nccl-internal"] and "named_by" not in generic[0].extracted


# ---- an old torch's failed CUDA check ----

def test_an_old_torchs_failed_cuda_check_is_a_failure_and_its_warning_is_not():
    line = ("THCudaCheck FAIL file=/pytorch/aten/src/THC/THCTensorCopy.cu line=204 error=48 : no kernel image is "
            "available for execution on the device")
    assert first([line]) == ("torch-build-mismatch", "config")
    assert first([line.replace("THCudaCheck FAIL", "THCudaCheckWarn FAIL"), "epoch 1 loss 0.3"]) is None
