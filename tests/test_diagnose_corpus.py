"""The diagnosis corpus itself (tests/data/diagnose_corpus): every log labelled, every label in the vocabulary
and sourced, the parts disjoint and exactly as split.py puts them, enough logs to measure with. Accuracy is not
asserted here: bench/diagnose_accuracy.py prints it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from .helpers import REPO, load_script

CORPUS = REPO / "tests" / "data" / "diagnose_corpus"
PARTS = ("dev", "eval")
MIN_FAILED = 150
MIN_HEALTHY = 30
# An address, not ssh's login prompt ("root@worker-0.job's password:"), which names a user on a host.
EMAIL = re.compile(r"[A-Za-z0-9._%+-]+@(?=[A-Za-z0-9.-]*\.[A-Za-z]{2,}\b)[A-Za-z0-9.-]+(?![A-Za-z0-9.-]|'s password)")


split = load_script(CORPUS / "split.py", "diagnose_corpus_split")


def labels(part: str) -> list[dict]:
    return split.read_labels(CORPUS / part / "labels.jsonl")


@pytest.mark.parametrize("part", PARTS)
def test_every_log_is_labelled_and_every_label_names_a_log(part: str) -> None:
    files = {p.name for p in (CORPUS / part).iterdir() if p.name != "labels.jsonl"}
    labelled = [label["file"] for label in labels(part)]
    assert sorted(files - set(labelled)) == [], "logs without a label"
    assert sorted(set(labelled) - files) == [], "labels without a log"
    assert len(labelled) == len(set(labelled)), "a log labelled twice"


@pytest.mark.parametrize("part", PARTS)
def test_every_label_is_in_the_vocabulary_and_complete(part: str) -> None:
    assert split.problems(labels(part), split.load_causes(), split.load_families(), CORPUS / part) == []


@pytest.mark.parametrize("part", PARTS)
def test_every_label_says_where_the_log_comes_from(part: str) -> None:
    for label in labels(part):
        source = label["source"]
        kind = split.source_kind(label)
        if kind == "thread":
            assert re.match(r"https://\S+", source), f"{label['file']}: a thread's source is its URL, not {source!r}"
        assert len(label["rationale"]) > 20, f"{label['file']}: the rationale says what shows the cause"
        # a public thread: GitHub's (gh-), Gitee's or GitCode's, or a forum's (the corpus README names them)
        prefixes = {"thread": ("gh-", "gitee-", "gitcode-", "forum-"), "capture": ("capture-",),
                    "provoked": ("provoked-",)}[kind]
        assert label["file"].startswith(prefixes), f"{label['file']}: named {'|'.join(prefixes)}* for a {kind} source"


def test_the_parts_share_no_log_and_no_thread() -> None:
    dev, evaluation = labels("dev"), labels("eval")
    assert not {lab["file"] for lab in dev} & {lab["file"] for lab in evaluation}
    assert not {split.group_of(lab) for lab in dev} & {split.group_of(lab) for lab in evaluation}


def test_seen_logs_are_all_in_dev() -> None:
    assert [lab["file"] for lab in labels("eval") if lab.get("seen")] == []


def test_every_log_is_in_the_part_split_py_puts_it_in() -> None:
    assert split.check() == []


def test_there_are_enough_failed_and_healthy_logs_to_measure_with() -> None:
    every = labels("dev") + labels("eval")
    healthy = [lab for lab in every if lab["cause"] == split.HEALTHY]
    assert len(every) - len(healthy) >= MIN_FAILED
    assert len(healthy) >= MIN_HEALTHY
    for part in PARTS:
        causes = {lab["cause"] for lab in labels(part)}
        assert split.HEALTHY in causes and len(causes) >= 20, f"{part} is too narrow to measure with"


def test_every_cause_of_causes_yml_has_one_family() -> None:
    families = split.load_families()
    causes = split.load_causes()
    assert set(causes) <= set(families)
    assert set(families) - set(causes) == {split.HEALTHY}


def test_the_address_check_tells_an_address_from_an_ssh_login_prompt() -> None:
    assert EMAIL.search("reported by jane.doe@example.org on Monday")
    assert EMAIL.search("contact <ops@mail.cluster.example.com>")
    assert not EMAIL.search("root@lm-mpi-job-mpiworker-0.lm-mpi-job's password: Permission denied")


def test_no_personal_email_address_is_left_in_a_log() -> None:
    for part in PARTS:
        for label in labels(part):
            text = (CORPUS / part / label["file"]).read_text(errors="replace")
            assert not EMAIL.search(text), f"{part}/{label['file']}: an e-mail address; replace it with <redacted>"


def _synthetic(n: int) -> list[dict]:
    causes = ["out-of-memory", "program-error", "healthy", "connect-timeout", "xid-fatal"]
    return [{"file": f"f{i}.log", "source": f"https://example.org/t/{i // 2}", "cause": causes[i % len(causes)],
             "actor": "job", "vendor": "any", "rationale": "synthetic"} for i in range(n)]


def test_the_split_keeps_a_thread_together_is_deterministic_and_is_sixty_forty() -> None:
    families = split.load_families()
    rows = _synthetic(60)
    first = split.assign(rows, "bx", families)
    assert first == split.assign(list(reversed(rows)), "bx", families)
    for row in rows:
        assert first[row["file"]] == first[[r for r in rows if r["source"] == row["source"]][0]["file"]]
    groups = {row["source"]: first[row["file"]] for row in rows}
    dev = sum(part == "dev" for part in groups.values())
    assert abs(dev - split.DEV_FRACTION * len(groups)) <= 1
    assert split.assign(rows, "by", families) != first, "the batch name is part of the seed"


def test_a_seen_log_goes_to_dev_whatever_the_draw() -> None:
    rows = [dict(row, seen=True) for row in _synthetic(10)]
    assert set(split.assign(rows, "bz", split.load_families()).values()) == {"dev"}


def test_the_split_script_refuses_a_label_outside_the_vocabulary(tmp_path: Path) -> None:
    (tmp_path / "a.log").write_text("RuntimeError: boom\n")
    bad = {"file": "a.log", "source": "https://example.org/1", "cause": "gremlins", "actor": "node",
           "vendor": "any", "rationale": "a cause that is not in causes.yml"}
    (tmp_path / "labels.jsonl").write_text(json.dumps(bad) + "\n")
    found = split.problems([bad], split.load_causes(), split.load_families(), tmp_path)
    assert any("gremlins" in line for line in found)
    with pytest.raises(SystemExit, match="gremlins"):
        split.add_batch(tmp_path, "never-split")


def test_the_benchmark_prints_the_evaluation_part_as_figures_only() -> None:
    """What the benchmark prints of eval/ names no log and no family: a list of its misses would be a list of what
    to fit. The development part keeps its breakdown and its misses."""
    bench = load_script(REPO / "bench" / "diagnose_accuracy.py", "diagnose_accuracy_bench")
    outcomes = [
        bench.Outcome("a-miss.log", "network", "rdma", "config", "nccl-internal", "config"),
        bench.Outcome("a-hit.log", "healthy", "healthy", "none", None, None),
    ]
    summary = bench.summarise(outcomes)
    dev = bench.render("dev", summary, 0.1, goals=True)
    assert "a-miss.log" in dev and "network" in dev
    evaluation = bench.sealed(summary)
    assert set(evaluation) >= {"cause_right", "actor_right", "silent", "healthy_findings"}
    shown = bench.render("eval", evaluation, 0.1, goals=True) + json.dumps(evaluation)
    assert "a-miss.log" not in shown and "network" not in shown and "a-hit.log" not in shown
