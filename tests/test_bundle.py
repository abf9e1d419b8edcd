"""Support bundles: collected in one round trip, secrets masked on the host, analyzed offline by the same
parsers as a live run."""

from __future__ import annotations

import gzip
import json
import subprocess
from pathlib import Path

import pytest

from accelstack.bundle import analyze_bundle, collect, command_file_name
from accelstack.facts.gather import probe, probe_options_for
from accelstack.inventory import Host, load_inventory
from accelstack.transport.connection import LocalTransport

from .conftest import run_cli

VOLATILE = ("disk_free", "shm_bytes")


def stable(facts: dict) -> dict:
    return {k: v for k, v in facts.items() if k not in VOLATILE}


def test_command_file_names_are_the_command_made_safe() -> None:
    assert command_file_name("npu-smi info -t board -i 0") == "npu-smi_info_-t_board_-i_0.txt"
    assert command_file_name("hccn_tool -i 3 -ip -g") == "hccn_tool_-i_3_-ip_-g.txt"
    assert "/" not in command_file_name("cat /etc/../../x; rm -rf /")


def test_local_bundle_masks_secrets_and_analyzes_to_the_live_facts(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_TOKEN", "hunter2-token")
    monkeypatch.setenv("DB_PASSWORD", "hunter2-password")
    monkeypatch.setenv("HARMLESS_SETTING", "visible")
    host = load_inventory(None).select("localhost")[0]
    transport = LocalTransport(host)
    options = probe_options_for(host)
    bundle = collect(transport, options, tmp_path, stack="cpu")
    everything = b"".join(p.read_bytes() for p in bundle.path.rglob("*") if p.is_file())
    assert b"hunter2" not in everything
    env = (bundle.path / "env.txt").read_text()
    assert "HF_TOKEN=********" in env and "DB_PASSWORD=********" in env and "HARMLESS_SETTING=visible" in env
    with gzip.open(tmp_path / "localhost.tar.gz") as tarball:
        assert b"hunter2" not in tarball.read()

    live = probe(transport, options)
    facts, records, diagnosis = analyze_bundle(tmp_path / "localhost.tar.gz", expect_devices=0)
    assert stable(facts.to_dict()) == stable(live.to_dict())
    assert {r.check: r.status for r in records}["devices"] == "pass"
    assert diagnosis.findings == []


def test_bundle_layout_names_each_output_after_its_command(tmp_path: Path) -> None:
    host = Host(name="here", address="localhost", connection="local")
    bundle = collect(LocalTransport(host), probe_options_for(host), tmp_path)
    meta = json.loads((bundle.path / "bundle.json").read_text())
    assert (bundle.path / "commands" / "lspci_-nn.txt").exists()
    assert (bundle.path / "commands" / "nvidia-smi_-q_-x.txt").exists()
    assert (bundle.path / "commands" / "pip_list.txt").exists()
    assert (bundle.path / "files" / "etc" / "os-release").exists()
    assert meta["host"] == "here" and "hostname" in meta["sections"]
    # A missing tool is data: its exit and error are recorded, not raised.
    assert any(c.get("missing") for c in meta["commands"].values())


def test_analyze_finds_a_failure_in_a_bundles_logs(tmp_path: Path) -> None:
    host = Host(name="sick", address="localhost", connection="local")
    bundle = collect(LocalTransport(host), probe_options_for(host), tmp_path)
    (bundle.path / "train.log").write_text(
        "[rank0]: RuntimeError: Failed to find function HcclCommInitRootInfoConfig\n")
    proc = run_cli("analyze", str(bundle.path), "--json")
    assert proc.returncode == 1, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["findings"][0]["cause"] == "cann-mismatch"


def test_analyze_of_a_missing_bundle_exits_3(tmp_path: Path) -> None:
    proc = run_cli("analyze", str(tmp_path / "nope.tar.gz"))
    assert proc.returncode == 3 and "no such bundle" in proc.stderr


def test_collect_from_a_lab_host_analyzes_to_the_same_facts(healthy_lab: object, tmp_path: Path) -> None:
    inventory = str(healthy_lab.inventory)  # type: ignore[attr-defined]
    # A secret in the host's login environment stays on the host.
    ssh = ["ssh", "-i", str(healthy_lab.key), "-o", f"UserKnownHostsFile={healthy_lab.known_hosts}",  # type: ignore[attr-defined]
           "root@" + healthy_lab.status()[0]["address"]]  # type: ignore[attr-defined]
    subprocess.run([*ssh, "echo 'export OPENAI_API_KEY=sk-hunter2' > /etc/profile.d/zz-secret.sh"], check=True)
    try:
        proc = run_cli("collect", "--inventory", inventory, "--limit", "lab1", "--output", str(tmp_path / "b"),
                       "--json", env={"ACCELSTACK_RUNS": str(tmp_path / "runs")})
        assert proc.returncode == 0, proc.stderr
        folder = tmp_path / "b" / "lab1"
        login_env = (folder / "commands" / "env_login_shell.txt").read_text()
        assert "OPENAI_API_KEY=********" in login_env
        assert b"hunter2" not in (tmp_path / "b" / "lab1.tar.gz").read_bytes()
        live = run_cli("facts", "--inventory", inventory, "--limit", "lab1", "--json",
                       env={"ACCELSTACK_RUNS": str(tmp_path / "runs")})
        live_facts = json.loads(live.stdout.splitlines()[0])["evidence"]["facts"]
        facts, _, _ = analyze_bundle(tmp_path / "b" / "lab1.tar.gz")
        assert facts.hostname == "lab1"
        assert stable(facts.to_dict()) == stable(live_facts)
    finally:
        subprocess.run([*ssh, "rm -f /etc/profile.d/zz-secret.sh"], check=False)
