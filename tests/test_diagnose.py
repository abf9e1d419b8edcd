"""The diagnosis engine, its catalog and the `diagnose` task, on log excerpts kept under tests/data/logs/."""

from __future__ import annotations

import gzip
import io
import json
import sys
import tracemalloc
from pathlib import Path

import pytest

from accelstack.diagnose import (
    CAUSES,
    LogUnreadable,
    clean_line,
    diagnose_lines,
    diagnose_paths,
    load_catalog,
    rank_of,
    render_diagnosis,
)
from accelstack.diagnose.causes import load_causes
from accelstack.diagnose.reader import BLOCK_BYTES

LOGS = Path(__file__).parent / "data" / "logs"
CATALOG = load_catalog()
SIGNATURE_IDS = [sig.id for sig in CATALOG.signatures]


def ids(diagnosis):
    return [finding.id for finding in diagnosis.findings]


def finding(diagnosis, sig_id):
    return next(f for f in diagnosis.findings if f.id == sig_id)


# ---- the catalog ----

def test_catalog_uses_only_the_fixed_cause_ids_and_covers_them_all():
    causes = {sig.cause for sig in CATALOG.signatures}
    assert causes <= set(CAUSES)
    tabled = {row.cause for row in CATALOG.tables.rows}
    assert tabled <= set(CAUSES)
    # unknown-error-code and unclassified are the engine's own: an Ascend code no table knows, a failure no row names.
    named = causes | tabled | {"unknown-error-code", "unclassified"}
    assert named == set(CAUSES), f"no signature or table row for {set(CAUSES) - named}"


def test_every_entry_has_its_fields():
    causes = load_causes()
    for sig in CATALOG.signatures:
        assert sig.vendor in ("nvidia", "ascend", "any")
        assert sig.patterns and sig.explanation and sig.remedy and sig.source
        # A node cause is drained only once a host check confirms it: tests/test_checks.py holds the check.
        assert sig.confirm_with or (sig.actor or causes[sig.cause].actor) != "node", sig.id


@pytest.mark.parametrize("sig_id", SIGNATURE_IDS)
def test_every_catalog_entry_matches_its_excerpt(sig_id):
    excerpt = LOGS / f"{sig_id}.log"
    assert excerpt.is_file(), f"add a real log excerpt for {sig_id} at {excerpt}"
    diagnosis = diagnose_paths([str(excerpt)])
    assert sig_id in ids(diagnosis)
    found = finding(diagnosis, sig_id)
    assert found.cause == CATALOG.by_id(sig_id).cause
    assert found.evidence and found.first_line.path == str(excerpt)
    assert diagnosis.exit_code == 1


@pytest.mark.parametrize("name", sorted(p.name for p in (LOGS / "healthy").glob("*.log")))
def test_healthy_logs_give_no_finding(name):
    diagnosis = diagnose_paths([str(LOGS / "healthy" / name)])
    assert diagnosis.findings == []
    assert diagnosis.exit_code == 0
    assert diagnosis.to_dict() == {"findings": []}


def test_a_failure_no_table_names_is_unclassified_with_its_error_quoted():
    lines = ["Traceback (most recent call last):", '  File "train.py", line 9, in <module>', "    step()",
             "RuntimeError: shape mismatch in layer 3"]
    diagnosis = diagnose_lines(lines)
    assert [f.cause for f in diagnosis.findings] == ["unclassified"] and diagnosis.exit_code == 1
    found = diagnosis.findings[0]
    assert found.actor == "job" and found.layer == "structure" and found.first_line.lineno == 4
    assert "RuntimeError: shape mismatch in layer 3" in found.explanation
    assert found.extracted["raised_at"] == "train.py:9 in <module>"
    assert found.confirm_with is None  # no host check can confirm a program's own error


def test_unknown_xids_are_not_guessed():
    assert diagnose_lines(["NVRM: Xid (PCI:0000:3b:00): 999, pid=1, name=python"]).findings == []


# ---- ordering ----

def test_oom_on_one_rank_is_named_before_the_timeouts_it_caused():
    diagnosis = diagnose_paths([str(LOGS / "mixed" / "multirank-oom-then-timeout.log")])
    assert [f.cause for f in diagnosis.findings] == ["out-of-memory", "collective-timeout"]
    oom, timeout = diagnosis.findings
    assert oom.first_line.rank == 5 and oom.first_line.lineno == 7
    assert timeout.consequence_of == "out-of-memory"
    assert "consequence of the earlier out-of-memory" in timeout.explanation
    assert timeout.extracted["ranks"] == [0, 1, 2]
    document = diagnosis.to_dict()
    assert document["findings"][0]["cause"] == "out-of-memory"


def test_a_timeout_before_the_oom_is_not_called_its_consequence():
    lines = [
        ("[rank0]:[E1 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL("
         "SeqNum=7, OpType=BROADCAST, NumelIn=8, NumelOut=8, Timeout(ms)=600000) ran for 600010 milliseconds"),
        ("[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 1 has a total "
         "capacity of 79.10 GiB of which 1.00 MiB is free."),
    ]
    diagnosis = diagnose_lines(lines)
    assert ids(diagnosis) == ["cuda-oom", "nccl-watchdog-timeout"]
    assert diagnosis.findings[1].consequence_of is None


# ---- extraction ----

def test_watchdog_timeout_fields_and_torch_default():
    diagnosis = diagnose_paths([str(LOGS / "nccl-watchdog-timeout.log")])
    extracted = finding(diagnosis, "nccl-watchdog-timeout").extracted
    assert extracted["op_type"] == "ALLREDUCE"
    assert extracted["seq_num"] == 21873
    assert extracted["timeout_ms"] == 600000
    assert extracted["default_timeout"] is True
    assert extracted["ranks"] == [1, 2]


def test_nccl_thirty_minutes_is_not_the_default_but_hccl_thirty_minutes_is():
    nccl = diagnose_paths([str(LOGS / "mixed" / "multirank-oom-then-timeout.log")])
    extracted = finding(nccl, "nccl-watchdog-timeout").extracted
    assert extracted["timeout_ms"] == 1800000 and extracted["default_timeout"] is False
    assert "torch <= 2.1" in extracted["timeout_note"]
    hccl = diagnose_paths([str(LOGS / "hccl-watchdog-timeout.log")])
    extracted = finding(hccl, "hccl-watchdog-timeout").extracted
    assert extracted["timeout_ms"] == 1800000 and extracted["default_timeout"] is True
    assert extracted["op_type"] == "ALLREDUCE" and extracted["seq_num"] == 2417


def test_fsdp_save_timeout_replaces_the_generic_reading():
    diagnosis = diagnose_paths([str(LOGS / "nccl-fsdp-save-timeout.log")])
    assert ids(diagnosis) == ["nccl-fsdp-save-timeout"]
    found = diagnosis.findings[0]
    assert found.confirm_with == "storage"
    assert found.extracted["op_type"] == "_ALLGATHER_BASE" and found.extracted["seq_num"] == 88412
    # Without a checkpoint save in the log the same line is an ordinary collective timeout.
    lines = [line for line in (LOGS / "nccl-fsdp-save-timeout.log").read_text().splitlines() if "aving" not in line]
    assert ids(diagnose_lines(lines)) == ["nccl-watchdog-timeout"]


def test_xid_number_pci_and_severity():
    fatal = finding(diagnose_paths([str(LOGS / "xid-fatal.log")]), "xid-fatal")
    assert fatal.extracted["xid"] == 79 and fatal.extracted["pci"] == "0000:3b:00"
    assert fatal.extracted["severity"] == "fatal"
    warn = finding(diagnose_paths([str(LOGS / "xid-warn.log")]), "xid-warn")
    assert warn.extracted["xid"] == 63 and warn.extracted["pci"] == "0000:5e:00"
    assert warn.cause == "xid-warn"
    off_bus = finding(diagnose_paths([str(LOGS / "gpu-fallen-off-bus.log")]), "gpu-fallen-off-bus")
    assert off_bus.extracted["xid"] == 79 and off_bus.cause == "xid-fatal"


def test_interface_is_extracted_for_network_interface():
    found = finding(diagnose_paths([str(LOGS / "nccl-no-socket-interface.log")]), "nccl-no-socket-interface")
    assert found.extracted["interface"] == "ens9f0"
    assert found.first_line.rank == 0


def test_nccl_error_code_and_last_error():
    found = finding(diagnose_paths([str(LOGS / "nccl-system-error.log")]), "nccl-system-error")
    assert found.extracted["nccl_code"] == 2 and found.actor == "config"
    assert found.extracted["nccl_version"] == "2.21.5"
    assert "socketStartConnect" in found.extracted["last_error"]


def test_cuda_calls_on_an_ascend_host_are_the_programs_not_a_driver_problem():
    diagnosis = diagnose_paths([str(LOGS / "torch-cuda-on-npu.log")])
    assert ids(diagnosis) == ["torch-cuda-on-npu"]
    assert "hard-coded CUDA" in diagnosis.findings[0].explanation
    assert diagnosis.findings[0].cause == "cuda-on-npu" and diagnosis.findings[0].actor == "job"
    ascend_driver = diagnose_lines(["torch_npu 2.5.1 loaded", "RuntimeError: Found no NVIDIA driver on your system."])
    assert [f.cause for f in ascend_driver.findings] == ["cuda-on-npu"]
    nvidia_driver = diagnose_paths([str(LOGS / "nvidia-driver-missing.log")])
    # No driver found is a device the job cannot see (driver not loaded, container not given it), not an old one.
    assert [f.cause for f in nvidia_driver.findings] == ["no-device"]


def test_evidence_is_capped_with_a_count():
    line = ("[rank{r}]:[E1 ProcessGroupNCCL.cpp:616] Watchdog caught collective operation timeout: WorkNCCL("
            "SeqNum=9, OpType=ALLGATHER, NumelIn=4, NumelOut=32, Timeout(ms)=600000) ran for 600001 milliseconds")
    diagnosis = diagnose_lines([line.format(r=r) for r in range(20)])
    found = diagnosis.findings[0]
    assert len(found.evidence) == 5 and found.evidence_count == 20
    assert len(found.extracted["ranks"]) == 20


# ---- reading ----

@pytest.mark.parametrize(("line", "rank"), [
    ("[rank3]: boom", 3),
    ("[rank12]:[W1203 08:02:11.551282734 ProcessGroupNCCL.cpp:4561] x", 12),
    ("[default0]: step 1", 0),
    ("7: NCCL WARN x", 7),
    ("2025-03-11 09:12:40,112 3: step", 3),
    ("18:11:06.680 [rank4]:[E205 18:11:06] x", 4),
    ("gpu-node01:31001:31093 [0] NCCL INFO Init COMPLETE", None),
    ("step 10: loss 1.0 and [rank5]: quoted much later in a long message body" + " " * 100 + "[rank9]:", None),
])
def test_rank_prefixes(line, rank):
    assert rank_of(line) == rank


def test_ansi_codes_are_stripped_before_matching():
    colored = "\x1b[31m[rank2]: RuntimeError: NPU out of memory. Tried to allocate 2.00 GiB (NPU 2; 60.96 GiB " \
              "total capacity; 58.00 GiB already allocated)\x1b[0m"
    diagnosis = diagnose_lines([colored])
    found = finding(diagnosis, "npu-oom")
    assert "\x1b" not in found.first_line.text and found.first_line.rank == 2
    assert found.extracted["device"] == 2 and found.extracted["requested"] == "2.00 GiB"
    assert clean_line("50%|#####     |\r100%|##########|\n") == "100%|##########|"


def test_gzip_is_detected_by_content_not_name(tmp_path):
    text = (LOGS / "hccl-symbol-missing.log").read_bytes()
    packed = tmp_path / "rank0.log"  # no .gz suffix on purpose
    packed.write_bytes(gzip.compress(text))
    diagnosis = diagnose_paths([str(packed)])
    assert ids(diagnosis) == ["hccl-symbol-missing"]
    assert finding(diagnosis, "hccl-symbol-missing").extracted["function"] == "HcclCommInitRootInfoConfig"


def test_several_logs_are_one_job(tmp_path):
    oom = tmp_path / "rank5.log.gz"
    oom.write_bytes(gzip.compress((LOGS / "cuda-oom.log").read_bytes()))
    diagnosis = diagnose_paths([str(oom), str(LOGS / "nccl-watchdog-timeout.log")])
    assert [f.cause for f in diagnosis.findings] == ["out-of-memory", "collective-timeout"]
    assert diagnosis.findings[1].consequence_of == "out-of-memory"
    assert diagnosis.sources == [str(oom), str(LOGS / "nccl-watchdog-timeout.log")]


def test_paths_may_be_pathlib_paths_files_and_folders_alike(tmp_path):
    """The public API takes what Python code holds: a pathlib.Path (a file, or a job folder) reads as its str."""
    job = tmp_path / "job"
    job.mkdir()
    (job / "rank5.log").write_bytes((LOGS / "cuda-oom.log").read_bytes())
    for given in (job / "rank5.log", job):
        diagnosis = diagnose_paths([given])
        assert [f.cause for f in diagnosis.findings] == ["out-of-memory"]
        assert diagnosis.sources == [str(job / "rank5.log")]


def test_stdin_is_read_for_dash(monkeypatch):
    data = (LOGS / "cann-lib-not-found.log").read_bytes()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BufferedReader(io.BytesIO(data))))
    diagnosis = diagnose_paths(["-"])
    assert ids(diagnosis) == ["cann-lib-not-found"]
    assert finding(diagnosis, "cann-lib-not-found").extracted["library"] == "libascendcl.so"


def test_missing_files_are_named(tmp_path):
    with pytest.raises(LogUnreadable) as err:
        diagnose_paths([str(tmp_path / "nope.log")])
    assert "nope.log" in str(err.value) and err.value.exit_code == 3


def test_a_cut_gzip_keeps_the_findings_before_the_cut_and_says_where_it_ends(tmp_path):
    broken = tmp_path / "cut.log.gz"
    text = (LOGS / "cuda-oom.log").read_bytes() + b"".join(b"step %d loss 1.0\n" % n for n in range(200000))
    packed = gzip.compress(text)
    broken.write_bytes(packed[: len(packed) // 2])
    diagnosis = diagnose_paths([str(broken)])
    assert ids(diagnosis) == ["cuda-oom"] and diagnosis.exit_code == 1
    assert len(diagnosis.truncated) == 1 and "cut.log.gz" in diagnosis.truncated[0]
    assert "ends at line" in diagnosis.truncated[0]
    assert diagnosis.to_dict()["truncated"] == diagnosis.truncated
    # Nothing found before the cut: the log could not be read to its end, which is bad input (exit 3).
    quiet = tmp_path / "quiet.log.gz"
    packed = gzip.compress(b"".join(b"step %d loss 1.0\n" % n for n in range(200000)))
    quiet.write_bytes(packed[: len(packed) // 2])
    diagnosis = diagnose_paths([str(quiet)])
    assert diagnosis.findings == [] and diagnosis.exit_code == 3 and diagnosis.truncated


@pytest.mark.slow  # a log of hundreds of MB streamed
def test_large_log_is_streamed_in_bounded_memory(tmp_path):
    big = tmp_path / "big.log"
    healthy = (LOGS / "healthy" / "training-loop.log").read_text()
    block = healthy * 200
    with big.open("w") as out:
        for _ in range(40):  # about 40 MB
            out.write(block)
        out.write((LOGS / "cuda-oom.log").read_text())
        out.write("x" * (3 * 1024 * 1024) + "\n")  # a pathological 3 MB line must not become one string
    size = big.stat().st_size
    load_catalog()  # compiled once, outside the measurement
    tracemalloc.start()
    diagnosis = diagnose_paths([str(big)])
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert ids(diagnosis) == ["cuda-oom"]
    # A few blocks (the block read, the line carried over, the slice handed on), whatever the log's size.
    assert peak < 6 * BLOCK_BYTES, f"peak {peak} bytes for a {size} byte log"


# ---- rendering and the task ----

def test_render_to_string():
    from rich.console import Console

    console = Console(width=120, record=True, file=io.StringIO())
    console.print(render_diagnosis(diagnose_paths([str(LOGS / "mixed" / "multirank-oom-then-timeout.log")])))
    text = console.export_text()
    assert "out-of-memory" in text and "root cause" in text and "consequence" in text
    console.print(render_diagnosis(diagnose_lines(["all good"])))
    assert "No failure found" in console.export_text()


def _run_task(argv, capsys):
    from invoke import Collection, Program

    from accelstack.tasks.diagnose import diagnose

    program = Program(namespace=Collection(diagnose), binary="inv")
    code = 0  # invoke only calls sys.exit for a non-zero code
    try:
        program.run(["inv", *argv])
    except SystemExit as exited:
        code = int(exited.code or 0)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_task_json_several_logs(capsys):
    code, out, _ = _run_task(["diagnose", "--log", str(LOGS / "cuda-oom.log"),
                              "-l", str(LOGS / "nccl-watchdog-timeout.log"), "--json"], capsys)
    assert code == 1
    document = json.loads(out)
    assert [f["cause"] for f in document["findings"]] == ["out-of-memory", "collective-timeout"]
    assert "confirm" not in document


def test_task_host_runs_the_confirming_validators(capsys, tmp_path, monkeypatch):
    # --host runs the validators that confirm each finding for real, here on the embedded default.
    monkeypatch.setenv("ACCELSTACK_RUNS", str(tmp_path))
    code, out, _ = _run_task(["diagnose", "--log", str(LOGS / "cuda-oom.log"), "--json", "--host", "localhost"],
                             capsys)
    assert code == 1
    confirm = json.loads(out)["confirm"]
    assert confirm["host"] == "localhost" and confirm["validators"] == ["memory"] and confirm["checks"] == ["memory"]
    checks = {r["check"]: r["status"] for r in confirm["records"]}
    assert {"memory.shm", "memory.memlock"} <= set(checks)
    assert all(r["host"] == "localhost" for r in confirm["records"])


def test_task_host_not_in_the_inventory_exits_3(capsys):
    code, _, err = _run_task(["diagnose", "--log", str(LOGS / "cuda-oom.log"), "--host", "node07"], capsys)
    assert code == 3 and "node07" in err


def test_task_exit_codes(capsys, tmp_path):
    code, out, _ = _run_task(["diagnose", "--log", str(LOGS / "healthy" / "nccl-init.log")], capsys)
    assert code == 0 and "No failure found" in out
    code, _, err = _run_task(["diagnose", "--log", str(tmp_path / "missing.log")], capsys)
    assert code == 3 and "missing.log" in err


def test_positional_logs_can_be_spread_into_flags():
    from accelstack.tasks.diagnose import spread_positional_logs

    argv = ["inv", "diagnose", "a.log", "b.log.gz", "--json", "--host", "n1", "-", "-o", "n2"]
    assert spread_positional_logs(argv) == ["inv", "diagnose", "--log", "a.log", "--log", "b.log.gz", "--json",
                                            "--host", "n1", "--log", "-", "-o", "n2"]


def test_every_confirming_validator_is_a_real_check():
    # `diagnose --host` runs the checks declared to confirm each cause; a catalog entry naming a check validate
    # does not have would name nothing to run. (tests/test_checks.py holds both directions.)
    from accelstack.validate import load_registry
    from accelstack.validate.registry import all_checks

    checks = set(all_checks(load_registry()))
    for signature in load_catalog().signatures:
        assert signature.confirm_with is None or signature.confirm_with in checks, signature.id
