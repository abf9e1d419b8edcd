"""What people read: plain lines without a terminal (cron, CI logs), a table and a live panel on one, JSON Lines
only with --json; the remedy column only when some record has a remedy."""

from __future__ import annotations

import io
import json
from pathlib import Path

from accelstack.results.output import Reporter, RunningPanel, plain_line, records_table, render_to_text
from accelstack.results.records import Record, RunWriter, read_run


def sample() -> list[Record]:
    return [
        Record(host="node01", check="allreduce", status="pass", summary="busbw 180.2 GB/s at 1 GiB, floor 150"),
        Record(host="node02", check="storage", status="fail",
               summary="checkpoint dir /ckpt is on /dev/sda1 (ext4),\nnot on the lustre the inventory says",
               remedy="mount the lustre filesystem at /ckpt"),
    ]


def test_without_a_terminal_each_record_is_one_plain_line_as_it_arrives(tmp_path: Path) -> None:
    out = io.StringIO()
    reporter = Reporter(RunWriter("validate", base=tmp_path), stdout=out, total_hosts=2, title="validate")
    first, second = sample()
    reporter.begin("node01", "allreduce")  # no live panel without a terminal: nothing printed
    reporter.add(first)
    assert out.getvalue() == "PASS  node01 allreduce: busbw 180.2 GB/s at 1 GiB, floor 150\n"
    reporter.add(second)
    code = reporter.finish()
    lines = out.getvalue().splitlines()
    assert code == 1
    assert lines[1] == ("FAIL  node02 storage: checkpoint dir /ckpt is on /dev/sda1 (ext4), not on the lustre the "
                        "inventory says [remedy: mount the lustre filesystem at /ckpt]")
    assert lines[2] == "2 host(s): 1 pass, 1 fail"
    assert lines[3].startswith("run ") and lines[3].endswith("/results.jsonl")
    assert len(lines) == 4  # no table: at 80 columns it wrapped every cell over several lines
    assert not any(ch in out.getvalue() for ch in "│┃━─")


def test_plain_line_has_no_remedy_part_without_one() -> None:
    assert plain_line(sample()[0]).endswith("floor 150")
    assert "remedy" not in plain_line(sample()[0])


def test_remedy_column_takes_no_width_when_no_record_has_one() -> None:
    without = render_to_text(records_table(sample()[:1]), width=80)
    assert "remedy" not in without
    with_remedy = render_to_text(records_table(sample()), width=80)
    assert "remedy" in with_remedy


def test_on_a_terminal_records_then_a_table(tmp_path: Path) -> None:
    out = io.StringIO()
    reporter = Reporter(RunWriter("validate", base=tmp_path), stdout=out, total_hosts=2, title="validate",
                        terminal=True)
    reporter.begin("node01", "allreduce")
    reporter.add_all(sample())
    reporter.end("node01", "allreduce")
    reporter.finish()
    text = out.getvalue()
    assert "┃" in text or "│" in text  # the table
    assert "1 pass" in text and "results.jsonl" in text


def test_json_lines_only_with_json(tmp_path: Path) -> None:
    out = io.StringIO()
    reporter = Reporter(RunWriter("validate", base=tmp_path), stdout=out, json_lines=True, terminal=True)
    reporter.begin("node01", "allreduce")
    reporter.add_all(sample())
    reporter.finish()
    lines = out.getvalue().splitlines()
    assert [json.loads(line)["check"] for line in lines] == ["allreduce", "storage"]


def test_running_panel_shows_each_host_check_and_how_long_it_has_run() -> None:
    panel = RunningPanel(total_hosts=3)
    panel.begin("node01", "allreduce", now=100.0)
    panel.begin("node01", "storage", now=130.0)
    panel.begin("node02", "devices", now=135.0)
    text = panel.render(now=200.0).plain
    assert "node01  allreduce 1m40s, storage 1m10s" in text
    assert "node02  devices 1m05s" in text
    panel.end("node02", "devices")
    assert "node02" not in panel.render(now=200.0).plain


def test_interrupted_run_folder_keeps_records_and_says_it_was_interrupted(tmp_path: Path) -> None:
    writer = RunWriter("validate", base=tmp_path)
    reporter = Reporter(writer, stdout=io.StringIO())
    reporter.add(sample()[0])
    reporter.abort(interrupted=True)
    meta = json.loads((writer.path / "meta.json").read_text())
    assert "finished" not in meta and meta["interrupted"] and meta["exit_code"] == 130
    assert [r.check for r in read_run(writer.path)] == ["allreduce"]
