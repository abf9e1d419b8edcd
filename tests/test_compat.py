"""The matrices themselves, the rules on known-bad combinations, preflight messages and `stack.check` exit codes."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest
from invoke.context import Context
from invoke.exceptions import Exit

from accelstack.errors import StackError
from accelstack.paths import project_root
from accelstack.stacks import (
    Violation,
    check_components,
    check_stack,
    load_matrix,
    load_stack,
    preflight_stack,
)
from accelstack.stacks.model import Pin
from accelstack.tasks.stack import check as check_task
from accelstack.tasks.stack import list_ as list_task
from accelstack.tasks.stack import ns


def _with(name: str, **pins: str) -> dict[str, str | None]:
    components: dict[str, str | None] = dict(load_stack(name).components)
    components.update(pins)
    return components


def _rules(violations: list[Violation], severity: str = "error") -> set[str]:
    return {v.rule for v in violations if v.severity == severity}


def _restack(name: str, **pins: str):  # type: ignore[no-untyped-def]
    stack = load_stack(name)
    new_pins = dict(stack.pins)
    for key, value in pins.items():
        new_pins[key] = Pin(key, value, stack.pins[key].match if key in stack.pins else "exact")
    return dataclasses.replace(stack, pins=new_pins)


def test_every_row_has_a_source_and_known_confidence() -> None:
    matrix = load_matrix()
    tables = [matrix.torch_npu, matrix.python, matrix.cann_hdk, matrix.cann_internal, matrix.same_release,
              *(matrix.table(name) for name in ("cuda_driver", "cuda_family", "torch_cuda", "nccl", "device_cuda",
                                                "torch_rocm", "device_rocm"))]
    assert all(tables)
    for table in tables:
        for row in table:
            assert row.fact.source and row.fact.source_id in matrix.sources
            # the project's compat/<vendor>.yml, or the compat.yml a vendor ships in its folder (AMD's)
            assert row.fact.where.startswith(("ascend.yml:", "nvidia.yml:", "compat.yml:"))


def test_uncertain_rows_are_marked() -> None:
    matrix = load_matrix()
    disputed = {(r.torch_npu, r.cann) for r in matrix.torch_npu if r.fact.disputed}
    assert ("2.5.1", "8.0.0") in disputed          # vllm-ascend vs COMPATIBILITY.en.md
    assert ("2.1.0.post3", "8.0.RC1") in disputed  # old README vs COMPATIBILITY.en.md
    assert ("2.1.0.post4", "8.0.RC1") in disputed
    alpha = next(r for r in matrix.torch_npu if r.torch_npu == "2.6.0rc1")
    assert alpha.cann == "8.1.RC1.alpha002" and alpha.fact.confidence == "single-source"
    assert matrix.cann_internal[0].fact.confidence == "single-source"
    assert {r.fact.confidence for r in matrix.table("nccl")} >= {"verified", "single-source", "background"}


# --- Ascend ---------------------------------------------------------------------------------------------------


def test_torch_npu_251_on_cann_80rc2_is_refused_with_everything_a_person_needs() -> None:
    stack = _restack("ascend-910b-cann8.0.rc2", torch_npu="2.5.1", torch="2.5.1")
    with pytest.raises(StackError) as info:
        preflight_stack(stack)
    assert info.value.exit_code == 3
    text = str(info.value)
    assert "torch_npu-cann" in text
    assert "torch_npu 2.5.1 needs CANN 8.1.RC1" in text
    assert "CANN 8.0.RC2 is older" in text
    assert "COMPATIBILITY.en.md" in text                       # the source
    assert "CANN for torch_npu 2.5.1: 8.1.RC1" in text          # nearest CANN for this torch_npu
    assert "torch_npu for CANN 8.0.RC2:" in text and "2.1.0.post6" in text  # nearest torch_npu for this CANN
    assert "RuntimeError: Failed to find function HcclCommInitRootInfoConfig" in text  # the symptom
    assert str(stack.source) in text                           # where
    assert "inv stack.check" in text                           # what to do


def test_torch_npu_cann_violation_fields() -> None:
    violations = check_components(_with("ascend-910b-cann8.0.rc2", torch_npu="2.5.1", torch="2.5.1"), "ascend")
    (violation,) = [v for v in violations if v.rule == "torch_npu-cann"]
    assert violation.severity == "error"
    assert violation.confidence == "verified"
    assert violation.symptom and "HcclCommInitRootInfoConfig" in violation.symptom
    assert any("8.1.RC1" in choice for choice in violation.nearest)
    assert violation.where and violation.where.startswith("ascend.yml:")


def test_older_torch_npu_on_newer_cann_names_the_undefined_symbol_symptom() -> None:
    violations = check_components(_with("ascend-910b-cann8.2.rc1", torch_npu="2.1.0.post6", torch="2.1.0"),
                                  "ascend")
    (violation,) = [v for v in violations if v.rule == "torch_npu-cann"]
    assert "undefined symbol" in (violation.symptom or "")
    assert "torch_npu for CANN 8.2.RC1: 2.1.0.post13" in " ".join(violation.nearest)


def test_torch_mismatch_for_torch_npu() -> None:
    violations = check_components(_with("ascend-910b-cann8.1.rc1", torch="2.4.0"), "ascend")
    assert "torch_npu-torch" in _rules(violations)
    (violation,) = [v for v in violations if v.rule == "torch_npu-torch"]
    assert "torch for torch_npu 2.5.1: 2.5.1" in violation.nearest
    assert any("2.4.0.post4" in choice for choice in violation.nearest)


def test_torch_21_with_python_312_is_refused() -> None:
    violations = check_components(_with("ascend-910b-cann8.0.rc2", python="3.12"), "ascend")
    assert _rules(violations) == {"python-torch"}
    (violation,) = violations
    assert "3.8 to 3.11" in violation.message
    assert "COMPATIBILITY.en.md" in violation.source


def test_cpu_torch_with_python_outside_its_range() -> None:
    violations = check_components({"python": "3.9.18", "torch": "2.13.0+cpu"}, "cpu")
    (violation,) = violations
    assert violation.rule == "python-torch" and violation.confidence == "inferred"
    assert "relies on an inferred fact" in violation.message


def test_cann_needs_its_hdk() -> None:
    violations = check_components(
        _with("ascend-910b-cann8.2.rc1", ascend_driver="24.1.rc2", ascend_firmware="7.3.0.1.231"), "ascend")
    assert _rules(violations) == {"cann-driver", "cann-firmware"}
    text = "\n".join(v.describe() for v in violations)
    assert "driver >= 25.0.rc1" in text and "firmware >= 7.7.0.1.231" in text
    assert "Ascend HDK 25.0.RC1.1" in text
    assert "CANN releases driver 24.1.rc2 supports: 8.1.RC1, 8.0.0, 8.0.RC3" in text


def test_newer_hdk_is_fine_and_rc_patch_counts() -> None:
    assert check_components(_with("ascend-910b-cann8.0.rc2", ascend_driver="25.0.rc1.1",
                                  ascend_firmware="7.7.0.1.231"), "ascend") == []
    assert check_components(_with("ascend-910b-cann8.2.rc1", ascend_driver="25.0.rc1"), "ascend") == []


def test_cann_without_a_row_uses_the_nearest_older_floor_and_says_it_is_inferred() -> None:
    violations = check_components({"cann_toolkit": "8.3.RC1", "ascend_driver": "24.1.rc2"}, "ascend")
    (violation,) = violations
    assert violation.rule == "cann-driver" and violation.confidence == "inferred"
    assert "nearest older release, CANN 8.2.RC1" in violation.message


def test_internal_cann_version_is_checked_as_its_release() -> None:
    components = _with("ascend-910b-cann8.1.rc1", cann_toolkit="7.7.0.1.238", cann_kernels="7.7.0.1.238")
    assert check_components(components, "ascend") == []
    violations = check_components(_with("ascend-910b-cann8.0.rc2", cann_toolkit="7.7.0.1.238"), "ascend")
    assert "torch_npu-cann" in _rules(violations)
    assert any("release 8.1.RC1" in v.message for v in violations)


def test_kernels_and_nnal_must_match_the_toolkit_release() -> None:
    violations = check_components(_with("ascend-910b-cann8.1.rc1", cann_kernels="8.0.0", nnal="8.2.RC1"),
                                  "ascend")
    assert {"cann_kernels-cann_toolkit", "nnal-cann_toolkit"} <= _rules(violations)
    nnal = next(v for v in violations if v.rule == "nnal-cann_toolkit")
    assert nnal.confidence == "inferred" and "relies on an inferred fact" in nnal.message
    assert "_ZN3atb15CreateOperation" in (nnal.symptom or "")
    # the ATB build number is the same release
    assert check_components(_with("ascend-910b-cann8.1.rc1", nnal="8.1.RC1.B150"), "ascend") == []


def test_disputed_row_allows_with_a_warning_that_says_so() -> None:
    violations = check_components(
        _with("ascend-910b-cann8.0.0", torch_npu="2.5.1", torch="2.5.1"), "ascend")
    assert _rules(violations) == set()
    (warning,) = [v for v in violations if v.rule == "torch_npu-cann"]
    assert warning.severity == "warning"
    assert warning.disputed and "vllm-ascend" in warning.disputed
    assert "relies on a disputed fact" in warning.message
    assert "relies on a single-source fact" in warning.message


def test_torch_npu_missing_from_the_matrix_is_a_warning() -> None:
    violations = check_components(_with("ascend-910b-cann8.1.rc1", torch_npu="2.5.9"), "ascend")
    assert _rules(violations) == set()
    assert [v.rule for v in violations] == ["torch_npu-cann"]


# --- NVIDIA ---------------------------------------------------------------------------------------------------


def test_cuda_128_with_driver_535_is_refused() -> None:
    stack = _restack("nvidia-cuda12.8", nvidia_driver="535.104.05")
    violations = check_stack(stack)
    assert "cuda-driver" in _rules(violations)
    # the torch wheel itself usually runs through minor-version compatibility: a warning, not a refusal
    assert "torch_cuda-driver" in _rules(violations, "warning")
    assert "driver-branch" in _rules(violations)
    with pytest.raises(StackError) as info:
        preflight_stack(stack)
    text = str(info.value)
    assert "driver for CUDA 12.8: 570.26 or newer" in text
    assert "The NVIDIA driver on your system is too old" in text


def test_driver_below_the_mvc_floor_is_an_error_even_for_the_wheel() -> None:
    violations = check_components(_with("nvidia-cuda13.0", nvidia_driver="575.51.03"), "nvidia")
    assert {"cuda-driver", "torch_cuda-driver"} <= _rules(violations)
    assert any("minor-version-compatibility floor 580" in v.message for v in violations)


def test_cpu_torch_on_an_nvidia_stack() -> None:
    violations = check_components(_with("nvidia-cuda12.4", torch="2.6.0+cpu"), "nvidia")
    (violation,) = [v for v in violations if v.rule == "torch-cuda-variant"]
    assert "Torch not compiled with CUDA enabled" in (violation.symptom or "")
    assert "2.6.0+cu124" in violation.nearest[0]
    # a host whose torch reports no CUDA at all
    violations = check_components(_with("nvidia-cuda12.4", torch="2.6.0", torch_cuda=None), "nvidia")
    assert "torch-cuda-variant" in _rules(violations)


def test_torch_cuda_variant_must_exist() -> None:
    violations = check_components(
        _with("nvidia-cuda12.4", torch="2.6.0+cu128", torch_cuda="12.8", cuda="12.8", nvidia_driver="580.65.06"),
        "nvidia")
    (violation,) = [v for v in violations if v.rule == "torch-cuda-variant"]
    assert "no torch 2.6 wheel is published for CUDA 12.8" in violation.message
    assert "CUDA variants of torch 2.6: 11.8, 12.4, 12.6" in violation.nearest


def test_tag_and_torch_cuda_disagree() -> None:
    violations = check_components(_with("nvidia-cuda12.8", torch_cuda="12.6"), "nvidia")
    assert any("CUDA 12.8 build, but torch_cuda says 12.6" in v.message for v in violations)


def test_nccl_pin_per_torch() -> None:
    older = check_components(_with("nvidia-cuda12.8", nccl="2.21.5"), "nvidia")
    assert "torch-nccl" in _rules(older)
    (violation,) = [v for v in older if v.rule == "torch-nccl"]
    assert "NCCL for torch 2.7 on CUDA 12.8: 2.26.2" in violation.nearest
    assert "torch series whose wheel pins NCCL 2.21.5: 2.6, 2.5" in violation.nearest
    newer = check_components(_with("nvidia-cuda12.8", nccl="2.27.3"), "nvidia")
    assert "torch-nccl" in _rules(newer, "warning")
    # the NCCL build suffix is not a different release
    assert check_components(_with("nvidia-cuda12.4", nccl="2.21.5+cuda12.4"), "nvidia") == []


def test_single_source_nccl_row_is_named_in_the_message() -> None:
    violations = check_components(_with("nvidia-cuda13.0", nccl="2.27.5"), "nvidia")
    (violation,) = [v for v in violations if v.rule == "torch-nccl"]
    assert violation.confidence == "single-source"
    assert "relies on a single-source fact" in violation.message
    assert "pytorch/pull/190386" in violation.source


def test_torch_and_toolkit_major_mismatch_is_a_background_warning() -> None:
    violations = check_components(_with("nvidia-cuda13.0", cuda="12.8"), "nvidia")
    (violation,) = [v for v in violations if v.rule == "torch_cuda-cuda"]
    assert violation.severity == "warning" and violation.confidence == "background"


def test_blackwell_needs_cuda_128() -> None:
    stack = load_stack("nvidia-cuda12.4")
    stack = dataclasses.replace(stack, devices=["H100", "B200"])
    assert "device-cuda" in _rules(check_stack(stack))


# --- matrix files ---------------------------------------------------------------------------------------------


def _copy_root(tmp_path: Path) -> Path:
    shutil.copytree(project_root() / "compat", tmp_path / "compat")
    shutil.copytree(project_root() / "stacks", tmp_path / "stacks")
    return tmp_path


def test_row_without_source_is_refused_with_file_and_line(tmp_path: Path) -> None:
    root = _copy_root(tmp_path)
    path = root / "compat" / "nvidia.yml"
    text = path.read_text().replace(
        '  - {cuda: "12.0", driver: 525.60.13, source: cuda-release-notes-3p}', '  - {cuda: "12.0", driver: 525.60.13}')
    path.write_text(text)
    line = text.splitlines().index('  - {cuda: "12.0", driver: 525.60.13}') + 1
    with pytest.raises(StackError) as info:
        load_matrix(root)
    assert f"{path}:{line}" in str(info.value)
    assert "no source" in str(info.value)


def test_unknown_source_id_is_refused(tmp_path: Path) -> None:
    root = _copy_root(tmp_path)
    path = root / "compat" / "nvidia.yml"
    path.write_text(path.read_text().replace("source: builder-1668", "source: nowhere"))
    with pytest.raises(StackError, match="source 'nowhere' is not defined"):
        load_matrix(root)


# --- tasks ----------------------------------------------------------------------------------------------------


def test_collection_is_named_stack() -> None:
    assert ns.name == "stack"
    assert set(ns.task_names) == {"check", "list"}


def test_stack_check_ok_exits_zero(capsys: pytest.CaptureFixture[str]) -> None:
    check_task(Context(), "cpu")
    assert "OK  cpu" in capsys.readouterr().out


def test_stack_check_refused_exits_three(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = (project_root() / "stacks" / "ascend-910b-cann8.0.rc2.yml").read_text()
    text = text.replace("name: ascend-910b-cann8.0.rc2", "name: bad")
    text = text.replace('torch_npu: "2.1.0.post6"', 'torch_npu: "2.5.1"')
    text = text.replace('version: "2.1.0"', 'version: "2.5.1"')
    path = tmp_path / "bad.yml"
    path.write_text(text)
    with pytest.raises(Exit) as info:
        check_task(Context(), str(path))
    assert info.value.code == 3
    err = capsys.readouterr().err
    assert "torch_npu-cann" in err and "HcclCommInitRootInfoConfig" in err


def test_stack_check_unknown_name_exits_three(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(Exit) as info:
        check_task(Context(), "nope")
    assert info.value.code == 3
    assert "unknown stack 'nope'" in capsys.readouterr().err


def test_stack_list_shows_every_stack(capsys: pytest.CaptureFixture[str]) -> None:
    list_task(Context())
    out = capsys.readouterr().out
    for name in ("cpu", "nvidia-cuda13.0", "ascend-910b-cann8.1"):
        assert name in out


def test_stack_check_through_program() -> None:
    from invoke import Collection, Program

    root = Collection()
    root.add_collection(ns)
    Program(namespace=root, version="0").run(["inv", "stack.check", "nvidia-cuda12.8"])  # no exit: code 0
    with pytest.raises(SystemExit) as info:
        Program(namespace=root, version="0").run(["inv", "stack.check", "no-such-stack"])
    assert info.value.code == 3


def test_the_toolkit_rules_judge_another_vendors_toolkit_by_its_own_names() -> None:
    """A second vendor with a toolkit (a driver, torch builds for it, a device floor) gets the toolkit rules from its
    own ToolkitRules and its own tables: the engine names no toolkit."""
    from accelstack.stacks.compat import (
        DeviceToolkitRow,
        Fact,
        Matrix,
        ToolkitDriverRow,
        TorchVariantRow,
        _check_toolkit_driver,
        _check_torch_variant,
        _toolkit_of_tag,
    )
    from accelstack.vendors import ToolkitRules

    rules = ToolkitRules(toolkit="sdk", torch_build="torch_sdk", driver="gpu_driver", label="SDK", tag_prefix="sdk",
                         torch_attr="hip")
    fact = Fact("doc", "a vendor's release notes", "test")
    matrix = Matrix(tables={"sdk_driver": [ToolkitDriverRow("6.2", "6.8.5", fact)],
                            "torch_sdk": [TorchVariantRow("2.5", ("6.1", "6.2"), fact)],
                            "device_sdk": [DeviceToolkitRow(("X300",), "6.0", "6.7", fact)]})
    assert _toolkit_of_tag("sdk6.2", "sdk") == "6.2" and _toolkit_of_tag("cu124", "cu") == "12.4"
    [old] = _check_toolkit_driver({"sdk": "6.2.1", "gpu_driver": "6.7.0"}, matrix, rules)
    assert old.rule == "sdk-driver" and old.components == ("sdk", "gpu_driver") and "SDK 6.2.1" in old.message
    assert _check_toolkit_driver({"sdk": "6.2.1", "gpu_driver": "6.8.5"}, matrix, rules) == []
    [unpublished] = _check_torch_variant({"torch": "2.5.1+sdk6.0", "torch_sdk": "6.0"}, matrix, rules, "GPU")
    assert unpublished.rule == "torch-sdk-variant" and "no torch 2.5 wheel is published for SDK 6.0" in unpublished.message
    [mismatch] = _check_torch_variant({"torch": "2.5.1+sdk6.2", "torch_sdk": "6.1"}, matrix, rules, "GPU")
    assert "the SDK 6.2 build, but torch_sdk says 6.1" in mismatch.message
