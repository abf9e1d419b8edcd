from __future__ import annotations

import json
from pathlib import Path

import pytest

from accelstack.errors import CommandTimeout
from accelstack.results.records import Record, RunWriter, error_record, exit_code_for, read_run


def rec(status: str, host: str = "h1") -> Record:
    return Record(host=host, check="c", status=status, summary="s")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("statuses", "code"),
    [(["pass", "warn", "skip"], 0), (["pass", "fail", "error"], 1), (["pass", "error"], 2), ([], 0)],
)
def test_exit_code_rule(statuses: list[str], code: int) -> None:
    assert exit_code_for([rec(s) for s in statuses]) == code


def test_bad_status_is_refused() -> None:
    with pytest.raises(ValueError, match="not one of"):
        rec("ok")


def test_record_has_the_contract_fields_in_order() -> None:
    data = json.loads(rec("pass").to_json())
    assert list(data) == ["run_id", "ts", "host", "check", "status", "summary", "metrics", "evidence",
                          "remedy", "duration_s"]


def test_writer_flushes_each_record_and_a_torn_line_is_ignored(tmp_path: Path) -> None:
    writer = RunWriter("test", base=tmp_path)
    writer.write(rec("pass", "a"))
    # Readable before close: the record is on disk as soon as write returns.
    assert [r.host for r in read_run(writer.path)] == ["a"]
    writer.write(rec("fail", "b"))
    with (writer.path / "results.jsonl").open("a") as handle:
        handle.write('{"host": "c", "check": "x", "sta')  # a crash mid-write
    assert [r.host for r in read_run(writer.path)] == ["a", "b"]
    meta = json.loads((writer.path / "meta.json").read_text())
    assert "finished" not in meta
    writer.close()
    meta = json.loads((writer.path / "meta.json").read_text())
    assert meta["exit_code"] == 1 and "finished" in meta


def test_error_record_carries_command_and_hint() -> None:
    err = CommandTimeout("no answer within 5 s", host="n1", command="npu-smi info")
    record = error_record("n1", "devices", err, 5.0)
    assert record.status == "error"
    assert record.evidence["command"] == "npu-smi info"
    assert "no answer" in record.summary
