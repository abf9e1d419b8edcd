"""The collectives validator (collective_init, allreduce, allgather, and the multinode torchrun worker): every
outcome from the real script on the local torch, on the CPU (gloo) and on a fake accelerator whose backend, like
NCCL, refuses CPU tensors (tests/fake_accelerator); and the one-rank rule (no busbw) from validator to
thresholds and Prometheus, on the H100 capture (tests/data/h100/plain_torch_reference.txt).

No outcome here is ``skip``: the script has no case where the checks do not apply (a host without devices runs
them on the CPU with the stack's backend, and a backend that cannot start is ``error``).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from accelstack.report import render_prom
from accelstack.report.model import ReportData
from accelstack.results.baseline import baseline_from_records, find_regressions
from accelstack.results.records import Record
from accelstack.validate import busbw_gbps, judge, load_thresholds
from accelstack.validate.judge import judge_bandwidth

from .helpers import REPO, VALIDATORS, load_validator

SCRIPT = VALIDATORS / "collectives.py"
FAKE = Path(__file__).resolve().parent / "fake_accelerator"
H100 = Path(__file__).resolve().parent / "data" / "h100"
TINY = {"sizes": [4096, 65536], "iters": 4, "warmup": 1, "size_budget_s": 2.0, "deadline_s": 90}


def environment(fake: bool, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RANK", "LOCAL_", "WORLD_SIZE", "MASTER_"))}
    env.update(OMP_NUM_THREADS="1", GLOO_SOCKET_IFNAME="lo", **extra)
    if fake:
        # sitecustomize there loads the fake accelerator into this python, its spawned ranks and torchrun's workers
        env["PYTHONPATH"] = os.pathsep.join([str(FAKE), env.get("PYTHONPATH", "")])
    return env


def run_validator(config: dict[str, Any], *, fake: bool, **env: str) -> dict[str, dict[str, Any]]:
    proc = subprocess.run([sys.executable, str(SCRIPT), json.dumps(config)], capture_output=True, text=True,
                          timeout=150, env=environment(fake, **env), cwd=str(REPO))
    lines = [line for line in proc.stdout.splitlines() if line.startswith('{"checks"')]
    assert lines, (proc.returncode, proc.stdout[-2000:], proc.stderr[-3000:])
    return {c["check"]: c for c in json.loads(lines[-1])["checks"]}


def run_torchrun(config: dict[str, Any], nproc: int = 2, **env: str) -> tuple[int, dict[str, Any]]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    argv = [sys.executable, "-m", "torch.distributed.run", "--nnodes=1", f"--nproc-per-node={nproc}",
            "--master-addr=127.0.0.1", f"--master-port={port}", str(SCRIPT), json.dumps(dict(config, mode="cluster"))]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=150, env=environment(True, **env),
                          cwd=str(REPO))
    lines = [line for line in proc.stdout.splitlines() if line.startswith('{"checks"')]
    assert lines, (proc.returncode, proc.stdout[-2000:], proc.stderr[-3000:])
    return proc.returncode, json.loads(lines[-1])["checks"][0]


# ----- the device rule: every tensor a collective touches lives on the collective's device -----

@pytest.mark.slow  # real torch processes (gloo ranks): seconds each
def test_sweep_on_a_backend_that_refuses_cpu_tensors_passes_with_device_events() -> None:
    """The H100 failure ("No backend type associated with device type cpu" from the timing reduction) without a
    GPU: the ranks run on ``fakeaccel`` through the accelerator path (set_device, device_id, device events) and
    the ``refusing`` backend raises NCCL's own error for any CPU tensor. The code before the fix fails here with
    exactly the H100's message; see tests/fake_accelerator/fake_accelerator.py for why this is faithful."""
    checks = run_validator(dict(TINY, backend="refusing", vendor="nvidia"), fake=True)
    for name in ("allreduce", "allgather"):
        check = checks[name]
        assert check["status"] == "pass", (check["summary"], check["evidence"])
        assert check["metrics"]["ranks"] == 2
        assert check["evidence"]["device_id"] == "fakeaccel:0" and check["evidence"]["backend"] == "refusing"
        assert check["evidence"]["timing"].startswith("fakeaccel events")
        sizes = check["metrics"]["sizes"]
        assert [s["bytes"] for s in sizes] == [4096, 65536]
        assert all(1 <= s["iters"] <= TINY["iters"] and s["algbw_gbps"] > 0 for s in sizes)
    # nccl-tests' factors at n = 2: allreduce 2(n-1)/n = 1, allgather (n-1)/n = 1/2.
    for size in checks["allreduce"]["metrics"]["sizes"]:
        assert size["busbw_gbps"] == pytest.approx(size["algbw_gbps"], abs=1e-4)
    for size in checks["allgather"]["metrics"]["sizes"]:
        assert size["busbw_gbps"] == pytest.approx(size["algbw_gbps"] / 2, abs=1e-4)


@pytest.mark.slow  # real torch processes (gloo ranks): seconds each
def test_wrong_values_fail_the_collective_that_computed_them_and_name_the_rank() -> None:
    checks = run_validator(dict(TINY, backend="refusing"), fake=True, ACCELSTACK_FAKE_CORRUPT="allreduce:1,allgather:0")
    for name, rank in (("allreduce", 1), ("allgather", 0)):
        check = checks[name]
        assert check["status"] == "fail", (check["summary"], check["evidence"])
        assert f"wrong values on rank(s) {rank}" in check["summary"]
        assert {(w["collective"], w["rank"]) for w in check["evidence"]["wrong"]} == {(name, rank)}
        assert check["remedy"]


@pytest.mark.slow  # real torch processes (gloo ranks): seconds each
def test_collective_init_binds_the_device_and_passes() -> None:
    checks = run_validator({"mode": "init", "backend": "refusing", "deadline_s": 90}, fake=True)
    check = checks["collective_init"]
    assert check["status"] == "pass", check
    assert check["evidence"]["device_id"] == "fakeaccel:0" and check["metrics"]["ranks"] == 2


@pytest.mark.slow  # real torch processes (gloo ranks): seconds each
def test_collective_init_that_cannot_start_the_backend_fails() -> None:
    checks = run_validator({"mode": "init", "backend": "nosuchbackend", "nproc": 2, "deadline_s": 60}, fake=False)
    check = checks["collective_init"]
    assert check["status"] == "fail", check
    assert "nosuchbackend" in check["summary"] and check["evidence"]["rank_errors"]


@pytest.mark.slow  # real torch processes (gloo ranks): seconds each
def test_sweep_whose_ranks_cannot_run_is_an_error_for_both_checks() -> None:
    checks = run_validator(dict(TINY, backend="nosuchbackend", nproc=2), fake=False)
    for name in ("allreduce", "allgather"):
        assert checks[name]["status"] == "error", checks[name]
        assert "could not run" in checks[name]["summary"]


@pytest.mark.slow  # real torch processes (gloo ranks): seconds each
def test_collective_init_without_the_vendor_torch_plugin_is_an_error() -> None:
    """An Ascend host whose stack python has no torch_npu cannot run the check at all: error, not fail."""
    checks = run_validator({"mode": "init", "vendor": "ascend", "backend": "hccl"}, fake=False)
    check = checks["collective_init"]
    assert check["status"] == "error" and "torch_npu" in check["summary"], check


def test_bad_config_is_an_error_not_a_traceback() -> None:
    proc = subprocess.run([sys.executable, str(SCRIPT), "{not json"], capture_output=True, text=True, timeout=60,
                          env=environment(False))
    doc = json.loads(proc.stdout.strip().splitlines()[-1])
    assert {c["check"]: c["status"] for c in doc["checks"]} == {"allreduce": "error", "allgather": "error"}


# ----- one rank: algbw only -----

@pytest.mark.slow  # real torch processes (gloo ranks): seconds each
def test_one_rank_gloo_sweep_reports_algbw_and_no_busbw() -> None:
    checks = run_validator(dict(TINY, nproc=1), fake=False)
    for name in ("allreduce", "allgather"):
        check = checks[name]
        assert check["status"] == "pass", check
        assert check["metrics"]["ranks"] == 1
        assert "busbw_gbps" not in check["metrics"] and "not defined for one rank" in check["metrics"]["busbw_note"]
        assert all("busbw_gbps" not in s and s["algbw_gbps"] > 0 for s in check["metrics"]["sizes"])
        assert "busbw is not defined for one rank" in check["summary"]
        assert check["evidence"]["timing"].startswith("wall clock")


def h100_rows() -> list[dict[str, Any]]:
    text = (H100 / "plain_torch_reference.txt").read_text()
    line = next(line for line in text.splitlines() if line.startswith("PLAIN_JSON "))
    return list(json.loads(line[len("PLAIN_JSON "):])["nccl_rows"])


def test_h100_one_rank_rows_have_algbw_as_captured_and_no_busbw() -> None:
    script = load_validator("collectives")
    rows = h100_rows()
    assert [r["bytes"] for r in rows] == [1 << 20, 1 << 26, 1 << 30, 1 << 33]
    for captured in rows:
        row = script.size_row("allreduce", captured["bytes"], captured["allreduce_us_events"] / 1e6, 1, 50)
        assert row["algbw_gbps"] == pytest.approx(captured["allreduce_algbw_gbps_events"], rel=1e-3)
        assert "busbw_gbps" not in row
    # Two ranks or more: nccl-tests' factors, the same on both sides.
    for ranks in (2, 8):
        row = script.size_row("allreduce", 1 << 30, 0.01, ranks, 20)
        assert row["busbw_gbps"] == pytest.approx(busbw_gbps("allreduce", 1 << 30, 0.01, ranks), rel=1e-3)
    assert busbw_gbps("allreduce", 1 << 30, 0.01, 1) is None


def one_rank_record(check: str = "allreduce", **metrics: Any) -> Record:
    script = load_validator("collectives")
    top = h100_rows()[-1]
    rows = [script.size_row(check, top["bytes"], top["allreduce_us_events"] / 1e6, 1, 50)]
    doc = script.summarize(check, rows, 1, [], [])
    return Record(host="h100", check=check, status=doc["status"], summary=doc["summary"],
                  metrics=dict(doc["metrics"], **metrics), evidence=doc["evidence"])


def test_one_rank_record_reaches_no_threshold() -> None:
    record = one_rank_record()
    assert record.status == "pass" and "busbw_gbps" not in record.metrics
    judged = judge_bandwidth(record, accelerator="NVIDIA H100 80GB HBM3", scope="single-node",
                             thresholds=load_thresholds())
    assert judged.status == "pass" and "threshold_gbps" not in judged.metrics
    row = load_thresholds().lookup("H100", "single-node", "allreduce", 8)
    assert judge(None, row, 0.1) == ("pass", "not judged: busbw is not defined for one rank (algbw only)")


def test_one_rank_record_yields_no_prometheus_busbw_series() -> None:
    """The H100 run wrote ``accelstack_busbw_gbps{check="allreduce"} 181631``: neither a one-rank record as the
    validator now writes it nor one written before the rule (carrying that figure) gives a busbw series."""
    fixed = one_rank_record()
    old = one_rank_record(busbw_gbps=181631.0)
    two = Record(host="h100", check="allgather", status="pass", summary="ok",
                 metrics={"ranks": 2, "busbw_gbps": 750.5})
    text = render_prom(ReportData(run_id="r1", records=[fixed, old, two]))
    busbw = [line for line in text.splitlines() if line.startswith("accelstack_busbw_gbps")]
    assert busbw == ['accelstack_busbw_gbps{host="h100",check="allgather"} 750.5']
    assert 'accelstack_check_status{host="h100",check="allreduce"} 0' in text


def test_one_rank_record_holds_no_baseline_busbw_and_makes_no_regression() -> None:
    fixed = one_rank_record()
    assert baseline_from_records([fixed]).entry("h100", "allreduce").busbw_gbps is None  # type: ignore[union-attr]
    # Against a baseline taken before the rule (it may hold the H100's 181631 GB/s), a one-rank run is no drop.
    held = baseline_from_records([one_rank_record(busbw_gbps=181631.0)])
    assert find_regressions([fixed], held, busbw_drop_pct=10) == []


# ----- the multinode worker (torchrun) -----

@pytest.mark.slow  # real torch processes (gloo ranks): seconds each
def test_multinode_worker_passes_on_a_backend_that_refuses_cpu_tensors() -> None:
    status, check = run_torchrun(dict(TINY, backend="refusing"))
    assert status == 0 and check["status"] == "pass", (check["summary"], check["evidence"])
    assert check["metrics"]["ranks"] == 2 and check["evidence"]["device_id"] == "fakeaccel:0"
    assert all(s["busbw_gbps"] > 0 for s in check["metrics"]["sizes"])


@pytest.mark.slow  # real torch processes (gloo ranks): seconds each
def test_multinode_worker_fails_on_wrong_sums() -> None:
    status, check = run_torchrun(dict(TINY, backend="refusing"), ACCELSTACK_FAKE_CORRUPT="allreduce:1")
    assert check["status"] == "fail" and "rank(s) 1" in check["summary"], check


@pytest.mark.slow  # real torch processes (gloo ranks): seconds each
def test_multinode_worker_that_cannot_run_is_an_error() -> None:
    # One worker: with two, torchrun stops the other as soon as one exits non-zero, so whether local rank 0
    # prints before it is stopped is a race (the control side reads a silent node from its exit and stderr).
    status, check = run_torchrun(dict(TINY, backend="nosuchbackend"), nproc=1)
    assert status != 0 and check["status"] == "error", check
    assert "could not run" in check["summary"]


# ----- timing helpers (pure) -----

def test_iterations_fit_the_budget_and_agree_across_ranks() -> None:
    script = load_validator("collectives")
    assert script.iterations_within(5.0, 0.001, 50) == 50  # fast: every iteration asked for
    assert script.iterations_within(5.0, 0.5, 50) == 10  # slow link: what fits in the budget
    assert script.iterations_within(5.0, 60.0, 50) == 1  # never zero
    assert script.iterations_within(5.0, 0.0, 7) == 7
    assert script.busbw_factor("allreduce", 1) is None and script.busbw_factor("allgather", 1) is None
