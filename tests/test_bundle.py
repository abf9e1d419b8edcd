"""Support bundles: collected in one round trip, secrets masked on the host, analyzed offline by the same
parsers as a live run."""

from __future__ import annotations

import gzip
import json
import subprocess
from pathlib import Path

import pytest

from accelstack.facts.gather import probe, probe_options_for
from accelstack.flows.bundle.run import analyze_bundle, collect, command_file_name
from accelstack.inventory import Host, load_inventory
from accelstack.transport.connection import LocalTransport

from .helpers import run_cli

VOLATILE = ("disk_free", "shm_bytes")


def stable(facts: dict, *also: str) -> dict:
    return {k: v for k, v in facts.items() if k not in VOLATILE + also}


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
    facts, records, _diagnosis = analyze_bundle(tmp_path / "localhost.tar.gz", expect_devices=0)
    # The facts the collecting round trip parsed, read back from the files: the same, field for field.
    assert stable(facts.to_dict()) == stable(bundle.facts.to_dict())
    # And a second, separate probe a moment later: the same but for what this shared machine changes meanwhile
    # (other checkouts' test labs add and remove interfaces on it).
    assert stable(facts.to_dict(), "interfaces") == stable(live.to_dict(), "interfaces")
    assert {r.check: r.status for r in records}["devices"] == "pass"
    # What the diagnosis reads is planted, never this machine's own kernel log: a CI runner whose kernel once
    # killed a process for memory must not fail this test. A quiet log gives no finding, a planted kill gives one.
    dmesg = bundle.path / "commands" / command_file_name("dmesg")
    dmesg.write_text("[    1.000000] usb 1-1: new high-speed USB device number 2\n"
                     "[    2.000000] EXT4-fs (vda1): mounted filesystem with ordered data mode\n")
    assert analyze_bundle(bundle.path)[2].findings == []
    dmesg.write_text(dmesg.read_text() + "[ 4242.000000] Out of memory: Killed process 4242 (python) "
                     "total-vm:9000000kB, anon-rss:8000000kB\n")
    assert [f.cause for f in analyze_bundle(bundle.path)[2].findings] == ["out-of-memory"]


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


# --- bundles that are not whole: one line and exit 3, nothing left behind ---------------------------------------

def _local_bundle(tmp_path: Path) -> Path:
    host = Host(name="here", address="localhost", connection="local")
    collect(LocalTransport(host), probe_options_for(host), tmp_path)
    return tmp_path / "here.tar.gz"


def _private_tmp(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A temporary folder of the test's own for the programs it runs (TMPDIR): what they leave there is theirs, not
    a copy another test unpacks at the same moment in the shared one (the suite runs in parallel)."""
    folder = tmp_path / "tmpdir"
    folder.mkdir()
    return folder, {"TMPDIR": str(folder)}


def _bundle_tmp(folder: Path) -> set[str]:
    return {p.name for p in folder.glob("accelstack-bundle-*")}


@pytest.mark.parametrize("program", ["accelstack", "inv"])
def test_a_cut_short_or_damaged_bundle_is_one_line_and_exit_3(program: str, tmp_path: Path) -> None:
    from .helpers import assert_bad_input, run_program

    tarball = _local_bundle(tmp_path / "b")
    whole = tarball.read_bytes()
    tmp, env = _private_tmp(tmp_path)
    cases = {
        "half.tar.gz": (whole[: len(whole) // 2], ["half.tar.gz", "the bundle is cut short"]),
        "head.tar.gz": (whole[:100], ["head.tar.gz", "the bundle is cut short"]),
        "junk.tar.gz": (b"not a tarball\n", ["junk.tar.gz", "not a support bundle"]),
    }
    for name, (data, words) in cases.items():
        (tmp_path / name).write_bytes(data)
        proc = run_program(program, "analyze", "--bundle", str(tmp_path / name), runs=tmp_path / "runs", env=env)
        assert_bad_input(proc, *words)
        assert len(proc.stderr.strip().splitlines()) <= 2  # the line, and its hint
    assert _bundle_tmp(tmp) == set()  # no unpacked copy left behind, even of a bundle that failed half-way


def test_a_bundle_folder_missing_a_listed_file_or_with_a_broken_index_is_exit_3(tmp_path: Path) -> None:
    from .helpers import assert_bad_input, run_program

    _local_bundle(tmp_path)
    folder = tmp_path / "here"
    (folder / "probe" / "pci.txt").unlink()  # a copy that stopped before this file: no devices would be "seen"
    assert_bad_input(run_program("accelstack", "analyze", "--bundle", str(folder), runs=tmp_path / "r"),
                     "the bundle lacks probe/pci.txt")
    (folder / "bundle.json").write_text('{"host": "here", "sections": {')
    assert_bad_input(run_program("inv", "analyze", "--bundle", str(folder), runs=tmp_path / "r"),
                     "bundle.json cannot be read (cut short?)")
    (folder / "bundle.json").write_text('{"host": "here", "sections": {"x": {"file": "../../../etc/passwd"}}}')
    assert_bad_input(run_program("accelstack", "analyze", "--bundle", str(folder), runs=tmp_path / "r"),
                     "outside the bundle")


def test_analyze_leaves_no_unpacked_copy_behind(tmp_path: Path) -> None:
    tarball = _local_bundle(tmp_path)
    tmp, env = _private_tmp(tmp_path)
    for program in ("accelstack", "inv"):
        from .helpers import run_program

        proc = run_program(program, "analyze", "--bundle", str(tarball), "--json", runs=tmp_path / "runs", env=env)
        assert proc.returncode in (0, 1), proc.stderr  # 1: this machine's own dmesg may hold a finding
        assert json.loads(proc.stdout)["records"]
    assert _bundle_tmp(tmp) == set()
    facts, _, _ = analyze_bundle(tarball)
    assert facts.hostname
