"""What the real H100 run got wrong in facts and versions, each defect a test built from its captures
(tests/data/h100/, see its README): the NCCL judged must be the one torch loads, torch's version its full local
version, and ``inv analyze`` on that host's bundle must pass a stack that pins what is installed."""

from __future__ import annotations

import json
from pathlib import Path

from accelstack.facts import parsers as p
from accelstack.facts.assemble import parse_sections
from accelstack.flows.bundle.run import analyze_bundle, bundle_facts
from accelstack.stacks import drift_records, load_matrix, load_stack
from accelstack.vendors.nvidia import torch_nccl

from .helpers import run_cli

H100 = Path(__file__).parent / "data" / "h100"
BUNDLE = H100 / "bundle"
REAL_STACK = H100 / "h100-real.yml"
VENV_NCCL = "/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2"


def snippet_text() -> str:
    return (BUNDLE / "commands" / "python3_-c_stack_snippet.txt").read_text()


def live_sections() -> tuple[dict[str, str], dict[str, str | None]]:
    """The H100's sections as today's probe prints them: the captured snippet plus the NCCL part the probe now
    adds (the venv's wheel library and its package metadata, what that host has), and the system nccl.h."""
    stack = json.loads(snippet_text())
    stack["nccl"] = {"libraries": [VENV_NCCL], "wheels": {"nvidia-nccl-cu13": "2.28.9"}, "embedded": None}
    libs = (BUNDLE / "probe" / "nccl_libs.txt").read_text()
    files: dict[str, str | None] = {"/usr/include/nccl.h": (BUNDLE / "files/usr/include/nccl.h").read_text()}
    return {"stack_python": json.dumps(stack), "nccl_libs": libs}, files


def by_check(records: list) -> dict[str, object]:
    return {r.check: r for r in records}


def test_h100_versions_torch_reads_the_full_local_version_not_the_package_metadata() -> None:
    stack = p.parse_stack_python(snippet_text())
    assert stack.torch is not None
    assert stack.torch.version == "2.11.0+cu130"  # torch.__version__, from the package's version.py
    assert stack.torch.dist_version == "2.11.0"  # what pip's metadata says, and what the run compared
    assert stack.torch.cuda == "13.0"


def test_h100_versions_nccl_judges_the_library_torch_loads() -> None:
    sections, files = live_sections()
    facts = parse_sections(sections, files)
    assert facts.nvidia is not None and facts.torch is not None
    assert facts.nvidia.nccl == "2.28.3"  # the system's nccl.h: still reported
    assert (facts.torch.nccl, facts.torch.nccl_library) == ("2.28.9", VENV_NCCL)
    installed = facts.components()
    assert installed["nccl"] == "2.28.9" and installed["torch"] == "2.11.0+cu130"
    records = by_check(drift_records("h100", load_stack(REAL_STACK), installed, load_matrix()))
    nccl = records["drift.nccl"]
    assert nccl.status == "pass", nccl.summary  # type: ignore[attr-defined]
    # Both are reported: the one judged and the system one beside it.
    assert nccl.evidence["torch_nccl"] == "2.28.9" and nccl.evidence["system_nccl"] == "2.28.3"  # type: ignore[attr-defined]
    assert "system NCCL 2.28.3" in nccl.summary  # type: ignore[attr-defined]
    assert records["drift.torch"].status == "pass"  # type: ignore[attr-defined]


def test_h100_versions_without_an_nccl_of_torchs_own_judge_the_system_one() -> None:
    # A torch linked against the system libnccl (no wheel, none in torch/lib): the system NCCL is what loads.
    sections, files = live_sections()
    stack = json.loads(sections["stack_python"])
    stack["nccl"] = {"libraries": [], "wheels": {}, "embedded": None}
    sections["stack_python"] = json.dumps(stack)
    facts = parse_sections(sections, files)
    assert facts.components()["nccl"] == "2.28.3"
    assert torch_nccl(facts) == ("2.28.3", "system")
    assert "torch is a CUDA build with no NCCL of its own" in facts.components().details["nccl"]["judged"]
    record = by_check(drift_records("h100", load_stack(REAL_STACK), facts.components(), load_matrix()))["drift.nccl"]
    assert record.status == "fail"  # type: ignore[attr-defined]  # 2.28.3 under torch 2.11 breaks torch-nccl


def test_h100_bundle_from_the_old_probe_finds_torchs_nccl_in_the_pip_list() -> None:
    facts = bundle_facts(BUNDLE)
    assert facts.torch is not None and facts.nvidia is not None
    assert (facts.torch.nccl, facts.torch.nccl_from) == ("2.28.9", "pip list: nvidia-nccl-cu13==2.28.9")
    assert facts.nvidia.nccl == "2.28.3"


def test_h100_analyze_with_a_stack_pinning_what_is_installed_passes_versions() -> None:
    proc = run_cli("analyze", str(BUNDLE), "--stack", str(REAL_STACK), "--json")
    assert proc.returncode == 0, proc.stderr
    statuses = {r["check"]: r["status"] for r in json.loads(proc.stdout)["records"]}
    assert statuses["versions.nccl"] == "pass" and statuses["versions.torch"] == "pass"
    assert all(s == "pass" for c, s in statuses.items() if c.startswith("versions.")), statuses


def test_h100_analyze_with_the_shipped_stack_reports_what_really_differs() -> None:
    _facts, records, _diagnosis = analyze_bundle(BUNDLE, stack="nvidia-cuda13.0")
    got = {r.check: (r.status, r.evidence.get("installed")) for r in records if r.check.startswith("versions.")}
    assert got == {
        "versions.python": ("warn", "3.12.3"),  # pinned 3.11
        "versions.torch": ("warn", "2.11.0+cu130"),  # pinned 2.10.0+cu130: a real difference, no false fail
        "versions.torch_cuda": ("pass", "13.0"),
        "versions.nvidia_driver": ("warn", "580.159.04"),  # pinned 580.65.06
        "versions.cuda": ("pass", "13.0.88"),
        "versions.nccl": ("pass", "2.28.9"),  # the wheel's NCCL; the system 2.28.3 is not what torch loads
        # The shipped stack also wants a system NCCL (for nccl-tests) at 2.28.9: judged on its own, a difference.
        "versions.system_nccl": ("warn", "2.28.3"),
    }


def test_h100_analyze_names_a_stack_that_does_not_exist_as_bad_input(tmp_path: Path) -> None:
    proc = run_cli("analyze", str(BUNDLE), "--stack", str(tmp_path / "nope.yml"))
    assert proc.returncode == 3 and "no such stack file" in proc.stderr
    # The bundle's own stack (h100-real) is not shipped: an error record saying so, not a crash.
    _facts, records, _ = analyze_bundle(BUNDLE)
    assert by_check(records)["versions"].status == "error"  # type: ignore[attr-defined]


def test_h100_the_system_nccl_is_a_component_of_its_own() -> None:
    # torch's NCCL (2.28.9) is `nccl`; the system libnccl beside it (2.28.3, what nccl-tests would link) is
    # `system_nccl`: one reading each, for drift, validate and provisioning alike.
    sections, files = live_sections()
    facts = parse_sections(sections, files)
    installed = facts.components()
    assert (installed["nccl"], installed["system_nccl"]) == ("2.28.9", "2.28.3")
    assert installed.details["system_nccl"]["note"] == "torch loads its own NCCL 2.28.9, not this one"
