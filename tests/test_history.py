"""History index and baselines: rebuilt from JSONL (torn lines, interrupted runs), staleness, queries,
regressions. Also home of the run builders the report and fleet-check tests share."""

from __future__ import annotations

import json
import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from accelstack.errors import ConfigError
from accelstack.history import History, parse_since
from accelstack.results.baseline import (
    baseline_from_records,
    baseline_path,
    find_regressions,
    load_baseline,
    save_baseline,
)
from accelstack.results.records import Record, RunWriter

SIZES = [1 << 10, 1 << 16, 1 << 20, 1 << 24, 1 << 28]


def sweep_for(peak: float) -> list[dict[str, Any]]:
    points = []
    for i, size in enumerate(SIZES):
        busbw = round(peak * (i + 1) / len(SIZES), 2)
        points.append({"bytes": size, "algbw_gbps": round(busbw / 1.75, 2), "busbw_gbps": busbw,
                       "time_us": round(size / (busbw * 1e3), 2)})
    return points


def fleet_records(busbw: dict[str, float] | None = None, *, failing: dict[str, str] | None = None,
                  versions: dict[str, dict[str, str]] | None = None, ts: str | None = None) -> list[Record]:
    """A validation run as the validators will write it: per host devices, versions, allreduce,
    plus the cluster's multinode. ``failing`` maps host -> status for its devices check."""
    busbw = busbw or {"node01": 180.0, "node02": 181.0}
    failing = failing or {}
    records = []
    for host, peak in busbw.items():
        status = failing.get(host, "pass")
        records.append(Record(host=host, check="devices", status=status,  # type: ignore[arg-type]
                              summary="8 devices healthy" if status == "pass" else f"devices check {status}",
                              remedy=None if status == "pass" else "npu-smi info; reseat or RMA the card",
                              metrics={"count": 8}, duration_s=0.4))
        components = (versions or {}).get(host, {"driver": "24.1.rc2", "cann": "8.0.RC3", "torch": "2.4.0"})
        records.append(Record(host=host, check="versions", status="pass", summary="stack matches",
                              evidence={"components": components}, duration_s=0.2))
        records.append(Record(host=host, check="allreduce", status="pass",
                              summary=f"busbw {peak} GB/s",
                              metrics={"busbw_gbps": peak, "sizes": sweep_for(peak)},
                              duration_s=12.5))
    records.append(Record(host="cluster", check="multinode", status="pass", summary="2 nodes",
                          metrics={"busbw_gbps": 95.0, "sizes": sweep_for(95.0)}, duration_s=30.0))
    for record in records:
        record.ts = ts or record.ts
    return records


def write_run(base: Path, records: list[Record], *, kind: str = "validate", finish: bool = True,
              run_id: str | None = None, started: str | None = None) -> str:
    meta = {"started": started} if started else None
    writer = RunWriter(kind, base=base, run_id=run_id, meta=meta)
    for record in records:
        writer.write(record)
    if finish:
        writer.close()
    else:
        writer._file.close()
    return writer.run_id


# -- history -----------------------------------------------------------------------------------------------


def test_rebuild_from_jsonl_with_torn_line_and_interrupted_run(tmp_path: Path) -> None:
    good = write_run(tmp_path, fleet_records(), run_id="20261101T010000Z-validate-aaaa")
    torn = write_run(tmp_path, fleet_records()[:3], run_id="20261102T010000Z-validate-bbbb", finish=False)
    with (tmp_path / torn / "results.jsonl").open("a") as handle:
        handle.write('{"run_id": "x", "host": "node09", "check": "dev')  # a crash mid-write
    with History(tmp_path) as history:
        runs = {run.run_id: run for run in history.runs()}
        assert runs[good].finished and runs[good].exit_code == 0 and runs[good].record_count == 7
        assert runs[torn].interrupted and runs[torn].record_count == 3
        assert [e.record.check for e in history.records(run_id=torn)] == ["devices", "versions",
                                                                           "allreduce"]
        assert history.last_good_run().run_id == good  # type: ignore[union-attr]
    assert (tmp_path / "history.sqlite").is_file()


def test_missing_or_corrupt_index_is_rebuilt(tmp_path: Path) -> None:
    run_id = write_run(tmp_path, fleet_records())
    History(tmp_path).close()
    (tmp_path / "history.sqlite").write_bytes(b"this is not sqlite at all" * 100)
    with History(tmp_path) as history:
        assert history.run(run_id) is not None
        assert len(history.records()) == 7
    (tmp_path / "history.sqlite").unlink()
    with History(tmp_path) as history:
        assert len(history.records(run_id=run_id)) == 7


def test_stale_runs_are_reindexed_and_removed_runs_dropped(tmp_path: Path) -> None:
    first = write_run(tmp_path, fleet_records()[:2], finish=False, run_id="20261101T010000Z-validate-aaaa")
    with History(tmp_path) as history:
        assert history.run(first).record_count == 2  # type: ignore[union-attr]
        assert history.sync() == []  # nothing changed: nothing read again
    # The interrupted run is resumed by nobody, but a second run appears and the first gets more lines
    # (as a still-running run would).
    extra = Record(host="node02", check="devices", status="fail", summary="1 device missing", run_id=first)
    with (tmp_path / first / "results.jsonl").open("a") as handle:
        handle.write(extra.to_json() + "\n")
    second = write_run(tmp_path, fleet_records(), run_id="20261102T010000Z-validate-bbbb")
    with History(tmp_path) as history:
        assert history.run(first).record_count == 3  # type: ignore[union-attr]
        assert history.run(second) is not None
    # meta.json gaining `finished` with the same results file is a change too.
    meta = json.loads((tmp_path / first / "meta.json").read_text())
    meta.update(finished="2026-11-01T02:00:00.000Z", exit_code=1)
    (tmp_path / first / "meta.json").write_text(json.dumps(meta))
    with History(tmp_path) as history:
        assert history.run(first).finished == "2026-11-01T02:00:00.000Z"  # type: ignore[union-attr]
        for path in (tmp_path / second).iterdir():
            path.unlink()
        (tmp_path / second).rmdir()
        assert history.sync() == []
        assert history.run(second) is None
        assert {e.run_id for e in history.records()} == {first}


def test_stale_detection_uses_mtime_when_size_is_unchanged(tmp_path: Path) -> None:
    run_id = write_run(tmp_path, [Record(host="a", check="devices", status="pass", summary="ok")])
    History(tmp_path).close()
    results = tmp_path / run_id / "results.jsonl"
    text = results.read_text().replace('"host": "a"', '"host": "b"')
    results.write_text(text)
    stat = results.stat()
    os.utime(results, ns=(stat.st_atime_ns, stat.st_mtime_ns + 5_000_000_000))
    with History(tmp_path) as history:
        assert [e.record.host for e in history.records()] == ["b"]


def test_queries_by_host_check_time_and_status(tmp_path: Path) -> None:
    write_run(tmp_path, fleet_records(ts="2026-11-01T01:00:00.000Z"), run_id="20261101T010000Z-validate-aaaa",
              started="2026-11-01T01:00:00.000Z")
    write_run(tmp_path, fleet_records({"node01": 150.0, "node02": 181.0}, failing={"node02": "fail"},
                                      ts="2026-11-08T01:00:00.000Z"),
              run_id="20261108T010000Z-validate-bbbb", started="2026-11-08T01:00:00.000Z")
    with History(tmp_path) as history:
        node01 = history.records(host="node01")
        assert len(node01) == 6 and {e.record.host for e in node01} == {"node01"}
        allreduce = history.records(check="allreduce", host="node01")
        assert [e.record.metrics["busbw_gbps"] for e in allreduce] == [180.0, 150.0]
        since = datetime(2026, 11, 5, tzinfo=timezone.utc)
        assert {e.run_id for e in history.records(since=since)} == {"20261108T010000Z-validate-bbbb"}
        assert [e.record.host for e in history.records(status="fail")] == ["node02"]
        points = history.busbw_history(host="node01", check="allreduce")
        assert [(p.run_id[:8], p.busbw_gbps) for p in points] == [("20261101", 180.0), ("20261108", 150.0)]
        assert [r.run_id[:8] for r in history.runs(since=since)] == ["20261108"]
        assert history.last_good_run().run_id.startswith("20261101")  # type: ignore[union-attr]


def test_parse_since() -> None:
    now = datetime(2026, 11, 22, 12, 0, tzinfo=timezone.utc)
    assert parse_since("7d", now=now) == datetime(2026, 11, 15, 12, 0, tzinfo=timezone.utc)
    assert parse_since("90m", now=now) == datetime(2026, 11, 22, 10, 30, tzinfo=timezone.utc)
    assert parse_since("2026-11-01") == datetime(2026, 11, 1, tzinfo=timezone.utc)
    assert parse_since("2026-11-01T10:00Z") == datetime(2026, 11, 1, 10, tzinfo=timezone.utc)
    with pytest.raises(ConfigError, match="7d"):
        parse_since("last tuesday")


# -- baselines and regressions -------------------------------------------------------------------------------


def test_baseline_roundtrip_holds_busbw_status_and_versions(tmp_path: Path) -> None:
    run_id = write_run(tmp_path, fleet_records())
    from accelstack.results.records import read_run

    held = baseline_from_records(read_run(tmp_path / run_id), source_run=run_id)
    path = save_baseline(held, baseline_path(tmp_path))
    loaded = load_baseline(path)
    assert loaded is not None and loaded.source_run == run_id
    assert loaded.entry("node01", "allreduce").busbw_gbps == 180.0  # type: ignore[union-attr]
    assert loaded.entry("node02", "versions").components["cann"] == "8.0.RC3"  # type: ignore[union-attr]
    assert loaded.entry("cluster", "multinode").busbw_gbps == 95.0  # type: ignore[union-attr]
    assert load_baseline(tmp_path / "nope.json") is None
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(ConfigError, match="bad.json"):
        load_baseline(tmp_path / "bad.json")


def test_busbw_drop_beyond_threshold_names_host_and_values() -> None:
    held = baseline_from_records(fleet_records({"node01": 180.0, "node02": 181.0}), source_run="base")
    now = fleet_records({"node01": 150.0, "node02": 170.0})  # -16.7% and -6.1%
    regressions = find_regressions(now, held, busbw_drop_pct=10)
    assert [(r.host, r.check, r.kind, r.then, r.now) for r in regressions] == [
        ("node01", "allreduce", "busbw_drop", 180.0, 150.0)]
    assert "node01" in regressions[0].message and "180" in regressions[0].message
    assert "150" in regressions[0].message and "16.7%" in regressions[0].message
    assert find_regressions(now, held, busbw_drop_pct=20) == []


def test_within_threshold_and_improvement_are_not_flagged() -> None:
    held = baseline_from_records(fleet_records({"node01": 180.0, "node02": 181.0}))
    assert find_regressions(fleet_records({"node01": 162.5, "node02": 250.0}), held, busbw_drop_pct=10) == []
    assert find_regressions(fleet_records(), None) == []


def test_new_failure_and_version_change() -> None:
    held = baseline_from_records(fleet_records(failing={"node02": "fail"}))
    now = fleet_records(failing={"node01": "fail", "node02": "fail"},
                        versions={"node01": {"driver": "24.1.rc3", "cann": "8.0.RC3", "torch": "2.4.0"}})
    regressions = find_regressions(now, held)
    summary = [(r.host, r.check, r.kind, r.then, r.now, r.component) for r in regressions]
    # node02 failed then too: not new. node01's driver moved.
    assert summary == [("node01", "devices", "new_failure", "pass", "fail", None),
                       ("node01", "versions", "version_change", "24.1.rc2", "24.1.rc3", "driver")]
    assert regressions[1].message == "node01 versions: driver 24.1.rc2 -> 24.1.rc3"


def test_error_now_is_a_new_failure_with_status_error() -> None:
    held = baseline_from_records(fleet_records())
    now = [Record(host="node02", check="allreduce", status="error", summary="unreachable")]
    [regression] = find_regressions(now, held)
    assert (regression.kind, regression.now_status) == ("new_failure", "error")


def test_a_record_without_busbw_is_skipped_never_stored_as_a_figure(tmp_path: Path) -> None:
    """A one-rank result carries no busbw_gbps (or a meaningless one): history keeps no figure for it."""
    base = tmp_path / "runs"
    records = [
        Record(host="h1", check="allreduce", status="pass", summary="2 ranks",
               metrics={"ranks": 2, "busbw_gbps": 1.5, "wall_s": 3.0}),
        Record(host="h2", check="allreduce", status="skip", summary="one rank: no bus bandwidth",
               metrics={"ranks": 1}),
        Record(host="h3", check="allreduce", status="pass", summary="one rank", metrics={
            "ranks": 1, "busbw_gbps": 0.0, "sizes": [{"bytes": 1024, "busbw_gbps": 0.0, "algbw_gbps": 2.0}]}),
        Record(host="h4", check="allreduce", status="pass", summary="bogus",
               metrics={"ranks": 2, "busbw_gbps": "fast", "sizes": [{"bytes": 1024, "busbw_gbps": None}]}),
        Record(host="h5", check="devices", status="pass", summary="8", metrics={"count": 8, "healthy": True}),
    ]
    write_run(base, records)
    with History(base) as history:
        assert [(p.host, p.busbw_gbps) for p in history.busbw_history()] == [("h1", 1.5)]
        # Metrics are indexed by name, whatever check wrote them; a bool is no figure.
        assert [(p.host, p.check, p.value) for p in history.metric_history("count")] == [("h5", "devices", 8.0)]
        assert [p.value for p in history.metric_history("wall_s")] == [3.0]
        assert history.metric_history("healthy") == []
        rows = history._conn.execute("SELECT name, value FROM metrics WHERE name LIKE '%gbps'").fetchall()
    assert rows == [("busbw_gbps", 1.5)]
    held = baseline_from_records(records)
    assert [host for host, checks in held.hosts.items() if checks.get("allreduce")
            and checks["allreduce"].busbw_gbps is not None] == ["h1"]


def test_an_index_of_the_older_schema_is_rebuilt(tmp_path: Path) -> None:
    import sqlite3

    base = tmp_path / "runs"
    write_run(base, fleet_records())
    base.mkdir(exist_ok=True)
    with sqlite3.connect(base / "history.sqlite") as old:
        old.execute("CREATE TABLE runs (run_id TEXT)")
        old.execute("PRAGMA user_version = 1")
    with History(base) as history:
        assert len(history.busbw_history()) == 3 and history.drains() == []


def test_history_keeps_every_metric_and_series_under_the_records_own_names(tmp_path: Path) -> None:
    """Nothing in history is tied to one metric: a check measuring TFLOPS per size is indexed like busbw."""
    base = tmp_path / "runs"
    records = [
        Record(host="h1", check="matmul", status="pass", summary="ok", metrics={
            "tflops": 400.0, "sizes": [{"bytes": 4096, "tflops": 120.0, "note": "warm"},
                                       {"bytes": 1024, "tflops": 80.0, "latency_us": 3.5}]}),
        Record(host="h2", check="matmul", status="pass", summary="no peak given",
               metrics={"sizes": [{"bytes": 1024, "tflops": 90.0}, {"bytes": 8192, "tflops": 150.0}]}),
    ]
    write_run(base, records, run_id="20261101T010000Z-validate-aaaa")
    with History(base) as history:
        assert [(p.host, p.bytes, p.value) for p in history.series("tflops")] == [
            ("h1", 1024, 80.0), ("h1", 4096, 120.0), ("h2", 1024, 90.0), ("h2", 8192, 150.0)]
        assert [(p.host, p.bytes, p.value) for p in history.series("latency_us")] == [("h1", 1024, 3.5)]
        assert history.series("note") == []  # a string is no figure
        # The plain metric only where the record has one; its series' best point where it has only the series.
        assert [(p.host, p.value) for p in history.metric_history("tflops")] == [("h1", 400.0)]
        assert [(p.host, p.value) for p in history.metric_history("tflops", series_peak=True)] == [
            ("h1", 400.0), ("h2", 150.0)]


def test_the_busbw_plot_takes_the_sweeps_best_and_no_figure_of_one_rank(tmp_path: Path) -> None:
    """Which metric the plot follows is results.metrics' choice, and so is "one rank has no busbw": an old
    one-rank record that still carries a busbw is held by history but never plotted."""
    base = tmp_path / "runs"
    records = [
        Record(host="h1", check="allreduce", status="pass", summary="sweep only",
               metrics={"ranks": 8, "sizes": sweep_for(120.0)}),
        Record(host="h2", check="allreduce", status="pass", summary="old one-rank record",
               metrics={"ranks": 1, "busbw_gbps": 181631.0}),
    ]
    write_run(base, records)
    with History(base) as history:
        assert [(p.host, p.busbw_gbps) for p in history.busbw_history()] == [("h1", 120.0)]
        assert [p.host for p in history.metric_history("busbw_gbps")] == ["h2"]


def test_an_index_of_the_previous_schema_is_rebuilt_with_series(tmp_path: Path) -> None:
    """An index written before the series table (schema 2) is thrown away and rebuilt, not queried and crashed."""
    import sqlite3
    from contextlib import closing

    from accelstack.history.index import SCHEMA_VERSION

    base = tmp_path / "runs"
    run_id = write_run(base, fleet_records())
    History(base).close()
    with closing(sqlite3.connect(base / "history.sqlite")) as db:
        db.execute("DROP TABLE series")
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION - 1}")
        db.commit()
    with History(base) as history:
        assert len(history.series("busbw_gbps", run_id=run_id, host="node01")) == len(SIZES)
    with closing(sqlite3.connect(base / "history.sqlite")) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
