"""Diagnosis of whole jobs (folders, archives, ranks, hosts, time order), both readers, the failure classes added
for issue 15 and the `diagnose` command line under `inv` and the console script."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from accelstack.diagnose import diagnose_lines, diagnose_paths, host_of, load_catalog, timestamp_of
from accelstack.diagnose.reader import GREP_ENV

from .helpers import run_program

LOGS = Path(__file__).parent / "data" / "logs"
H100 = LOGS / "h100"
ROOT = Path(__file__).resolve().parents[1]


def ids(diagnosis):
    return [finding.id for finding in diagnosis.findings]


def causes(diagnosis):
    return [finding.cause for finding in diagnosis.findings]


def finding(diagnosis, sig_id):
    return next(f for f in diagnosis.findings if f.id == sig_id)


# ---- the two readers agree ----

ALL_LOGS = sorted(str(p.relative_to(LOGS)) for p in LOGS.rglob("*.log"))


@pytest.mark.parametrize("name", ALL_LOGS)
def test_grep_and_the_block_scan_find_the_same(name, monkeypatch):
    with_grep = diagnose_paths([str(LOGS / name)]).to_dict()
    monkeypatch.setenv(GREP_ENV, "0")
    without = diagnose_paths([str(LOGS / name)]).to_dict()
    assert with_grep == without


def test_the_prefilter_never_hides_a_line_a_pattern_matches():
    # Every line of every excerpt that any pattern matches holds one of the catalog's anchors.
    catalog = load_catalog()
    patterns = [p for sig in catalog.signatures for p in (*sig.patterns, *sig.extract_patterns)]
    patterns += [p for pats in catalog.contexts.values() for p in pats]
    checked = 0
    for path in LOGS.rglob("*.log"):
        for line in path.read_text(errors="replace").splitlines():
            if any(p.search(line) for p in patterns):
                checked += 1
                assert any(anchor in line for anchor in catalog.anchors), (path, line)
    assert checked > 50


def test_block_scan_numbers_lines_across_blocks(tmp_path, monkeypatch):
    from accelstack.diagnose import reader

    monkeypatch.setattr(reader, "BLOCK_BYTES", 4096)
    monkeypatch.setenv(GREP_ENV, "0")
    lines = [f"step {n} loss 1.0" for n in range(5000)]
    lines[3001] = "[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."
    (tmp_path / "a.log").write_text("\n".join(lines) + "\n")
    found = diagnose_paths([str(tmp_path / "a.log")]).findings[0]
    assert found.first_line.lineno == 3002 and found.first_line.rank == 3


# ---- timestamps and hosts ----

@pytest.mark.parametrize(("line", "stamp"), [
    ("[rank3]:[E1123 10:30:00.123456 ProcessGroupNCCL.cpp:616] x", "E1123 10:30:00.123456"),
    ("E1123 10:30:00.651000 1251 torch/distributed/elastic/multiprocessing/api.py:986] failed", "E1123 10:30:00.651000"),
    ("[2026-11-23 07:09:11] vm:1278:1278 [0] bootstrap.cc:114 NCCL WARN x", "2026-11-23 07:09:11"),
    ("2025-03-11T09:12:40.112Z rank 3 died", "2025-03-11T09:12:40.112"),
    ("EI0006: [PID: 1292363] 2025-04-08-18:07:20.444.436 Getting socket times out", "2025-04-08-18:07:20.444"),
    ("node1:2811:2811 [0] NCCL INFO no time here", None),
])
def test_timestamps(line, stamp):
    got = timestamp_of(line)
    assert (got[1] if got else None) == stamp


def test_glog_and_iso_times_compare():
    glog = timestamp_of("[rank5]:[E1123 10:29:00.000000 x] y")
    iso = timestamp_of("2026-11-23 10:39:00,000 rank 0 timed out")
    assert glog and iso and glog[0] < iso[0]


@pytest.mark.parametrize(("line", "host"), [
    ("gpu-node01:31001:31093 [0] NCCL INFO Init COMPLETE", "gpu-node01"),
    ("[2026-11-23 07:09:11] vm:1278:1278 [0] bootstrap.cc:114 NCCL WARN Bootstrap : no socket interface found", "vm"),
    ("[rank1]: ins-7df6:3018451:3018451 [0] enqueue.cc:1085 NCCL WARN Cuda failure 'out of memory'", "ins-7df6"),
    ("[rank1]: step 3 loss 1.0", None),
])
def test_hosts_from_the_nccl_prefix(line, host):
    assert host_of(line) == host


# ---- whole jobs ----

OOM = ("[rank5]:[E1123 10:29:41.000000 CUDACachingAllocator.cpp:1] torch.OutOfMemoryError: CUDA out of memory. "
       "Tried to allocate 2.50 GiB. GPU 5 has a total capacity of 79.10 GiB of which 1.21 GiB is free.")
TIMEOUT = ("[rank{r}]:[E1123 10:39:{s:02d}.000000 ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog caught collective "
           "operation timeout: WorkNCCL(SeqNum=88, OpType=ALLREDUCE, NumelIn=8, NumelOut=8, Timeout(ms)=600000) "
           "ran for 600011 milliseconds before timing out.")
PEER = ("[rank0]:[E1123 10:39:00.000000 x] node1:2811:2811 [0] misc/socket.cc:49 NCCL WARN socketProgress: "
        "Connection closed by remote peer node2<40021>")


def _job(root: Path) -> Path:
    """8 ranks on 2 nodes: rank 5 (node02, gzipped, read after ranks 0-4) runs out of memory at 10:29, every
    other rank times out at 10:39; rank 0's log also has the peer's connection drop, read first."""
    for rank in range(8):
        node = root / ("node01" if rank < 4 else "node02")
        node.mkdir(parents=True, exist_ok=True)
        lines = [f"[rank{rank}]: step {n} loss 1.0" for n in range(50)]
        if rank == 5:
            lines.append(OOM)
            (node / f"rank{rank}.log.gz").write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
            continue
        if rank == 0:
            lines.append(PEER)
        lines.append(TIMEOUT.format(r=rank, s=rank))
        (node / f"rank{rank}.log").write_text("\n".join(lines) + "\n")
    # A rotated log and a file that is not a log at all.
    (root / "node01" / "rank1.log.1").write_text("[rank1]: step 0 loss 2.0\n")
    (root / "node01" / "model.pt").write_bytes(b"\x00" * 1000)
    return root


def _check_job(diagnosis, label):
    assert causes(diagnosis)[:2] == ["out-of-memory", "peer-exited"] and "collective-timeout" in causes(diagnosis)
    oom = diagnosis.findings[0]
    assert oom.first_line.rank == 5 and oom.first_line.host == "node02"
    assert oom.first_line.path.endswith("node02/rank5.log.gz") and label in oom.first_line.path
    assert oom.earliest is not None and oom.earliest.time == "E1123 10:29:41.000000"
    timeout = finding(diagnosis, "nccl-watchdog-timeout")
    assert timeout.extracted["ranks"] == [0, 1, 2, 3, 4, 6, 7]
    assert timeout.hosts == ["node01", "node02"] and len(timeout.files) == 7  # every file, not only the evidence
    assert timeout.consequence_of == "out-of-memory"
    # Rank 0's log is read first, but the OOM happened first: the peer's drop is its consequence.
    peer = finding(diagnosis, "nccl-peer-closed")
    assert peer.first_seq < oom.first_seq and peer.consequence_of == "out-of-memory"
    assert peer.first_line.host == "node1"  # the NCCL prefix wins over the folder
    first = diagnosis.first_failure
    assert first is not None and first.first_line.rank == 5
    document = diagnosis.to_dict()
    assert document["first_failure"]["rank"] == 5 and document["first_failure"]["host"] == "node02"
    assert not any("model.pt" in source for source in diagnosis.sources)
    assert any(source.endswith("rank1.log.1") for source in diagnosis.sources)


def test_a_job_folder_names_the_rank_that_failed_first(tmp_path):
    root = _job(tmp_path / "job")
    _check_job(diagnose_paths([str(root)]), str(root))


def test_a_tar_gz_of_the_job_folder_reads_the_same(tmp_path):
    root = _job(tmp_path / "job")
    archive = tmp_path / "job.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(root, arcname="job")
    _check_job(diagnose_paths([str(archive)]), str(archive))


def test_a_bad_link_in_a_job_folder_is_skipped_and_the_other_logs_are_read(tmp_path):
    root = _job(tmp_path / "job")
    (root / "node01" / "latest.log").symlink_to("gone.log")  # dangling
    (root / "node01" / "a.log").symlink_to("b.log")  # a loop of links
    (root / "node01" / "b.log").symlink_to("a.log")
    (root / "node02" / "self").symlink_to(".")  # a folder loop: never walked into
    (root / "node02" / "rank5-copy.log").symlink_to("rank5.log.gz")  # a good link is read
    diagnosis = diagnose_paths([str(root)])
    assert causes(diagnosis)[0] == "out-of-memory" and diagnosis.exit_code == 1
    assert any(source.endswith("rank5-copy.log") for source in diagnosis.sources)
    skipped = "\n".join(diagnosis.skipped)
    assert "latest.log: a symbolic link to 'gone.log', which does not exist" in skipped
    assert "a.log: a loop of symbolic links" in skipped and "b.log: a loop of symbolic links" in skipped
    assert len(diagnosis.skipped) == 3 and diagnosis.to_dict()["skipped"] == diagnosis.skipped


def test_cli_names_a_bad_link_and_diagnoses_the_rest(tmp_path):
    root = _job(tmp_path / "job")
    (root / "node01" / "latest.log").symlink_to("gone.log")
    done = run_program("accelstack", "diagnose", str(root), "--json")
    assert done.returncode == 1 and json.loads(done.stdout)["first"]["cause"] == "out-of-memory"
    assert "latest.log: a symbolic link to 'gone.log'" in done.stderr and "Traceback" not in done.stderr


def test_a_cut_job_archive_is_read_up_to_the_cut(tmp_path):
    # A job archive cut short (copied off a node that died) still holds the logs before the cut: they are read
    # and the cut is named, as for a cut gzip log; exit 1 with what was found, 3 when nothing was.
    root = _job(tmp_path / "job")
    archive = tmp_path / "job.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        for name in ("node02/rank5.log.gz", "node01/rank0.log", "node01/rank2.log"):
            tar.add(root / name, arcname=f"job/{name}")
        big = tmp_path / "big.log"
        big.write_text("".join(f"[rank9]: step {n} loss {n * 7919 % 1000}\n" for n in range(200_000)))
        tar.add(big, arcname="job/node03/rank9.log")
    data = archive.read_bytes()
    cut = tmp_path / "cut.tar.gz"
    cut.write_bytes(data[: len(data) * 3 // 4])
    diagnosis = diagnose_paths([str(cut)])
    assert causes(diagnosis)[0] == "out-of-memory" and diagnosis.exit_code == 1
    assert any("the archive ends early or is corrupt" in note for note in diagnosis.truncated)
    done = run_program("accelstack", "diagnose", str(cut))
    assert done.returncode == 1 and "archive ends" in done.stderr and "Traceback" not in done.stderr
    # Cut before the first log ends: nothing to diagnose, one line, exit 3.
    early = tmp_path / "early.tar.gz"
    early.write_bytes(data[:40])
    done = run_program("accelstack", "diagnose", str(early))
    assert done.returncode == 3 and "Traceback" not in done.stderr and "early.tar.gz" in done.stderr


def test_a_folder_without_logs_is_bad_input(tmp_path):
    from accelstack.diagnose import LogUnreadable

    (tmp_path / "model.pt").write_bytes(b"x")
    with pytest.raises(LogUnreadable) as err:
        diagnose_paths([str(tmp_path)])
    assert err.value.exit_code == 3 and str(tmp_path) in str(err.value)


# ---- failure classes ----

@pytest.mark.parametrize(("name", "expected"), [
    ("h100/ordinal.log", ["cuda-invalid-device-ordinal"]),
    ("h100/cvd5.log", ["no-cuda-gpus"]),
    ("h100/oom.log", ["cuda-oom"]),
    ("h100/samegpu.log", ["duplicate-gpu", "nccl-error"]),
    ("h100/badifname.log", ["nccl-no-socket-interface", "nccl-error"]),
    ("h100/goodrun.log", []),
])
def test_real_h100_captures(name, expected):
    assert ids(diagnose_paths([str(LOGS / name)])) == expected


def test_device_mapping_remedies_name_the_visible_device_lists():
    catalog = load_catalog()
    assert "CUDA_VISIBLE_DEVICES" in catalog.by_id("no-cuda-gpus").remedy
    assert "--nproc_per_node" in catalog.by_id("cuda-invalid-device-ordinal").remedy
    assert "ASCEND_RT_VISIBLE_DEVICES" in catalog.by_id("npu-set-device-failed").remedy
    visible = diagnose_paths([str(LOGS / "ascend-visible-devices-range.log")])
    assert ids(visible) == ["npu-set-device-failed"] and visible.findings[0].extracted["visible"] == 4


def test_nccl_system_error_names_the_warn_before_it():
    diagnosis = diagnose_paths([str(LOGS / "mixed" / "nccl-system-error-shm.log")])
    # NCCL's WARN line is the error; the nccl table names its cause: /dev/shm, ahead of NCCL's generic result.
    assert causes(diagnosis) == ["shm-too-small", "nccl-internal"]
    shm, generic = diagnosis.findings
    assert shm.first_line.lineno == 1 and shm.actor == "config" and shm.layer == "table"
    assert "shared memory segment" in generic.extracted["nccl_warn"]
    assert "Error while creating shared memory segment" in generic.explanation
    assert generic.evidence[0].lineno == 1


def test_frameworks_wrapping_nccl_errors_are_read():
    wrapped = diagnose_paths([str(LOGS / "mixed" / "vllm-nccl-wrapped.log")])
    assert ids(wrapped) == ["nccl-system-error"]
    assert wrapped.findings[0].extracted["result"] == "unhandled system error"
    assert wrapped.findings[0].extracted["nccl_code"] == 2
    old_torch = diagnose_lines(["RuntimeError: NCCL Error 2: unhandled system error"])
    assert old_torch.findings[0].extracted["nccl_code"] == 2


def test_a_transport_probe_is_no_failure_but_a_forced_missing_transport_is_rdma():
    assert diagnose_paths([str(LOGS / "healthy" / "nccl-ib-probe-fallback.log")]).findings == []
    forced = diagnose_paths([str(LOGS / "nccl-forced-net-missing.log")])
    assert causes(forced)[0] == "rdma" and forced.findings[0].extracted["forced_net"] == "IB"


def test_an_xid_of_the_program_next_to_a_device_assert_is_the_programs_bug():
    program = diagnose_paths([str(LOGS / "xid-program-fault.log")])
    assert causes(program) == ["device-assert", "device-assert"]
    assert program.findings[0].id == "xid-program-fault" and "xid-warn" not in causes(program)
    assert "CUDA_LAUNCH_BLOCKING" in program.findings[0].remedy
    # Without the assertion the same Xid is still the application's fault (NVIDIA's Xid documentation): the
    # program's owner acts, the node is not drained for it.
    alone = diagnose_paths([str(LOGS / "xid-application.log")])
    assert ids(alone) == ["xid-application"] and causes(alone) == ["device-assert"]
    assert alone.findings[0].actor == "job"
    # A hardware Xid keeps its severity next to an assertion.
    fatal = diagnose_lines(["NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=python, GPU has fallen off the bus.",
                            "RuntimeError: CUDA error: device-side assert triggered"])
    assert causes(fatal)[0] == "xid-fatal"


def test_the_heartbeat_after_a_collective_timeout_comes_second():
    diagnosis = diagnose_paths([str(LOGS / "mixed" / "timeout-then-heartbeat.log")])
    assert ids(diagnosis) == ["nccl-watchdog-timeout", "nccl-watchdog-stuck"]
    assert diagnosis.findings[1].consequence_of == "collective-timeout"
    alone = diagnose_lines(diagnose_paths([str(LOGS / "nccl-watchdog-stuck.log")]).findings[0].evidence[0].text
                           .splitlines())
    assert causes(alone) == ["watchdog-stuck"]


def test_ascend_codes_known_unknown_and_wrappers():
    # EL0003 (the driver refused an argument) is in the driver's table since the taxonomies were completed.
    with_known = diagnose_paths([str(LOGS / "npu-set-device-failed.log")])
    assert ids(with_known) == ["npu-set-device-failed", "ascend-EL0003"]
    assert with_known.findings[1].first_line.lineno == 9
    with_unknown = diagnose_lines(["RuntimeError: NPU function error: aclrtSetDevice, error code is 507033",
                                   "EK0987: [PID: 528886] 2025-06-24-11:20:41.662.506 Something failed."])
    unknown = next(f for f in with_unknown.findings if f.id == "ascend-unknown-code")
    assert unknown.extracted["codes"] == ["EK0987"]
    assert unknown.first_line.lineno == 2 and "EK0987" in unknown.first_line.text
    # CANN numbers 0000-8999 as errors the user can fix, 9000-9999 as its internal ones: an unlisted code of the
    # first kind is the launch's (no host check for it), one of the second still asks the node's checks.
    assert (unknown.cause, unknown.actor, unknown.confirm_with) == ("unclassified", "config", None)
    internal = diagnose_lines(["RuntimeError: NPU function error: aclrtSetDevice, error code is 507033",
                               "EK9987: [PID: 528886] 2025-06-24-11:20:41.662.506 Something failed."])
    inner = next(f for f in internal.findings if f.id == "ascend-unknown-code")
    assert (inner.cause, inner.actor) == ("unknown-error-code", "node") and inner.confirm_with
    both = diagnose_lines(["EK0987: [PID: 1] 2025-06-24-11:20:41.662.506 Something failed.",
                           "EK9987: [PID: 1] 2025-06-24-11:20:41.662.507 Something else failed."])
    assert [(f.cause, f.actor) for f in both.findings if f.id == "ascend-unknown-code"] == [("unknown-error-code",
                                                                                            "node")]
    known = diagnose_lines(["EE1001: [PID: 42] 2025-11-18-09:33:13.673.064 The argument is invalid."])
    assert causes(known) == ["device-mapping"] and known.findings[0].id == "ascend-EE1001"
    wrapper_alone = diagnose_lines(["[ERROR] 2025-06-24-11:20:49 (PID:1, Device:0, RankID:0) ERR99999 UNKNOWN"])
    assert causes(wrapper_alone) == ["unknown-error-code"]
    # A wrapper code next to a real finding stays quiet; the signature already explains the line.
    assert ids(diagnose_paths([str(LOGS / "hccl-symbol-missing.log")])) == ["hccl-symbol-missing"]
    # Not a code: hex, words, numbers.
    assert diagnose_lines(["EPOCH 12000 EIGEN E0 0xE30001 ERROR12345"]).findings == []


@pytest.mark.parametrize("name", ["nccl-cuda-oom.log", "cuda-library-alloc-failed.log", "cuda-oom.log",
                                  "npu-oom.log"])
def test_every_allocation_failure_is_out_of_memory_ahead_of_its_peers_errors(name, tmp_path):
    peer = tmp_path / "rank0.log"
    peer.write_text((LOGS / "nccl-peer-closed.log").read_text())
    diagnosis = diagnose_paths([str(peer), str(LOGS / name)])
    assert causes(diagnosis)[0] == "out-of-memory"
    assert finding(diagnosis, "nccl-peer-closed").cause == "peer-exited"


# ---- the command line ----

@pytest.mark.slow  # seven runs of the command line
@pytest.mark.parametrize("runner", ["accelstack", "inv"])
def test_cli_one_positional_log_repeated_flags_and_help(runner):
    oom, timeout = str(LOGS / "cuda-oom.log"), str(LOGS / "nccl-watchdog-timeout.log")
    done = run_program(runner, "diagnose", oom, "--json")
    assert done.returncode == 1 and json.loads(done.stdout)["findings"][0]["cause"] == "out-of-memory"
    done = run_program(runner, "diagnose", oom, "-l", timeout, "--json")
    assert [f["cause"] for f in json.loads(done.stdout)["findings"]] == ["out-of-memory", "collective-timeout"]
    done = run_program(runner, "diagnose", "--log", oom, "--log", timeout, "--json")
    assert done.returncode == 1 and len(json.loads(done.stdout)["findings"]) == 2
    done = run_program(runner, "diagnose", str(LOGS / "healthy"))
    assert done.returncode == 0 and "No failure found" in done.stdout
    for flag in ("-h", "--help"):
        done = run_program(runner, "diagnose", flag)
        assert done.returncode == 0 and done.stdout.startswith("Usage:") and "--host" in done.stdout


def test_cli_several_positional_logs_under_the_console_script():
    done = run_program("accelstack", "diagnose", str(LOGS / "cuda-oom.log"), str(LOGS / "nccl-watchdog-timeout.log"),
                       "--json")
    assert done.returncode == 1 and len(json.loads(done.stdout)["findings"]) == 2


def test_cli_cut_gzip_warns_with_where_it_ends(tmp_path):
    broken = tmp_path / "cut.log.gz"
    packed = gzip.compress((LOGS / "cuda-oom.log").read_bytes() + b"step 1\n" * 400000)
    broken.write_bytes(packed[: len(packed) // 2])
    done = run_program("accelstack", "diagnose", str(broken), "--json")
    assert done.returncode == 1 and json.loads(done.stdout)["findings"][0]["cause"] == "out-of-memory"
    assert "warning:" in done.stderr and "ends at line" in done.stderr


def test_gzip_with_several_members_and_a_high_ratio_is_read_whole(tmp_path):
    # `cat a.gz b.gz` (logrotate's delaycompress and friends) is one valid gzip file of two members.
    first = (LOGS / "healthy" / "training-loop.log").read_bytes() * 2000  # compresses far more than 64:1
    second = (LOGS / "cuda-oom.log").read_bytes()
    log = tmp_path / "joined.log.gz"
    log.write_bytes(gzip.compress(first) + gzip.compress(second))
    diagnosis = diagnose_paths([str(log)])
    assert ids(diagnosis) == ["cuda-oom"] and not diagnosis.truncated
    assert diagnosis.lines_read == (first + second).count(b"\n")
    assert diagnosis.findings[0].first_line.lineno == first.count(b"\n") + second[:second.index(b"out of memory")
                                                                                  ].count(b"\n") + 1


def test_render_names_the_first_failure_and_a_cut_log(tmp_path):
    import io

    from rich.console import Console

    from accelstack.diagnose import render_diagnosis

    root = _job(tmp_path / "job")
    cut = root / "node01" / "rank9.log.gz"
    packed = gzip.compress(b"step 1 loss 1.0\n" * 200000)
    cut.write_bytes(packed[: len(packed) // 2])
    console = Console(width=200, record=True, file=io.StringIO())
    console.print(render_diagnosis(diagnose_paths([str(root)])))
    text = console.export_text()
    assert "first failure: out-of-memory rank 5 on node02 at E1123 10:29:41.000000" in text
    assert "cut short:" in text and "rank9.log.gz" in text and "[node02]" in text


@pytest.mark.slow  # a benchmark's whole tiny round
def test_the_benchmark_runs_tiny_and_every_reader_agrees():
    # CI smoke run of bench/diagnose.py: a 4 MB log, no figure asserted; the bench itself exits non-zero when
    # one reader finds something else than another.
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "diagnose.py"), "--tiny"], capture_output=True,
                          text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    assert done.returncode == 0, done.stderr
    assert "findings: out-of-memory, collective-timeout" in done.stdout and "grep -E, same anchors" in done.stdout


def test_the_npus_allocation_failure_is_out_of_memory_ahead_of_the_set_device_it_broke():
    diagnosis = diagnose_paths([str(LOGS / "npu-el0004-set-device.log")])
    assert causes(diagnosis) == ["out-of-memory", "device-mapping"]
    assert diagnosis.findings[0].id == "ascend-EL0004" and diagnosis.findings[0].first_line.lineno == 2
    # A generic code next to a specific finding stays quiet; alone it is reported, never dropped.
    assert causes(diagnose_lines(["EH9999: Inner Error!", "NPU out of memory. Tried to allocate 2.00 GiB"])) == [
        "out-of-memory"]
    assert causes(diagnose_lines(["EH9999: Inner Error!"])) == ["unknown-error-code"]


def test_device_mapping_shows_the_visible_devices_the_log_printed():
    assert finding(diagnose_paths([str(H100 / "cvd5.log")]), "no-cuda-gpus").extracted["cuda_visible_devices"] == 5
    lines = ["torchrun --nproc_per_node 8 train.py", "ASCEND_RT_VISIBLE_DEVICES=0,1,2,3",
             "RuntimeError: Initialize:torch_npu/csrc/core/npu/sys_ctrl/npu_sys_ctrl.cpp:146 NPU function error: "
             "c10_npu::SetDevice(device_id_), error code is 507033"]
    extracted = diagnose_lines(lines).findings[0].extracted
    assert extracted["ascend_rt_visible_devices"] == "0,1,2,3" and extracted["nproc_per_node"] == 8


def test_a_failing_grep_is_an_error_never_a_quiet_log(tmp_path, monkeypatch):
    from accelstack.diagnose import LogUnreadable, reader

    fake = tmp_path / "grep"
    fake.write_text("#!/bin/sh\necho 'grep: broken' >&2\nexit 2\n")
    fake.chmod(0o755)
    monkeypatch.setattr(reader, "grep_available", lambda: str(fake))
    with pytest.raises(LogUnreadable) as err:
        diagnose_paths([str(LOGS / "cuda-oom.log")])
    assert "grep failed (exit 2): grep: broken" in str(err.value) and err.value.exit_code == 3


def test_cli_without_a_log_is_one_line_and_exit_3_under_the_console_script():
    done = run_program("accelstack", "diagnose")
    assert done.returncode == 3 and "no log given" in done.stderr.splitlines()[0]
    # invoke's own parser answers first under `inv`: one line naming the missing LOG.
    done = run_program("inv", "diagnose")
    assert done.returncode != 0 and "positional arguments: 'log'" in done.stderr
