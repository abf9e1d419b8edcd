"""Baselines as distributions, on a real noisy series: 20 runs of `python -m accelstack validate --only allreduce`
(gloo, 2 ranks) on this machine, recorded in tests/data/baseline/ (see the README there). The fleet check's
rule (a drop beyond max(pct, the held runs' noise band), confirmed by a re-run) must never count that noise, and
must count a real 50 % drop."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from accelstack.errors import ConfigError
from accelstack.flows.fleetcheck.run import check_max_drain, max_drain_for
from accelstack.results.baseline import (
    DEFAULT_KEEP,
    MIN_SIZE_SAMPLES,
    NOISE_FACTOR,
    Baseline,
    Figure,
    baseline_from_records,
    baseline_from_runs,
    confirm_regressions,
    find_regressions,
    load_baseline,
    save_baseline,
)
from accelstack.results.records import Record

SERIES = Path(__file__).parent / "data" / "baseline" / "gloo-localhost-runs.jsonl"
PCT = 10.0


def real_runs() -> list[tuple[str, list[Record]]]:
    runs: dict[str, list[Record]] = {}
    for line in SERIES.read_text().splitlines():
        record = Record.from_dict(json.loads(line))
        runs.setdefault(record.run_id, []).append(record)
    return list(runs.items())


def scaled(records: list[Record], factor: float, run_id: str) -> list[Record]:
    """The same records with every bandwidth figure multiplied: a host that really lost bandwidth."""
    out = []
    for record in records:
        data = record.to_dict()
        data["run_id"] = run_id
        metrics = data["metrics"]
        for key in ("busbw_gbps", "algbw_gbps"):
            metrics[key] = round(metrics[key] * factor, 4)
        for point in metrics["sizes"]:
            point["busbw_gbps"] = round(point["busbw_gbps"] * factor, 4)
        out.append(Record.from_dict(data))
    return out


def as_rerun(records: list[Record], run_id: str) -> list[Record]:
    # A re-run's records belong to the run they confirm (the fleet check writes them to its rerun.jsonl).
    return [Record.from_dict({**record.to_dict(), "run_id": run_id}) for record in records]


def fleet_check_over(runs: list[tuple[str, list[Record]]]) -> tuple[Baseline, list[list]]:
    """What nightly fleet checks do with the series: compare each run, re-run drops (the re-run is the next
    recorded run), then hold the run's healthy figures. Returns the baseline and each run's regressions."""
    held = baseline_from_records(runs[0][1], source_run=runs[0][0])
    found = []
    for index, (run_id, records) in enumerate(runs[1:], start=1):
        regressions = find_regressions(records, held, PCT)
        if index + 1 < len(runs):
            regressions = confirm_regressions(regressions, as_rerun(runs[index + 1][1], run_id), held, PCT)
        found.append(regressions)
        counted = {(r.host, r.check) for r in regressions if r.counts and r.kind == "busbw_drop"}
        held = held.add_run(records, run_id, skip=counted)
    return held, found


def test_the_recorded_series_is_noisy() -> None:
    runs = real_runs()
    assert len(runs) == 20
    for check in ("allreduce", "allgather"):
        peaks = [r.metrics["busbw_gbps"] for _, records in runs for r in records if r.check == check]
        assert len(peaks) == 20 and (max(peaks) - min(peaks)) / min(peaks) > 0.5


def test_a_single_run_baseline_flaps_on_the_real_noise() -> None:
    """The old rule (one run held, a 10 % drop counts at once) flags healthy runs of this series."""
    runs = real_runs()
    flagged = 0
    for (_, before), (_, after) in zip(runs, runs[1:], strict=False):
        drops = [r for r in find_regressions(after, baseline_from_records(before), PCT) if r.kind == "busbw_drop"]
        flagged += bool(drops)
    assert flagged >= 5


def test_the_real_noise_never_counts_as_a_regression() -> None:
    held, found = fleet_check_over(real_runs())
    drops = [r for regressions in found for r in regressions if r.kind == "busbw_drop"]
    assert drops, "the series has drops past the band that only the re-run tells from noise"
    assert all(r.confirmed is False and not r.counts for r in drops), [r.message for r in drops]
    assert not found[-1], "the last run has no re-run: nothing may be left to confirm"
    assert not [r for regressions in found for r in regressions if r.kind != "busbw_drop"]
    for check in ("allreduce", "allgather"):
        entry = held.entry("localhost", check)
        assert entry is not None and len(entry.peak.samples) == DEFAULT_KEEP
        # What the baseline learnt: 10-22 % run-to-run noise on the peak.
        assert 10.0 <= entry.peak.noise_pct <= 22.0, entry.peak.values
        low_over_high = entry.peak.low / entry.peak.high
        assert entry.peak.threshold_pct(PCT) == pytest.approx(100 * (1 - low_over_high ** NOISE_FACTOR))


def test_a_real_50_percent_drop_counts_once_the_rerun_confirms_it() -> None:
    runs = real_runs()
    held, _ = fleet_check_over(runs)
    last_id, last = runs[-1]
    slow = scaled(last, 0.5, "20261124T050000Z-fleet-check-slow")
    regressions = find_regressions(slow, held, PCT)
    drops = {r.check: r for r in regressions if r.kind == "busbw_drop"}
    assert set(drops) == {"allreduce", "allgather"}
    for drop in drops.values():
        assert drop.bytes is None and drop.samples == DEFAULT_KEEP  # the peak; the sizes are far noisier
        assert drop.drop_pct is not None and drop.threshold_pct is not None
        assert drop.drop_pct > 40.0 > drop.threshold_pct > PCT
    confirmed = confirm_regressions(regressions, as_rerun(slow, slow[0].run_id), held, PCT)
    assert all(r.confirmed and r.counts for r in confirmed if r.kind == "busbw_drop")
    assert "re-run" in confirmed[0].message and "confirms" in confirmed[0].message
    # A blip that the re-run does not repeat is reported but does not count.
    blip = confirm_regressions(regressions, as_rerun(last, slow[0].run_id), held, PCT)
    assert all(r.confirmed is False and not r.counts for r in blip if r.kind == "busbw_drop")
    assert "not confirmed" in blip[0].message


def test_a_drop_the_rerun_could_not_measure_is_not_confirmed() -> None:
    runs = real_runs()
    held, _ = fleet_check_over(runs)
    slow = scaled(runs[-1][1], 0.5, "20261124T050000Z-fleet-check-slow")
    gone = [Record(host="localhost", check="allreduce", status="error", summary="timed out",
                   run_id=slow[0].run_id)]
    regressions = confirm_regressions(find_regressions(slow, held, PCT), gone, held, PCT)
    allreduce = [r for r in regressions if r.check == "allreduce"]
    assert allreduce and allreduce[0].confirmed is False and allreduce[0].rerun_now is None
    # allgather was not re-run at all: it stays as found.
    assert [r.confirmed for r in regressions if r.check == "allgather"] == [None]


def test_figure_noise_and_threshold() -> None:
    one = Figure((("a", 10.0),))
    assert one.noise_pct == 0.0 and one.threshold_pct(PCT) == PCT
    five = Figure(tuple((f"r{i}", v) for i, v in enumerate([9.0, 10.0, 11.0, 10.0, 10.0])))
    assert five.median == 10.0 and five.noise_pct == pytest.approx(100 * 2 / 11)
    assert five.threshold_pct(PCT) == pytest.approx(100 * (1 - (9 / 11) ** 2.5))  # 39 %
    assert five.threshold_pct(50.0) == 50.0
    # However noisy (a 6x swing), the band stays under 100 %: a collapse still counts.
    wild = Figure((("a", 0.04), ("b", 0.25), ("c", 0.1)))
    assert 97.0 < wild.threshold_pct(PCT) < 100.0
    # Holding a sixth drops the oldest; a run held twice counts once.
    assert five.add("r5", 12.0, 5).values == [10.0, 11.0, 10.0, 10.0, 12.0]
    assert five.add("r4", 12.0, 5).values == [9.0, 10.0, 11.0, 10.0, 12.0]


def record(host: str, busbw: float | None, *, status: str = "pass", run_id: str = "",
           sizes: dict[int, float] | None = None, ranks: int = 2) -> Record:
    metrics: dict[str, object] = {"ranks": ranks}
    if busbw is not None:
        metrics["busbw_gbps"] = busbw
    if sizes:
        metrics["sizes"] = [{"bytes": size, "busbw_gbps": value} for size, value in sizes.items()]
    return Record(host=host, check="allreduce", status=status, summary="", metrics=metrics,  # type: ignore[arg-type]
                  run_id=run_id)


def test_sizes_are_judged_once_they_hold_enough_runs() -> None:
    runs = [(f"r{i}", [record("h", 10.0, run_id=f"r{i}", sizes={1024: 2.0, 1 << 20: 10.0})])
            for i in range(MIN_SIZE_SAMPLES - 1)]
    held = baseline_from_runs([(run_id, records, []) for run_id, records in runs])
    small_drop = [record("h", 10.0, run_id="new", sizes={1024: 1.0, 1 << 20: 10.0})]
    assert find_regressions(small_drop, held, PCT) == []
    held = held.add_run([record("h", 10.0, run_id="r9", sizes={1024: 2.0, 1 << 20: 10.0})], "r9")
    [drop] = find_regressions(small_drop, held, PCT)
    assert drop.bytes == 1024 and drop.drop_pct == pytest.approx(50.0)
    assert "at 1024 bytes" in drop.message


def test_one_rank_and_zero_bandwidth_are_never_held() -> None:
    held = baseline_from_runs([("r1", [record("h", 0.0, run_id="r1"), record("g", 5.0, ranks=1, run_id="r1",
                                                                           sizes={1024: 5.0})], [])])
    for host in ("h", "g"):
        entry = held.entry(host, "allreduce")
        assert entry is not None and entry.busbw_gbps is None and not entry.sizes
    assert find_regressions([record("h", 1.0, run_id="r2"), record("g", 1.0, run_id="r2")], held, PCT) == []


def test_failed_and_regressed_figures_are_not_held(tmp_path: Path) -> None:
    runs = [("r1", [record("h", 10.0, run_id="r1")], []),
            ("r2", [record("h", 1.0, status="fail", run_id="r2")], []),
            ("r3", [record("h", 4.0, run_id="r3")], []),  # a drop with no re-run to undo it
            ("r4", [record("h", 9.5, run_id="r4")], [])]
    held = baseline_from_runs(runs)
    entry = held.entry("h", "allreduce")
    assert entry is not None and entry.peak.values == [10.0, 9.5] and entry.status == "pass"
    path = save_baseline(held, tmp_path / "baseline.json")
    again = load_baseline(path)
    assert again is not None and again.to_dict() == held.to_dict()
    assert again.describe() == "2 runs, newest r4"
    # A run is never compared with itself.
    assert find_regressions([record("h", 9.5, run_id="r4")], again, PCT) == []


def test_a_format_1_baseline_still_loads_as_one_sample(tmp_path: Path) -> None:
    path = tmp_path / "baseline.json"
    path.write_text(json.dumps({"format": 1, "source_run": "old", "created": "x", "hosts": {
        "h": {"allreduce": {"status": "pass", "busbw_gbps": 10.0, "components": {"torch": "2.4.0"}}}}}))
    held = load_baseline(path)
    assert held is not None
    entry = held.entry("h", "allreduce")
    assert entry is not None and entry.peak.samples == (("old", 10.0),)
    [drop] = find_regressions([record("h", 8.0, run_id="new")], held, PCT)
    assert drop.drop_pct == pytest.approx(20.0) and drop.samples == 1


@pytest.mark.parametrize(("value", "hosts", "limit"), [
    (None, 3, 1), (None, 10, 1), (None, 25, 2), (None, 200, 20), ("2", 10, 2), (2, 10, 2), ("0", 10, 0),
    ("25%", 10, 2), ("1%", 10, 1), ("50 %", 9, 4)])
def test_max_drain(value: str | int | None, hosts: int, limit: int) -> None:
    assert max_drain_for(value, hosts) == limit


@pytest.mark.parametrize("value", ["abc", "-1", "1.5", "150%", "%", "2 hosts"])
def test_bad_max_drain_is_a_config_error(value: str) -> None:
    with pytest.raises(ConfigError, match="--max-drain"):
        check_max_drain(value)


def test_a_host_that_could_not_be_checked_adds_nothing_to_the_baseline() -> None:
    """Review finding: `connect`, `host` and `inventory:*` error records were held as baseline entries."""
    from accelstack.results.baseline import empty_baseline
    from accelstack.results.records import Record

    records = [Record(host="n1", check="connect", status="error", summary="unreachable"),
               Record(host="n1", check="host", status="error", summary="deadline"),
               Record(host="local", check="inventory:npu8", status="error", summary="broken"),
               Record(host="n2", check="devices", status="pass", summary="8 devices")]
    held = empty_baseline(5).add_run(records, "r1")
    assert set(held.hosts) == {"n2"} and set(held.hosts["n2"]) == {"devices"}


# --- a baseline or run folder that is damaged: one line and exit 3, or passed over, never a traceback ------------

DAMAGED_BASELINES = [
    (b"\xff\xfe", "baseline cannot be read: not UTF-8 text"),
    (b"{", "baseline is not valid JSON"),
    (b'{"format": 2, "hosts": 5}', "baseline is damaged"),
    (b'{"format": 2, "hosts": {"h": {"c": {"sizes": 5}}}}', "baseline is damaged"),
]


@pytest.mark.parametrize(("data", "words"), DAMAGED_BASELINES, ids=[d.decode(errors="replace")[:20]
                                                                    for d, _ in DAMAGED_BASELINES])
def test_a_damaged_baseline_is_exit_3_under_both_programs(data: bytes, words: str, tmp_path: Path) -> None:
    from accelstack.results.records import RunWriter

    from .helpers import assert_bad_input, run_program

    runs = tmp_path / "runs"
    writer = RunWriter("validate", base=runs)  # a run for the report to compare with the baseline
    writer.add(Record("h1", "allreduce", "pass", "ok"))
    writer.close()
    (runs / "baseline.json").write_bytes(data)
    assert_bad_input(run_program("accelstack", "baseline", "--show", runs=runs), "baseline.json", words)
    assert_bad_input(run_program("inv", "report", "--format", "json", runs=runs), "baseline.json", words)


def test_baseline_output_naming_a_folder_is_exit_3_before_any_work(tmp_path: Path) -> None:
    from .helpers import assert_bad_input, run_program

    for program in ("accelstack", "inv"):
        assert_bad_input(run_program(program, "baseline", "--output", str(tmp_path), runs=tmp_path / "r"),
                         "--output", "is a folder")


def test_a_run_whose_records_hold_bytes_that_are_not_text_is_passed_over(tmp_path: Path) -> None:
    """A damaged disk block in one run's results.jsonl was a UnicodeDecodeError in every history, report and
    fleet check: its good lines still count, the rest is passed over."""
    from accelstack.results.records import read_run

    good = Record("h1", "allreduce", "pass", "ok", run_id="r1").to_dict()
    (tmp_path / "results.jsonl").write_bytes(json.dumps(good).encode() + b"\n\xff\xfe\x00\n[1, 2]\n\"x\"\n"
                                             b'{"host": 5}\n{"torn')
    assert [(r.host, r.check) for r in read_run(tmp_path)] == [("h1", "allreduce")]
