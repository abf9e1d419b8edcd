"""Reports of one run: JUnit validated with xmllint against accelstack's own JUnit schema, the HTML rendered in
headless Chromium, the Prometheus textfile parsed line by line against the exposition format, JSON, rich."""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from datetime import datetime, timezone
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from accelstack.report import FORMATS, load_report, render, render_html, render_junit, render_prom
from accelstack.report.prom import escape_label
from accelstack.results.baseline import baseline_from_records, baseline_path, save_baseline
from accelstack.results.records import SEVERITY, Record
from accelstack.tasks.report import baseline as baseline_task
from accelstack.tasks.report import history as history_task
from accelstack.tasks.report import report as report_task

from .test_history import fleet_records, write_run

XSD = Path(__file__).parent / "data" / "junit" / "junit.xsd"
ODD_HOST = 'rack 7;"odd"\\host\n<b>'


def unreachable(host: str) -> Record:
    return Record(host=host, check="devices", status="error", summary="cannot connect: no route to host",
                  remedy="check the host is up and sshd listens", duration_s=10.0)


@pytest.fixture
def runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Three nightly runs: two healthy (the first is the baseline), the last one with a busbw regression on
    node01, a device failure on node02, node03 unreachable, a skipped check and an oddly named host."""
    base = tmp_path / "runs"
    monkeypatch.setenv("ACCELSTACK_RUNS", str(base))
    healthy = {"node01": 180.0, "node02": 181.0, "node03": 179.0}
    first = fleet_records(healthy, ts="2026-11-20T01:00:00.000Z")
    write_run(base, first, run_id="20261120T010000Z-validate-aaaa", started="2026-11-20T01:00:00.000Z")
    write_run(base, fleet_records({"node01": 176.0, "node02": 183.0, "node03": 180.0},
                                  ts="2026-11-21T01:00:00.000Z"),
              run_id="20261121T010000Z-validate-bbbb", started="2026-11-21T01:00:00.000Z")
    held = baseline_from_records(first, source_run="20261120T010000Z-validate-aaaa")
    save_baseline(held, baseline_path(base))
    last = [r for r in fleet_records({"node01": 120.0, "node02": 182.0}, failing={"node02": "fail"},
                                     ts="2026-11-22T01:00:00.000Z")]
    last += [unreachable("node03"),
             Record(host="node01", check="storage", status="skip", summary="no ckpt dir"),
             Record(host="node02", check="memory", status="warn", summary="/dev/shm 60% used",
                    remedy="clean /dev/shm", metrics={"shm_used_pct": 60}),
             Record(host=ODD_HOST, check="devices", status="pass", summary="a & b < c", metrics={"count": 8})]
    write_run(base, last, run_id="20261122T010000Z-validate-cccc", started="2026-11-22T01:00:00.000Z")
    return base


# -- JUnit -------------------------------------------------------------------------------------------------


def _xmllint_schema(document: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """Validate ``document`` against the JUnit schema; CI installs xmllint, so its absence is a failure."""
    xmllint = shutil.which("xmllint")
    if xmllint is None:
        pytest.fail("xmllint missing: apt-get install libxml2-utils")
    path = tmp_path / "junit.xml"
    path.write_text(document, encoding="utf-8")
    return subprocess.run([xmllint, "--noout", "--schema", str(XSD), str(path)], capture_output=True,
                          text=True, check=False)


def test_junit_validates_against_the_ci_schema(runs: Path, tmp_path: Path) -> None:
    done = _xmllint_schema(render_junit(load_report()), tmp_path)
    assert done.returncode == 0, done.stderr
    assert "validates" in done.stderr


_GOOD_SUITE = '<testsuite name="s" tests="1"><testcase name="c" time="0.5"/></testsuite>'


@pytest.mark.parametrize("broken", [
    '<testsuites><testsuite name="s" tests="1"><testcase classname="h"/></testsuite></testsuites>',
    '<testsuites><testsuite name="s" tests="x"><testcase name="c"/></testsuite></testsuites>',
    '<testsuites><testsuite name="s" tests="-1"><testcase name="c"/></testsuite></testsuites>',
    '<testsuites><testsuite name="s" tests="1"><testcase name="c" time="soon"/></testsuite></testsuites>',
    '<testsuites><testsuite name="s" tests="1"><testcase name="c"><failure/><error/></testcase>'
    '</testsuite></testsuites>',
    '<testsuites><testsuite name="s" tests="1"><testcase name="c"/><properties/></testsuite></testsuites>',
    '<testsuites><testsuite name="s" tests="1" timestamp="yesterday"><testcase name="c"/></testsuite>'
    '</testsuites>',
    f'<testsuite-list>{_GOOD_SUITE}</testsuite-list>',
], ids=["testcase-without-name", "tests-not-a-number", "tests-negative", "time-not-decimal",
        "two-outcomes", "properties-after-testcase", "bad-timestamp", "wrong-root"])
def test_junit_schema_rejects_broken_documents(broken: str, tmp_path: Path) -> None:
    # The schema must be able to fail, or the validation test above proves nothing.
    assert _xmllint_schema(f"<testsuites>{_GOOD_SUITE}</testsuites>", tmp_path).returncode == 0
    done = _xmllint_schema(broken, tmp_path)
    assert done.returncode != 0, f"xmllint accepted a broken document: {broken}"
    assert "fails to validate" in done.stderr


def test_junit_one_testcase_per_host_and_check(runs: Path) -> None:
    data = load_report()
    root = ET.fromstring(render_junit(data))
    cases = {(case.get("classname"), case.get("name")): case for case in root.iter("testcase")}
    assert len(cases) == len(data.records)
    assert cases[("node02", "devices")].find("failure") is not None
    assert cases[("node03", "devices")].find("error") is not None
    assert cases[("node01", "storage")].find("skipped") is not None
    regression = cases[("node01", "allreduce")].find("failure")
    assert regression is not None and regression.get("type") == "regression"
    assert "180" in regression.get("message", "") and "120" in regression.get("message", "")
    assert cases[("node01", "devices")].find("failure") is None
    assert (ODD_HOST, "devices") in cases  # escaped on the way out, intact on the way in
    suites = {suite.get("name"): suite for suite in root.iter("testsuite")}
    props = {p.get("name"): p.get("value") for p in suites["node01"].iter("property")}
    assert props["allreduce.busbw_gbps"] == "120"
    assert (suites["node02"].get("failures"), suites["node03"].get("errors")) == ("1", "1")
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == (str(len(data.records)), "2", "1")


# -- Prometheus --------------------------------------------------------------------------------------------

_NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
_LABEL_VALUE = r'"(?:[^"\\\n]|\\[\\"n])*"'
_LABEL = rf"[a-zA-Z_][a-zA-Z0-9_]*={_LABEL_VALUE}"
_SAMPLE = re.compile(rf"^({_NAME})(\{{(?:{_LABEL}(?:,{_LABEL})*)?\}})? (\S+)( -?\d+)?$")
_FLOAT = re.compile(r"^(?:[+-]?(?:\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)|NaN|[+-]Inf)$")


def _unescape(value: str) -> str:
    return re.sub(r"\\(.)", lambda m: {"n": "\n"}.get(m.group(1), m.group(1)), value[1:-1])


def parse_exposition(text: str) -> dict[str, Any]:
    """A strict reader of the text exposition format (0.0.4); an AssertionError on any deviation."""
    assert text.endswith("\n"), "the last line must end with a line feed"
    families: dict[str, dict[str, Any]] = {}
    order: list[str] = []
    series: set[tuple[str, tuple[tuple[str, str], ...]]] = set()
    for number, line in enumerate(text[:-1].split("\n"), 1):
        where = f"line {number}: {line!r}"
        assert line.strip(), f"{where}: empty line"
        if line.startswith("#"):
            match = re.match(rf"^# (HELP|TYPE) ({_NAME}) (.*)$", line)
            assert match, f"{where}: malformed comment"
            keyword, name, rest = match.groups()
            family = families.setdefault(name, {"samples": []})
            if name not in order:
                order.append(name)
            assert order[-1] == name, f"{where}: metric family {name} is not contiguous"
            assert keyword not in family, f"{where}: second {keyword} for {name}"
            assert not family["samples"], f"{where}: {keyword} after samples of {name}"
            if keyword == "TYPE":
                assert rest in ("counter", "gauge", "histogram", "summary", "untyped"), where
            else:
                assert re.fullmatch(r"(?:[^\\\n]|\\[\\n])*", rest), f"{where}: bad HELP escaping"
            family[keyword] = rest
            continue
        match = _SAMPLE.match(line)
        assert match, f"{where}: malformed sample"
        name, labels_text, value, _ = match.groups()
        assert _FLOAT.match(value), f"{where}: bad value {value!r}"
        assert name in families and "TYPE" in families[name], f"{where}: sample before its TYPE"
        assert order[-1] == name, f"{where}: metric family {name} is not contiguous"
        labels = tuple((k, _unescape(v)) for k, v in re.findall(rf"([a-zA-Z_][a-zA-Z0-9_]*)=({_LABEL_VALUE})",
                                                                 labels_text or ""))
        assert len({k for k, _ in labels}) == len(labels), f"{where}: repeated label"
        assert (name, labels) not in series, f"{where}: duplicate series"
        series.add((name, labels))
        families[name]["samples"].append((dict(labels), float(value)))
    return families


def test_prometheus_textfile_is_valid_exposition_format(runs: Path) -> None:
    families = parse_exposition(render_prom(load_report()))
    for name in ("accelstack_check_status", "accelstack_busbw_gbps", "accelstack_run_timestamp_seconds"):
        assert families[name]["TYPE"] == "gauge" and families[name]["HELP"]
    status = {(labels["host"], labels["check"]): value
              for labels, value in families["accelstack_check_status"]["samples"]}
    assert status[("node02", "devices")] == SEVERITY["fail"] == 4
    assert status[("node03", "devices")] == SEVERITY["error"] == 3
    assert status[("node01", "devices")] == 0
    assert status[(ODD_HOST, "devices")] == 0  # quote, backslash and newline survive escaping
    assert set(status.values()) <= {0, 1, 2, 3, 4}
    busbw = {(labels["host"], labels["check"]): value
             for labels, value in families["accelstack_busbw_gbps"]["samples"]}
    assert busbw[("node01", "allreduce")] == 120.0 and busbw[("cluster", "multinode")] == 95.0
    [(labels, stamp)] = families["accelstack_run_timestamp_seconds"]["samples"]
    assert labels == {} and stamp == datetime(2026, 11, 22, 1, tzinfo=timezone.utc).timestamp()
    regressions = families["accelstack_regression"]["samples"]
    # The run's busbw drop was never re-run, so it alerts nobody; the new failure does.
    assert ({"host": "node02", "check": "devices", "kind": "new_failure"}, 1.0) in regressions
    assert not any(labels["kind"] == "busbw_drop" for labels, _ in regressions)


def test_prometheus_label_escaping() -> None:
    assert escape_label('a"b\\c\nd') == 'a\\"b\\\\c\\nd'
    with pytest.raises(AssertionError):
        parse_exposition('# TYPE x gauge\nx{host="a"b"} 1\n')
    with pytest.raises(AssertionError):
        parse_exposition("x 1\n")


# -- HTML --------------------------------------------------------------------------------------------------


def test_html_is_self_contained_and_escaped(runs: Path) -> None:
    page = render_html(load_report())
    assert "<script" not in page.lower() and "<link" not in page.lower()
    assert not re.search(r"""(?:src|href)\s*=\s*["']?(?:https?:)?//""", page)
    assert "@import" not in page and "url(" not in page
    assert ODD_HOST not in page and html.escape(ODD_HOST) in page


class _DomCollector(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.fleet_rows: list[str] = []
        self.cells: list[tuple[str, str, str]] = []
        self.plots: list[tuple[str, str]] = []
        self.svgs = 0
        self.polylines = 0
        self._row_host = ""
        self._in_fleet = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attr = {k: v or "" for k, v in attrs}
        if tag == "table" and attr.get("id") == "fleet":
            self._in_fleet = True
        if self._in_fleet and tag == "tr" and "data-host" in attr:
            self._row_host = attr["data-host"]
            self.fleet_rows.append(self._row_host)
        if self._in_fleet and tag == "td" and attr.get("data-status") not in (None, "none"):
            self.cells.append((self._row_host, attr.get("data-check", ""), attr["data-status"]))
        if tag == "figure" and attr.get("data-plot"):
            self.plots.append((attr["data-plot"], attr.get("data-check", "")))
        self.svgs += tag == "svg"
        self.polylines += tag == "polyline"

    def handle_endtag(self, tag: str) -> None:
        if tag == "table":
            self._in_fleet = False


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    pytest.fail("headless Chromium missing: apt-get install chromium")


def _chromium_args(profile: Path) -> list[str]:
    return [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--disable-dev-shm-usage", f"--user-data-dir={profile}"]


@pytest.mark.slow  # headless chromium
def test_html_renders_in_headless_chromium(runs: Path, tmp_path: Path) -> None:
    page = tmp_path / "report.html"
    page.write_text(render_html(load_report()), encoding="utf-8")
    args = _chromium_args(tmp_path / "profile")
    done = subprocess.run([*args, "--dump-dom", page.as_uri()], capture_output=True, text=True, check=False,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    dom = _DomCollector()
    dom.feed(done.stdout)
    # Worst host first: node02 failed, node03 could not be checked.
    assert dom.fleet_rows[:2] == ["node02", "node03"]
    assert set(dom.fleet_rows) == {"node01", "node02", "node03", "cluster", ODD_HOST}
    assert ("node02", "devices", "fail") in dom.cells and ("node03", "devices", "error") in dom.cells
    assert ("node01", "allreduce", "pass") in dom.cells
    sweep_checks = {check for kind, check in dom.plots if kind == "sweep"}
    history_checks = {check for kind, check in dom.plots if kind == "history"}
    assert sweep_checks == {"allreduce", "multinode"} == history_checks
    assert dom.svgs == 4 and dom.polylines >= 2 + 1 + 3 + 1
    assert "what to do" in done.stdout and "npu-smi info" in done.stdout
    shot = tmp_path / "report.png"
    done = subprocess.run([*args, "--hide-scrollbars", "--window-size=1400,2200", f"--screenshot={shot}",
                           page.as_uri()], capture_output=True, text=True, check=False, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000
    keep_screenshot(shot)


def keep_screenshot(shot: Path, suffix: str = "") -> None:
    """ACCELSTACK_KEEP_SCREENSHOT=PATH.png keeps a test's screenshot for a person to look at (PATH-SUFFIX.png for
    the tests after the first); a folder keeps each under its own name."""
    keep = Path(os.environ.get("ACCELSTACK_KEEP_SCREENSHOT", ""))
    if not keep.name:
        return
    if keep.is_dir():
        keep = keep / f"report{suffix}.png"
    elif suffix:
        keep = keep.with_name(f"{keep.stem}{suffix}{keep.suffix}")
    shutil.copy(shot, keep)


# -- JSON, rich, the tasks ---------------------------------------------------------------------------------


def test_json_report_has_summary_and_records(runs: Path) -> None:
    document = json.loads(render(load_report(), "json"))
    summary = document["summary"]
    assert summary["exit_code"] == 1 and summary["run_id"] == "20261122T010000Z-validate-cccc"
    assert summary["hosts_by_status"]["fail"] == ["node02"]
    assert summary["hosts_by_status"]["error"] == ["node03"]
    assert summary["counts"]["fail"] == 1 and summary["baseline_run"] == "20261120T010000Z-validate-aaaa"
    assert [r["kind"] for r in summary["regressions"]] == ["busbw_drop", "new_failure", "new_failure"]
    assert [f["host"] for f in summary["failing"]] == ["node02", "node03"]
    assert len(document["records"]) == 11


def test_rich_report_lists_failing_checks_first_with_remedies(runs: Path) -> None:
    text = render(load_report(), "rich")
    assert text.index("node02") < text.index("node03") < text.index("storage")
    assert "npu-smi info" in text and "busbw_drop" in text and "180" in text
    assert set(FORMATS) == {"rich", "junit", "html", "prom", "json"}


def test_rich_and_html_show_the_same_regression_cells(runs: Path) -> None:
    from html import escape

    from accelstack.report.model import regression_row

    data = load_report()
    rich, page = render(data, "rich"), render(data, "html")
    drop = next(r for r in data.regressions if r.kind == "busbw_drop")
    row = regression_row(drop)
    assert row[2].startswith("busbw_drop") and row[5].startswith("-") and "spread over" in row[6]
    for cell in (c for c in row if c):
        assert f"<td>{escape(cell)}</td>" in page, cell
    assert row[2] in rich and row[5] in rich


def test_report_task_writes_file_and_exits_with_verdict(runs: Path, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    from invoke import Context
    from invoke.exceptions import Exit

    out = tmp_path / "out" / "r.prom"
    with pytest.raises(Exit) as exited:
        report_task(Context(), format="prom", output=str(out))
    assert exited.value.code == 1 and out.read_text().startswith("# HELP")
    report_task(Context(), run="bbbb", format="json")  # a healthy run exits 0 (the regression is vs aaaa)
    assert json.loads(capsys.readouterr().out)["summary"]["exit_code"] == 0
    with pytest.raises(Exit) as exited:
        report_task(Context(), run="nope", format="json")
    assert exited.value.code == 3
    with pytest.raises(Exit) as exited:
        report_task(Context(), format="pdf")
    assert exited.value.code == 3


def test_baseline_and_history_tasks(runs: Path, capsys: pytest.CaptureFixture[str],
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from invoke import Context

    monkeypatch.setenv("COLUMNS", "200")
    baseline_task(Context())  # the healthy figures of the recent validation runs
    held = json.loads(baseline_path(runs).read_text())
    assert held["source_run"] == "20261122T010000Z-validate-cccc" and held["keep"] == 5
    # node01's allreduce: 180 and 176 held; cccc's 120 dropped beyond the band, so it is not held.
    assert held["hosts"]["node01"]["allreduce"]["busbw_gbps"] == [
        ["20261120T010000Z-validate-aaaa", 180.0], ["20261121T010000Z-validate-bbbb", 176.0]]
    # node02 failed devices in cccc: its held devices status stays pass (so the failure is a new one).
    assert held["hosts"]["node02"]["devices"]["status"] == "pass"
    assert held["hosts"]["node02"]["allreduce"]["busbw_gbps"][-1] == ["20261122T010000Z-validate-cccc", 182.0]
    out = capsys.readouterr().out
    assert "baseline from 3 runs, newest 20261122T010000Z-validate-cccc" in out
    assert re.search(r"node01 +│ allreduce +│ peak +│ 2 +│ 178 +│ 176\.\.180 +│ 2\.2% +│ -10\.0%", out), out
    baseline_task(Context(), from_="cccc")
    assert json.loads(baseline_path(runs).read_text())["source_run"] == "20261122T010000Z-validate-cccc"
    capsys.readouterr()
    baseline_task(Context(), show=True)
    assert "1 run" not in capsys.readouterr().out
    capsys.readouterr()
    history_task(Context(), host="node01", check="allreduce", since="2026-11-21", json=True)
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [line["metrics"]["busbw_gbps"] for line in lines] == [176.0, 120.0]
    history_task(Context(), status="error")
    assert "node03" in capsys.readouterr().out


# -- a real run's report -----------------------------------------------------------------------------------

REAL_RUN = Path(__file__).parent / "data" / "baseline" / "gloo-localhost-runs.jsonl"


def real_run(base: Path) -> str:
    """The first recorded gloo run (allreduce and allgather on this machine), written as a run folder."""
    lines = REAL_RUN.read_text().splitlines()
    records = [Record.from_dict(json.loads(line)) for line in lines]
    first = [r for r in records if r.run_id == records[0].run_id]
    return write_run(base, first, run_id=first[0].run_id)


def test_the_sweep_plot_draws_a_real_runs_points(tmp_path: Path) -> None:
    run_id = real_run(tmp_path / "runs")
    page = render_html(load_report(run_id, base=tmp_path / "runs"))
    figures = re.findall(r'<figure class="plot" data-plot="sweep" data-check="([^"]+)" data-figure="busbw">'
                         r"(.*?)</figure>", page)
    assert sorted(check for check, _ in figures) == ["allgather", "allreduce"]
    for check, svg in figures:
        # One point per message size the validator measured (64 KiB, 1 MiB, 16 MiB), with its busbw.
        points = re.findall(r"<circle [^>]*><title>localhost: ([0-9.]+)</title>", svg)
        assert len(points) == 3 and "no data" not in svg, check
    allreduce = dict(figures)["allreduce"]
    assert re.findall(r"<title>localhost: ([0-9.]+)</title>", allreduce) == ["0.0257", "0.4449", "1.1877"]
    assert "no bandwidth sweep in this run" not in page


def test_junit_writes_numbers_in_full(tmp_path: Path) -> None:
    run_id = real_run(tmp_path / "runs")
    suite = ET.fromstring(render_junit(load_report(run_id, base=tmp_path / "runs")))
    properties = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert properties["allreduce.at_bytes"] == "16777216"
    assert properties["allreduce.busbw_gbps"] == "1.1877" and properties["allreduce.ranks"] == "2"
    assert not [v for v in properties.values() if v and "e" in v.lower()]
    assert "sizes" not in (suite.find(".//testcase/system-out").text or "")  # type: ignore[union-attr]


def test_report_without_run_reports_the_newest_validation_run_not_facts(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    base = tmp_path / "runs"
    monkeypatch.setenv("ACCELSTACK_RUNS", str(base))
    validated = write_run(base, fleet_records(), run_id="20261120T010000Z-validate-aaaa")
    write_run(base, [Record(host="node01", check="facts", status="pass", summary="facts")], kind="facts",
              run_id="20261121T010000Z-facts-bbbb")
    assert load_report().run_id == validated
    checked = write_run(base, fleet_records(), kind="fleet-check", run_id="20261122T010000Z-fleet-check-cccc")
    assert load_report().run_id == checked


def test_history_labels_stay_distinct_within_a_minute() -> None:
    from accelstack.report.html import run_labels

    runs = [("20261122T010000Z-validate-aaaa", "2026-11-22T01:00:00.100Z"),
            ("20261122T010012Z-validate-bbbb", "2026-11-22T01:00:12.000Z"),
            ("20261122T010012Z-fleet-check-cccc", "2026-11-22T01:00:12.400Z"),
            ("20261122T020000Z-validate-dddd", "2026-11-22T02:00:00.000Z")]
    labels = run_labels(runs)
    assert len(set(labels.values())) == 4
    assert labels["20261122T020000Z-validate-dddd"] == "11-22 02:00"
    assert labels["20261122T010000Z-validate-aaaa"] == "11-22 01:00:00"
    assert labels["20261122T010012Z-fleet-check-cccc"] == "11-22 01:00:12 cccc"


def every_check_records() -> list[Record]:
    """A record for every check the registry declares, with the parts real runs write (one versions.* per
    component, env.*, memory.*), on four hosts with realistic names."""
    from accelstack.validate.registry import all_checks, load_registry

    checks = all_checks(load_registry())
    parts = [f"versions.{c}" for c in ("driver", "firmware", "cann", "torch", "torch_npu", "python", "nccl",
                                       "cuda", "hccl")]
    parts += ["env.nccl_socket_ifname", "env.hccl_socket_ifname", "memory.shm", "memory.memlock",
              "memory.devices", "storage.space"]
    hosts = [f"gpu-node-{i:03d}.rack12.dc1.example.com" for i in range(1, 5)]
    return [Record(host=host, check=check, status="pass" if i % 7 else "warn", summary="ok")  # type: ignore[arg-type]
            for host in hosts for i, check in enumerate([*checks, *parts])]


def test_the_fleet_grid_with_every_check_fits_1400_px(tmp_path: Path) -> None:
    from accelstack.report import ReportData

    page = render_html(ReportData(run_id="20261122T010000Z-validate-cccc", records=every_check_records()))
    dom = _DomCollector()
    dom.feed(page)
    columns = {check for _, check, _ in dom.cells}
    assert "versions" in columns and not [c for c in columns if c.startswith("versions.")]
    # The report has no script; this copy gets one that writes the table's right edge into the DOM.
    probe = ('<script>document.body.setAttribute("data-right", '
             'Math.ceil(document.getElementById("fleet").getBoundingClientRect().right));</script></body>')
    path = tmp_path / "grid.html"
    path.write_text(page.replace("</body>", probe), encoding="utf-8")
    done = subprocess.run([*_chromium_args(tmp_path / "profile"), "--window-size=1400,900", "--dump-dom",
                           path.as_uri()], capture_output=True, text=True, check=False, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    found = re.search(r'data-right="(\d+)"', done.stdout)
    assert found, done.stdout[:500]
    assert int(found.group(1)) <= 1400


# -- a real H200 run (validate --tier full, every check): headlines, device figures, one-rank sweeps ----------

H200_RUN = Path(__file__).parent / "data" / "reports" / "20261126T114846Z-validate-145d"


@pytest.fixture
def h200(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The H200 capture's run folder under a fresh runs folder; returns that runs folder."""
    base = tmp_path / "runs"
    monkeypatch.setenv("ACCELSTACK_RUNS", str(base))
    shutil.copytree(H200_RUN, base / H200_RUN.name)
    return base


@pytest.mark.parametrize(("statuses", "expected"), [
    (["pass", "skip", "pass"], "pass"),
    (["skip", "skip"], "skip"),
    (["skip", "warn", "pass"], "warn"),
    (["warn", "error", "skip"], "error"),
    (["error", "fail", "pass"], "fail"),
    (["pass"], "pass"),
    ([], "skip"),
])
def test_headline_is_the_worst_measured_status_and_skip_only_when_all_skipped(statuses: list[str],
                                                                             expected: str) -> None:
    from accelstack.report.model import headline

    assert headline(statuses) == expected


def test_h200_family_and_host_headlines(h200: Path) -> None:
    """On the H200 `health` showed SKIP while 6 of its 8 parts passed: the skipped parts (no retired pages on
    Hopper, no NVLink peer on one GPU) hide nothing now, in the HTML grid, the rich report and Prometheus."""
    data = load_report()
    dom = _DomCollector()
    dom.feed(render_html(data))
    grid = {check: status for _, check, status in dom.cells}
    assert grid["health"] == "pass" and grid["perf"] == "warn" and grid["env"] == "fail"
    assert grid["hccn"] == "skip" and grid["ports"] == "skip" and grid["versions"] == "pass"
    rich = render(data, "rich")
    family_rows = {line.split("│")[1].strip(): line for line in rich.splitlines() if line.count("│") == 5}
    assert re.search(r"│ PASS +│ 1 pass +│ 6 pass, 2 skip", family_rows["health"]), family_rows["health"]
    assert "WARN" in family_rows["perf"] and "2 warn, 3 pass" in family_rows["perf"]
    assert "SKIP" in family_rows["hccn"]
    # A host whose checks passed but for the ones that do not apply is a passing host, not a skipped one.
    passing = [r for r in data.records if r.status in ("pass", "skip")]
    from accelstack.report import ReportData

    only_passed = ReportData(run_id=data.run_id, records=passing)
    families = parse_exposition(render_prom(only_passed))
    assert families["accelstack_host_status"]["samples"] == [({"host": "localhost"}, 0.0)]
    assert re.search(r"│ PASS +│ localhost +│", render(only_passed, "rich"))
    assert json.loads(render(only_passed, "json"))["summary"]["hosts_by_status"] == {"pass": ["localhost"]}


def test_h200_device_figures_against_their_floors_in_rich(h200: Path) -> None:
    text = render(load_report(), "rich")
    row = next(line for line in text.splitlines() if "cuda:0" in line)
    cells = [cell.strip() for cell in row.split("│")[1:-1]]
    assert cells == ["localhost", "H200*", "cuda:0", "792 (634)", "4.23 (3.46)", "55.3 (55)", "55.3 (55)",
                     "Gen5 x16"], row
    assert re.search(r"bf16 matmul +┃ copy +┃ H2D +┃ D2H +┃.*\n.*TFLOP/s +┃ TB/s +┃ GB/s +┃ GB/s", text)
    assert "*: some of the SKU's floors are estimates" in text
    health = next(line for line in text.splitlines() if "gpu 0" in line)
    assert [c.strip() for c in health.split("│")[1:-1]] == ["localhost", "PASS", "6 pass, 2 skip", "gpu 0", "40",
                                                           "none"], health


def test_device_floors_are_the_ones_the_checks_judged(h200: Path) -> None:
    """The floor shown is the record's (what its check judged), which for the H200 is its row of
    data/thresholds.yml; the PCIe link is set against the same row's generation and width, and a floor the
    inventory raised is the one the report measures against."""
    from accelstack.report.devices import device_perf
    from accelstack.validate.device_floors import load_device_floors

    row = next(r for r in load_device_floors()["device_rows"] if r["sku"] == "H200")
    data = load_report()
    host = device_perf(data.records)["localhost"]
    [device] = host.devices
    assert {check: figure.floor for check, figure in device.figures.items()} == {
        "perf.matmul": row["min_matmul_bf16_tflops"], "perf.copy": row["min_copy_tbps"],
        "perf.h2d": row["min_h2d_gbps"], "perf.d2h": row["min_d2h_gbps"]}
    assert {check: figure.state for check, figure in device.figures.items()} == {
        "perf.matmul": "pass", "perf.copy": "pass", "perf.h2d": "warn", "perf.d2h": "warn"}
    assert device.link is not None and (device.link.sku_gen, device.link.sku_width) == (row["pcie_gen"],
                                                                                         row["pcie_width"])
    assert "azurehpc-health-checks" in host.sources["perf.h2d"] and host.estimate
    raised = next(r for r in data.records if r.check == "perf.matmul")
    raised.metrics["floor"] = 800
    [again] = device_perf(data.records)["localhost"].devices
    assert again.figures["perf.matmul"].state == "fail" and again.figures["perf.matmul"].floor == 800


def _copy(record: Record, host: str, **changes: Any) -> Record:
    copied = Record.from_dict({**record.to_dict(), "host": host})
    for name, value in changes.items():
        setattr(copied, name, value)
    return copied


def degraded_fleet() -> list[Record]:
    """The H200 run on gpu-node-001 as captured; gpu-node-002 the same host with two GPUs, one of them bad (a
    link trained at Gen4 x8, 20 GB/s to the device, a copy that ran out of memory, thermal slowdown); gpu-node-003
    without torch or nvidia-smi, so perf and health could measure nothing."""
    from accelstack.results.records import read_run

    real = {r.check: r for r in read_run(H200_RUN)}
    fleet = [_copy(r, "gpu-node-001") for r in real.values()]

    def figures(check: str, status: str, per_device: dict[str, float], summary: str) -> Record:
        metrics = {**real[check].metrics, "per_device": per_device, "min": min(per_device.values())}
        return _copy(real[check], "gpu-node-002", status=status, metrics=metrics, summary=summary)

    fleet += [
        figures("perf.matmul", "pass", {"cuda:0": 790.2, "cuda:1": 701.5}, "bf16 matmul above the floor"),
        figures("perf.copy", "error", {"cuda:0": 4.21}, "device copy cuda:0 4.21 (TB/s); not measured on "
                "cuda:1: OutOfMemoryError: CUDA out of memory"),
        figures("perf.h2d", "fail", {"cuda:0": 55.9, "cuda:1": 20.1}, "cuda:1 below the 55 GB/s floor for H200"),
        figures("perf.d2h", "warn", {"cuda:0": 61.0, "cuda:1": 57.0}, "cuda:1 within 10% of the 55 GB/s floor"),
        _copy(real["perf.pcie"], "gpu-node-002", status="fail", summary="cuda:1: link trained at x8 of x16",
              metrics={"links": {"cuda:0": "Gen5 x16 of Gen5 x16", "cuda:1": "Gen4 x8 of Gen5 x16"}}),
        _copy(real["health.temperature"], "gpu-node-002", status="warn", summary="gpu 1: 87 C",
              evidence={"temperature_c": {"gpu 0": 41, "gpu 1": 87}, "sku": "H200"}),
        _copy(real["health.throttle"], "gpu-node-002", status="fail", summary="gpu 1: clocks held down",
              evidence={"active_reasons": {"gpu 0": [], "gpu 1": ["hw_thermal_slowdown"]}, "sku": "H200"}),
        _copy(real["health.ecc"], "gpu-node-002"),
        Record(host="gpu-node-003", check="perf", status="error",
               summary="torch does not import in the stack's python: ModuleNotFoundError: No module named 'torch'",
               remedy="inv provision --limit <host> installs the stack's pins"),
        Record(host="gpu-node-003", check="health", status="error", summary="nvidia-smi not found on PATH"),
    ]
    return fleet


def test_a_bad_device_stands_out_in_rich(tmp_path: Path) -> None:
    from accelstack.report import ReportData

    text = render(ReportData(run_id="r", records=degraded_fleet()), "rich")
    rows = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.split("│")[1:-1]]
        if len(cells) == 8 and cells[2].startswith("cuda:"):
            rows[(cells[0], cells[2])] = cells
    assert rows[("gpu-node-002", "cuda:0")] == ["gpu-node-002", "H200*", "cuda:0", "790 (634)", "4.21 (3.46)",
                                                 "55.9 (55)", "61 (55)", "Gen5 x16"]
    # The second device's row carries no host cells: it belongs to the row above.
    assert rows[("", "cuda:1")] == ["", "", "cuda:1", "702 (634)", "not measured", "20.1 (55)", "57 (55)",
                                    "Gen4 x8 of Gen5 x16"]
    assert rows[("gpu-node-001", "cuda:0")][3] == "792 (634)"
    assert re.search(r"no device figure: gpu-node-003 ERROR torch does not import", text.replace("\n", " "))
    readings = [cells for cells in ([c.strip() for c in line.split("│")[1:-1]] for line in text.splitlines())
                if len(cells) == 6 and cells[3].startswith("gpu ")]
    assert readings == [["gpu-node-001", "PASS", "6 pass, 2 skip", "gpu 0", "40", "none"],
                        ["gpu-node-002", "FAIL", "1 fail, 1 warn, 1 pass", "gpu 0", "41", "none"],
                        ["", "", "", "gpu 1", "87", "hw_thermal_slowdown"]]
    assert "no health reading: gpu-node-003 ERROR nvidia-smi not found on PATH" in text


def _device_cells(page: str) -> dict[tuple[str, str, str], dict[str, str]]:
    """``{(host, device, check): the cell's data-* attributes}`` of the device tables."""
    found: dict[tuple[str, str, str], dict[str, str]] = {}

    class Cells(HTMLParser):
        row: tuple[str, str] = ("", "")

        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            attr = {k: v or "" for k, v in attrs}
            if tag == "tr" and "data-device" in attr:
                self.row = (attr["data-host"], attr["data-device"])
            key = attr.get("data-check") or attr.get("data-reading")
            if tag == "td" and key and self.row[0]:
                found[(*self.row, key)] = attr

    Cells().feed(page)
    return found


def test_html_device_tables_mark_each_device_against_its_floor() -> None:
    from accelstack.report import ReportData

    page = render_html(ReportData(run_id="r", records=degraded_fleet()))
    cells = _device_cells(page)
    good, bad = ("gpu-node-002", "cuda:0"), ("gpu-node-002", "cuda:1")
    assert cells[(*bad, "perf.h2d")]["data-state"] == "fail"
    assert (cells[(*bad, "perf.h2d")]["data-value"], cells[(*bad, "perf.h2d")]["data-floor"]) == ("20.1", "55")
    assert cells[(*bad, "perf.d2h")]["data-state"] == "warn" and cells[(*good, "perf.d2h")]["data-state"] == "pass"
    assert cells[(*bad, "perf.copy")]["data-state"] == "missing"
    assert "OutOfMemoryError" in cells[(*bad, "perf.copy")]["title"]
    assert cells[(*bad, "perf.pcie")]["data-state"] == "fail" and cells[(*bad, "perf.pcie")]["data-link"] == "Gen4 x8"
    assert cells[(*good, "perf.pcie")]["data-state"] == "pass"
    assert "floor from: Azure/azurehpc-health-checks" in cells[(*good, "perf.h2d")]["title"]
    assert cells[("gpu-node-002", "gpu 1", "clock_events")]["class"] == "st-warn"
    assert cells[("gpu-node-001", "gpu 0", "temperature")]["data-value"] == "40"
    assert re.search(r'<tr data-host="gpu-node-003"><td>gpu-node-003</td><td><span class="badge error">ERROR'
                     r"</span></td><td class=\"summary\">perf: torch does not import", page)
    # Hosts in the report's order (worst first, then by name) here too.
    data = ReportData(run_id="r", records=degraded_fleet())
    assert re.findall(r'<tbody data-host="([^"]+)">', page.split('id="device-health"')[0]) == [
        h for h in data.hosts if h != "gpu-node-003"] == ["gpu-node-001", "gpu-node-002"]


def test_html_without_device_figures_says_why(runs: Path) -> None:
    from accelstack.report import ReportData

    page = render_html(load_report())
    assert "no device performance check in this run" in page and 'id="device-perf"' not in page
    assert "no per-device health reading in this run" in page
    skipped = [Record(host=f"lab{i}", check="perf", status="skip", summary="cpu stack: no device to measure")
               for i in (1, 2)]
    page = render_html(ReportData(run_id="r", records=skipped))
    assert "perf skipped on 2 host(s): cpu stack: no device to measure" in page
    assert 'id="device-perf"' not in page


def test_a_one_rank_sweep_plots_algbw_and_never_busbw(h200: Path) -> None:
    from accelstack.results.records import read_run

    data = load_report()
    page = render_html(data)
    figures = dict(re.findall(r'<figure class="plot" data-plot="sweep" data-check="([^"]+)" '
                              r'data-figure="algbw">(.*?)</figure>', page))
    assert sorted(figures) == ["allgather", "allreduce"]
    assert 'data-figure="busbw"' not in page and "busbw GB/s" not in page
    records = {r.check: r for r in read_run(H200_RUN)}
    for check, svg in figures.items():
        drawn = re.findall(r"<circle [^>]*><title>localhost: ([0-9.]+)</title>", svg)
        assert drawn == [f'{p["algbw_gbps"]:g}' for p in records[check].metrics["sizes"]], check
        assert "algbw by message size (one rank: no busbw)" in svg
    assert "accelstack_busbw_gbps" not in render_prom(data)
    # Beside a host that measured with two ranks, each figure keeps a chart of its own.
    two_ranks = [Record.from_dict(json.loads(line)) for line in REAL_RUN.read_text().splitlines()]
    mixed = [r for r in two_ranks if r.run_id == two_ranks[0].run_id] + data.records
    from accelstack.report import ReportData

    plots = re.findall(r'data-plot="sweep" data-check="(allreduce)" data-figure="(\w+)"',
                       render_html(ReportData(run_id="r", records=mixed)))
    assert plots == [("allreduce", "algbw"), ("allreduce", "busbw")]


def test_h200_junit_validates_against_the_ci_schema(h200: Path, tmp_path: Path) -> None:
    done = _xmllint_schema(render_junit(load_report()), tmp_path)
    assert done.returncode == 0, done.stderr


_GEOMETRY_PROBE = """<script>
for (const td of document.querySelectorAll("td.fig[data-floor]")) {
  const fill = td.querySelector(".meter .fill").getBoundingClientRect();
  const mark = td.querySelector(".meter .mark").getBoundingClientRect();
  td.setAttribute("data-drawn", fill.right <= mark.left ? "below" : "above");
}
document.body.setAttribute("data-right", Math.ceil(Math.max(
  ...["fleet", "device-perf", "device-health"].map(id => document.getElementById(id).getBoundingClientRect().right))));
</script></body>"""


@pytest.mark.slow  # headless chromium
def test_html_device_figures_render_in_headless_chromium(tmp_path: Path) -> None:
    """The fleet derived from the H200 run, as Chromium lays it out: each figure's bar ends left of its floor's mark
    exactly where the figure is below its floor, the tables fit a 1400 px window, and the one-rank sweeps draw."""
    base = tmp_path / "runs"
    run_id = write_run(base, degraded_fleet(), run_id="20261126T114846Z-validate-145d")
    page = render_html(load_report(run_id, base=base))
    path = tmp_path / "report.html"
    path.write_text(page.replace("</body>", _GEOMETRY_PROBE), encoding="utf-8")
    args = _chromium_args(tmp_path / "profile")
    done = subprocess.run([*args, "--window-size=1400,900", "--dump-dom", path.as_uri()], capture_output=True,
                          text=True, check=False, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    cells = _device_cells(done.stdout)
    drawn = {key: (attr["data-state"], attr.get("data-drawn")) for key, attr in cells.items()
             if "data-floor" in attr}
    assert len(drawn) == 4 + 4 + 3  # gpu-node-001's and gpu-node-002's cuda:0, cuda:1 without its copy
    for key, (state, where) in drawn.items():
        assert where == ("below" if state == "fail" else "above"), key
    assert drawn[("gpu-node-002", "cuda:1", "perf.h2d")] == ("fail", "below")
    right = re.search(r'data-right="(\d+)"', done.stdout)
    assert right and int(right.group(1)) <= 1400, done.stdout[:300]
    dom = _DomCollector()
    dom.feed(done.stdout)
    assert ("sweep", "allreduce") in dom.plots and ("sweep", "allgather") in dom.plots
    assert dom.polylines == 2 and ("gpu-node-001", "health", "pass") in dom.cells
    # gpu-node-002 holds health.ecc, .temperature and .throttle only: its column is its worst part.
    assert ("gpu-node-002", "health", "fail") in dom.cells and ("gpu-node-003", "health", "error") in dom.cells
    path.write_text(page, encoding="utf-8")
    shot = tmp_path / "devices.png"
    done = subprocess.run([*args, "--hide-scrollbars", "--window-size=1400,2600", f"--screenshot={shot}",
                           path.as_uri()], capture_output=True, text=True, check=False, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000
    keep_screenshot(shot, "-devices")


def test_a_report_without_device_figures_loads_no_validation() -> None:
    """Floors are read through validation's loader only when a run has device figures: `inv report` of a lab run
    (perf skipped on the cpu stack) loads neither validation nor paramiko."""
    code = ("import sys\nfrom accelstack.report import ReportData, render\nfrom accelstack.results.records import Record\n"
            "records = [Record(host='lab1', check=c, status='skip', summary='cpu stack') for c in ('perf', 'health')]\n"
            "for fmt in ('rich', 'html', 'junit', 'prom', 'json'):\n"
            "    render(ReportData(run_id='r', records=records), fmt)\n"
            "print(sorted(m for m in sys.modules if m.startswith(('accelstack.validate', 'paramiko'))))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert done.stdout.strip() == "[]"


@pytest.mark.parametrize(("reading", "status", "expected"), [
    ("Gen5 x16 of Gen5 x16", "pass", "pass"),
    ("Gen5 x8 of Gen5 x16", "fail", "fail"),  # narrower than its maximum
    ("Gen4 x16 of Gen5 x16", "fail", "fail"),  # a lower generation under load: the check failed it
    ("Gen4 x16 of Gen5 x16", "warn", "warn"),  # ... or read idle: the check warned
    ("Gen4 x16 of Gen4 x16", "warn", "warn"),  # at its maximum, but the H200 is Gen5: the slot limits it
    ("GenNone x16 of Gen5 x16", "error", "error"),
    ("garbled", "error", "error"),
])
def test_a_pcie_link_against_its_maximum_and_its_sku(reading: str, status: str, expected: str) -> None:
    from accelstack.report.devices import judge_link, shipped_floors

    link = judge_link(reading, shipped_floors()[0]["H200"], status)
    assert link.state == expected and link.sku == "Gen5 x16"


@pytest.mark.parametrize(("value", "floor", "state"), [
    (792.0, 634.0, "pass"), (640.0, 634.0, "warn"), (633.9, 634.0, "fail"), (697.5, 634.0, "pass"),
    (280.5, None, "unjudged"), (None, 634.0, "missing")])
def test_a_figure_against_its_floor_and_the_warning_band(value: float | None, floor: float | None,
                                                         state: str) -> None:
    from accelstack.report.devices import judge_figure

    assert judge_figure(value, floor, "TFLOP/s", 0.10).state == state


def test_a_sku_without_floors_is_reported_not_judged() -> None:
    """An Ascend 910B: no published floor (data/thresholds.yml), so its figures are shown and judged by nothing."""
    from accelstack.report import ReportData

    records = [Record(host="npu-node-01", check="perf.matmul", status="pass",
                      summary="bf16 8192^3 matmul npu:0 281 (TFLOP/s); not judged: no floor for 910B",
                      metrics={"per_device": {"npu:0": 280.5, "npu:1": 279.9}, "floor": None, "unit": "TFLOP/s",
                               "min": 279.9}, evidence={"sku": "910B"}),
               Record(host="npu-node-01", check="health.temperature", status="pass", summary="2 NPU chip(s) at 38 C",
                      metrics={"max_temperature_c": 38}, evidence={"temperature_c": {"npu 0": 38, "npu 1": 37}})]
    data = ReportData(run_id="r", records=records)
    cells = _device_cells(render_html(data))
    matmul = cells[("npu-node-01", "npu:1", "perf.matmul")]
    assert matmul["data-state"] == "unjudged" and "data-floor" not in matmul
    assert "no floor for 910B: reported, not judged" in matmul["title"]
    assert cells[("npu-node-01", "npu 1", "temperature")]["data-value"] == "37"
    text = render(data, "rich")
    assert re.search(r"│ npu-node-01 │ 910B +│ npu:0 +│ 280 \(no floor\) +│ - ", text), text


def test_rich_keeps_the_devices_to_look_at_in_a_large_fleet() -> None:
    """80 devices: the rich table keeps the one below its floor and says how many it left to the HTML report."""
    from accelstack.report import ReportData

    records = []
    for n in range(10):
        per_device = {f"cuda:{i}": 790.0 for i in range(8)}
        if n == 7:
            per_device["cuda:5"] = 512.0
        records.append(Record(host=f"gpu{n:02d}", check="perf.matmul", status="fail" if n == 7 else "pass",
                              summary="matmul", metrics={"per_device": per_device, "floor": 634, "unit": "TFLOP/s"},
                              evidence={"sku": "H200"}))
    data = ReportData(run_id="r", records=records)
    text = render(data, "rich")
    shown = re.findall(r"│ (cuda:\d) +│ (\d+) \(634\)", text)
    assert ("cuda:5", "512") in shown and len(shown) == 8  # gpu07's eight devices: its perf failed
    assert "and 72 device(s) on 9 host(s) above every floor: the HTML report lists every device" in text
    assert len(_device_cells(render_html(data))) == 80
