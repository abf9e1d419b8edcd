"""Pure parts of validation: busbw math, thresholds, registry headers, JSON -> records, fault isolation (the
pairwise ring the benchmark compares with; bisection itself is in test_isolate.py), and the
host-side scripts' own pure helpers (ELF symbol reading, interface syntax, visible-device lists)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from accelstack.engines.collective import new_tag
from accelstack.engines.ssh.cluster import isolate, kill_command, ring_rounds
from accelstack.engines.ssh.remote import command_for, validator_scripts
from accelstack.errors import ConfigError
from accelstack.results.records import Record
from accelstack.validate import (
    algbw_gbps,
    busbw_factor,
    busbw_gbps,
    judge,
    load_registry,
    load_thresholds,
    parse_document,
    select,
    to_record,
)
from accelstack.validate.judge import dmesg_lines, judge_bandwidth, judge_devices, log_lines

from .helpers import REPO, VALIDATORS, load_validator

# ----- busbw -----

@pytest.mark.parametrize(("collective", "ranks", "factor"), [
    ("allreduce", 8, 1.75), ("allreduce", 2, 1.0), ("allreduce", 16, 1.875), ("allgather", 8, 0.875),
    ("allgather", 2, 0.5), ("broadcast", 8, 1.0), ("reducescatter", 4, 0.75), ("allreduce", 1, 0.0),
])
def test_busbw_factors_are_nccl_tests(collective: str, ranks: int, factor: float) -> None:
    assert busbw_factor(collective, ranks) == pytest.approx(factor)


def test_busbw_from_bytes_and_time() -> None:
    # 1 GB in 10 ms over 8 ranks: algbw 100 GB/s, allreduce busbw 175 GB/s (nccl-tests doc/PERFORMANCE.md).
    assert algbw_gbps(10**9, 0.01) == pytest.approx(100.0)
    assert busbw_gbps("allreduce", 10**9, 0.01, 8) == pytest.approx(175.0)
    with pytest.raises(ValueError):
        busbw_factor("scatter", 8)
    with pytest.raises(ValueError):
        algbw_gbps(1, 0)


def test_script_and_control_side_factors_agree() -> None:
    script = load_validator("collectives")
    for collective in ("allreduce", "allgather"):
        for ranks in (2, 3, 8, 64):
            assert script.busbw_factor(collective, ranks) == pytest.approx(busbw_factor(collective, ranks))


# ----- thresholds -----

def test_shipped_thresholds_have_sources_and_the_published_numbers() -> None:
    t = load_thresholds()
    for row in t.rows:
        assert row.source in t.sources, row
    assert t.lookup("H100", "single-node", "allreduce", 8).min_busbw_gbps == 460  # type: ignore[union-attr]
    assert t.lookup("A100-SXM4-80GB", "single-node", "allreduce", 8).min_busbw_gbps == 228  # type: ignore[union-attr]
    assert t.lookup("H200", "single-node", "allreduce", 8).min_busbw_gbps == 480  # type: ignore[union-attr]
    assert t.lookup("910B3", "single-node", "allreduce", 8).min_busbw_gbps is None  # type: ignore[union-attr]
    assert t.lookup("H100", "single-node", "allreduce", 4) is None  # an 8-GPU floor says nothing about 4


def test_judge_fail_warn_pass_and_unjudged() -> None:
    t = load_thresholds()
    row = t.lookup("H100", "single-node", "allreduce", 8)
    assert judge(400.0, row, 0.1)[0] == "fail"
    assert judge(470.0, row, 0.1)[0] == "warn"
    assert judge(510.0, row, 0.1)[0] == "pass"
    assert judge(1.0, None, 0.1)[0] == "pass"
    assert "no published floor" in judge(1.0, t.lookup("910B", "multi-node", "allreduce", 16), 0.1)[1]


def test_inventory_overrides_win() -> None:
    t = load_thresholds().with_overrides({"margin": 0.02, "rows": [
        {"accelerator": "H100", "scope": "single-node", "collective": "allreduce", "ranks": 8,
         "min_busbw_gbps": 300, "source": "site baseline"}]})
    assert t.margin == 0.02
    assert t.lookup("H100", "single-node", "allreduce", 8).min_busbw_gbps == 300  # type: ignore[union-attr]
    with pytest.raises(ConfigError):
        load_thresholds().with_overrides([{"accelerator": "H100", "scope": "rack"}])


def test_bandwidth_judgement_on_a_record() -> None:
    record = Record(host="n1", check="allreduce", status="pass", summary="ok",
                    metrics={"busbw_gbps": 300.0, "ranks": 8})
    judged = judge_bandwidth(record, accelerator="H100", scope="single-node", thresholds=load_thresholds())
    assert judged.status == "fail" and "460" in judged.summary and judged.remedy
    assert judged.metrics["threshold_gbps"] == 460


# ----- registry -----

def test_registry_reads_every_declaration() -> None:
    registry = load_registry(VALIDATORS)
    checks = {c for v in registry for c in v.checks}
    assert {"devices", "versions", "libraries", "env", "topology", "memory", "storage", "collective_init",
            "allreduce", "allgather", "multinode", "ports", "clock"} <= checks
    by_check = {c: v for v in registry for c in v.checks}
    assert by_check["torch_devices"].python == "stack" and by_check["env"].python == "system"
    assert by_check["devices"].python == "system" and by_check["devices"].tier == "health"
    assert by_check["multinode"].scope == "cluster" and by_check["allreduce"].mode == "sweep"
    assert by_check["collective_init"].mode == "init"
    quick = {c for v in select(registry, "quick") for c in v.checks}
    assert "allreduce" not in quick and {"devices", "torch_devices"} <= quick
    health = {c for v in select(registry, "health") for c in v.checks}
    assert health == {"devices", "env", "hccn", "health", "libraries", "topology", "versions"}
    assert {c for v in select(registry, "quick", {"multinode"}) for c in v.checks} == {"multinode"}
    with pytest.raises(ConfigError):
        select(registry, "quick", {"nonsense"})
    with pytest.raises(ConfigError):
        select(registry, "extreme")


def test_a_wrong_declaration_is_refused_naming_its_module(tmp_path: Path) -> None:
    (tmp_path / "x.py").write_text("from . import Check\nCHECKS = (Check(('a',), 'sometimes', help='a'),)\n")
    with pytest.raises(ConfigError, match=r"x\.py.*tier='sometimes' is not one of health, quick"):
        load_registry(VALIDATORS, tmp_path)


def test_command_quotes_the_config_and_bounds_the_time(tmp_path: Path) -> None:
    command = command_for("/v/devices.py", "/opt/venv/bin/python", {"host": "a'; rm -rf /"}, timeout=60)
    assert "timeout -k 5 60" in command and "'\"'\"'" in command
    (tmp_path / "a.py").write_text("x")
    first, _ = validator_scripts(tmp_path)
    (tmp_path / "a.py").write_text("y")
    assert validator_scripts(tmp_path)[0] != first


# ----- JSON -> records -----

def test_document_parsing_skips_noise_and_maps_evidence() -> None:
    stdout = "some warning\n" + json.dumps({"checks": [
        {"check": "allreduce", "status": "fail", "summary": "bad", "metrics": {"ranks": 2}, "evidence": {},
         "remedy": "fix"}]}) + "\n"
    stderr = "NCCL WARN NET/Socket : no interface found\nirrelevant\n[E] Watchdog caught collective timeout\n"
    items = parse_document(stdout)
    record = to_record("n1", items[0], command="python x.py", stdout=stdout, stderr=stderr, duration_s=1.23)
    assert record.status == "fail" and record.remedy == "fix" and record.duration_s == 1.23
    assert record.evidence["command"] == "python x.py"
    assert record.evidence["log_lines"] == ["NCCL WARN NET/Socket : no interface found",
                                            "[E] Watchdog caught collective timeout"]
    with pytest.raises(ValueError):
        parse_document("Traceback (most recent call last):\n  boom")
    assert to_record("n1", {"check": "x", "status": "weird"}, command="c").status == "error"


def test_dmesg_and_log_filters() -> None:
    dmesg = "[1] eth0 up\n[2] NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus\n" \
            "[3] Out of memory: Killed process 123 (python)\n"
    assert len(dmesg_lines(dmesg)) == 2
    assert log_lines("EI0006: Getting socket times out\nok") == ["EI0006: Getting socket times out"]


NPU_SMI = sorted((REPO / "tests" / "data" / "captures").glob("*npu*smi*info*"))


def test_devices_count_against_expectation_with_the_facts_parser() -> None:
    sample = next((p for p in NPU_SMI if p.is_file()), None)
    if sample is None:
        pytest.skip("no captured npu-smi info under tests/data")
    text = sample.read_text()
    record = Record(host="n", check="devices", status="pass", summary="torch sees 8",
                    metrics={"torch_devices": None}, evidence={"tool_exit": 0, "tool_output": text})
    judged = judge_devices(record, {"vendor": "ascend", "expect_devices": 99})
    assert judged.status == "fail" and "99 expected" in judged.summary


# ----- fault isolation -----

def test_ring_rounds_never_put_a_host_in_two_pairs_at_once() -> None:
    assert ring_rounds(1) == [] and ring_rounds(2) == [[(0, 1)]]
    for count in (3, 4, 5, 8):
        rounds = ring_rounds(count)
        assert sorted(e for r in rounds for e in r) == sorted((i, (i + 1) % count) for i in range(count))
        for group in rounds:
            hosts = [h for pair in group for h in pair]
            assert len(hosts) == len(set(hosts))


def test_isolation_names_the_node_or_the_link() -> None:
    names = ["a", "b", "c", "d"]
    pairs = [("a", "b"), ("b", "c"), ("c", "d"), ("d", "a")]
    assert isolate(names, {("a", "b"), ("b", "c")}, pairs, set()) == (["b"], [])
    assert isolate(names, {("c", "d")}, pairs, set()) == ([], [("c", "d")])
    assert isolate(names, set(pairs), pairs, set()) == ([], [])  # shared fault: nobody named
    assert isolate(names, set(), pairs[:2], {"d"}) == (["d"], [])


def _group_run(busbw: float | None, passed: bool = True) -> object:
    from types import SimpleNamespace

    from accelstack.engines.ssh.cluster import NodeResult, RunResult

    member = SimpleNamespace(name="a", config={"accelerator": "cpu", "nproc": 2})
    check = {"status": "pass" if passed else "fail", "summary": "ok" if passed else "gloo: connection reset",
             "metrics": {"busbw_gbps": busbw} if busbw is not None else {}}
    return RunResult([NodeResult(member, 0, "cmd", checks=[check])], "tag", 1.0, 60.0), [member]  # type: ignore


def test_an_isolation_run_fails_when_it_fails_is_under_the_floor_or_under_half_the_best() -> None:
    from accelstack.engines.ssh.cluster import judge_group

    thresholds = load_thresholds()  # cpu multi-node allreduce floor: 0.05 GB/s
    run, members = _group_run(0.4)
    assert judge_group(run, members, thresholds, best=0.5) == ("pass", "0.4000 GB/s")
    status, why = judge_group(run, members, thresholds, best=1.0)
    assert status == "fail" and "under half the best run's 1.0000 GB/s" in why
    run, members = _group_run(0.002)  # a 20 Mbit/s link
    status, why = judge_group(run, members, thresholds, best=0.0)
    assert status == "fail" and why.startswith("0.0020 GB/s")
    run, members = _group_run(None, passed=False)
    assert judge_group(run, members, thresholds, best=0.0) == ("fail", "gloo: connection reset")


def test_not_isolated_says_why() -> None:
    from accelstack.engines.ssh.cluster import not_isolated
    from accelstack.validate.isolate import bisect

    two = bisect(["a", "b"], lambda g: False)
    assert "no third known-good node" in not_isolated(two, [1, 2])  # type: ignore[list-item]
    scale = bisect(["a", "b", "c", "d"], lambda g: len(g) < 4)
    assert "only at full scale" in not_isolated(scale, [1, 2, 3, 4])  # type: ignore[list-item]
    shared = bisect(["a", "b", "c", "d"], lambda g: False)
    assert "every run failed" in not_isolated(shared, [1, 2, 3, 4])  # type: ignore[list-item]


# ----- host-side helpers -----

def test_elf_reader_finds_libc_symbols() -> None:
    libraries = load_validator("libraries")
    libc = next(p for p in ("/lib/x86_64-linux-gnu/libc.so.6", "/usr/lib64/libc.so.6", "/lib/aarch64-linux-gnu/libc.so.6")
                if Path(p).exists())
    symbols = libraries.elf_dynamic_symbols(libc)
    assert {"malloc", "dlsym", "printf"} <= symbols
    assert "HcclCommInitRootInfoConfig" not in symbols


def test_elf_reader_maps_the_library_instead_of_reading_it_whole(tmp_path: Path) -> None:
    """The NCCL torch loads is a few hundred MB and the health check reads its symbols every few minutes: only the
    headers and the symbol tables may be touched. libc with a 2 GiB (sparse) tail: the same symbols, and the
    reader's memory stays far below the file's size (reading it whole took 2 GiB)."""
    libc = next(p for p in ("/lib/x86_64-linux-gnu/libc.so.6", "/usr/lib64/libc.so.6", "/lib/aarch64-linux-gnu/libc.so.6")
                if Path(p).exists())
    big = tmp_path / "libbig.so"
    shutil.copy(libc, big)
    with open(big, "r+b") as handle:
        handle.truncate(2 << 30)
    # VmHWM: this process's own peak (ru_maxrss keeps the forking parent's, the test runner's, across exec).
    probe = ("import json, sys; sys.path.insert(0, sys.argv[1]); import libraries; "
             "names = libraries.elf_dynamic_symbols(sys.argv[2]); "
             "peak = next(int(l.split()[1]) for l in open('/proc/self/status') if l.startswith('VmHWM:')); "
             "print(json.dumps([sorted(names), peak]))")
    proc = subprocess.run([sys.executable, "-c", probe, str(VALIDATORS), str(big)], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    names, max_rss_kib = json.loads(proc.stdout)
    assert set(names) == load_validator("libraries").elf_dynamic_symbols(libc)
    assert max_rss_kib < 200 * 1024, max_rss_kib
    empty = tmp_path / "libempty.so"
    empty.write_bytes(b"")
    with pytest.raises(ValueError, match="is not an ELF file"):
        load_validator("libraries").elf_dynamic_symbols(str(empty))


def test_the_batch_collects_garbage_between_runs_only_where_torch_holds_device_memory(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import types

    batch = load_validator("_batch")
    collected = []
    monkeypatch.setattr(batch.gc, "collect", lambda: collected.append(1))
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    batch.release_devices()  # a health batch: vendor tools and files, no device memory to give back
    assert collected == []
    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace())  # torch without an accelerator API
    batch.release_devices()
    assert collected == [1]


def test_interface_syntax_and_visible_device_lists() -> None:
    env = load_validator("env")
    names = ["eth0", "eth1", "ib0", "lo"]
    assert env.matching_interfaces("eth", names) == ["eth0", "eth1"]
    assert env.matching_interfaces("=eth0", names) == ["eth0"]
    assert env.matching_interfaces("==eth1", names) == ["eth1"]
    assert env.matching_interfaces("^eth", names) == ["ib0"]
    assert env.matching_interfaces("ib9", names) == []
    cases = {"0,1,2,3": "pass", "0,2,4,6": "warn", "3,1": "fail", "0,1,9": "fail", "1, 2,3": "fail"}
    for value, status in cases.items():
        checks = env.check_visible({"ASCEND_RT_VISIBLE_DEVICES": value}, {"expect_devices": 8})
        assert checks[0]["status"] == status, (value, checks[0])


def test_every_script_prints_one_document_even_when_it_breaks(tmp_path: Path) -> None:
    for script in ("env", "libraries", "topology", "memory", "storage", "network"):
        proc = subprocess.run([sys.executable, str(VALIDATORS / f"{script}.py"), "{not json"],
                              capture_output=True, text=True, timeout=60)
        doc = json.loads(proc.stdout.strip().splitlines()[-1])
        assert doc["checks"][0]["status"] == "error", script
        assert doc["checks"][0]["evidence"]["traceback"]


def test_storage_warns_when_a_save_outlasts_the_collective_timeout(tmp_path: Path) -> None:
    storage = load_validator("storage")
    (tmp_path / "ckpt").mkdir()
    checks = storage.main({"checkpoint_dir": str(tmp_path / "ckpt"), "checkpoint_size_gb": 50,
                           "collective_timeout_s": 0.001, "storage_probe_mb": 4})
    assert checks[0]["status"] in ("warn", "fail")
    assert "_ALLGATHER_BASE" in checks[0]["summary"] or "free" in checks[0]["summary"]


def test_libraries_fails_with_the_remedy_on_a_library_lacking_the_symbol(tmp_path: Path) -> None:
    pytest.importorskip("accelstack_lab.simulated.native")
    from accelstack_lab.simulated import native, versions

    try:
        data = native.compile_shared(native.hccl_source(versions.FAULT_FIXTURE_CANN), "libhccl.so")
    except Exception as exc:  # no compiler here: the lab test covers it
        pytest.skip(f"cannot build the simulated libhccl: {exc}")
    libdir = tmp_path / "lib64"
    libdir.mkdir()
    (libdir / "libhccl.so").write_bytes(data)
    env_file = tmp_path / "accelstack.sh"
    env_file.write_text(f"export LD_LIBRARY_PATH={libdir}\n")
    checks = load_validator("libraries").main({
        "env_file": str(env_file), "remedy": "install CANN X",
        "required_symbols": {"libhccl.so": ["HcclCommInitRootInfo", "HcclCommInitRootInfoConfig"]}})
    assert checks[0]["status"] == "fail" and "HcclCommInitRootInfoConfig" in checks[0]["summary"]
    assert "HcclCommInitRootInfo," not in checks[0]["summary"]
    assert checks[0]["remedy"] == "install CANN X"


# ----- hccn: NPU device IPs in /etc/hccn.conf against hccn_tool -ip -g (validators/network.py) -----

HCCN_TOOL = "usr/local/Ascend/driver/tools/hccn_tool"


@pytest.fixture(scope="module")
def ascend_driver_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from accelstack_lab.simulated import packages

    path = tmp_path_factory.mktemp("simdriver") / "driver.run"
    path.write_bytes(packages.ascend_driver("25.0.rc1.1", "x86_64").data)
    return path


def fake_path(tmp_path: Path) -> str:
    """PATH with this interpreter as python3 (the simulated tools' shebang) and the system folders: no real
    vendor tool of this machine's is ever found."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    if not (bin_dir / "python3").exists():
        (bin_dir / "python3").symlink_to(sys.executable)
    return f"{bin_dir}:/usr/bin:/bin"


@pytest.fixture()
def ascend_root(ascend_driver_run: Path, tmp_path: Path) -> Path:
    """The simulated Ascend driver (4 NPUs, device IPs in hccn.conf) installed under a temporary root."""
    root = tmp_path / "root"
    (root / "etc").mkdir(parents=True)
    (root / "etc" / "passwd").write_text("root:x:0:0::/root:/bin/sh\nHwHiAiUser:x:1000:1000::/home/H:/bin/sh\n")
    (root / "etc" / "group").write_text("root:x:0:\nHwHiAiUser:x:1000:\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ACCELSTACK_SIM", "ASCEND_"))}
    env.update(ACCELSTACK_SIM_ROOT=str(root), ACCELSTACK_SIM_DEVICES=json.dumps({"count": 4}),
               PATH=fake_path(tmp_path))
    proc = subprocess.run(["sh", str(ascend_driver_run), "--full", "--quiet"], env=env, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return root


def run_hccn(root: Path, tmp_path: Path, config: dict | None = None, path: str | None = None) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ACCELSTACK_SIM", "ASCEND_"))}
    env.update(ACCELSTACK_SIM_ROOT=str(root), PATH=path or fake_path(tmp_path))
    proc = subprocess.run([sys.executable, str(VALIDATORS / "network.py"),
                           json.dumps({"host": "n1", "vendor": "ascend"} if config is None else config)],
                          env=env, capture_output=True, text=True, timeout=60)
    checks = json.loads(proc.stdout.strip().splitlines()[-1])["checks"]
    assert len(checks) == 1 and checks[0]["check"] == "hccn", checks
    return checks[0]


def edit_hccn_conf(root: Path, drop: str | None = None, **values: str) -> None:
    conf = root / "etc" / "hccn.conf"
    lines = []
    for line in conf.read_text().splitlines():
        key = line.partition("=")[0]
        if drop and key.endswith("_" + drop):
            continue
        lines.append(f"{key}={values.pop(key)}" if key in values else line)
    conf.write_text("".join(f"{line}\n" for line in lines))


def test_hccn_is_registered_health_with_the_system_python() -> None:
    registry = load_registry(VALIDATORS)
    by_check = {c: v for v in registry for c in v.checks}
    assert by_check["hccn"].tier == "health" and by_check["hccn"].python == "system"
    assert by_check["hccn"].path == VALIDATORS / "network.py"
    assert {c for v in select(registry, "quick") for c in v.checks} >= {"hccn", "devices"}
    assert [v.name for v in select(registry, "full", {"hccn"})] == ["hccn"]


def test_hccn_parsers_match_the_control_side() -> None:
    from accelstack.vendors.ascend.parsers import parse_hccn_conf, parse_hccn_ip

    network = load_validator("network")
    for text in ("ipaddr:10.10.0.10\nnetmask:255.255.255.0\n", "", "ipaddr: 10.0.0.1 \n", "garbage\nipaddr:\n"):
        ip = parse_hccn_ip(text)
        assert network.parse_hccn_ip(text) == (ip.ipaddr, ip.netmask), text
    conf = ("# site plan\naddress_0=10.0.0.10\nnetmask_0=255.255.255.0\n address_1 = 10.0.0.11\naddress_x=1.2.3.4\n"
            "address_2=\nnetdetect_0=10.0.0.254\naddress_15=10.0.1.5\nnonsense\n")
    assert {d: f["address"] for d, f in network.parse_hccn_conf(conf).items()} == parse_hccn_conf(conf)
    assert network.parse_hccn_conf(conf)[0] == {"address": "10.0.0.10", "netmask": "255.255.255.0"}
    listing = "\tTotal Count                    : 2\n\n\tNPU ID                         : 0\n\tChip Count : 1\n\n" \
              "\tNPU ID                         : 4\n\tChip Count : 1\n"
    assert network.parse_npu_ids(listing) == [0, 4]


def test_hccn_passes_when_every_npu_agrees(ascend_root: Path, tmp_path: Path) -> None:
    check = run_hccn(ascend_root, tmp_path)
    assert check["status"] == "pass", check
    assert check["metrics"] == {"devices": 4, "agree": 4, "disagree": 0, "unqueried": 0}
    assert check["evidence"]["devices"]["3"]["live"] == check["evidence"]["devices"]["3"]["hccn_conf"] \
        == "192.168.103.1"


def test_hccn_fails_on_a_stale_entry_and_its_remedy_fixes_it(ascend_root: Path, tmp_path: Path) -> None:
    edit_hccn_conf(ascend_root, address_2="192.168.102.99")
    check = run_hccn(ascend_root, tmp_path)
    assert check["status"] == "fail", check
    assert "npu 2" in check["summary"] and "192.168.102.99" in check["summary"]
    assert "192.168.102.1" in check["summary"] and "npu 1" not in check["summary"]
    assert check["metrics"]["disagree"] == 1
    tool = str(ascend_root / HCCN_TOOL)
    keep_live = f"{tool} -i 2 -ip -s address 192.168.102.1 netmask 255.255.255.0"
    assert keep_live in check["remedy"] and "--only hccn" in check["remedy"]
    # The remedy as written persists the live address, and the check passes again.
    subprocess.run(keep_live.split(), env={"PATH": fake_path(tmp_path)}, check=True, timeout=30)
    assert run_hccn(ascend_root, tmp_path)["status"] == "pass"


def test_hccn_fails_on_a_device_missing_from_hccn_conf(ascend_root: Path, tmp_path: Path) -> None:
    edit_hccn_conf(ascend_root, drop="3")
    check = run_hccn(ascend_root, tmp_path)
    assert check["status"] == "fail", check
    assert "npu 3: missing from hccn.conf, interface 192.168.103.1" in check["summary"]
    assert "-i 3 -ip -s address 192.168.103.1 netmask 255.255.255.0" in check["remedy"]


def test_hccn_fails_on_a_device_hccn_tool_no_longer_knows(ascend_root: Path, tmp_path: Path) -> None:
    from accelstack_lab.simulated import drop_device_command

    subprocess.run(["sh", "-c", drop_device_command(1, root=str(ascend_root), python=sys.executable)], check=True)
    check = run_hccn(ascend_root, tmp_path)
    assert check["status"] == "fail", check
    assert "npu 1: address_1=192.168.101.1 in hccn.conf, but hccn_tool -i 1 -ip -g fails" in check["summary"]
    assert check["evidence"]["devices"]["1"]["in_npu_smi"] is False


def test_hccn_finds_the_tools_on_path(ascend_root: Path, tmp_path: Path) -> None:
    bin_dir = tmp_path / "vendor-bin"
    bin_dir.mkdir()
    shutil.move(str(ascend_root / HCCN_TOOL), str(bin_dir / "hccn_tool"))
    shutil.move(str(ascend_root / "usr/local/bin/npu-smi"), str(bin_dir / "npu-smi"))
    assert run_hccn(ascend_root, tmp_path, path=f"{bin_dir}:{fake_path(tmp_path)}")["status"] == "pass"
    check = run_hccn(ascend_root, tmp_path)  # neither on PATH nor where the driver puts them
    assert check["status"] == "error" and "hccn_tool not found" in check["summary"]


def test_hccn_skips_hosts_without_an_ascend_driver(ascend_root: Path, tmp_path: Path) -> None:
    for vendor in ("cpu", "nvidia"):  # the stack says so: nothing is asked, even with a driver present
        check = run_hccn(ascend_root, tmp_path, {"host": "n1", "vendor": vendor})
        assert check["status"] == "skip" and vendor in check["summary"], check
    empty = tmp_path / "empty"
    empty.mkdir()
    check = run_hccn(empty, tmp_path, {"host": "n1"})  # no stack named, no driver found
    assert check["status"] == "skip" and "no Ascend driver" in check["summary"], check


# ----- storage: which mount holds the checkpoint folder (validators/storage.py) -----

MOUNTINFO = REPO / "tests" / "data" / "captures" / "proc_self_mountinfo_head.txt"


def test_mountinfo_parser_reads_the_captured_table_and_escaped_points() -> None:
    storage = load_validator("storage")
    mounts = storage.parse_mountinfo(MOUNTINFO.read_text())
    assert {"mount_point": "/", "fstype": "ext4", "source": "/dev/vda"} in mounts
    assert storage.mount_for("/dev/shm/x", mounts)["fstype"] == "tmpfs"
    assert storage.mount_for("/home/ckpt", mounts)["mount_point"] == "/"
    # A space in a mount point is written \040; optional fields (shared:N) sit before the " - ".
    odd = "901 27 0:99 / /mnt/check\\040points rw shared:7 master:2 - nfs4 filer:/a\\040b rw,vers=4.2\n"
    [mount] = storage.parse_mountinfo(odd)
    assert mount == {"mount_point": "/mnt/check points", "fstype": "nfs4", "source": "filer:/a b"}
    assert storage.parse_proc_mounts("filer:/x /mnt/check\\040points nfs4 rw 0 0\n") == [mount | {"source": "filer:/x"}]


def test_the_longest_mount_point_wins_and_a_later_mount_covers_an_earlier_one() -> None:
    storage = load_validator("storage")
    mounts = [{"mount_point": "/", "fstype": "ext4", "source": "/dev/sda1"},
              {"mount_point": "/scratch", "fstype": "nfs4", "source": "old:/s"},
              {"mount_point": "/scratch", "fstype": "lustre", "source": "mgs@o2ib:/s"},
              {"mount_point": "/scratch/ckpt-other", "fstype": "xfs", "source": "/dev/nvme0n1"}]
    assert storage.mount_for("/scratch/ckpt", mounts)["fstype"] == "lustre"  # not /scratch/ckpt-other
    assert storage.mount_for("/scratch", mounts)["fstype"] == "lustre"
    assert storage.mount_for("/scratchy", mounts)["fstype"] == "ext4"
    assert storage.mount_for("/x", []) is None


@pytest.mark.parametrize(("fstype", "wanted", "ok"), [
    ("lustre", "lustre", True), ("nfs4", "nfs", True), ("nfs", "nfs", True), ("fuse.weka", "weka", True),
    ("gpfs", "GPFS", True), ("ext4", "lustre", False), ("nfsd", "nfs", False), ("tmpfs", "nfs", False)])
def test_checkpoint_fs_names_a_family(fstype: str, wanted: str, ok: bool) -> None:
    assert load_validator("storage").fs_matches(fstype, wanted) is ok


def test_storage_never_creates_the_checkpoint_folder(tmp_path: Path) -> None:
    missing = tmp_path / "mnt" / "ckpt"
    [check] = load_validator("storage").main({"checkpoint_dir": str(missing), "storage_probe_mb": 1})
    assert check["status"] == "fail" and "does not exist" in check["summary"]
    assert not (tmp_path / "mnt").exists()


# ----- one record for a host the run cannot reach (validate/run.py, validate/results.py) -----

def test_an_unreachable_host_gives_one_connect_record_whose_remedy_rechecks_it(tmp_path: Path) -> None:
    import socket

    from accelstack.engines.ssh.run import validate_inventory
    from accelstack.inventory import load_inventory

    with socket.socket() as probe:  # a port nothing listens on: the connection is refused at once
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    inventory = tmp_path / "inv.yml"
    inventory.write_text(f"vars:\n  stack: cpu\n  expect_devices: 0\nhosts:\n  gone:\n    address: 127.0.0.1\n"
                         f"    port: {port}\n    user: root\n    accept_new_host_keys: true\n")
    inv = load_inventory(str(inventory))
    records = validate_inventory(inv, inv.select(), tier="standard", only={"devices", "memory", "storage", "topology"},
                                 reporter=_Collect())
    assert [(r.host, r.check, r.status) for r in records] == [("gone", "connect", "error")], records
    assert records[0].evidence["error"] == "HostUnreachable"
    assert records[0].remedy and f"inv validate --inventory {inventory} --limit gone" in records[0].remedy


class _Collect:
    def __init__(self) -> None:
        self.records: list[Record] = []

    def add(self, record: Record) -> None:
        self.records.append(record)

    def add_all(self, records) -> None:  # type: ignore[no-untyped-def]
        self.records.extend(records)


def test_a_missing_stack_python_is_named_as_an_unprovisioned_stack() -> None:
    from accelstack.validate.judge import unparsable_record

    stderr = "timeout: failed to run command ‘/opt/accelstack/venv/bin/python’: No such file or directory\n"
    record = unparsable_record("n1", "allreduce", command="timeout -k 5 420 /opt/accelstack/venv/bin/python x.py",
                               stdout="", stderr=stderr, exit_status=127, inventory="inventories/npu8.yml")
    assert record.status == "error"
    assert "the stack is not provisioned on n1" in record.summary and "3.8" not in (record.remedy or "")
    assert record.remedy and record.remedy.startswith("inv provision --inventory inventories/npu8.yml --limit n1")
    assert "--only allreduce" in record.remedy
    killed = unparsable_record("n1", "devices", command="c", stdout="", stderr="", exit_status=124)
    assert "time limit" in killed.summary and "inv validate --limit n1 --only devices" in (killed.remedy or "")


def test_a_missing_system_python_names_the_os_package() -> None:
    from accelstack.validate.judge import unparsable_record

    stderr = "timeout: failed to run command 'python3': No such file or directory\n"
    record = unparsable_record("n1", "memory.shm", command="timeout -k 5 60 python3 memory.py", stdout="",
                               stderr=stderr, exit_status=127)
    assert record.summary.startswith("python3 is not installed on n1") and record.status == "error"
    assert record.remedy and "install python3" in record.remedy and "--only memory" in record.remedy


def test_no_host_record_passes_with_its_tool_failing_in_its_own_evidence() -> None:
    from accelstack.validate.judge import judge_record
    from accelstack.validate.thresholds import load_thresholds

    for status in ("pass", "warn"):
        record = Record(host="n", check="some_future_check", status=status, summary="looks fine",  # type: ignore[arg-type]
                        evidence={"command": "hl-smi -Q", "tool_exit": 127, "tool_output": "hl-smi: not found"})
        judged = judge_record(record, {"vendor": "nvidia"}, load_thresholds())
        assert judged.status == "error" and judged.summary.startswith("hl-smi is not installed"), judged.summary
        assert judged.remedy
    fine = Record(host="n", check="some_future_check", status="pass", summary="ok",
                  evidence={"command": "x", "tool_exit": 0})
    assert judge_record(fine, {}, load_thresholds()).status == "pass"
    measured_bad = Record(host="n", check="some_future_check", status="fail", summary="bad",
                          evidence={"tool_exit": 3})
    assert judge_record(measured_bad, {}, load_thresholds()).status == "fail"  # a fail stays what the check measured


def test_a_host_naming_no_accelerator_is_never_held_to_the_cpu_lab_floor() -> None:
    """Review finding: an NVIDIA inventory without `accelerator:` was judged against the cpu row (0.05 GB/s), so an
    8-GPU allreduce at 10 GB/s passed. No name is no row; a device name from the vendor tool matches by word."""
    t = load_thresholds()
    assert t.lookup("", "single-node", "allreduce", 8) is None
    assert t.lookup(None, "single-node", "allreduce", 2) is None
    assert t.lookup("NVIDIA H100 80GB HBM3", "single-node", "allreduce", 8).min_busbw_gbps == 460  # type: ignore[union-attr]
    assert t.lookup("cpu", "single-node", "allreduce", 2).min_busbw_gbps == 0.05  # type: ignore[union-attr]
    from accelstack.results.records import Record
    from accelstack.validate.judge import judge_bandwidth

    record = Record(host="h", check="allreduce", status="pass", summary="8 ranks",
                    metrics={"busbw_gbps": 10.0, "ranks": 8})
    judged = judge_bandwidth(record, accelerator="", scope="single-node", thresholds=t)
    assert judged.status == "pass" and "names no `accelerator`" in judged.summary
    assert judged.metrics["threshold_gbps"] is None


def test_a_multinode_worker_that_could_not_run_is_error_and_one_that_computed_wrong_is_fail() -> None:
    """Review finding: node_record turned a worker's own `error` (the collective could not start) into `fail`."""
    from types import SimpleNamespace

    from accelstack.engines.ssh.cluster import NodeResult, RunResult, node_record

    member = SimpleNamespace(name="a", config={"accelerator": "cpu", "nproc": 2})
    for worker, expected in (("error", "error"), ("fail", "fail")):
        check = {"status": worker, "summary": "rank 0: RuntimeError", "metrics": {}, "evidence": {}}
        node = NodeResult(member, 0, "cmd", checks=[check])  # type: ignore[arg-type]
        run = RunResult([node], "tag", 1.0, 60.0)
        assert node_record(node, run, load_thresholds()).status == expected


def test_ports_on_one_host_gives_its_skip_record_through_a_real_run(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Review finding: the one-host `skip` existed in ports_records, but the run only called it for two hosts
    or more, so one host got no ports record at all."""
    from accelstack.engines.ssh.run import validate_inventory
    from accelstack.inventory import load_inventory

    monkeypatch.setenv("ACCELSTACK_RUNS", str(tmp_path / "runs"))
    local = load_inventory("local")
    records = validate_inventory(local, local.select(), only={"ports"})
    assert [(r.check, r.status) for r in records] == [("ports", "skip")]
    assert "no other node" in records[0].summary


def test_the_sweep_ends_the_runs_processes_and_not_the_shell_that_runs_it() -> None:
    """The sweep's pkill matches the run's tag in the ranks' command lines, not in its own shell's: killing that
    shell ended the command at once while pkill went on running on the host, after the sweep had returned."""
    tag = new_tag()
    rank = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", tag])
    try:
        done = subprocess.run(["sh", "-c", kill_command(tag)], timeout=30)
        assert done.returncode == 0  # the shell ran to its end (killed, it would be -9)
        assert rank.wait(timeout=10) == -9  # the run's process is gone
    finally:
        rank.kill()
