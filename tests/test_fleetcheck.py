"""The nightly fleet check with a validate callable that returns records built here (validation itself is
tested elsewhere): exit codes, reports, baseline, drains and their quoting, progress, interruption."""

from __future__ import annotations

import io
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml
from rich.console import Console

from accelstack.engines.base import fill_drain_template
from accelstack.flows.fleetcheck.render import FleetConsole
from accelstack.flows.fleetcheck.run import FleetReporter, Rerun, Validate, drain_targets, fleet_check
from accelstack.history import History
from accelstack.inventory import Host, Inventory
from accelstack.results.baseline import (
    baseline_from_records,
    baseline_path,
    confirm_regressions,
    find_regressions,
    load_baseline,
    save_baseline,
)
from accelstack.results.records import Record, read_run

from .test_history import fleet_records


def quiet() -> tuple[FleetReporter, io.StringIO]:
    sink = io.StringIO()
    return FleetReporter(FleetConsole(Console(file=sink, width=200, color_system=None), heartbeat_s=0)), sink


def run(tmp_path: Path, by_inventory: dict[str, list[Record] | Exception], *, drain_cmd: str | None = None,
        progress: FleetReporter | None = None, validate: Validate | None = None, rerun: Rerun | None = None,
        max_drain: str | int | None = None) -> tuple[int, Path]:
    def fake_validate(inventory: str, skip: frozenset[str]) -> list[Record]:
        outcome = by_inventory[inventory]
        if isinstance(outcome, Exception):
            raise outcome
        # As the task does: hosts an earlier inventory checked are left out.
        return [Record.from_dict(record.to_dict()) for record in outcome if record.host not in skip]

    reports = tmp_path / "reports"
    result = fleet_check(list(by_inventory), validate=validate or fake_validate, drain_cmd=drain_cmd,
                         reports_dir=reports, busbw_drop_pct=10.0, progress=progress or quiet()[0],
                         runs_base=tmp_path / "runs", rerun=rerun, max_drain=max_drain)
    return result.code, reports


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
    # The reason names the check and its cause (the record's summary).
    assert log.read_text().splitlines() == ["host=node02", "reason=accelstack: devices failed: devices check fail"]
    summary = json.loads((reports / "summary.json").read_text())["summary"]
    assert [d["host"] for d in summary["drained"]] == ["node02"] and summary["drained"][0]["exit_status"] == 0
    assert not summary["baseline_created"]


def test_only_errors_exit_2_and_nothing_is_drained(tmp_path: Path) -> None:
    log = tmp_path / "drained.log"
    save_baseline(baseline_from_records(fleet_records()), baseline_path(tmp_path / "runs"))
    records = [r for r in fleet_records() if r.host != "node02"]
    records.append(Record(host="node02", check="devices", status="error", summary="no route to host"))
    records.append(Record(host="node02", check="allreduce", status="error",
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
    now = fleet_records({"node01": 120.0, "node02": 175.0})

    def rerun(inventory: str, hosts: list[str], check: str) -> list[Record]:  # the drop repeats
        return [Record.from_dict(r.to_dict()) for r in now if r.host in hosts and r.check == check]

    code, reports = run(tmp_path, {"npu8": now}, drain_cmd=drain_log_cmd(log), rerun=rerun)
    assert code == 1
    lines = log.read_text().splitlines()
    assert lines[0] == "host=node01" and len(lines) == 2
    assert "allreduce" in lines[1] and "180 -> 120" in lines[1]
    prom = (reports / "accelstack.prom").read_text()
    assert 'accelstack_regression{host="node01",check="allreduce",kind="busbw_drop"} 1' in prom


def test_drain_values_are_quoted_so_host_names_cannot_inject(tmp_path: Path) -> None:
    log = tmp_path / "drained.log"
    pwned = tmp_path / "pwned"
    evil = [f"node 7; touch {pwned}", f"$(touch {pwned})", f"`touch {pwned}`'\""]
    records = [Record(host=host, check="devices", status="fail", summary="x", remedy=f"; touch {pwned}")
               for host in evil]
    code, _ = run(tmp_path, {"npu8": records}, drain_cmd=drain_log_cmd(log), max_drain=3)
    assert code == 1
    assert not pwned.exists()
    hosts = [line.removeprefix("host=") for line in log.read_text().splitlines() if line.startswith("host=")]
    assert sorted(hosts) == sorted(evil)
    assert fill_drain_template("drain {host} {reason} {other}", "a b", "c;d") == "drain 'a b' 'c;d' {other}"


def test_drain_targets_skip_the_cluster_aggregate_and_new_error() -> None:
    records = fleet_records()
    records.append(Record(host="cluster", check="multinode", status="fail", summary="hang"))
    assert drain_targets(records, []) == {}


def test_inventory_failing_mid_run_is_an_error_and_the_others_are_still_checked(tmp_path: Path) -> None:
    # A broken file is refused before any host (the task's preflight, exit 3); this is one that breaks later.
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

    def streaming_validate(inventory: str, skip: frozenset[str]) -> list[Record]:
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

    def interrupted(inventory: str, skip: frozenset[str]) -> list[Record]:
        if inventory == "second":
            raise KeyboardInterrupt
        return fleet_records()

    with pytest.raises(KeyboardInterrupt):
        run(tmp_path, {"first": [], "second": []}, progress=progress, validate=interrupted)
    [folder] = [p for p in (tmp_path / "runs").iterdir() if p.is_dir()]
    assert "finished" not in json.loads((folder / "meta.json").read_text())
    assert len(read_run(folder)) == 7


def _inventory(path: Path, hosts: list[str]) -> str:
    doc = {"vars": {"stack": "cpu", "expect_devices": 0},
           "hosts": {host: {"connection": "local", "stack_python": "python3"} for host in hosts}}
    path.write_text(yaml.safe_dump(doc))
    return str(path)


def test_fleet_check_task_passes_tier_and_checks_each_host_once(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from invoke import Context

    import accelstack.engines.ssh.run
    from accelstack.tasks.report import check_fleet as task

    calls: list[tuple[str, str, set[str] | None, list[str]]] = []

    def validate_inventory(inventory: Inventory, hosts: list[Host], *, tier: str, only: set[str] | None,
                           reporter: FleetReporter, **options: object) -> list[Record]:
        # The task hands over the inventory it loaded and the hosts it selected: validation loads nothing.
        assert isinstance(inventory, Inventory) and "limit" not in options
        calls.append((inventory.path.stem, tier, only, [host.name for host in hosts]))
        assert options["forks"] == 64  # the common flags reach validation
        records = [r for r in fleet_records(dict.fromkeys([host.name for host in hosts], 180.0))
                   if r.host != "cluster"]
        reporter.add_all(records)
        return records

    monkeypatch.setattr(accelstack.engines.ssh.run, "validate_inventory", validate_inventory)
    monkeypatch.setenv("ACCELSTACK_RUNS", str(tmp_path / "runs"))
    a = _inventory(tmp_path / "a.yml", ["h1", "h2"])
    b = _inventory(tmp_path / "b.yml", ["h2", "h3"])
    reports = tmp_path / "reports"
    task(Context(), inventory=[a, b], tier="quick", only="devices,env", reports_dir=str(reports))
    # h2 is in both inventories: the second leaves it out.
    assert calls == [("a", "quick", {"devices", "env"}, ["h1", "h2"]), ("b", "quick", {"devices", "env"}, ["h3"])]
    prom = (reports / "accelstack.prom").read_text().splitlines()
    status = [line for line in prom if line.startswith("accelstack_check_status{")]
    assert len(status) == len(set(status)) == 3 * 3  # three hosts, three checks each, every series once
    junit = ET.fromstring((reports / "junit.xml").read_bytes())
    cases = [(case.get("classname"), case.get("name")) for case in junit.iter("testcase")]
    assert len(cases) == len(set(cases)) == 9


def test_duplicate_records_give_one_series_and_one_testcase(tmp_path: Path) -> None:
    """Even when a run holds a check twice for a host (a retry), node_exporter gets each series once and JUnit
    each testcase once; the worst record speaks."""
    from accelstack.report import ReportData, render_junit, render_prom

    records = fleet_records({"node01": 180.0})
    records.append(Record(host="node01", check="devices", status="fail", summary="gone"))
    data = ReportData(run_id="r", records=records)
    prom = [line for line in render_prom(data).splitlines() if line.startswith("accelstack_check_status{")]
    assert len(prom) == len(set(prom)) and 'accelstack_check_status{host="node01",check="devices"} 4' in prom
    junit = ET.fromstring(render_junit(data))
    cases = [(c.get("classname"), c.get("name")) for c in junit.iter("testcase")]
    assert len(cases) == len(set(cases))
    assert junit.find(".//testcase[@name='devices']/failure") is not None


def test_fleet_check_task_refuses_a_broken_inventory_with_file_line_before_any_host(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from invoke import Context
    from invoke.exceptions import Exit

    from accelstack.tasks.report import check_fleet as task

    monkeypatch.setenv("ACCELSTACK_RUNS", str(tmp_path / "runs"))
    good = _inventory(tmp_path / "good.yml", ["h1"])
    broken = tmp_path / "broken.yml"
    broken.write_text("hosts:\n  h1:\n    connection: local\n   bad: [\n")
    with pytest.raises(Exit) as exited:
        task(Context(), inventory=[good, str(broken)], reports_dir=str(tmp_path / "reports"))
    assert exited.value.code == 3
    assert re.search(rf"{re.escape(str(broken))}:\d+: ", capsys.readouterr().err)
    assert not (tmp_path / "runs").exists() and not (tmp_path / "reports").exists()


@pytest.mark.parametrize("flags", [{"tier": "fastest"}, {"only": "devices,no-such-check"}])
def test_fleet_check_task_refuses_bad_tier_or_check_before_any_host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                    flags: dict[str, str]) -> None:
    from invoke import Context
    from invoke.exceptions import Exit

    from accelstack.tasks.report import check_fleet as task

    monkeypatch.setenv("ACCELSTACK_RUNS", str(tmp_path / "runs"))
    with pytest.raises(Exit) as exited:
        task(Context(), inventory=["lab"], reports_dir=str(tmp_path / "reports"), **flags)
    assert exited.value.code == 3
    assert not (tmp_path / "runs").exists()


def summary_of(reports: Path) -> dict:
    return json.loads((reports / "summary.json").read_text())["summary"]


def test_a_drop_the_rerun_does_not_repeat_is_noise_not_a_regression(tmp_path: Path) -> None:
    log = tmp_path / "drained.log"
    save_baseline(baseline_from_records(fleet_records({"node01": 180.0, "node02": 181.0}), source_run="base"),
                  baseline_path(tmp_path / "runs"))
    reruns: list[tuple[str, list[str], str]] = []

    def rerun(inventory: str, hosts: list[str], check: str) -> list[Record]:
        reruns.append((inventory, hosts, check))
        return [r for r in fleet_records({"node01": 178.0}) if r.check == check]

    code, reports = run(tmp_path, {"npu8": fleet_records({"node01": 120.0, "node02": 175.0})},
                        drain_cmd=drain_log_cmd(log), rerun=rerun)
    assert reruns == [("npu8", ["node01"], "allreduce")]
    assert code == 0 and not log.exists()
    summary = summary_of(reports)
    [drop] = summary["regressions"]
    assert drop["confirmed"] is False and drop["rerun_now"] == 178.0 and "not confirmed" in drop["message"]
    assert summary["drained"] == [] and summary["exit_code"] == 0
    # Noise raises no alert and fails no testcase.
    assert "accelstack_regression" not in (reports / "accelstack.prom").read_text()
    assert "<failure" not in (reports / "junit.xml").read_text()
    # The re-run's records are kept apart from the run's own, and `inv report` reads them back.
    folder = tmp_path / "runs" / summary["run_id"]
    assert [r.host for r in read_run(folder / "rerun.jsonl")] == ["node01"]
    assert len(read_run(folder)) == 7
    from accelstack.report import load_report
    again = load_report(summary["run_id"], base=tmp_path / "runs")
    assert [r.confirmed for r in again.regressions] == [False]
    # The noise joins the baseline: node01 now holds 180 and 120 (a range the next run is judged against).
    held = load_baseline(baseline_path(tmp_path / "runs"))
    assert held is not None and summary["baseline_updated"]
    entry = held.entry("node01", "allreduce")
    assert entry is not None and entry.peak.values == [180.0, 120.0]


def test_a_drop_the_rerun_confirms_fails_and_drains(tmp_path: Path) -> None:
    log = tmp_path / "drained.log"
    save_baseline(baseline_from_records(fleet_records({"node01": 180.0, "node02": 181.0}), source_run="base"),
                  baseline_path(tmp_path / "runs"))

    def rerun(inventory: str, hosts: list[str], check: str) -> list[Record]:
        return [r for r in fleet_records({"node01": 118.0}) if r.check == check]

    code, reports = run(tmp_path, {"npu8": fleet_records({"node01": 120.0, "node02": 175.0})},
                        drain_cmd=drain_log_cmd(log), rerun=rerun)
    assert code == 1
    [drop] = summary_of(reports)["regressions"]
    assert drop["confirmed"] is True and drop["rerun_now"] == 118.0 and drop["drop_pct"] == pytest.approx(33.33)
    assert log.read_text().splitlines()[0] == "host=node01"
    assert 'accelstack_regression{host="node01",check="allreduce",kind="busbw_drop"} 1' in (
        reports / "accelstack.prom").read_text()
    assert 'type="regression"' in (reports / "junit.xml").read_text()
    # A confirmed drop is not held: node01 cannot drag its own baseline down.
    held = load_baseline(baseline_path(tmp_path / "runs"))
    assert held is not None
    entry = held.entry("node01", "allreduce")
    assert entry is not None and entry.peak.values == [180.0]


def failing_fleet(count: int, failing: int) -> list[Record]:
    hosts = {f"node{i:02d}": 180.0 for i in range(1, count + 1)}
    return fleet_records(hosts, failing={f"node{i:02d}": "fail" for i in range(1, failing + 1)})


def test_the_breaker_trips_past_max_drain_and_drains_none(tmp_path: Path) -> None:
    log = tmp_path / "drained.log"
    progress, sink = quiet()
    code, reports = run(tmp_path, {"npu8": failing_fleet(10, 10)}, drain_cmd=drain_log_cmd(log), max_drain=2,
                        progress=progress)
    assert code == 1 and not log.exists()
    summary = summary_of(reports)
    breaker = summary["drain_breaker"]
    assert breaker["tripped"] and breaker["max_drain"] == 2 and breaker["hosts_checked"] == 10
    assert len(breaker["targets"]) == 10 and "drained none" in breaker["reason"]
    assert summary["drained"] == []
    text = sink.getvalue()
    assert "drain breaker tripped" in text and "10 host(s) to drain, more than --max-drain 2" in text
    assert not (tmp_path / "runs" / summary["run_id"] / "drains.jsonl").exists()


def test_default_max_drain_is_ten_percent_of_hosts_checked(tmp_path: Path) -> None:
    log = tmp_path / "drained.log"
    code, reports = run(tmp_path / "one", {"npu8": failing_fleet(10, 1)}, drain_cmd=drain_log_cmd(log))
    assert code == 1 and summary_of(reports)["drain_breaker"] == {"tripped": False, "max_drain": 1,
                                                                 "hosts_checked": 10}
    assert log.read_text().splitlines()[0] == "host=node01"
    log.unlink()
    code, reports = run(tmp_path / "two", {"npu8": failing_fleet(10, 2)}, drain_cmd=drain_log_cmd(log))
    assert code == 1 and summary_of(reports)["drain_breaker"]["tripped"] and not log.exists()


def test_every_drain_is_recorded_in_the_run_and_in_history(tmp_path: Path) -> None:
    records = fleet_records({"node01": 180.0, "node02": 181.0}, failing={"node02": "fail"})
    code, reports = run(tmp_path, {"npu8": records}, drain_cmd="echo drained {host}; exit 3", max_drain=5)
    assert code == 1
    run_id = summary_of(reports)["run_id"]
    [line] = (tmp_path / "runs" / run_id / "drains.jsonl").read_text().splitlines()
    drain = json.loads(line)
    assert drain["host"] == "node02" and drain["exit_status"] == 3 and drain["run_id"] == run_id
    assert drain["reason"] == "accelstack: devices failed: devices check fail"
    assert drain["command"] == "echo drained node02; exit 3" and drain["output"] == "drained node02"
    with History(tmp_path / "runs") as history:
        [entry] = history.drains()
    assert (entry.host, entry.run_id, entry.exit_status, entry.reason) == ("node02", run_id, 3, drain["reason"])


def test_a_drain_reason_keeps_every_cause_short_enough_for_the_scheduler() -> None:
    held = baseline_from_records(fleet_records({"node01": 180.0}), source_run="base")
    records = fleet_records({"node01": 120.0}, failing={"node01": "fail"})
    records[0].summary = "torch sees 7 of 8 devices; " * 12
    regressions = confirm_regressions(find_regressions(records, held, 10.0), records, held, 10.0)
    [reason] = drain_targets(records, regressions).values()
    assert len(reason) <= 200 and "\n" not in reason
    assert reason.startswith("accelstack: devices failed: torch sees 7 of 8 devices;")
    assert reason.endswith("; regression allreduce busbw -33% (180 -> 120 GB/s)")


def test_a_drop_whose_re_run_left_no_record_is_not_confirmed_and_drains_nobody(tmp_path: Path) -> None:
    """Review finding: a host whose busbw dropped and that went unreachable during the re-run (one `connect`
    record, no allreduce record) stayed 'unconfirmed', which counted, and was drained."""
    log = tmp_path / "drained.log"
    save_baseline(baseline_from_records(fleet_records({"node01": 100.0, "node02": 100.0}), source_run="base"),
                  baseline_path(tmp_path / "runs"))

    def rerun(inventory: str, hosts: list[str], check: str) -> list[Record]:
        return [Record(host=h, check="connect", status="error", summary="unreachable") for h in hosts]

    code, _ = run(tmp_path, {"npu8": fleet_records({"node01": 30.0, "node02": 100.0})},
                  drain_cmd=drain_log_cmd(log), rerun=rerun)
    assert code == 0 and not log.exists()


def test_a_drop_never_re_run_is_listed_and_not_counted() -> None:
    held = baseline_from_records(fleet_records({"node01": 100.0}), source_run="base")
    [drop] = [r for r in find_regressions(fleet_records({"node01": 30.0}), held, 10.0) if r.kind == "busbw_drop"]
    assert drop.confirmed is None and not drop.counts and "not re-run: not counted" in drop.message


def test_fleet_check_task_applies_set_before_any_host_and_limits_across_inventories(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """Review findings: `--set stack=bogus` passed the preflight (it ignored --set) and came back as an error
    record, exit 2; a --limit matching hosts of one inventory only was refused for the other."""
    from invoke import Context
    from invoke.exceptions import Exit

    import accelstack.engines.ssh.run
    from accelstack.tasks.report import check_fleet as task

    monkeypatch.setenv("ACCELSTACK_RUNS", str(tmp_path / "runs"))
    a = _inventory(tmp_path / "a.yml", ["npu1", "npu2"])
    b = _inventory(tmp_path / "b.yml", ["gpu1"])
    calls: list[tuple[str, list[str]]] = []

    def validate_inventory(inventory: Inventory, hosts: list[Host], *, reporter: FleetReporter,
                           **options: object) -> list[Record]:
        calls.append((inventory.path.stem, [host.name for host in hosts]))
        records = [Record(host=h, check="devices", status="pass", summary="ok") for h in ("npu1", "npu2")]
        reporter.add_all(records)
        return records

    monkeypatch.setattr(accelstack.engines.ssh.run, "validate_inventory", validate_inventory)
    with pytest.raises(Exit) as exited:
        task(Context(), inventory=[a], set=["stack=bogus"], reports_dir=str(tmp_path / "reports"))
    assert exited.value.code == 3 and "bogus" in capsys.readouterr().err and not calls

    task(Context(), inventory=[a, b], limit="npu*", reports_dir=str(tmp_path / "reports"))
    assert calls == [("a", ["npu1", "npu2"])]  # b has no npu host: it selects nothing there, and is not an error
    with pytest.raises(Exit) as exited:
        task(Context(), inventory=[a, b], limit="tpu*", reports_dir=str(tmp_path / "reports"))
    assert exited.value.code == 3 and "matches no host" in capsys.readouterr().err


def test_fleet_check_returns_what_it_did_and_prints_nothing_itself(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    from accelstack.flows.fleetcheck.run import REPORT_FILES, FleetResult

    log = tmp_path / "drained.log"
    records = fleet_records({"node01": 180.0, "node02": 181.0}, failing={"node02": "fail"})
    result = fleet_check(["npu8"], validate=lambda inventory, skip: records, drain_cmd=drain_log_cmd(log),
                         reports_dir=tmp_path / "reports", busbw_drop_pct=10.0, progress=FleetReporter(),
                         runs_base=tmp_path / "runs")
    assert isinstance(result, FleetResult) and result.code == 1
    assert [d.host for d in result.drained] == ["node02"] and result.drained[0].exit_status == 0
    assert result.drain_breaker == {"tripped": False, "max_drain": 1, "hosts_checked": 2}
    assert not result.breaker_tripped and not result.baseline_created and result.regressions == []
    assert [p.name for p in result.reports] == list(REPORT_FILES) and all(p.is_file() for p in result.reports)
    assert len(result.records) == 7 and len(read_run(result.run_folder)) == 7
    assert capsys.readouterr() == ("", "")  # without a view the domain shows nothing: it returned it all


def test_the_console_view_shows_what_hosts_wrote_as_text_never_as_markup(tmp_path: Path) -> None:
    progress, sink = quiet()
    records = [Record(host="node01", check="devices", status="fail", summary="[red]npu 3[/red] lost [link]")]
    code, _ = run(tmp_path, {"npu8": records}, progress=progress, drain_cmd="printf '[bold]x[/]' && false")
    text = sink.getvalue()
    assert code == 1
    assert "fail node01 devices: [red]npu 3[/red] lost [link]" in text
    assert "drain node01: failed (1) [bold]x[/]" in text and "fleet check failures or regressions (exit 1)" in text
