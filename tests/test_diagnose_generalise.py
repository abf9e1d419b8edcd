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


def test_a_process_death_after_its_error_is_named_by_the_error():
    lines = ['"hipErrorNoBinaryForGpu: Unable to find code object for all current devices!"',
             "Aborted (core dumped)"]
    assert first(lines) == ("torch-build-mismatch", "config")


def test_an_abort_with_no_error_before_it_stays_a_native_crash():
    assert first(["step 3 loss 0.2", "Aborted (core dumped)"]) == ("native-crash", "job")
