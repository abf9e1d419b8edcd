"""Ctrl-C under ``--engine slurm`` keeps the SSH engine's contract: every finished record stays, each check left
gets an ``error`` "interrupted" record, the step is cancelled (scancel by its own job name), exit 130 with one
line. Slurm's client commands are stand-ins on PATH (scripts): what is tested is our side of them. The reader of
the step's output is the main thread, where Ctrl-C lands: a record it is writing is kept whole."""

from __future__ import annotations

import io
import json
import os
import signal
import threading
import time
from pathlib import Path

import pytest

from accelstack.engines.base import RunRecords, interrupt_guard
from accelstack.results.output import Reporter
from accelstack.results.records import Record, RunWriter, read_run

from .helpers import alive, cli_process, first_results, interrupt, run_cli

RECORD = {"host": "node1", "check": "devices", "status": "pass", "summary": "8 device(s) healthy"}


def _slurm_bin(folder: Path) -> Path:
    folder.mkdir()
    scripts = {
        "sinfo": "#!/bin/sh\nprintf 'node1 idle\\nnode2 idle\\n'\n",
        # One record from node1, cut in two chunks as srun forwards them, then the step hangs.
        "srun": ("#!/bin/sh\n"
                 f"echo \"$@\" > {folder}/srun.args\n"
                 f"printf '0: %s\\n0: %s\\n' '{json.dumps(RECORD)[:30]}' '{json.dumps(RECORD)[30:]}'\n"
                 f"echo $$ > {folder}/srun.pid\n"
                 "[ -n \"$FAKE_SRUN_ENDS\" ] || exec sleep 60\n"
                 f"echo '1: {json.dumps({**RECORD, 'host': 'node2'})}'\n"
                 "echo 'srun: a line on stderr' >&2\n"),
        "scancel": f"#!/bin/sh\necho \"$@\" >> {folder}/scancel.log\n",
        "scontrol": "#!/bin/sh\nexit 1\n",
    }
    for name, text in scripts.items():
        (folder / name).write_text(text)
        (folder / name).chmod(0o755)
    return folder


def on_path(slurm: Path, **extra: str) -> dict[str, str]:
    """The variables a run needs to find the test's Slurm clients before any real one."""
    return {"PATH": f"{slurm}:{os.environ['PATH']}", **extra}


def test_sigint_under_slurm_keeps_finished_records_marks_the_rest_cancels_the_step_and_exits_130(
        tmp_path: Path) -> None:
    slurm = _slurm_bin(tmp_path / "bin")
    runs = tmp_path / "runs"
    with cli_process("validate", "--engine", "slurm", "--only", "devices,env,multinode", "--json", runs=runs,
                     env=on_path(slurm)) as proc:
        results = [first_results(runs, timeout=60, poll=0.05)]  # node1's record, written as it arrived
        srun_pid = int((slurm / "srun.pid").read_text())
        out, err = interrupt(proc, timeout=60)
    assert proc.returncode == 130, err
    assert len(err.strip().splitlines()) == 1 and err.startswith("accelstack: interrupted: 1 finished record"), err
    records = {(r.host, r.check): r for r in read_run(results[0].parent)}
    assert records[("node1", "devices")].status == "pass"  # finished before Ctrl-C: kept as it was
    cut = {key: r for key, r in records.items() if key != ("node1", "devices")}
    assert set(cut) == {("node1", "env"), ("node1", "multinode"), ("node2", "devices"), ("node2", "env"),
                        ("node2", "multinode")}
    assert all(r.status == "error" and "interrupted" in r.summary for r in cut.values())
    assert json.loads((results[0].parent / "meta.json").read_text())["exit_code"] == 130
    assert len([line for line in out.splitlines() if line.startswith("{")]) == len(records)
    # The step was cancelled by its own job name, the one srun was given, and srun did not outlive the run.
    job = next(a for a in (slurm / "srun.args").read_text().split() if a.startswith("--job-name="))
    assert f"--name={job.split('=', 1)[1]}" in (slurm / "scancel.log").read_text().split()
    assert job.startswith("--job-name=accelstack-validate-") and job != "--job-name=accelstack-validate-"
    assert not alive(srun_pid)


def test_a_step_that_ends_gives_every_record_and_no_interrupt(tmp_path: Path) -> None:
    slurm = _slurm_bin(tmp_path / "bin")
    proc = run_cli("validate", "--engine", "slurm", "--only", "devices", "--json", runs=tmp_path / "runs",
                   env=on_path(slurm, FAKE_SRUN_ENDS="1"), timeout=60)
    assert proc.returncode == 0, proc.stderr
    records = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert sorted((r["host"], r["check"], r["status"]) for r in records) == [
        ("node1", "devices", "pass"), ("node2", "devices", "pass")]
    assert not (slurm / "scancel.log").exists()


def test_interrupted_records_mark_only_what_has_no_record() -> None:
    from accelstack.engines.slurm.run import interrupted_records
    from accelstack.results.records import Record
    from accelstack.validate.registry import load_registry

    validators = [v for v in load_registry() if v.name in ("devices", "allreduce,allgather")]
    have = [Record(host="n1", check="allreduce.single", status="pass", summary="ok"),
            Record(host="n2", check="allreduce,allgather", status="error", summary="the step gave no records")]
    missing = interrupted_records(have, ["n1", "n2"], validators, multinode=True)
    assert sorted((r.host, r.check) for r in missing) == [
        ("n1", "allgather"), ("n1", "devices"), ("n1", "multinode"), ("n2", "devices"), ("n2", "multinode")]
    assert all(r.status == "error" and r.evidence == {"error": "interrupted"} for r in missing)


def test_a_step_cut_off_after_some_records_marks_every_check_a_node_never_reported_error(tmp_path: Path) -> None:
    # Each node reports env, then the step is killed (time limit, OOM, reboot): srun exits 137.
    slurm = _slurm_bin(tmp_path / "bin")
    env_record = {"host": "node1", "check": "env", "status": "pass", "summary": "env ok"}
    (slurm / "srun").write_text(
        "#!/bin/sh\n"
        f"echo '0: {json.dumps(env_record)}'\n"
        f"echo '1: {json.dumps({**env_record, 'host': 'node2'})}'\n"
        "echo 'srun: error: node1: task 0: Killed' >&2\nexit 137\n")
    proc = run_cli("validate", "--engine", "slurm", "--tier", "quick", "--json", runs=tmp_path / "runs",
                   env=on_path(slurm), timeout=60)
    from accelstack.validate.registry import load_registry, select

    quick = [v for v in select(load_registry(), "quick", None) if v.scope == "host" and "slurm" in v.engines]
    assert len(quick) > 1
    records = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    cut = [r for r in records if r["check"] != "env"]
    assert proc.returncode != 0, proc.stdout
    assert sorted((r["host"], r["check"]) for r in cut) == sorted(
        (host, v.name) for host in ("node1", "node2") for v in quick if "env" not in v.checks)
    assert all(r["status"] == "error" and "srun exited 137" in r["summary"] for r in cut)
    assert [r["status"] for r in records if r["check"] == "env"] == ["pass", "pass"]


def test_the_host_step_asks_each_node_for_its_devices_and_takes_it_whole(tmp_path: Path) -> None:
    # node1 and node2 have GPUs Slurm manages, node3 none: one srun per device set, each --exclusive.
    slurm = _slurm_bin(tmp_path / "bin")
    (slurm / "sinfo").write_text("#!/bin/sh\nprintf 'node1 idle\\nnode2 idle\\nnode3 idle\\n'\n")
    (slurm / "scontrol").write_text(
        "#!/bin/sh\n[ \"$*\" = '-o show node' ] || exit 1\n"
        "echo 'NodeName=node1 Arch=x86_64 Gres=gpu:h100:8(S:0-1) NodeAddr=10.0.0.1 State=IDLE'\n"
        "echo 'NodeName=node2 Arch=x86_64 Gres=gpu:h100:8(S:0-1) NodeAddr=10.0.0.2 State=IDLE'\n"
        "echo 'NodeName=node3 Arch=x86_64 Gres=(null) NodeAddr=10.0.0.3 State=IDLE'\n")
    (slurm / "srun").write_text(
        "#!/bin/sh\n"
        f"echo \"$@\" >> {slurm}/srun.log\n"
        "for a in \"$@\"; do case $a in --nodelist=*) list=${a#--nodelist=};; esac; done\n"
        "i=0; for n in $(echo $list | tr , ' '); do\n"
        "  echo \"$i: {\\\"host\\\": \\\"$n\\\", \\\"check\\\": \\\"devices\\\", "
        "\\\"status\\\": \\\"pass\\\", \\\"summary\\\": \\\"ok\\\"}\"; i=$((i+1)); done\n")
    proc = run_cli("validate", "--engine", "slurm", "--only", "devices", "--json", runs=tmp_path / "runs",
                   env=on_path(slurm), timeout=60)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    calls = sorted(line.split() for line in (slurm / "srun.log").read_text().splitlines())
    assert len(calls) == 2 and all("--exclusive" in argv for argv in calls)
    by_nodes = {next(a for a in argv if a.startswith("--nodelist=")): argv for argv in calls}
    assert "--gres=gpu:h100:8" in by_nodes["--nodelist=node1,node2"]
    assert not any(a.startswith("--gres") for a in by_nodes["--nodelist=node3"])
    records = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert sorted((r["host"], r["status"]) for r in records) == [("node1", "pass"), ("node2", "pass"),
                                                                  ("node3", "pass")]


def _logging_bin(folder: Path) -> Path:
    """Slurm's clients that log every call: a flag refused as bad input must leave both logs absent."""
    slurm = _slurm_bin(folder)
    for name in ("sinfo", "srun"):
        (slurm / name).write_text(f"#!/bin/sh\necho \"$@\" >> {slurm}/{name}.log\nexit 1\n")
    return slurm


@pytest.mark.parametrize(("args", "words"), [
    (["fleet-check", "--drain"], ["--drain drains through scontrol and needs --engine slurm", "--drain-cmd"]),
    (["validate", "--partition", "gpu"], ["--partition", "needs --engine slurm"]),
    (["validate", "--nodes", "lab[1-2]"], ["--nodes", "needs --engine slurm"]),
    (["fleet-check", "--partition", "gpu"], ["--partition", "needs --engine slurm"]),
    (["fleet-check", "--nodes", "lab1"], ["--nodes", "needs --engine slurm"]),
    (["validate", "--engine", "slurm", "--limit", "lab1"], ["--limit", "name Slurm nodes", "--nodes"]),
    (["validate", "--engine", "slurm", "--forks", "4"], ["--forks", "--engine slurm"]),
    (["validate", "--engine", "slurm", "--connect-timeout", "5"], ["--connect-timeout", "--engine slurm"]),
    (["fleet-check", "--engine", "slurm", "--forks", "4"], ["--forks", "--engine slurm"]),
])
def test_a_flag_the_engine_would_ignore_is_exit_3_in_one_line_before_any_node_is_touched(
        tmp_path: Path, args: list[str], words: list[str]) -> None:
    slurm = _logging_bin(tmp_path / "bin")
    argv = [*args, "--reports-dir", str(tmp_path / "reports")] if args[0] == "fleet-check" else args
    proc = run_cli(*argv, runs=tmp_path / "runs", env=on_path(slurm), cwd=tmp_path, timeout=60)
    assert proc.returncode == 3, proc.stderr + proc.stdout
    lines = proc.stderr.strip().splitlines()
    assert lines and lines[0].startswith("accelstack: ") and "Traceback" not in proc.stderr, proc.stderr
    assert all(word in lines[0] for word in words), lines[0]
    assert not (slurm / "sinfo.log").exists() and not (slurm / "srun.log").exists()
    assert not (tmp_path / "runs").exists()


def test_sinfo_failing_is_one_line_of_bad_input(tmp_path: Path) -> None:
    slurm = _slurm_bin(tmp_path / "bin")
    (slurm / "sinfo").write_text("#!/bin/sh\necho 'sinfo: error: resolve_ctls_from_dns_srv: res_nsearch error' >&2\n"
                                 "echo 'sinfo: error: fetch_config: DNS SRV lookup failed' >&2\n"
                                 "echo 'sinfo: fatal: Could not establish a configuration source' >&2\nexit 1\n")
    proc = run_cli("validate", "--engine", "slurm", runs=tmp_path / "runs", env=on_path(slurm), cwd=tmp_path,
                   timeout=60)
    assert proc.returncode == 3, proc.stderr
    said = [line for line in proc.stderr.splitlines() if "sinfo" in line]
    assert len(said) == 1 and "Could not establish a configuration source" in said[0], proc.stderr
    assert "DNS SRV" not in proc.stderr


def test_validate_through_slurm_takes_the_configured_deadline_as_the_ssh_engine_does(tmp_path: Path) -> None:
    slurm = _slurm_bin(tmp_path / "bin")
    record = {"host": "node1", "check": "devices", "status": "pass", "summary": "ok"}
    (slurm / "srun").write_text(
        "#!/bin/sh\n"
        f"case \"$*\" in *node-collective*) echo \"$@\" >> {slurm}/collective.log; exit 1;; esac\n"
        f"echo '0: {json.dumps(record)}'\necho '1: {json.dumps({**record, 'host': 'node2'})}'\n")
    run_cli("validate", "--engine", "slurm", "--only", "devices,multinode", runs=tmp_path / "runs",
            env=on_path(slurm, ACCELSTACK_DEADLINE="77"), cwd=tmp_path, timeout=60)
    first = (slurm / "collective.log").read_text().splitlines()[0]
    assert json.loads(first.split("--spec ", 1)[1])["deadline_s"] == 77.0


class _SignalledWriter(RunWriter):
    """A run folder that sends this process SIGINT while a record's line is being written: the moment the
    reader of Slurm's step output (the main thread) can be interrupted between the file and stdout."""

    def write_line(self, record: Record) -> str:
        line = super().write_line(record)
        os.kill(os.getpid(), signal.SIGINT)
        return line


def test_a_ctrl_c_while_a_record_is_written_keeps_it_whole_in_the_file_the_stream_and_the_run(
        tmp_path: Path) -> None:
    stdout = io.StringIO()
    reporter = Reporter(_SignalledWriter("validate", base=tmp_path), json_lines=True, stdout=stdout)
    run = RunRecords(reporter, threading.Event())
    cancelled = threading.Event()
    record = Record(**RECORD)
    with pytest.raises(KeyboardInterrupt), interrupt_guard(cancelled.set):
        run.emit([record])
        time.sleep(5)  # not reached: the interrupt is raised as soon as the record is whole
    assert cancelled.wait(5)
    assert [json.loads(line)["host"] for line in stdout.getvalue().splitlines()] == ["node1"]
    assert run.records == [record]
    assert [r.check for r in read_run(reporter.writer.path)] == ["devices"]
