"""One truth of what is installed, from the real H200 host (tests/data/h200/, see its README).

On that host everything was at its pin and ``validate`` passed every check, yet ``provision --check`` stopped
with exit 2 ("nccl.library: nccl 2.28.9 must be installed from an artifact repository"): validate judged the NCCL
torch loads (2.28.9, the torch wheel's nvidia-nccl-cu13) and provisioning planned a system libnccl for the same
pin. Facts, drift, validate and provisioning now read each component through one table
(accelstack.stacks.components): a host that validate passes has nothing to provision, and a stack that also wants
a system NCCL names it as a component of its own, ``system_nccl``, with its own drift record and its own step.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from accelstack.facts import Facts
from accelstack.flows.bundle.run import bundle_facts
from accelstack.inventory import Host, load_inventory
from accelstack.provision.apply import HostSurvey, ProvisionOptions, check_record, plan_all, prepare
from accelstack.provision.plan import HostPlan
from accelstack.provision.state import RemoteState
from accelstack.provision.templating import sha256_text
from accelstack.stacks import drift_records, load_matrix, load_stack

from .helpers import run_cli

H200 = Path(__file__).parent / "data" / "h200"
BUNDLE = H200 / "bundle"
DEV_REAL = H200 / "dev-real.yml"
# What the env role rendered on the host (output/prov_env.log), copied from it.
RENDERED = {"/etc/profile.d/accelstack.sh": H200 / "etc" / "accelstack.sh",
            "/etc/accelstack/node.yml": H200 / "etc" / "accelstack" / "node.yml"}
COMPONENT_ROLES = ("nvidia_driver", "cuda_toolkit", "system_nccl", "python_env")


def captured(name: str) -> list[dict]:
    return [json.loads(line) for line in (H200 / "output" / name).read_text().splitlines() if line.startswith("{")]


@pytest.fixture(scope="module")
def facts() -> Facts:
    return bundle_facts(BUNDLE)


def inventory(tmp_path: Path, stack: Path) -> list[Host]:
    """The host as it was run (node.yml's vars): connection local, the stack given by path."""
    path = tmp_path / "h200.yml"
    path.write_text(yaml.safe_dump({"hosts": {"localhost": {"connection": "local"}}, "vars": {
        "stack": str(stack.resolve()), "expect_devices": 1, "accelerator": "H200", "checkpoint_dir": "/tmp/ckpt",
        "env": {"NCCL_DEBUG": "WARN"}}}))
    return load_inventory(str(path)).select("all")


def plan(hosts: list[Host], facts: Facts, state: RemoteState | None = None, repo: Path | None = None) -> HostPlan:
    prepared = prepare(hosts, ProvisionOptions(check_only=True, repo=str(repo) if repo else None))
    plans = plan_all(hosts, prepared, {"localhost": HostSurvey(facts, state or RemoteState(), 0.0)})
    return plans["localhost"]


def converged_state(hosts: list[Host], facts: Facts, repo: Path | None = None) -> RemoteState:
    """The files on the host after `provision --roles env` (output/prov_env.log): the env file and the node file
    as captured there (for dev-real; a variant of the stack renders its own node file); the hostfile and the
    launcher, which the capture does not hold, as the same run rendered them."""
    first = plan(hosts, facts, repo=repo)
    state = RemoteState()
    for change in first.changes:
        for write in change.writes:
            if not change.step.startswith("env."):
                continue
            if write.path in RENDERED and hosts[0].vars["stack"] == str(DEV_REAL.resolve()):
                assert RENDERED[write.path].read_text() == write.content, write.path  # byte for byte as on the host
                state.checksums[write.path] = sha256_text(RENDERED[write.path].read_text())
            else:
                state.checksums[write.path] = sha256_text(write.content)
    return state


def test_the_capture_reads_back_to_the_facts_the_host_reported(facts: Facts) -> None:
    reported = captured("facts.jsonl")[0]["evidence"]["facts"]
    live = Facts.from_dict(reported)
    # Free space and temperature moved between the two commands; every version is the same.
    assert dict(facts.components()) == dict(live.components())
    installed = facts.components()
    assert (installed["nccl"], installed["system_nccl"]) == ("2.28.9", "2.28.3")
    assert installed["torch"] == "2.11.0+cu130" and installed["python"] == "3.12.3"


def test_h200_drift_passes_every_component_as_validate_did(facts: Facts) -> None:
    stack = load_stack(DEV_REAL, check_name=False)
    records = drift_records("localhost", stack, facts.components(), load_matrix())
    assert {r.check: r.status for r in records} == {f"drift.{key}": "pass" for key in stack.components}
    # The very verdicts the host gave: drift --json and validate's versions records, all pass.
    assert {r["check"]: r["status"] for r in captured("drift.jsonl")} == {r.check: "pass" for r in records}
    versions = {r["check"]: r["status"] for r in captured("validate-quick.jsonl") if r["check"].startswith("versions.")}
    assert versions == {r.check.replace("drift.", "versions."): "pass" for r in records}
    assert all(r["status"] in ("pass", "skip") for r in captured("validate-quick.jsonl"))
    nccl = next(r for r in records if r.check == "drift.nccl")
    assert nccl.evidence["judged"] == "the NCCL torch loads" and nccl.evidence["system_nccl"] == "2.28.3"


def test_h200_validated_host_has_an_empty_provision_plan(facts: Facts, tmp_path: Path) -> None:
    hosts = inventory(tmp_path, DEV_REAL)
    fresh = plan(hosts, facts)
    # No role that installs a component has anything to do, and no artifact repository is needed: the captured
    # `provision --check` stopped here with "nccl.library: nccl 2.28.9 must be installed from an artifact repository".
    assert fresh.problems == []
    assert [c.step for c in fresh.changes] == ["env.env-file", "env.hostfile", "env.launcher", "env.node-file"]
    assert not any(c.step.startswith(COMPONENT_ROLES) for c in fresh.changes)

    converged = plan(hosts, facts, converged_state(hosts, facts))
    assert converged.changes == [] and converged.problems == [] and converged.reboot == "no"
    record = check_record(converged, HostSurvey(facts, RemoteState(), 0.0))
    assert (record.status, record.summary) == ("pass", "no change")  # exit 0
    assert record.metrics["changes"] == 0 and record.metrics["bytes_to_transfer"] == 0


def test_h200_analyze_passes_every_version_against_the_real_stack(tmp_path: Path) -> None:
    proc = run_cli("analyze", str(BUNDLE), "--stack", str(DEV_REAL), "--json")
    assert proc.returncode == 0, proc.stderr
    versions = {r["check"]: r["status"] for r in json.loads(proc.stdout)["records"] if r["check"].startswith("versions.")}
    assert versions and set(versions.values()) == {"pass"}, versions


def stack_with_system_nccl(tmp_path: Path, version: str) -> Path:
    """dev-real, also asking for a system NCCL (for nccl-tests): a copy named after its file, as a stack must be."""
    doc = yaml.safe_load(DEV_REAL.read_text())
    doc["name"] = "dev-real-system-nccl"
    doc["components"]["system_nccl"] = version
    path = tmp_path / "dev-real-system-nccl.yml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def repository(tmp_path: Path) -> Path:
    folder = tmp_path / "repo"
    folder.mkdir()
    (folder / "nccl_2.28.9-1+cuda13.0_x86_64.run").write_bytes(b"#!/bin/sh\n")
    (folder / "manifest.yml").write_text(yaml.safe_dump({"artifacts": [{
        "file": "nccl_2.28.9-1+cuda13.0_x86_64.run", "sha256": "ab" * 32, "size": 10, "component": "system_nccl",
        "version": "2.28.9"}]}))
    return folder


def test_a_stack_wanting_a_system_nccl_gets_its_own_drift_record_and_plan_step(facts: Facts, tmp_path: Path) -> None:
    path = stack_with_system_nccl(tmp_path, "2.28.9")
    records = {r.check: r for r in drift_records("localhost", load_stack(path), facts.components(), load_matrix())}
    # Judged on its own: the system libnccl is 2.28.3; the NCCL torch loads still passes.
    system = records["drift.system_nccl"]
    assert (system.status, system.evidence["installed"], system.evidence["pinned"]) == ("warn", "2.28.3", "2.28.9")
    assert system.evidence["judged"].startswith("the system NCCL")
    assert "torch loads its own NCCL 2.28.9" in system.summary
    assert records["drift.nccl"].status == "pass"
    assert all(r.status == "pass" for c, r in records.items() if c != "drift.system_nccl")

    hosts = inventory(tmp_path, path)
    without_repo = plan(hosts, facts)
    assert [p.splitlines()[0] for p in without_repo.problems] == [
        "system_nccl.library: system_nccl 2.28.9 must be installed from an artifact repository, and none is configured"]
    repo = repository(tmp_path)
    with_repo = plan(hosts, facts, converged_state(hosts, facts, repo), repo)
    assert with_repo.problems == []
    steps = {c.step: c for c in with_repo.changes}
    # The loader path first, so the library step's ldconfig puts it ahead of the distribution's libnccl.
    assert [c.step for c in with_repo.changes][:2] == ["system_nccl.loader-path", "system_nccl.library"]
    library = steps["system_nccl.library"]
    assert library.summary == "system_nccl: 2.28.3 -> 2.28.9" and library.component == "system_nccl"
    assert library.commands[0].endswith("--install --quiet && ldconfig")
    assert not any(s.startswith(("nvidia_driver", "cuda_toolkit", "python_env")) for s in steps)


def test_a_system_nccl_already_at_its_pin_from_the_distribution_needs_no_step(facts: Facts, tmp_path: Path) -> None:
    path = stack_with_system_nccl(tmp_path, "2.28.3")
    records = drift_records("localhost", load_stack(path), facts.components(), load_matrix())
    assert {r.status for r in records} == {"pass"}
    hosts = inventory(tmp_path, path)
    # No artifact, no library step, and no loader path for a folder that holds no libnccl: nothing to do.
    fresh = plan(hosts, facts)
    assert fresh.problems == [] and not any(c.step.startswith(COMPONENT_ROLES) for c in fresh.changes)
    converged = plan(hosts, facts, converged_state(hosts, facts))
    assert converged.changes == [] and converged.problems == []
