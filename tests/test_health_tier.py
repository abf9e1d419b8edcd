"""The health tier (node-check's default, what Slurm's HealthCheckProgram runs beside jobs) and a device that another
process holds, on a simulated GPU node (``accelstack_lab.simulated.gpu_node``: the lab's simulated nvidia-smi on a
PATH of its own): no torch is imported and no device is opened; the checks of one python run in one interpreter
reading each vendor tool once, with the records each gives alone; a device held by someone else (a listed process,
an exclusive compute mode, memory in use by an unlisted one; after the fact "busy or unavailable" or out of memory
while someone holds it) is ``skip`` naming the holder, never ``fail``, and ``--drain`` drains nothing."""

from __future__ import annotations

import ast
import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from accelstack.engines.node import load_node_file, node_context
from accelstack.engines.ssh.host import host_groups, run_host
from accelstack.inventory import Host
from accelstack.transport.connection import LocalTransport
from accelstack.validate.config import tier_config
from accelstack.validate.registry import load_registry, select, validators_dir
from accelstack.validate.thresholds import load_thresholds
from accelstack_lab.simulated.gpu_node import SimulatedGpuNode, make_gpu_node

REPO = Path(__file__).resolve().parent.parent
VALIDATORS = REPO / "src" / "accelstack" / "hostside" / "validators"
NO_TORCH = Path(__file__).resolve().parent / "no_torch"
FAKE = Path(__file__).resolve().parent / "fake_accelerator"
H200_BESIDE_A_JOB = REPO / "tests" / "data" / "captures" / "h200_node_check_beside_a_job.jsonl"
HEALTH = {"devices", "env", "hccn", "health", "libraries", "topology", "versions"}


@pytest.fixture()
def gpu_node(tmp_path: Path) -> SimulatedGpuNode:
    return make_gpu_node(tmp_path / "node", count=8)


def count_calls(node: SimulatedGpuNode) -> Path:
    """Wrap the simulated nvidia-smi so every call writes its arguments to a file, then runs the tool."""
    calls = node.folder / "smi-calls"
    real = node.bin_dir / "nvidia-smi.real"
    (node.bin_dir / "nvidia-smi").rename(real)
    wrapper = node.bin_dir / "nvidia-smi"
    wrapper.write_text(f'#!/bin/sh\necho "$*" >> {calls}\nexec {real} "$@"\n')
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IEXEC)
    return calls


def node_check(node: SimulatedGpuNode, *args: str, env: dict[str, str] | None = None,
               python_path: list[Path] | None = None) -> subprocess.CompletedProcess[str]:
    full = node.env()
    full.update(ACCELSTACK_RUNS=str(node.folder / "runs"), **(env or {}))
    full["PYTHONPATH"] = os.pathsep.join([*(str(p) for p in python_path or []), str(REPO / "src")])
    return subprocess.run([sys.executable, "-m", "accelstack", "node-check", "--config", str(node.node_file),
                           "--node", "gpu01", "--json", *args], cwd="/", env=full, capture_output=True, text=True,
                          timeout=300)


def records(proc: subprocess.CompletedProcess[str]) -> dict[str, dict[str, Any]]:
    return {r["check"]: r for r in (json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{"))}


def fake_scontrol(tmp_path: Path) -> tuple[Path, Path]:
    bindir = tmp_path / "scontrol-bin"
    bindir.mkdir()
    calls = tmp_path / "scontrol-calls"
    (bindir / "scontrol").write_text(f'#!/bin/sh\necho "$*" >> {calls}\n')
    (bindir / "scontrol").chmod(0o755)
    return bindir, calls


# ----- the health tier: no torch, no device, one read of each vendor tool -----

def test_node_check_runs_the_health_tier_by_default_with_no_torch_and_one_read_of_nvidia_smi(
        gpu_node: SimulatedGpuNode, tmp_path: Path) -> None:
    calls = count_calls(gpu_node)
    log = tmp_path / "torch-imports"
    proc = node_check(gpu_node, env={"ACCELSTACK_TORCH_IMPORT_LOG": str(log)}, python_path=[NO_TORCH])
    found = records(proc)
    assert {c.split(".")[0] for c in found} == HEALTH, sorted(found)
    assert not log.exists(), log.read_text()  # nothing of the tier (nor node-check itself) imported torch
    assert found["devices"]["status"] == "pass" and "8 device(s) healthy" in found["devices"]["summary"]
    assert all(found[c]["status"] in ("pass", "skip") for c in found if c.startswith("health")), found
    asked = calls.read_text().splitlines()
    assert asked.count("-q -x") == 1, asked  # devices and health judge the same answer
    # The facts probe behind versions asks its own question once; nothing else asks nvidia-smi anything.
    assert len(asked) <= 3 and not [a for a in asked if "compute-apps" in a], asked
    # The records are those of the checks run one by one: the command a person re-runs is the script's own.
    assert found["devices"]["evidence"]["command"] == "nvidia-smi -q -x"
    assert "/env.py '" in found["env"]["evidence"]["command"] and "_batch.py" not in found["env"]["evidence"]["command"]


def test_the_poisoned_torch_would_be_seen(gpu_node: SimulatedGpuNode, tmp_path: Path) -> None:
    """The guard above can fail: the quick tier does import torch, and the poison says so."""
    log = tmp_path / "torch-imports"
    proc = node_check(gpu_node, "--tier", "quick", "--only", "torch_devices",
                      env={"ACCELSTACK_TORCH_IMPORT_LOG": str(log)}, python_path=[NO_TORCH])
    assert log.exists() and "imported torch" in log.read_text()
    assert records(proc)["torch_devices"]["status"] in ("fail", "error")


def test_no_health_tier_script_imports_torch_or_opens_a_device() -> None:
    """A static audit to go with the run above: every health-tier script, and every module of the validators
    folder it imports, imports neither torch nor torch_npu (nor any module that would load a device runtime)."""
    forbidden = {"torch", "torch_npu", "ctypes", "multiprocessing"}
    local = {p.stem for p in VALIDATORS.glob("*.py")}

    def imports(path: Path) -> set[str]:
        names = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module:
                names.add(node.module.split(".")[0])
        return names

    health = [v for v in select(load_registry(), "health") if v.script is not None]
    assert {v.script for v in health} >= {"devices.py", "device_health.py", "env.py", "libraries.py"}
    for validator in health:
        seen, todo = set(), [validator.script[:-3]]
        while todo:
            name = todo.pop()
            if name in seen:
                continue
            seen.add(name)
            found = imports(VALIDATORS / f"{name}.py")
            assert not found & forbidden, (validator.script, name, found & forbidden)
            todo += sorted(found & local)
        assert validator.python == "system"


def test_the_batch_gives_each_check_the_records_it_gives_alone(gpu_node: SimulatedGpuNode,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in gpu_node.env().items():
        monkeypatch.setenv(key, value)
    node = load_node_file(gpu_node.node_file)
    ctx = node_context(node, "gpu01")
    validators = [v for v in select(load_registry(), "health") if v.scope == "host" and v.script is not None]
    assert len(host_groups(validators)) == 1  # one interpreter for all of them
    thresholds = load_thresholds()
    config = tier_config(ctx, "health")

    def run(chosen: list[Any]) -> list[Any]:
        transport = LocalTransport(Host(name="gpu01", address="localhost", connection="local"))
        return run_host(transport, ctx, chosen, validators_dir(), thresholds, tier="health", config=config)

    together = run(validators)
    alone = [r for v in validators for r in run([v])]

    def comparable(record: Any) -> tuple[Any, ...]:
        # What the machine changes between the two runs is left out: times, and the interfaces the other tests'
        # labs bring up and down beside this one (the suite runs on several workers).
        evidence = {k: v for k, v in record.evidence.items() if k not in ("wall_s", "uptime_s", "interfaces")}
        return record.check, record.status, record.summary, record.remedy, record.metrics, evidence

    assert [comparable(r) for r in together] == [comparable(r) for r in alone]
    assert {r.check.split(".")[0] for r in together} == HEALTH - {"versions"}


@pytest.mark.slow  # waits out a hung check's deadline
def test_a_check_that_hangs_in_the_batch_is_an_error_and_the_rest_still_run(tmp_path: Path) -> None:
    """One hung check costs the others nothing: the batch reports it at its limit and the control side runs what
    is left one by one."""
    from accelstack.engines.ssh.host import run_batch
    from accelstack.validate.checks import Check

    folder = tmp_path / "validators"
    folder.mkdir()
    for name in ("_common.py", "_batch.py"):
        (folder / name).write_text((VALIDATORS / name).read_text())
    for name, body in (("fast.py", "return [record('fast', 'pass', 'quick')]"),
                       ("hangs.py", "import time\n    time.sleep(60)\n    return []"),
                       ("after.py", "return [record('after', 'pass', 'ran alone')]")):
        (folder / name).write_text(f"import os, sys\nsys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))\n"
                                   f"from _common import main_entry, record\n\ndef main(config):\n    {body}\n\n"
                                   f"if __name__ == '__main__':\n    main_entry('{name[:-3]}', main)\n")
    checks = [Check((name,), "health", help=name, script=f"{name}.py", timeout=timeout, path=folder / f"{name}.py")
              for name, timeout in (("fast", 30), ("hangs", 2), ("after", 30))]
    host = Host(name="n1", address="localhost", connection="local")
    from accelstack.stacks import load_stack
    from accelstack.stacks.context import HostContext

    ctx = HostContext(host, load_stack("cpu"), {"stack_python": sys.executable})
    transport = LocalTransport(host)
    done, left = run_batch(transport, checks, ctx, str(folder), {"host": "n1"}, load_thresholds())
    by_check = {v.name: records for v, records in done}
    assert by_check["fast"][0].status == "pass"
    assert by_check["hangs"][0].status == "error" and "no result within 2 s" in by_check["hangs"][0].summary
    assert [v.name for v in left] == ["after"]


# ----- a device someone else holds: skip naming the holder, never fail, never a drain -----

HELD = [
    ("a job's rank listed on the GPU", {"compute_mode": None}, "gpu 0 is in use by pid 4242 python3 (78000 MiB)"),
    ("exclusive compute mode", {"compute_mode": "Exclusive_Process"}, "in compute mode Exclusive_Process"),
]


@pytest.mark.parametrize(("what", "extra", "said"), HELD, ids=[h[0] for h in HELD])
def test_quick_tier_beside_a_job_skips_naming_the_holder_and_drains_nothing(
        gpu_node: SimulatedGpuNode, tmp_path: Path, what: str, extra: dict[str, Any], said: str) -> None:
    gpu_node.hold(0, **extra)
    bindir, calls = fake_scontrol(tmp_path)
    proc = node_check(gpu_node, "--tier", "quick", "--only", "devices,torch_devices,collective_init,health",
                      "--drain", env={"PATH": f"{bindir}:{gpu_node.env()['PATH']}"})
    found = records(proc)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    for check in ("torch_devices", "collective_init"):
        assert found[check]["status"] == "skip", found[check]
        assert said in found[check]["summary"] and "not touched" in found[check]["summary"]
        assert found[check]["evidence"]["held_by"][0]["pid"] == 4242
    assert found["devices"]["status"] == "pass" and "in use by a process: gpu 0" in found["devices"]["summary"]
    assert not calls.exists(), calls.read_text()


def test_memory_held_by_a_process_this_namespace_cannot_see_is_left_alone(gpu_node: SimulatedGpuNode,
                                                                          tmp_path: Path) -> None:
    # The H200 beside a job: all but 1000 MiB in use, no process listed (the job in another container).
    gpu_node.set(0, memory_used_mib=80559)
    bindir, calls = fake_scontrol(tmp_path)
    proc = node_check(gpu_node, "--tier", "quick", "--only", "torch_devices,collective_init", "--drain",
                      env={"PATH": f"{bindir}:{gpu_node.env()['PATH']}"})
    found = records(proc)
    assert proc.returncode == 0 and not calls.exists(), proc.stdout[-3000:]
    assert found["torch_devices"]["status"] == found["collective_init"]["status"] == "skip"
    assert "80559 of 81559 MiB in use by no process listed here" in found["torch_devices"]["summary"]


@pytest.mark.slow  # node-check's quick tier: torch processes
def test_a_free_gpu_on_the_same_node_is_still_checked(gpu_node: SimulatedGpuNode) -> None:
    """Holding GPU 5 does not excuse GPU 0: torch's device 0 is free, so torch_devices runs (and, torch being a CPU
    build here, fails for what it sees, as on a host without a CUDA torch)."""
    gpu_node.hold(5)
    found = records(node_check(gpu_node, "--tier", "quick", "--only", "torch_devices"))
    assert found["torch_devices"]["status"] == "fail"
    assert "torch sees 0 of the 8 device(s) nvidia-smi reports" in found["torch_devices"]["summary"]
    # CUDA_VISIBLE_DEVICES renumbers: with 5 first, torch's device 0 is the held one.
    found = records(node_check(gpu_node, "--tier", "quick", "--only", "torch_devices",
                               env={"CUDA_VISIBLE_DEVICES": "5,6"}))
    assert found["torch_devices"]["status"] == "skip" and "gpu 5" in found["torch_devices"]["summary"]


def test_perf_leaves_every_device_alone_while_one_is_held(gpu_node: SimulatedGpuNode) -> None:
    """perf measures every device with torch: one a job holds is not measured, and nothing is failed for it."""
    gpu_node.hold(3, memory_mib=60000)
    env = gpu_node.env()
    env["PYTHONPATH"] = str(REPO / "src")
    proc = subprocess.run([sys.executable, str(VALIDATORS / "device_perf.py"),
                           json.dumps({"vendor": "nvidia", "host": "gpu01"})], env=env, capture_output=True, text=True,
                          timeout=120)
    (check,) = json.loads(proc.stdout.strip().splitlines()[-1])["checks"]
    assert check["check"] == "perf" and check["status"] == "skip", check
    assert "gpu 3 is in use by pid 4242 python3 (60000 MiB)" in check["summary"]


def fake_accelerator_run(script: str, node: SimulatedGpuNode, config: dict[str, Any], **env: str) -> dict[str, Any]:
    full = node.env()
    full.update(OMP_NUM_THREADS="1", GLOO_SOCKET_IFNAME="lo", ACCELSTACK_FAKE_DEVICES="1", **env)
    full["PYTHONPATH"] = os.pathsep.join([str(FAKE), str(REPO / "src")])
    proc = subprocess.run([sys.executable, str(VALIDATORS / script), json.dumps(config)], capture_output=True,
                          text=True, timeout=200, env=full, cwd=str(REPO))
    lines = [line for line in proc.stdout.splitlines() if line.startswith('{"checks"')]
    assert lines, (proc.returncode, proc.stdout[-2000:], proc.stderr[-3000:])
    return {c["check"]: c for c in json.loads(lines[-1])["checks"]}


AFTER = [
    # (what the device says, memory in use before the check started, verdict)
    ("oom", 20000, "skip"),  # someone held a quarter of it: out of memory is their doing
    ("oom", 0, "fail"),  # a free device that cannot give 16 KiB: the device is bad
    ("busy", 0, "skip"),  # the driver says another process holds it (exclusive mode)
]


@pytest.mark.slow  # torch on the fake accelerator, twice a case
@pytest.mark.parametrize(("error", "used", "verdict"), AFTER, ids=[f"{e}-{u}MiB-{v}" for e, u, v in AFTER])
def test_a_device_error_that_says_someone_holds_the_device_is_a_skip(
        gpu_node: SimulatedGpuNode, error: str, used: int, verdict: str) -> None:
    """On the fake accelerator (a torch device that is not the CPU), the device raises what CUDA raises: the first
    tensor (torch_devices) and set_device (collective_init, one rank in the check's own process)."""
    gpu_node.set(0, memory_used_mib=used)
    config = {"vendor": "nvidia", "host": "gpu01", "expect_devices": 8}
    found = fake_accelerator_run("torch_devices.py", gpu_node, config, ACCELSTACK_FAKE_ERROR=error)
    assert found["torch_devices"]["status"] == verdict, found
    init = fake_accelerator_run("collectives.py", gpu_node, dict(config, mode="init", backend="refusing", nproc=1,
                                                               deadline_s=90), ACCELSTACK_FAKE_ERROR=error)
    assert init["collective_init"]["status"] == verdict, init
    if verdict == "skip":
        assert "not touched" in found["torch_devices"]["summary"]
        assert "CUDA error" in found["torch_devices"]["evidence"]["device_error"]
    else:
        assert "out of memory" in found["torch_devices"]["summary"]
        assert "CUDA error: out of memory" in init["collective_init"]["summary"]  # the error's own line


def test_the_h200_capture_beside_a_job_would_now_be_a_skip() -> None:
    """The real records (fail, fail, exit 1, a drain with --drain) judged by the rule: the same CUDA errors while
    the same memory was held are the holder's, not the node's."""
    sys.path.insert(0, str(VALIDATORS))
    try:
        import _holders
    finally:
        sys.path.remove(str(VALIDATORS))
    captured = {r["check"]: r for r in map(json.loads, H200_BESIDE_A_JOB.read_text().splitlines())}
    assert captured["devices"]["status"] == captured["collective_init"]["status"] == "fail"
    # What nvidia-smi said of the GPU when the check began (the record's own tool output: 142771 of 143771 MiB).
    row = captured["devices"]["evidence"]["tool_output"].split(", ")
    device = {"device": "gpu 0", "index": 0, "uuid": row[2], "compute_mode": "Default",
              "memory_total_mib": int(row[5]), "memory_used_mib": int(row[6]), "processes": []}
    assert _holders.held("nvidia", [0], devices=[device]) is not None  # it would not have been touched at all
    for text in (captured["devices"]["evidence"]["torch"]["matmul_error"],
                 "\n".join(captured["collective_init"]["evidence"]["rank_errors"]["0"])):
        found = _holders.held_after("nvidia", text, [0], devices=[dict(device, memory_used_mib=30000)])
        assert found is not None and found["error"].startswith("Compile with") is False
    # The same out of memory on a free GPU is the device's failure.
    assert _holders.held_after("nvidia", captured["devices"]["evidence"]["torch"]["matmul_error"], [0],
                               devices=[dict(device, memory_used_mib=0)]) is None


@pytest.mark.slow  # real torch processes (gloo ranks): seconds each
def test_collectives_leave_no_rank_folder_behind(tmp_path: Path) -> None:
    """Every collective check used to leave /tmp/accelstack-coll-*: 288 a day from a 5-minute health check."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RANK", "LOCAL_", "WORLD_SIZE", "MASTER_"))}
    env.update(TMPDIR=str(tmp_path), OMP_NUM_THREADS="1", GLOO_SOCKET_IFNAME="lo")
    stale = tmp_path / "accelstack-coll-999999999-abcd"  # a run killed at its limit: its process is gone
    stale.mkdir()
    live = tmp_path / f"accelstack-coll-{os.getpid()}-efgh"  # a run still going: kept
    live.mkdir()
    config = {"vendor": "cpu", "mode": "init", "nproc": 2, "deadline_s": 90, "collective_timeout_s": 60}
    proc = subprocess.run([sys.executable, str(VALIDATORS / "collectives.py"), json.dumps(config)], env=env,
                          capture_output=True, text=True, timeout=200)
    (check,) = json.loads(proc.stdout.strip().splitlines()[-1])["checks"]
    assert check["status"] == "pass", check
    assert sorted(p.name for p in tmp_path.iterdir()) == [live.name]
