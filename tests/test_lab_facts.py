"""Facts over real SSH from lab hosts, with real faults: a stopped sshd, a downed link, a killed run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from accelstack.inventory import Host, load_inventory
from accelstack.results.records import read_run
from accelstack.transport.fanout import FanoutOptions, HostPool

from .helpers import REPO, cli_env, command, lab_ids, run_cli


def inventory_path(lab: object) -> Path:
    return lab.inventory  # type: ignore[attr-defined,no-any-return]


def records_of(stdout: str) -> dict[str, dict]:
    records = [json.loads(line) for line in stdout.splitlines() if line.strip()]
    return {r["host"]: r for r in records}


def test_facts_from_four_hosts_over_ssh(healthy_lab: object, tmp_path: Path) -> None:
    # A killed upload's tmp file on lab1: facts only reads, so it leaves that too (a writing run sweeps it).
    stale = "/var/tmp/accelstack/validators/0123456789abcdef/devices.py.accelstack-tmp"
    lab1 = load_inventory(str(inventory_path(healthy_lab))).select("lab1")[0]
    with HostPool() as pool:
        pool.connect(lab1).run(f"mkdir -p {Path(stale).parent} && echo half > {stale}", check=True)
    proc = run_cli("facts", "--inventory", str(inventory_path(healthy_lab)), "--json",
                   env={"ACCELSTACK_RUNS": str(tmp_path)})
    assert proc.returncode == 0, proc.stderr
    with HostPool(FanoutOptions(read_only=True)) as pool:  # a writing run's first command would sweep it
        assert pool.connect(lab1).run(f"cat {stale} && rm -f {stale}").stdout == "half\n"
    by_host = records_of(proc.stdout)
    assert sorted(by_host) == ["lab1", "lab2", "lab3", "lab4"]
    for name, record in by_host.items():
        assert record["status"] == "pass", record
        facts = record["evidence"]["facts"]
        # Each host really is its own machine: its own hostname and its own address on eth0.
        assert facts["hostname"] == name
        addresses = [a["address"] for i in facts["interfaces"] for a in i["addresses"]
                     if i["name"] == "eth0" and a["family"] == "inet"]
        assert addresses == [healthy_lab.status()[int(name[3:]) - 1]["address"]]  # type: ignore[attr-defined]
        assert facts["cpus"] == os.cpu_count()
    run = next(tmp_path.iterdir())
    assert len(read_run(run)) == 4


def test_stopped_sshd_is_an_error_for_that_host_only(healthy_lab: object, tmp_path: Path) -> None:
    healthy_lab.fault("lab2", "sshd-stop")  # type: ignore[attr-defined]
    proc = run_cli("facts", "--inventory", str(inventory_path(healthy_lab)), "--json",
                   env={"ACCELSTACK_RUNS": str(tmp_path)})
    assert proc.returncode == 2, proc.stderr
    by_host = records_of(proc.stdout)
    assert by_host["lab2"]["status"] == "error"
    assert "refused" in by_host["lab2"]["summary"]
    assert {h: r["status"] for h, r in by_host.items() if h != "lab2"} == {"lab1": "pass", "lab3": "pass",
                                                                         "lab4": "pass"}
    # Nothing lost: the run folder holds the same four records.
    assert len(read_run(next(tmp_path.iterdir()))) == 4


def test_downed_link_is_an_error_within_the_connect_timeout(healthy_lab: object, tmp_path: Path) -> None:
    healthy_lab.fault("lab3", "link-down")  # type: ignore[attr-defined]
    started = time.monotonic()
    proc = run_cli("facts", "--inventory", str(inventory_path(healthy_lab)), "--json", "--connect-timeout", "3",
                   env={"ACCELSTACK_RUNS": str(tmp_path)})
    elapsed = time.monotonic() - started
    assert proc.returncode == 2, proc.stderr
    by_host = records_of(proc.stdout)
    assert by_host["lab3"]["status"] == "error"
    assert [h for h, r in by_host.items() if r["status"] == "pass"] == ["lab1", "lab2", "lab4"] or \
        sorted(h for h, r in by_host.items() if r["status"] == "pass") == ["lab1", "lab2", "lab4"]
    # Bounded by the connect timeout (with retries for transient errors), never by paramiko's hour-long default.
    assert elapsed < 120


def test_a_killed_run_keeps_every_finished_record(healthy_lab: object, tmp_path: Path) -> None:
    # lab4 unreachable with a long connect timeout keeps the run going while the others finish.
    healthy_lab.fault("lab4", "link-down")  # type: ignore[attr-defined]
    proc = subprocess.Popen(command("accelstack", "facts", "--inventory", str(inventory_path(healthy_lab)), "--json",
                                    "--connect-timeout", "60"), cwd=REPO, env=cli_env(runs=tmp_path),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    results = None
    while time.monotonic() < deadline:
        found = list(tmp_path.glob("*/results.jsonl"))
        if found and len(found[0].read_text().splitlines()) >= 3:
            results = found[0]
            break
        time.sleep(0.1)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert results is not None, "the three reachable hosts never reported"
    records = read_run(results.parent)
    assert sorted(r.host for r in records) == ["lab1", "lab2", "lab3"]
    assert all(r.status == "pass" for r in records)
    meta = json.loads((results.parent / "meta.json").read_text())
    assert "finished" not in meta  # the run is known to be interrupted


def test_inventory_values_reach_the_shell_as_data(healthy_lab: object, tmp_path: Path) -> None:
    doc = yaml.safe_load(inventory_path(healthy_lab).read_text())
    marker = f"/tmp/pwned-{os.getpid()}"
    doc["vars"]["stack_python"] = f"python3; touch {marker}"
    doc["vars"]["checkpoint_dir"] = f"$(touch {marker}) `touch {marker}`"
    doc["vars"]["key"] = str(healthy_lab.key)  # type: ignore[attr-defined]
    doc["vars"]["known_hosts"] = str(healthy_lab.known_hosts)  # type: ignore[attr-defined]
    hostile = tmp_path / "hostile.yml"
    hostile.write_text(yaml.safe_dump(doc))
    proc = run_cli("facts", "--inventory", str(hostile), "--json", "--limit", "lab1",
                   env={"ACCELSTACK_RUNS": str(tmp_path / "runs")})
    assert proc.returncode in (0, 1), proc.stderr
    assert not Path(marker).exists()
    check = run_cli("facts", "--inventory", str(hostile), "--json", "--limit", "lab1")
    host = load_inventory(str(hostile)).select("lab1")[0]
    with HostPool() as pool:
        transport = pool.connect(host)
        assert transport.run(f"test -e {marker}").exit_status == 1
    assert check.returncode in (0, 1)


def test_unknown_host_key_is_refused_unless_accepting_is_asked_for(healthy_lab: object, tmp_path: Path) -> None:
    host = load_inventory(str(inventory_path(healthy_lab))).select("lab1")[0]
    empty = tmp_path / "known_hosts"
    strict = Host(name="lab1", address=host.address, user="root", key_file=host.key_file,
                  known_hosts=str(empty))
    with HostPool(FanoutOptions(connect_attempts=1)) as pool:
        outcome = next(iter(pool.map([strict], lambda t: t.run("true"))))
    assert outcome.error is not None and "not in" in str(outcome.error)
    assert not empty.exists() or empty.read_text() == ""

    accepting = Host(name="lab1", address=host.address, user="root", key_file=host.key_file,
                     known_hosts=str(empty), accept_new_host_keys=True)
    with HostPool() as pool:
        outcome = next(iter(pool.map([accepting], lambda t: t.run("hostname").stdout.strip())))
    assert outcome.value == "lab1"
    assert host.address in empty.read_text()


def test_known_hosts_hashed_changed_and_revoked_entries(healthy_lab: object, tmp_path: Path) -> None:
    # The lab host's real key in each form ssh writes: a hashed name (HashKnownHosts) is accepted; a different
    # key on file for the host is refused as a changed key; the real key marked @revoked is refused even though
    # a plain line also lists it.
    host = load_inventory(str(inventory_path(healthy_lab))).select("lab1")[0]
    line = next(x for x in Path(host.known_hosts).read_text().splitlines() if x.split()[0] == host.address)
    kind, blob = line.split()[1:3]
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp_path / "other")], check=True)
    other_blob = (tmp_path / "other.pub").read_text().split()[1]

    def connect(name: str, text: str) -> Exception | str | None:
        path = tmp_path / name
        path.write_text(text)
        probe = Host(name="lab1", address=host.address, user="root", key_file=host.key_file, known_hosts=str(path))
        with HostPool(FanoutOptions(connect_attempts=1)) as pool:
            outcome = next(iter(pool.map([probe], lambda t: t.run("hostname").stdout.strip())))
        return outcome.error or outcome.value

    hashed = tmp_path / "hashed"
    hashed.write_text(f"unrelated.example {kind} {other_blob}\n{line}\n")
    subprocess.run(["ssh-keygen", "-q", "-H", "-f", str(hashed)], check=True, capture_output=True)
    assert host.address not in hashed.read_text() and "|1|" in hashed.read_text()
    assert connect("hashed", hashed.read_text()) == "lab1"
    changed = connect("changed", f"# a comment\n{host.address} {kind} {other_blob}\n")
    assert "does not match" in str(changed), changed
    revoked = connect("revoked", f"{line}\n@revoked * {kind} {blob}\n")
    assert "@revoked" in str(revoked), revoked


def test_many_connections_to_one_stock_sshd_without_a_spurious_error(healthy_lab: object) -> None:
    # 48 connections to one sshd with MaxStartups at its default 10:30:100: the handshake cap and retries
    # must make every one succeed.
    base = load_inventory(str(inventory_path(healthy_lab))).select("lab1")[0]
    clones = [Host(name=f"clone{i}", address=base.address, user="root", key_file=base.key_file,
                   known_hosts=base.known_hosts) for i in range(48)]
    with HostPool(FanoutOptions(forks=48)) as pool:
        outcomes = list(pool.map(clones, lambda t: t.run("hostname").stdout.strip()))
    assert [o.error for o in outcomes if o.error] == []
    assert {o.value for o in outcomes} == {"lab1"}


def test_lab_up_is_idempotent_and_down_leaves_nothing(as_root: None, tmp_path: Path) -> None:
    from accelstack_lab import Lab

    (tmp_path / "inventories").mkdir()
    tag, subnet = lab_ids("acz", "10.215")
    lab = Lab(tmp_path, tag=tag, subnet=subnet)
    try:
        lab.up(2)
        pids = [(r["host"], r["sshd"]) for r in lab.status()]
        first = lab.load()
        lab.up(2)
        assert {n: h.sshd_pid for n, h in lab.load().items()} == {n: h.sshd_pid for n, h in first.items()}
        assert all(alive for _, alive in pids)
        lab.up(1)  # shrinking removes lab2
        assert [r["host"] for r in lab.status()] == ["lab1"]
    finally:
        lab.down()
    netns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert f"{tag}-" not in netns
    assert not Path(f"/sys/class/net/{tag}br0").exists()
    assert not lab.dir.exists() and not (tmp_path / "inventories" / "lab.yml").exists()


def test_lab_without_root_exits_3(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from accelstack.cli import program

    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with pytest.raises(SystemExit) as exit_info:
        program.run(["accelstack", "lab.up", "--hosts", "1"], exit=True)
    assert exit_info.value.code == 3
    assert "needs root" in capsys.readouterr().err


def test_disk_full_and_link_slow_are_real_and_heal_undoes_them(healthy_lab: object) -> None:
    host = load_inventory(str(inventory_path(healthy_lab))).select("lab4")[0]
    lab_host = healthy_lab.load()["lab4"]  # type: ignore[attr-defined]

    def qdisc() -> str:
        return subprocess.run(["tc", "qdisc", "show", "dev", lab_host.veth], capture_output=True,
                              text=True).stdout

    healthy_lab.fault("lab4", "disk-full")  # type: ignore[attr-defined]
    healthy_lab.fault("lab4", "link-slow")  # type: ignore[attr-defined]
    with HostPool() as pool:
        transport = pool.connect(host)
        avail = transport.run("df --output=avail -k /data | tail -1", check=True).stdout.strip()
        assert int(avail) == 0
        assert transport.run("echo x > /data/more").exit_status != 0  # the write really fails
    assert "tbf" in qdisc() or "netem" in qdisc()
    healthy_lab.heal("lab4")  # type: ignore[attr-defined]
    assert "tbf" not in qdisc() and "netem" not in qdisc()
    with HostPool() as pool:
        avail = pool.connect(host).run("df --output=avail -k /data | tail -1", check=True).stdout.strip()
    assert int(avail) > 200 * 1024
