"""Who acts on a finding (node, job, config, service), and the line that holds: only a node finding that a host
check confirmed is a reason to drain, and no drain path reads a diagnosis."""

from __future__ import annotations

import ast
import io
from pathlib import Path

import pytest
from rich.console import Console

from accelstack.diagnose import ACTORS, diagnose_lines, diagnose_paths, load_causes, parse_catalog
from accelstack.diagnose.confirm import (
    CONFIRMED,
    NO_CHECK,
    NOT_CONFIRMED,
    UNKNOWN,
    Confirmation,
    judge_finding,
    judge_findings,
)
from accelstack.diagnose.render import render_confirmation, render_diagnosis
from accelstack.flows.fleetcheck.run import drain_targets, host_check_names
from accelstack.results.records import Record
from accelstack.validate.registry import load_registry

LOGS = Path(__file__).parent / "data" / "logs"
PACKAGE = Path(__file__).resolve().parents[1] / "src" / "accelstack"


@pytest.mark.slow  # the whole corpus diagnosed
def test_every_cause_has_an_actor_and_every_finding_carries_one():
    causes = load_causes()
    assert {cause.actor for cause in causes.values()} <= set(ACTORS)
    for path in sorted(LOGS.rglob("*.log")):
        for finding in diagnose_paths([str(path)]).findings:
            assert finding.actor in ACTORS, (path, finding.id)
            # Unless a signature or row says why it knows better, or the logs show whose it is (actor_reason,
            # diagnose/actors.py), the actor is the cause's.
            if finding.layer == "structure" and "actor_reason" not in finding.extracted:
                assert finding.actor == causes[finding.cause].actor
            assert finding.to_dict()["actor"] == finding.actor


def test_a_signature_may_name_another_actor():
    data = {"signatures": [{"id": "quota", "cause": "disk-full", "vendor": "any", "title": "the job's quota",
                            "patterns": ["Quota exceeded for user"], "explanation": "x", "remedy": "y",
                            "priority": 80, "source": "z", "actor": "job"}]}
    catalog = parse_catalog(data)
    [found] = diagnose_lines(["OSError: Quota exceeded for user bob"], catalog=catalog).findings
    assert found.cause == "disk-full" and found.actor == "job"


def test_a_quoted_error_is_shown_as_written_not_as_markup():
    lines = ["Traceback (most recent call last):",
             "RuntimeError: [/__w/pytorch/third_party/gloo/pair.cc:553] [bold]weird[/] message"]
    console = Console(width=200, record=True, file=io.StringIO())
    console.print(render_diagnosis(diagnose_lines(lines)))
    assert "[/__w/pytorch/third_party/gloo/pair.cc:553] [bold]weird[/] message" in console.export_text()


def test_the_rich_output_leads_with_who_acts():
    console = Console(width=140, record=True, file=io.StringIO())
    console.print(render_diagnosis(diagnose_paths([str(LOGS / "xid-fatal.log")])))
    text = console.export_text()
    assert text.lstrip().startswith("who acts: node (the node: drain or repair it, but only once a host check")
    assert "[node] xid-fatal" in text
    console.print(render_diagnosis(diagnose_paths([str(LOGS / "cuda-oom.log")])))
    assert "who acts: job (the job's owner: the program's own error; do not drain the node)" in console.export_text()


# ---- confirmation on a host ----

def rec(check: str, status: str) -> Record:
    return Record(host="node07", check=check, status=status, summary="")  # type: ignore[arg-type]


@pytest.mark.parametrize(("records", "status"), [
    ([rec("devices", "fail"), rec("health", "pass")], CONFIRMED),
    ([rec("devices", "pass"), rec("health", "warn")], NOT_CONFIRMED),
    ([rec("devices", "error"), rec("health", "pass")], UNKNOWN),
    ([rec("devices", "skip")], UNKNOWN),
    ([], UNKNOWN),
    ([rec("memory.shm", "fail")], UNKNOWN),  # another check's failure says nothing about this cause
])
def test_a_finding_is_confirmed_only_by_its_own_checks_failing(records, status):
    assert judge_finding(["devices", "health"], records) == status


def test_sub_checks_belong_to_their_check_and_no_check_is_no_check():
    assert judge_finding(["memory"], [rec("memory.shm", "fail"), rec("memory.memlock", "pass")]) == CONFIRMED
    assert judge_finding([], [rec("devices", "fail")]) == NO_CHECK


def test_only_a_confirmed_node_finding_is_a_reason_to_drain():
    registry = load_registry()
    xid = diagnose_paths([str(LOGS / "xid-fatal.log")])
    confirmed = Confirmation("node07", ["devices"], [rec("devices", "fail")],
                             judge_findings(xid.findings, [rec("devices", "fail")], registry))
    assert confirmed.drain and confirmed.to_dict()["drain"] is True
    passed = Confirmation("node07", ["devices"], [rec("devices", "pass"), rec("health", "pass")],
                          judge_findings(xid.findings, [rec("devices", "pass"), rec("health", "pass")], registry))
    assert not passed.drain and passed.findings[0].status == NOT_CONFIRMED
    # A job's error never drains, whatever the host's checks say (the memory check fails on a full GPU too).
    oom = diagnose_paths([str(LOGS / "cuda-oom.log")])
    failing = [rec("memory", "fail")]
    job = Confirmation("node07", ["memory"], failing, judge_findings(oom.findings, failing, registry))
    assert job.findings[0].status == CONFIRMED and job.findings[0].actor == "job" and not job.drain
    console = Console(width=140, record=True, file=io.StringIO())
    console.print(render_confirmation(job))
    assert "no drain: no node finding is confirmed" in console.export_text()


def test_diagnose_host_reports_each_finding_and_no_drain_for_a_jobs_error(capsys, tmp_path, monkeypatch):
    from invoke import Collection, Program

    from accelstack.tasks.diagnose import diagnose

    monkeypatch.setenv("ACCELSTACK_RUNS", str(tmp_path))
    program = Program(namespace=Collection(diagnose), binary="inv")
    with pytest.raises(SystemExit) as exited:
        program.run(["inv", "diagnose", "--log", str(LOGS / "cuda-oom.log"), "--json", "--host", "localhost"])
    assert exited.value.code == 1
    import json

    confirm = json.loads(capsys.readouterr().out)["confirm"]
    [item] = confirm["findings"]
    assert item["cause"] == "out-of-memory" and item["actor"] == "job" and item["checks"] == ["memory"]
    assert item["status"] in (CONFIRMED, NOT_CONFIRMED, UNKNOWN)
    assert confirm["drain"] is False


def test_the_hosts_vendor_reads_a_cuda_call_as_the_programs_on_ascend_and_the_builds_elsewhere():
    # The same lines: a CPU torch on a GPU host (the launch's environment), or a CUDA call on an Ascend host (the
    # program's), which the log alone cannot tell apart and the inventory can.
    log = str(LOGS / "torch-cpu-wheel-on-gpu.log")
    plain, ascend = diagnose_paths([log]), diagnose_paths([log], contexts={"ascend"})
    assert (plain.first.cause, plain.first.actor) == ("torch-build-mismatch", "config")
    assert (ascend.first.cause, ascend.first.actor) == ("cuda-on-npu", "job")
    with pytest.raises(ValueError, match="unknown diagnosis context 'ascnd'"):
        diagnose_lines(["x"], contexts={"ascnd"})


def _inventory(tmp_path: Path, stacks: dict[str, str]) -> str:
    lines = ["hosts:"] + [f"  {name}:\n    connection: local\n    stack: {stack}" for name, stack in stacks.items()]
    path = tmp_path / "inv.yml"
    path.write_text("\n".join(lines) + "\n")
    return str(path)


@pytest.mark.parametrize(("stack", "cause", "actor", "contexts"), [
    ("ascend-910b-cann8.2.rc1", "cuda-on-npu", "job", ["ascend"]),
    ("nvidia-cuda12.8", "torch-build-mismatch", "config", None),
])
def test_diagnose_host_reads_the_log_with_the_vendor_of_the_hosts_stack(capsys, tmp_path, monkeypatch, stack, cause,
                                                                        actor, contexts):
    import json

    from invoke import Collection, Program

    from accelstack.tasks.diagnose import diagnose

    monkeypatch.setenv("ACCELSTACK_RUNS", str(tmp_path / "runs"))
    inventory = _inventory(tmp_path, {"node07": stack})
    program = Program(namespace=Collection(diagnose), binary="inv")
    with pytest.raises(SystemExit) as exited:
        program.run(["inv", "diagnose", "--log", str(LOGS / "torch-cpu-wheel-on-gpu.log"), "--json",
                     "--host", "node07", "--inventory", inventory])
    assert exited.value.code == 1
    document = json.loads(capsys.readouterr().out)
    assert (document["first"]["cause"], document["first"]["actor"]) == (cause, actor)
    assert document.get("host_contexts") == contexts


def test_a_selection_of_hosts_of_two_vendors_tells_the_reading_nothing():
    from accelstack.inventory import Host
    from accelstack.tasks.diagnose import host_contexts

    def host(name: str, stack: str | None) -> Host:
        return Host(name=name, address=name, vars={"stack": stack} if stack else {})

    assert host_contexts([host("a", "ascend-910b-cann8.2.rc1"), host("b", "ascend-910b-cann8.0.0")]) == {"ascend"}
    assert host_contexts([host("a", "ascend-910b-cann8.2.rc1"), host("b", "nvidia-cuda12.8")]) == set()
    assert host_contexts([host("a", "ascend-910b-cann8.2.rc1"), host("b", None)]) == set()
    assert host_contexts([host("a", "cpu")]) == set()  # no diagnosis context is the CPU's


# ---- drains ----

def test_a_fleet_check_drains_on_a_host_checks_failure_only():
    checks = host_check_names()
    assert {"devices", "memory", "multinode"} <= checks
    records = [Record(host="node01", check="devices", status="fail", summary="npu 3 lost"),
               Record(host="node02", check="memory.shm", status="fail", summary="/dev/shm 64 MB"),
               # a diagnosis or a fact gathering may name a cause, but measured nothing on the node
               Record(host="node03", check="diagnose", status="fail", summary="xid-fatal in the job's logs"),
               Record(host="node04", check="facts", status="fail", summary="odd"),
               Record(host="node05", check="devices", status="error", summary="unreachable")]
    assert sorted(drain_targets(records, [])) == ["node01", "node02"]


DRAIN_MODULES = ("flows/fleetcheck/run.py", "flows/nodecheck/run.py", "tasks/nodecheck.py", "tasks/_slurm.py",
                 "engines/slurm/run.py", "tasks/report.py")


def test_no_drain_path_reads_a_diagnosis():
    # Drains decide on the records of host checks (fleet-check, node-check, Slurm's scontrol drains). A log's
    # diagnosis never reaches them: diagnose --host confirms with the same checks instead.
    checked = 0
    for relative in DRAIN_MODULES:
        path = PACKAGE / relative
        checked += 1
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""] + [f"{node.module}.{alias.name}" for alias in node.names]
            assert not any("diagnose" in name.split(".") for name in names), (relative, node.lineno)
    assert checked == len(DRAIN_MODULES)
