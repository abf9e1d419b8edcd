"""``accelstack node-check`` on this machine: the node file provisioning renders, the records, the exit codes and
the drain through a stand-in ``scontrol`` (Slurm itself is exercised in test_slurm_lab.py)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from accelstack.engines.node import load_node_file
from accelstack.engines.slurm.drain import drain_reason
from accelstack.errors import ConfigError
from accelstack.results.records import Record, prune_runs
from tests.test_provision_plan import facts, host, plan_for

from .helpers import (
    alive,
    cli_process,
    descendants,
    first_results,
    interrupt,
    interrupted_records,
    run_cli,
    run_program,
)


def rendered_node_file(tmp_path: Path, nics: tuple[str, ...] = ("lo", "eth0"), **host_vars: object) -> Path:
    """The node file exactly as `inv provision` would write it for a cpu host with these inventory vars (a host
    whose stack python already holds the stack: a venv that no check would read is a plan problem)."""
    plan, _, _ = plan_for(host(name="node1", **host_vars), facts(nics=nics, torch="2.13.0+cpu", python="3.11.2"))
    change = next(c for c in plan.changes if c.step == "env.node-file")
    assert change.writes[0].path == "/etc/accelstack/node.yml"
    path = tmp_path / "node.yml"
    path.write_text(change.writes[0].content)
    return path


def node_check(*args: str, tmp_path: Path, env: dict[str, str] | None = None,
               timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return run_cli("node-check", *args, runs=tmp_path / "runs", env=env, timeout=timeout)


def lines(proc: subprocess.CompletedProcess[str]) -> list[dict]:
    return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]


def fake_scontrol(tmp_path: Path) -> tuple[Path, Path]:
    """A `scontrol` that only writes down its arguments, one per line, so a test can see what would drain."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    calls = tmp_path / "scontrol-calls"
    script = bindir / "scontrol"
    script.write_text(f"#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done >> {calls}\necho --- >> {calls}\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return bindir, calls


def test_provisioning_renders_the_node_file_node_check_reads(tmp_path: Path) -> None:
    path = rendered_node_file(tmp_path, gloo_socket_ifname="eth0", expect_devices=0, accelerator="cpu",
                              stack_python="python3", checkpoint_dir="/data/ckpt")
    node = load_node_file(path)
    assert node.node == "node1" and node.stack.name == "cpu" and node.stack.backend == "gloo"
    assert node.stack.pins["torch"].version == "2.13.0+cpu" and node.stack.pins["torch"].match == "release"
    assert node.vars["gloo_socket_ifname"] == "eth0" and node.vars["expect_devices"] == 0
    assert node.vars["stack_python"] == "python3" and node.vars["checkpoint_dir"] == "/data/ckpt"
    assert node.vars["env"]["GLOO_SOCKET_IFNAME"] == "eth0"
    assert node.runs_dir == "/var/lib/accelstack/runs"


def test_a_node_file_with_an_unknown_field_is_refused_with_its_line(tmp_path: Path) -> None:
    path = rendered_node_file(tmp_path)
    path.write_text(path.read_text() + "colour: blue\n")
    with pytest.raises(ConfigError, match=r"node.yml:\d+: unknown field 'colour'"):
        load_node_file(path)


@pytest.mark.parametrize(("field", "value", "kind"), [("node", "[x]", "a list"), ("node", "{a: 1}", "a mapping"),
                                                    ("stack_python", "[python3]", "a list"),
                                                    ("runs_dir", "true", "a boolean")])
def test_a_node_file_field_that_is_not_one_name_is_refused_with_its_line(tmp_path: Path, field: str, value: str,
                                                                        kind: str) -> None:
    # `node: [x]` was taken as the node name "['x']": the drain would have named a node Slurm does not have.
    path = rendered_node_file(tmp_path)
    text = "\n".join(line for line in path.read_text().splitlines() if not line.startswith(f"{field}:"))
    path.write_text(text + f"\n{field}: {value}\n")
    line = len(path.read_text().splitlines())
    with pytest.raises(ConfigError) as info:
        load_node_file(path)
    assert str(info.value).startswith(f"{path}:{line}: '{field}' must be a single name or path, not {kind}"), \
        str(info.value)
    proc = node_check("--config", str(path), tmp_path=tmp_path)
    assert proc.returncode == 3 and f"{path}:{line}:" in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    assert not (tmp_path / "runs").exists()


def test_a_number_as_the_node_name_is_that_name(tmp_path: Path) -> None:
    path = rendered_node_file(tmp_path)
    path.write_text(path.read_text().replace('node: "node1"', "node: 1001"))
    assert load_node_file(path).node == "1001"


def test_a_blank_accelstack_runs_is_unset_and_the_node_files_folder_is_used(tmp_path: Path) -> None:
    """Blank means unset, as runs_dir() reads it everywhere: the records go to the node file's runs_dir, not to a
    ./runs in the folder node-check started in (slurmd starts it in /)."""
    node_runs = tmp_path / "node-runs"
    path = rendered_node_file(tmp_path, stack_python="/nonexistent/bin/python", node_runs_dir=str(node_runs))
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    proc = run_cli("node-check", "--config", str(path), "--only", "torch_devices", "--json", cwd=cwd,
                   env={"ACCELSTACK_RUNS": " \t"})
    assert proc.returncode == 2, proc.stdout + proc.stderr
    run_id = lines(proc)[0]["run_id"]
    assert (node_runs / run_id / "results.jsonl").is_file()
    assert list(cwd.iterdir()) == []


def test_the_drain_reason_names_the_first_failed_check_on_one_line_and_is_cut() -> None:
    records = [Record("n", "devices", "error", "torch missing"),
               Record("n", "env", "fail", "GLOO_SOCKET_IFNAME=eth9\nnames no interface " + "x" * 300),
               Record("n", "memory.shm", "fail", "small")]
    reason = drain_reason(records)
    assert reason is not None and "\n" not in reason and len(reason) <= 160
    assert reason.startswith("accelstack: env: GLOO_SOCKET_IFNAME=eth9 names no interface")
    assert reason.endswith("... (+1 more)")
    assert drain_reason([Record("n", "devices", "error", "could not run"), Record("n", "env", "pass", "")]) is None


@pytest.mark.slow  # node-check's quick tier: torch processes
def test_healthy_node_passes_the_quick_tier_with_records_in_the_run_folder(tmp_path: Path) -> None:
    # This machine as a cpu node: torch on python3, the loopback for gloo.
    path = rendered_node_file(tmp_path, gloo_socket_ifname="lo", expect_devices=0, accelerator="cpu",
                              stack_python="python3")
    proc = node_check("--config", str(path), "--tier", "quick", "--json", "--node", "nodeA", tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    records = lines(proc)
    checks = {r["check"].split(".")[0]: r["status"] for r in records}
    assert {"devices", "torch_devices", "env", "libraries", "collective_init", "versions"} <= set(checks), checks
    assert checks["torch_devices"] == "pass" and checks["collective_init"] == "pass"
    assert checks["devices"] == "skip"  # the cpu stack: no vendor tool to count with, none expected
    assert all(r["host"] == "nodeA" for r in records)
    (run,) = list((tmp_path / "runs").iterdir())
    on_disk = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]
    assert [r["check"] for r in on_disk] == [r["check"] for r in records]
    assert json.loads((run / "meta.json").read_text())["kind"] == "node-check"


def test_a_broken_setting_fails_and_drains_through_scontrol_with_the_cause(tmp_path: Path) -> None:
    # Provisioned while the node had ib9 (provisioning refuses a name the host lacks); the link is gone since.
    path = rendered_node_file(tmp_path, nics=("lo", "eth0", "ib9"), gloo_socket_ifname="ib9",
                              stack_python="python3")
    bindir, calls = fake_scontrol(tmp_path)
    env = {"PATH": f"{bindir}:{os.environ['PATH']}", "SLURMD_NODENAME": "nodeB"}
    proc = node_check("--config", str(path), "--only", "env", "--json", "--drain", tmp_path=tmp_path, env=env)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    (record,) = [r for r in lines(proc) if r["check"] == "env.gloo_socket_ifname"]
    assert record["status"] == "fail" and record["host"] == "nodeB" and "ib9" in record["summary"]
    argv = calls.read_text().split("---\n")[0].splitlines()
    assert argv[:3] == ["update", "nodename=nodeB", "state=drain"]
    assert argv[3].startswith("reason=accelstack: env.gloo_socket_ifname: GLOO_SOCKET_IFNAME=ib9") and "ib9" in argv[3]
    assert "drained nodeB" in proc.stderr


def test_an_error_never_drains(tmp_path: Path) -> None:
    path = rendered_node_file(tmp_path, stack_python="/nonexistent/bin/python")
    bindir, calls = fake_scontrol(tmp_path)
    env = {"PATH": f"{bindir}:{os.environ['PATH']}", "SLURMD_NODENAME": "nodeC"}
    proc = node_check("--config", str(path), "--only", "torch_devices", "--json", "--drain", tmp_path=tmp_path, env=env)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert [r["status"] for r in lines(proc)] == ["error"]
    assert not calls.exists()


@pytest.mark.slow  # node-check run again and again
def test_a_node_keeps_its_newest_node_check_runs_and_nothing_else_is_touched(tmp_path: Path) -> None:
    path = rendered_node_file(tmp_path, stack_python="/nonexistent/bin/python", node_keep_runs=2)
    assert load_node_file(path).keep_runs == 2
    default = tmp_path / "default"
    default.mkdir()
    assert load_node_file(rendered_node_file(default)).keep_runs == 500  # not set: node-check's default
    runs = tmp_path / "runs"
    runs.mkdir()
    other = runs / "20200101T000000Z-validate-0a0a"  # another kind of run in the same folder: never touched
    other.mkdir()
    (other / "meta.json").write_text('{"finished": "2020-01-01T00:00:00Z"}')
    made = []
    for _ in range(3):
        proc = node_check("--config", str(path), "--only", "torch_devices", "--json", tmp_path=tmp_path)
        assert proc.returncode == 2, proc.stdout + proc.stderr
        made.append(lines(proc)[0]["run_id"])
        time.sleep(1.1)  # run ids are stamped to the second
    kept = sorted(p.name for p in runs.iterdir())
    assert kept == sorted([other.name, *made[-2:]]), kept


def test_nodes_sharing_a_runs_folder_keep_each_others_runs(tmp_path: Path) -> None:
    # node_runs_dir on a shared file system: each node keeps the newest keep_runs of its own runs, and never
    # removes another node's.
    path = rendered_node_file(tmp_path, stack_python="/nonexistent/bin/python", node_keep_runs=1)
    runs = tmp_path / "runs"
    runs.mkdir()
    others = []
    for i in range(2):
        other = runs / f"2020010{i + 1}T000000Z-node-check-0b0{i}"
        other.mkdir()
        (other / "meta.json").write_text(json.dumps({"kind": "node-check", "node": "node2", "finished": "x"}))
        others.append(other)
    mine = []
    for _ in range(2):
        proc = node_check("--config", str(path), "--node", "node1", "--only", "torch_devices", "--json", tmp_path=tmp_path)
        assert proc.returncode == 2, proc.stdout + proc.stderr
        mine.append(lines(proc)[0]["run_id"])
        time.sleep(1.1)  # run ids are stamped to the second
    assert sorted(p.name for p in runs.iterdir()) == sorted([*(o.name for o in others), mine[-1]])


def test_pruning_removes_only_ended_or_long_dead_runs_of_its_kind(tmp_path: Path) -> None:
    def run(name: str, meta: dict | None, age_s: float = 0) -> Path:
        folder = tmp_path / name
        folder.mkdir()
        if meta is not None:
            (folder / "meta.json").write_text(json.dumps(meta))
        if age_s:
            os.utime(folder, (time.time() - age_s, time.time() - age_s))
        return folder

    killed = run("20260101T000000Z-node-check-0001", {"started": "x"}, age_s=3 * 86400)  # never closed, long dead
    going = run("20260102T000000Z-node-check-0002", {"started": "x"})  # no end yet: a prolog still running
    old = run("20260103T000000Z-node-check-0003", {"finished": "x"})
    stopped = run("20260104T000000Z-node-check-0004", {"interrupted": "x"})
    newest = [run(f"20260105T00000{i}Z-node-check-000{i}", {"finished": "x"}) for i in range(2)]
    stray = run("notes-node-check", None)
    assert prune_runs(tmp_path, "node-check", 0) == []  # 0 keeps every run
    removed = prune_runs(tmp_path, "node-check", 2)
    assert sorted(removed) == sorted([killed, old, stopped])
    assert going.exists() and stray.exists() and all(p.exists() for p in newest)
    assert prune_runs(tmp_path / "absent", "node-check", 2) == []


def test_a_bad_keep_runs_is_refused_with_its_line(tmp_path: Path) -> None:
    path = rendered_node_file(tmp_path)
    path.write_text(path.read_text() + "keep_runs: -1\n")
    with pytest.raises(ConfigError, match=r"node.yml:\d+: 'keep_runs' must be a whole number >= 0"):
        load_node_file(path)


def test_bad_input_is_one_line_and_exit_3(tmp_path: Path) -> None:
    missing = node_check("--config", str(tmp_path / "absent.yml"), tmp_path=tmp_path)
    assert missing.returncode == 3 and "no node file at" in missing.stderr and "Traceback" not in missing.stderr
    path = rendered_node_file(tmp_path)
    full = node_check("--config", str(path), "--tier", "full", tmp_path=tmp_path)
    assert full.returncode == 3 and "--tier 'full'" in full.stderr
    assert not (tmp_path / "runs").exists()


def test_slurm_engine_parsers_sort_usable_nodes_and_labelled_records() -> None:
    from accelstack.engines.slurm.parse import parse_sinfo_nodes, parse_step_output

    nodes = parse_sinfo_nodes("lab1 idle\nlab2 drained\nlab3 down*\nlab4 idle*\nlab5 mixed\nlab1 idle\n")
    assert [(n.name, n.usable) for n in nodes] == [("lab1", True), ("lab2", False), ("lab3", False),
                                                   ("lab4", False), ("lab5", True)]
    record = {"host": "lab2", "check": "env", "status": "pass", "summary": "ok " * 20}
    text = json.dumps(record)
    # srun --label cuts a long line into labelled chunks, interleaved with the other tasks' output.
    out = (f"1: {text[:30]}\n0: Traceback (most recent call last):\n1: {text[30:70]}\n0: {text}\n"
           f"1: {text[70:]}\n2: {{not json\n")
    items, other = parse_step_output(out)
    assert items == [record, record]
    assert other == ["0: Traceback (most recent call last):", "2: {not json"]


# ----- the console script's invoke-free node-check --------------------------------------------------------------

@pytest.mark.parametrize(("argv", "expected"), [
    (["node-check"], {}),
    (["node-check", "--json", "--drain", "--tier", "quick", "--only=devices,env", "--config", "/x.yml",
      "--node=n1"], {"json": True, "drain": True, "tier": "quick", "only": "devices,env", "config": "/x.yml",
                     "node": "n1"}),
    (["node-check", "--help"], None),
    (["node-check", "-h"], None),
    (["node-check", "--tier"], None),  # a missing value: invoke says so
    (["node-check", "--tier", "--json"], None),
    (["node-check", "--only="], None),
    (["node-check", "--json=yes"], None),
    (["node-check", "--tier", "quick", "--tier", "health"], None),
    (["node-check", "--colour", "blue"], None),
    (["node-check", "stray"], None),
    (["--echo", "node-check"], None),
    (["validate", "--json"], None),
    (["node-collective", "--spec", "{}"], None),
    ([], None),
])
def test_only_a_plain_node_check_line_skips_invoke(argv: list[str], expected: dict | None, tmp_path: Path) -> None:
    from accelstack.cli import _direct_node_check

    environ = {"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    assert _direct_node_check(["accelstack", *argv], environ) == expected


def test_invoke_configuration_sends_node_check_through_invoke(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where invoke has configuration to read, it reads and checks it (a broken file is exit 3 under `inv`):
    node-check then goes through invoke too, so both programs still answer the same."""
    from accelstack.cli import _direct_node_check

    monkeypatch.setenv("HOME", str(tmp_path))  # expanduser reads the process's HOME
    line = ["accelstack", "node-check", "--json"]
    assert _direct_node_check(line, {"HOME": str(tmp_path)}) == {"json": True}
    assert _direct_node_check(line, {"HOME": str(tmp_path), "INVOKE_RUN_ECHO": "1"}) is None
    (tmp_path / ".invoke.yaml").write_text("accelstack: [broken]\n")
    assert _direct_node_check(line, {"HOME": str(tmp_path)}) is None


def test_the_flag_table_is_the_tasks_signature_and_the_control_vars_name_is_slurms() -> None:
    import inspect

    from accelstack.engines.slurm.nodes import NODE_VARS_ENV
    from accelstack.flows.nodecheck import run as nodecheck
    from accelstack.flows.nodecheck.run import NODE_CHECK_FLAGS
    from accelstack.tasks.direct import node_check_command
    from accelstack.tasks.nodecheck import node_check as task

    params = list(inspect.signature(task.body).parameters.values())[1:]  # after the invoke context
    assert {p.name: not isinstance(p.default, bool) for p in params} == NODE_CHECK_FLAGS
    direct = inspect.signature(node_check_command).parameters.values()
    assert [(p.name, p.default) for p in direct] == [(p.name, p.default) for p in params]
    assert nodecheck.NODE_VARS_ENV is NODE_VARS_ENV  # one name for the vars the control side sends a node


def test_a_plain_node_check_imports_no_invoke_fabric_nor_paramiko(tmp_path: Path) -> None:
    path = rendered_node_file(tmp_path, stack_python="/nonexistent/bin/python")
    probe = ("import json, sys\nfrom accelstack.cli import main\ncode = None\n"
             "try:\n    main(sys.argv[1:])\nexcept SystemExit as exc:\n    code = exc.code\n"
             "print(json.dumps([code, sorted(sys.modules)]), file=sys.stderr)\n")
    proc = subprocess.run([sys.executable, "-c", probe, "accelstack", "node-check", "--config", str(path), "--json",
                           "--only", "env,versions,libraries"], capture_output=True, text=True, cwd="/",
                          env={**os.environ, "ACCELSTACK_RUNS": str(tmp_path / "runs"), "HOME": str(tmp_path)},
                          timeout=300)
    code, modules = json.loads(proc.stderr.strip().splitlines()[-1])
    assert code in (0, 1, 2) and lines(proc), proc.stdout[-2000:] + proc.stderr[-2000:]
    assert {r["check"].split(".")[0] for r in lines(proc)} == {"env", "versions", "libraries"}
    heavy = [m for m in modules if m.split(".")[0] in ("invoke", "fabric", "paramiko", "rich", "jinja2")]
    assert not heavy, heavy
    assert not {"accelstack.tasks.common", "accelstack.tasks.nodecheck", "accelstack.tasks.program"} & set(modules)


@pytest.mark.parametrize("args", [["--tier", "full"], ["--only", "nope"], ["--only", ""], ["--tier"],
                                  ["--colour", "blue"]])
def test_bad_node_check_lines_say_the_same_under_both_programs(args: list[str], tmp_path: Path) -> None:
    path = rendered_node_file(tmp_path)
    outs = {}
    for program in ("accelstack", "inv"):
        proc = run_program(program, "node-check", "--config", str(path), *args, runs=tmp_path / "runs", timeout=120)
        assert proc.returncode == 3 and "Traceback" not in proc.stderr, proc.stderr
        outs[program] = proc.stderr
    assert outs["accelstack"] == outs["inv"]
    assert not (tmp_path / "runs").exists()


@pytest.mark.slow  # node-check's quick tier: torch processes
def test_ctrl_c_keeps_finished_records_marks_the_rest_kills_the_validators_and_exits_130(tmp_path: Path) -> None:
    """The validators run in a session of their own, which a Ctrl-C at the terminal does not reach: node-check
    kills them, keeps every finished record, marks each check without one ``error``, closes the run folder as
    interrupted and never drains."""
    path = rendered_node_file(tmp_path, gloo_socket_ifname="lo", expect_devices=0, accelerator="cpu",
                              stack_python="python3")
    bindir, calls = fake_scontrol(tmp_path)
    runs = tmp_path / "runs"
    env = {"PATH": f"{bindir}:{os.environ['PATH']}"}
    with cli_process("node-check", "--config", str(path), "--tier", "quick", "--json", "--drain", "--node", "nodeA",
                     runs=runs, env=env) as proc:
        results = first_results(runs, timeout=120, poll=0.02)
        end = time.monotonic() + 60
        while time.monotonic() < end and not (running := descendants(proc.pid)):
            time.sleep(0.02)
        before = results.read_text().splitlines()
        out, err = interrupt(proc, timeout=60)
    records = interrupted_records(proc, err, results, before)
    assert len(records) == len({r.check for r in records})  # each check once
    meta = json.loads((results.parent / "meta.json").read_text())
    assert meta["exit_code"] == 130 and "finished" not in meta
    assert [json.loads(line)["check"] for line in out.splitlines() if line.startswith("{")] == [
        r.check for r in records]  # what --json printed is what the run folder holds
    assert running and [pid for pid in running if alive(pid)] == []  # no validator outlived the run
    assert not calls.exists()  # an interrupted check drains nothing
