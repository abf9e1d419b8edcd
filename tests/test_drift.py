"""Drift on hand-built installed sets: pass, warn, fail, error, and the remedies."""

from __future__ import annotations

from io import StringIO

from rich.console import Console

from accelstack.errors import HostUnreachable
from accelstack.results.records import exit_code_for
from accelstack.stacks import drift_records, load_stack, run_drift
from accelstack.stacks.render import drift_table


def _by_component(records):  # type: ignore[no-untyped-def]
    return {r.check.removeprefix("drift."): r for r in records}


def _installed(name: str, **changes: str | None) -> dict[str, str | None]:
    installed: dict[str, str | None] = dict(load_stack(name).components)
    installed.update(changes)
    return installed


def test_converged_host_passes_every_component() -> None:
    stack = load_stack("ascend-910b-cann8.1.rc1")
    records = drift_records("npu01", stack, _installed("ascend-910b-cann8.1.rc1", python="3.11.9", torch="2.5.1+cpu"))
    assert [r.check for r in records] == [f"drift.{key}" for key in stack.components]
    assert {r.status for r in records} == {"pass"}
    assert all(r.host == "npu01" for r in records)
    assert exit_code_for(records) == 0


def test_cpu_torch_local_tag_counts_as_the_pinned_release() -> None:
    stack = load_stack("cpu")
    for torch in ("2.13.0", "2.13.0+cpu"):
        records = _by_component(drift_records("lab1", stack, {"python": "3.11.4", "torch": torch}))
        assert records["torch"].status == "pass", torch
    records = _by_component(drift_records("lab1", stack, {"python": "3.11.4", "torch": "2.13.1+cpu"}))
    assert records["torch"].status == "warn"


def test_nvidia_torch_local_tag_is_not_ignored() -> None:
    stack = load_stack("nvidia-cuda12.4")
    records = _by_component(drift_records("gpu01", stack, _installed("nvidia-cuda12.4", torch="2.6.0+cpu", torch_cuda=None)))
    assert records["torch"].status == "fail"
    assert "torch-cuda-variant" in records["torch"].summary
    assert records["torch_cuda"].status == "fail"  # missing, and critical
    assert "inv provision --limit gpu01" in (records["torch"].remedy or "")


def test_cann_older_than_torch_npu_fails_naming_rule_source_and_fix() -> None:
    stack = load_stack("ascend-910b-cann8.1.rc1")
    installed = _installed("ascend-910b-cann8.1.rc1", cann_toolkit="8.0.RC2", cann_kernels="8.0.RC2", nnal="8.0.RC2")
    records = _by_component(drift_records("npu02", stack, installed))
    toolkit = records["cann_toolkit"]
    assert toolkit.status == "fail"
    assert "torch_npu-cann" in toolkit.summary
    assert "COMPATIBILITY.en.md" in toolkit.summary
    assert "inv provision --limit npu02 brings cann_toolkit back to 8.1.RC1" in (toolkit.remedy or "")
    assert toolkit.evidence["violations"][0]["symptom"].startswith("RuntimeError: Failed to find function")
    # torch_npu matches its pin: the CANN is to blame, not torch_npu
    assert records["torch_npu"].status == "pass"
    assert records["ascend_driver"].status == "pass"
    assert exit_code_for(records.values()) == 1


def test_internal_cann_version_matches_the_pinned_release() -> None:
    stack = load_stack("ascend-910b-cann8.1.rc1")
    records = _by_component(drift_records("npu03", stack, _installed(
        "ascend-910b-cann8.1.rc1", cann_toolkit="7.7.0.1.238", cann_kernels="7.7.0.1.238")))
    assert records["cann_toolkit"].status == "pass"
    assert records["cann_kernels"].status == "pass"


def test_compatible_difference_is_a_warning_with_both_fixes() -> None:
    stack = load_stack("ascend-910b-cann8.0.rc2")
    # a newer HDK still meets CANN 8.0.RC2's floor: different from the pin, breaks nothing
    records = _by_component(drift_records("npu04", stack, _installed(
        "ascend-910b-cann8.0.rc2", ascend_driver="24.1.rc2", ascend_firmware="7.3.0.1.231")))
    driver = records["ascend_driver"]
    assert driver.status == "warn"
    assert "differs from the pin 24.1.rc1" in driver.summary
    remedy = driver.remedy or ""
    assert "inv provision --limit npu04" in remedy
    assert 'pin ascend_driver: "24.1.rc2"' in remedy and "stacks/ascend-910b-cann8.0.rc2.yml:" in remedy
    assert "inv stack.check ascend-910b-cann8.0.rc2" in remedy


def test_missing_components_by_criticality() -> None:
    stack = load_stack("ascend-910b-cann8.1.rc1")
    records = _by_component(drift_records("npu05", stack, _installed("ascend-910b-cann8.1.rc1", nnal=None, torch_npu=None)))
    assert records["nnal"].status == "warn"
    assert records["torch_npu"].status == "fail"
    assert "installs torch_npu 2.5.1" in (records["torch_npu"].remedy or "")
    nvidia = load_stack("nvidia-cuda12.8")
    records = _by_component(drift_records("gpu02", nvidia, _installed("nvidia-cuda12.8", cuda=None)))
    assert records["cuda"].status == "warn"


def test_old_driver_fails_and_warning_rules_warn() -> None:
    stack = load_stack("nvidia-cuda12.8")
    records = _by_component(drift_records("gpu03", stack, _installed("nvidia-cuda12.8", nvidia_driver="535.104.05")))
    assert records["nvidia_driver"].status == "fail"
    assert "cuda-driver" in records["nvidia_driver"].summary
    records = _by_component(drift_records("gpu03", stack, _installed("nvidia-cuda12.8", nccl="2.27.3")))
    assert records["nccl"].status == "warn"
    assert "torch-nccl" in records["nccl"].summary


def test_unreadable_version_warns() -> None:
    stack = load_stack("cpu")
    records = _by_component(drift_records("lab2", stack, {"python": "3.11.2", "torch": "unknown"}))
    assert records["torch"].status == "warn"
    assert "not a version" in records["torch"].summary


def test_run_drift_gives_error_records_for_unreachable_and_stackless_hosts() -> None:
    cpu = load_stack("cpu")
    records = run_drift(
        {
            "lab1": {"python": "3.11.4", "torch": "2.13.0+cpu"},
            "lab2": HostUnreachable("connection refused", host="lab2", hint="is sshd running on lab2?"),
            "lab3": {"python": "3.11.4", "torch": "2.13.0+cpu"},
        },
        {"lab1": cpu, "lab2": cpu},
    )
    by_host: dict[str, list] = {}
    for record in records:
        by_host.setdefault(record.host, []).append(record)
    assert {r.status for r in by_host["lab1"]} == {"pass"}
    (lab2,) = by_host["lab2"]
    assert (lab2.check, lab2.status) == ("drift", "error")
    assert lab2.remedy == "is sshd running on lab2?"
    (lab3,) = by_host["lab3"]
    assert lab3.status == "error" and "stack:" in (lab3.remedy or "")
    assert exit_code_for(records) == 2


def test_drift_table_renders() -> None:
    stack = load_stack("nvidia-cuda12.8")
    records = drift_records("gpu04", stack, _installed("nvidia-cuda12.8", nvidia_driver="535.104.05"))
    records += run_drift({"gpu05": TimeoutError("timed out")}, {})
    out = StringIO()
    Console(file=out, width=200).print(drift_table(records))
    text = out.getvalue()
    assert "gpu04" in text and "nvidia_driver" in text and "fail" in text and "535.104.05" in text
    assert "gpu05" in text and "error" in text
    # worst first within a host
    assert text.index("fail") < text.index("pass")


def test_drift_rows_are_values_worst_first_with_the_fix() -> None:
    from accelstack.stacks import DriftRow, drift_rows

    stack = load_stack("nvidia-cuda12.8")
    records = drift_records("gpu04", stack, _installed("nvidia-cuda12.8", nvidia_driver="535.104.05"))
    records += run_drift({"gpu05": TimeoutError("timed out")}, {})
    rows = drift_rows(records)
    assert all(isinstance(row, DriftRow) for row in rows) and len(rows) == len(records)
    assert [row.host for row in rows] == ["gpu04"] * (len(records) - 1) + ["gpu05"]
    first = rows[0]
    assert (first.component, first.status, first.installed) == ("nvidia_driver", "fail", "535.104.05")
    assert first.pinned != "-" and "\nfix: " in first.detail
    assert all(row.detail == "" for row in rows if row.status == "pass")
    assert (rows[-1].component, rows[-1].status, rows[-1].installed) == ("-", "error", "-")


def test_nccl_and_system_nccl_are_judged_apart() -> None:
    # The NCCL torch loads at its pin, the system libnccl one release behind: only system_nccl differs.
    records = _by_component(drift_records("gpu01", load_stack("nvidia-cuda13.0"),
                                          _installed("nvidia-cuda13.0", python="3.11.9", system_nccl="2.28.3")))
    assert records["nccl"].status == "pass"
    assert records["system_nccl"].status == "warn" and "system_nccl 2.28.3 differs" in records["system_nccl"].summary
    # A system NCCL is optional: missing, it is a warning; the NCCL torch loads missing fails the host.
    missing = _by_component(drift_records("gpu01", load_stack("nvidia-cuda13.0"),
                                          _installed("nvidia-cuda13.0", python="3.11.9", system_nccl=None, nccl=None)))
    assert missing["system_nccl"].status == "warn" and "(role system_nccl)" in (missing["system_nccl"].remedy or "")
    assert missing["nccl"].status == "fail" and "(role python_env)" in (missing["nccl"].remedy or "")


def test_a_cpu_torch_on_a_gpu_host_loads_no_nccl_whatever_the_system_has() -> None:
    from accelstack.facts import Facts, TorchFacts
    from accelstack.vendors.nvidia.facts import NvidiaFacts

    facts = Facts(stack_python_version="3.11.9", torch=TorchFacts(version="2.13.0+cpu"),
                  vendor_facts={"nvidia": NvidiaFacts(driver_version="580.65.06", nccl="2.28.9")})
    installed = facts.components()
    assert (installed["nccl"], installed["system_nccl"]) == (None, "2.28.9")
    assert "not a CUDA build" in installed.details["nccl"]["judged"]
    nccl = _by_component(drift_records("gpu01", load_stack("nvidia-cuda13.0"), installed))["nccl"]
    assert nccl.status == "fail" and nccl.evidence["system_nccl"] == "2.28.9"
