"""The nightly fleet check with a validate callable that returns records built here (validation itself is
tested elsewhere): exit codes, reports, baseline, drains and their quoting, progress, interruption."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from rich.console import Console

from accelstack.baseline import baseline_from_records, baseline_path, load_baseline, save_baseline
from accelstack.fleetcheck import FleetReporter, drain_command, drain_targets, fleet_check
from accelstack.records import Record, read_run

from .test_history import fleet_records


def quiet() -> tuple[FleetReporter, io.StringIO]:
    sink = io.StringIO()
    return FleetReporter(Console(file=sink, width=200, color_system=None), heartbeat_s=0), sink


def run(tmp_path: Path, by_inventory: dict[str, list[Record] | Exception], *, drain_cmd: str | None = None,
        progress: FleetReporter | None = None,
        validate: Callable[[str], list[Record]] | None = None) -> tuple[int, Path]:
    def fake_validate(inventory: str) -> list[Record]:
        outcome = by_inventory[inventory]
        if isinstance(outcome, Exception):
            raise outcome
        return [Record.from_dict(record.to_dict()) for record in outcome]

    reports = tmp_path / "reports"
    code = fleet_check(list(by_inventory), validate=validate or fake_validate, drain_cmd=drain_cmd,
                       reports_dir=reports, busbw_drop_pct=10.0, progress=progress or quiet()[0],
                       runs_base=tmp_path / "runs")
    return code, reports


def drain_log_cmd(log: Path) -> str:
    # Each argument on its own line, so the test sees exactly the words the shell passed.
    return f"printf '%s\\n' host={{host}} reason={{reason}} >> {log}"


def test_healthy_fleet_exits_0_writes_reports_and_sets_the_first_baseline(tmp_path: Path) -> None:
    code, reports = run(tmp_path, {"npu8": fleet_records()}, drain_cmd="false")
    assert code == 0
    assert sorted(p.name for p in reports.iterdir()) == ["accelstack.prom", "junit.xml", "report.html",
                                                         "summary.json"]
    summary = json.loads((reports / "summary.json").read_text())["summary"]
    assert summary["exit_code"] == 0 and summary["baseline_created"] and summary["drained"] == []
    held = load_baseline(baseline_path(tmp_path / "runs"))
    assert held is not None and held.source_run == summary["run_id"]
    run_folder = tmp_path / "runs" / summary["run_id"]
    assert len(read_run(run_folder)) == 7
    assert json.loads((run_folder / "meta.json").read_text())["inventories"] == ["npu8"]


def test_failing_host_drained_error_host_not(tmp_path: Path) -> None:
    log = tmp_path / "drained.log"
    records = fleet_records({"node01": 180.0, "node02": 181.0}, failing={"node02": "fail"})
    records.append(Record(host="node03", check="devices", status="error", summary="no route to host"))
    code, reports = run(tmp_path, {"npu8": records}, drain_cmd=drain_log_cmd(log))
    assert code == 1
    assert log.read_text().splitlines() == ["host=node02", "reason=accelstack: devices failed"]
    summary = json.loads((reports / "summary.json").read_text())["summary"]
    assert [d["host"] for d in summary["drained"]] == ["node02"] and summary["drained"][0]["exit_status"] == 0
    assert not summary["baseline_created"]


def test_only_errors_exit_2_and_nothing_is_drained(tmp_path: Path) -> None:
    log = tmp_path / "drained.log"
    save_baseline(baseline_from_records(fleet_records()), baseline_path(tmp_path / "runs"))
    records = [r for r in fleet_records() if r.host != "node02"]
    records.append(Record(host="node02", check="devices", status="error", summary="no route to host"))
    records.append(Record(host="node02", check="allreduce.single", status="error",
                          summary="no route to host"))
    code, reports = run(tmp_path, {"npu8": records}, drain_cmd=drain_log_cmd(log))
    assert code == 2
    assert not log.exists()
    summary = json.loads((reports / "summary.json").read_text())["summary"]
    # pass -> error is listed as a regression, but says "could not be checked", not "bad host".
    assert {r["now_status"] for r in summary["regressions"]} == {"error"}


def test_busbw_regression_exits_1_and_drains_with_values_in_the_reason(tmp_path: Path) -> None:
    log = tmp_path / "drained.log"
    save_baseline(baseline_from_records(fleet_records({"node01": 180.0, "node02": 181.0}), source_run="base"),
                  baseline_path(tmp_path / "runs"))
    code, reports = run(tmp_path, {"npu8": fleet_records({"node01": 120.0, "node02": 175.0})},
                        drain_cmd=drain_log_cmd(log))
    assert code == 1
    lines = log.read_text().splitlines()
    assert lines[0] == "host=node01" and len(lines) == 2
    assert "allreduce.single" in lines[1] and "180 -> 120" in lines[1]
    prom = (reports / "accelstack.prom").read_text()
    assert 'accelstack_regression{host="node01",check="allreduce.single",kind="busbw_drop"} 1' in prom


def test_drain_values_are_quoted_so_host_names_cannot_inject(tmp_path: Path) -> None:
    log = tmp_path / "drained.log"
    pwned = tmp_path / "pwned"
    evil = [f"node 7; touch {pwned}", f"$(touch {pwned})", f"`touch {pwned}`'\""]
    records = [Record(host=host, check="devices", status="fail", summary="x", remedy=f"; touch {pwned}")
               for host in evil]
    code, _ = run(tmp_path, {"npu8": records}, drain_cmd=drain_log_cmd(log))
    assert code == 1
    assert not pwned.exists()
    hosts = [line.removeprefix("host=") for line in log.read_text().splitlines() if line.startswith("host=")]
    assert sorted(hosts) == sorted(evil)
    assert drain_command("drain {host} {reason} {other}", "a b", "c;d") == "drain 'a b' 'c;d' {other}"


def test_drain_targets_skip_the_cluster_aggregate_and_new_error() -> None:
    records = fleet_records()
    records.append(Record(host="cluster", check="allreduce.multi", status="fail", summary="hang"))
    assert drain_targets(records, []) == {}


def test_unreadable_inventory_is_an_error_and_the_others_are_still_checked(tmp_path: Path) -> None:
    progress, sink = quiet()
    code, reports = run(tmp_path, {"broken": ValueError("inventories/broken.yml:3: bad indent"),
                                   "npu8": fleet_records()}, progress=progress)
    assert code == 2
    summary = json.loads((reports / "summary.json").read_text())["summary"]
    assert summary["hosts_by_status"]["error"] == ["inventory:broken"]
    assert "ValueError: inventories/broken.yml:3" in summary["failing"][0]["summary"]
    assert summary["counts"]["pass"] == 7
    text = sink.getvalue()
    assert "validating broken (1/2)" in text and "validating npu8 (2/2)" in text
    assert "error inventory:broken validate" in text and "exit 2" in text


def test_streamed_records_are_written_once_and_as_they_arrive(tmp_path: Path) -> None:
    progress, _ = quiet()
    seen_on_disk: list[int] = []

    def streaming_validate(inventory: str) -> list[Record]:
        out = []
        for record in fleet_records():
            progress.add(record)
            assert progress.writer is not None
            seen_on_disk.append(len(read_run(progress.writer.path)))
            out.append(record)
        return out

    code, reports = run(tmp_path, {"npu8": []}, progress=progress, validate=streaming_validate)
    assert code == 0 and seen_on_disk == list(range(1, 8))
    run_id = json.loads((reports / "summary.json").read_text())["summary"]["run_id"]
    assert len(read_run(tmp_path / "runs" / run_id)) == 7


def test_interrupted_fleet_check_keeps_its_records_and_no_finished(tmp_path: Path) -> None:
    progress, _ = quiet()

    def interrupted(inventory: str) -> list[Record]:
        if inventory == "second":
            raise KeyboardInterrupt
        return fleet_records()

    with pytest.raises(KeyboardInterrupt):
        run(tmp_path, {"first": [], "second": []}, progress=progress, validate=interrupted)
    [folder] = [p for p in (tmp_path / "runs").iterdir() if p.is_dir()]
    assert "finished" not in json.loads((folder / "meta.json").read_text())
    assert len(read_run(folder)) == 7


def test_fleet_check_task_passes_tier_and_reporter(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from invoke import Context

    import accelstack.validate
    from accelstack.tasks.report import fleet_check as task

    calls: list[tuple[str, str, set[str] | None]] = []

    def validate_inventory(inventory: str, *, tier: str, only: set[str] | None,
                           reporter: FleetReporter, **options: object) -> list[Record]:
        calls.append((inventory, tier, only))
        assert options["limit"] is None and options["forks"] == 64  # the common flags reach validation
        records = fleet_records()
        reporter.add_all(records)
        return records

    monkeypatch.setattr(accelstack.validate, "validate_inventory", validate_inventory)
    monkeypatch.setenv("ACCELSTACK_RUNS", str(tmp_path / "runs"))
    task(Context(), inventory=["a", "b"], tier="quick", only="devices,env", reports_dir=str(tmp_path / "reports"))
    assert calls == [("a", "quick", {"devices", "env"}), ("b", "quick", {"devices", "env"})]
    assert (tmp_path / "reports" / "junit.xml").is_file()


@pytest.mark.parametrize("flags", [{"tier": "fastest"}, {"only": "devices,no-such-check"}])
def test_fleet_check_task_refuses_bad_tier_or_check_before_any_host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                    flags: dict[str, str]) -> None:
    from invoke import Context
    from invoke.exceptions import Exit

    from accelstack.tasks.report import fleet_check as task

    monkeypatch.setenv("ACCELSTACK_RUNS", str(tmp_path / "runs"))
    with pytest.raises(Exit) as exited:
        task(Context(), inventory=["lab"], reports_dir=str(tmp_path / "reports"), **flags)
    assert exited.value.code == 3
    assert not (tmp_path / "runs").exists()
