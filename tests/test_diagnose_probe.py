"""The silence probe (tests/data/diagnose_probe/): public pastes of failed and healthy runs. A failed paste gets a
finding, a healthy one none; the failed pastes still silent say why in the index, and stay silent until fixed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from accelstack.diagnose import diagnose_paths

PROBE = Path(__file__).parent / "data" / "diagnose_probe"
ROWS = [json.loads(line) for line in (PROBE / "index.jsonl").read_text().splitlines() if line.strip()]


def test_the_probe_holds_failed_and_healthy_pastes_each_from_a_thread():
    assert len(ROWS) >= 100
    assert sum(1 for row in ROWS if row["failed"]) >= 60 and sum(1 for row in ROWS if not row["failed"]) >= 30
    assert len({row["source"] for row in ROWS}) == len(ROWS)
    for row in ROWS:
        assert (PROBE / row["file"]).is_file(), row["file"]
        assert row["source"].startswith("https://github.com/"), row["file"]
        assert "silent_because" not in row or row["failed"], row["file"]


def test_no_paste_comes_from_a_thread_of_the_labelled_corpus():
    corpus = PROBE.parent / "diagnose_corpus"
    sources = {json.loads(line)["source"].rstrip("/").lower()
               for part in ("dev", "eval") for line in (corpus / part / "labels.jsonl").read_text().splitlines()
               if line.strip()}
    assert not [row["file"] for row in ROWS if row["source"].rstrip("/").lower() in sources]


@pytest.mark.parametrize("row", ROWS, ids=[row["file"] for row in ROWS])
def test_a_failed_paste_gets_a_finding_and_a_healthy_one_none(row):
    findings = diagnose_paths([str(PROBE / row["file"])]).findings
    if not row["failed"]:
        assert findings == [], f"a healthy run given {findings[0].cause}: {findings[0].title}"
    elif "silent_because" in row:
        assert findings == [], "this paste now gets a finding: remove its silent_because from index.jsonl"
    else:
        assert findings, f"a failed run given no finding ({row['where']})"
        assert findings[0].actor in ("node", "job", "config", "service")
