"""How diagnosis decides on logs as people paste them (issue 22, second pass): an exception quoted in Markdown or
in the middle of a sentence, torch's one-line "CUDA error: ..." report, a vendor's wrapper code beside the code
that names the cause, and a process death after the error that caused it. Each with the healthy line it must not
mistake for a failure."""

from __future__ import annotations

import pytest

from .helpers import first_cause as first


@pytest.mark.parametrize("line", [
    "> RuntimeError: cuda runtime error (35) : CUDA driver version is insufficient for CUDA runtime version at x.cpp:70",
    "`RuntimeError: DataLoader worker (pid 37) is killed by signal: Bus error. It is possible that dataloader's "
    "workers are out of shared memory. Please try to raise your shared memory limit.`",
])
def test_an_exception_quoted_in_markdown_is_read_as_one(line):
    assert first([line]) in {("driver-too-old", "node"), ("shm-too-small", "config")}


def test_a_module_qualified_exception_in_a_sentence_is_a_failure():
    line = ("When I run the example I get the error: `triton.runtime.errors.OutOfResources: out of resource: "
            "shared memory, Required: 163842, Hardware limitation: 101376.`")
    assert first([line]) == ("compile-error", "job")


def test_a_bare_word_before_a_colon_in_a_sentence_is_not_an_exception():
    # Only a module-qualified class counts in mid-line; prose with a capitalised word and a colon is no failure.
    assert first(["Note that the loader.Config: value is read from the environment", "step 10 loss 0.4"]) is None


def test_torchs_one_line_cuda_error_report_is_a_failure():
    line = ("CUDA error: uncorrectable ECC error encountered Search for `cudaErrorECCUncorrectable' in "
            "https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html for more information.")
    assert first([line]) == ("device-hardware", "node")


def test_a_warning_that_quotes_a_cuda_error_name_stays_quiet():
    lines = ["UserWarning: CUDA initialization: cudaErrorECCUncorrectable was seen once and the device was reset "
             "(function operator())", "step 10 loss 0.4", "done"]
    assert first(lines) is None


def test_a_wrapper_code_does_not_hide_the_code_that_names_the_cause():
    lines = [
        "RuntimeError: operator():build/CMakeFiles/torch_npu.dir/compiler_depend.ts:25 NPU function error: "
        "c10_npu::acl::AclrtSynchronizeStreamWithTimeout(copy_stream), error code is 507035",
        "[ERROR] 2025-04-29-18:46:11 (PID:1066924, Device:1, RankID:-1) ERR00100 PTA call acl api failed",
        "[Error]: The vector core execution is abnormal.",
    ]
    assert first(lines) == ("device-assert", "job")


def test_torch_npus_operator_wrapper_code_names_no_collective_of_its_own():
    # ERR01100 (module 01, OPS) wraps any aclnn operator's failure: the CANN code beside it says which. An operator
    # without a kernel for this SoC is not an HCCL error.
    lines = [
        "ERROR 02-11 11:32:58 engine.py:389] call aclnnPromptFlashAttentionV3 failed, detail:EZ1001: [PID: 312378] "
        "2025-02-11-11:32:58.201.638 PromptFlashAttention LaunchAicore failed.",
        "ERROR 02-11 11:32:58 engine.py:389] [ERROR] 2025-02-11-11:32:58 (PID:312378, Device:0, RankID:-1) ERR01100 "
        "OPS call acl api failed",
    ]
    found = first(lines)
    assert found is not None and found[0] != "hccl-api-error"
    # With HCCL's own code beside it, that code names the cause.
    lines = [
        "RuntimeError: InnerRunOpApi:torch_npu/csrc/framework/OpParamMaker.cpp:281 OPS function error: HcclAllreduce, "
        "error code is 6",
        "[ERROR] 2025-04-08-18:07:20 (PID:1292363, Device:0, RankID:-1) ERR01100 OPS call acl api failed",
        "EI0006: [PID: 1292363] 2025-04-08-18:07:20.444.436 Getting socket times out. Reason: Remote Rank did not send "
        "the data in time.",
    ]
    assert first(lines)[0] == "connect-timeout"


def test_a_process_death_after_its_error_is_named_by_the_error():
    lines = ['"hipErrorNoBinaryForGpu: Unable to find code object for all current devices!"',
             "Aborted (core dumped)"]
    assert first(lines) == ("torch-build-mismatch", "config")


def test_an_abort_with_no_error_before_it_stays_a_native_crash():
    assert first(["step 3 loss 0.2", "Aborted (core dumped)"]) == ("native-crash", "job")
