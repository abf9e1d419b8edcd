#!/usr/bin/env python3
# Declared in accelstack/validate/checks/collectives.py (tier, python, timeout, config keys, judge, help).
"""Collectives: communicator init, and allreduce/allgather sweeps with algbw/busbw (nccl-tests' formulas).

One script, three uses, chosen by config["mode"]:
  init       spawn one rank per device (2 on CPU) and init_process_group with device_id, barrier, destroy;
  sweep      the same ranks run allreduce and allgather over config["sizes"], checking every result;
  (torchrun) under torchrun (RANK in the environment) it is the multi-node worker: same sweep, and local
             rank 0 of each node prints that node's JSON line.
The backend is hccl, nccl or gloo as the stack says: one code path, no torch.cuda on an NPU host. Every tensor
a collective touches lives on the collective's device (NCCL and HCCL refuse CPU tensors), the timing reduction
and the wrong-value flags included.
Timing follows nccl-tests: warm-up, then N back-to-back ops between two device events (CUDA events on NVIDIA,
the NPU's on Ascend, found through torch.get_device_module) or a wall clock around a device synchronize, the
max over ranks, algbw = S / t and busbw = algbw x factor. One rank has no bus bandwidth: busbw is left out.
Every rank watches a deadline and its parent, so a hung collective or a killed launcher orphans nothing.
"""

import ctypes
import importlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # _common.py lies beside this script
from _common import main_entry, vendor_module
from _common import record as result
from _holders import held, held_after, read_devices, skip_evidence, skip_summary, visible_indices

PR_SET_PDEATHSIG = 1
DEFAULT_SIZES = [1 << 16, 1 << 20, 1 << 24]


def busbw_factor(collective, ranks):
    """nccl-tests doc/PERFORMANCE.md: allreduce 2(n-1)/n, allgather (n-1)/n. ``None`` for one rank: with no
    other rank there is no bus, and the formula's 0 (allreduce) would be a figure that means nothing."""
    if ranks <= 1:
        return None
    if collective == "allreduce":
        return 2.0 * (ranks - 1) / ranks
    return float(ranks - 1) / ranks


ONE_RANK_NOTE = "busbw is not defined for one rank (nccl-tests' factor is 0): algbw only, no threshold applies"


def size_row(collective, nbytes, seconds, ranks, iters):
    """One size of the sweep: algbw = S / t (S the gathered total for allgather), busbw = algbw x factor, and no
    busbw at all for one rank."""
    algbw = nbytes / seconds / 1e9 if seconds > 0 else 0.0
    row = {"collective": collective, "bytes": nbytes, "iters": iters, "time_us": round(seconds * 1e6, 2),
           "algbw_gbps": round(algbw, 4)}
    factor = busbw_factor(collective, ranks)
    if factor is not None:
        row["busbw_gbps"] = round(algbw * factor, 4)
    return row


def guard(deadline_s):
    """Die with the launcher and at the deadline: a rank stuck in a collective must not outlive the run."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass
    if deadline_s:
        def expire():
            sys.stderr.write("accelstack: rank %s reached its deadline of %ss; exiting\n"
                             % (os.environ.get("RANK", "?"), deadline_s))
            sys.stderr.flush()
            os._exit(124)
        timer = threading.Timer(float(deadline_s), expire)
        timer.daemon = True
        timer.start()


def device_kind(vendor):
    import torch
    plugin = vendor_module(vendor)
    if plugin.TORCH_PLUGIN:
        importlib.import_module(plugin.TORCH_PLUGIN)  # registers the vendor's device type (torch_npu: npu)
    accel = getattr(torch, "accelerator", None)
    if accel is not None and hasattr(accel, "is_available") and accel.is_available():
        return accel.current_accelerator().type, int(accel.device_count())
    if plugin.TORCH_DEVICE and hasattr(torch, "get_device_module"):
        kind = plugin.TORCH_DEVICE
        module = torch.get_device_module(kind)
        if module.is_available():
            return kind, int(module.device_count())
    return "cpu", 0


def init_group(config, rank, world, local_rank, init_method=None):
    """init_process_group with device_id on accelerators; gloo on CPU takes none (there is no device to bind)."""
    import datetime

    import torch
    import torch.distributed as dist
    kind, _count = device_kind(config.get("vendor", "cpu"))
    backend = config.get("backend") or ("gloo" if kind == "cpu" else None)
    kwargs = {"backend": backend, "rank": rank, "world_size": world,
              "timeout": datetime.timedelta(seconds=float(config.get("collective_timeout_s", 120)))}
    if init_method:
        kwargs["init_method"] = init_method
    device = torch.device("cpu")
    bound = None
    if kind != "cpu":
        device = torch.device(kind, local_rank)
        torch.get_device_module(kind).set_device(local_rank)
        kwargs["device_id"] = device
        bound = str(device)
    started = time.perf_counter()
    dist.init_process_group(**kwargs)
    return device, bound, backend, time.perf_counter() - started


def sync(device):
    import torch
    if device.type != "cpu":
        torch.get_device_module(device.type).synchronize()


def device_clock(device):
    """``(start, stop)``: ``stop()`` returns the seconds since ``start()``. Device events where the device module
    has them (torch.cuda.Event, torch.npu.Event): they time the stream the collective completes on, with no
    host round trip per op. Otherwise a device synchronize on either side of a wall clock (CPU, or a device
    module without events)."""
    import torch
    state = {}
    events = None
    if device.type != "cpu":
        events = getattr(torch.get_device_module(device.type), "Event", None)

    if events is not None:
        def start():
            state["begin"], state["end"] = events(enable_timing=True), events(enable_timing=True)
            state["begin"].record()

        def stop():
            state["end"].record()
            state["end"].synchronize()
            return state["begin"].elapsed_time(state["end"]) / 1e3  # milliseconds
        return start, stop

    def start_wall():
        sync(device)
        state["begin"] = time.perf_counter()

    def stop_wall():
        sync(device)
        return time.perf_counter() - state["begin"]
    return start_wall, stop_wall


def timing_method(device):
    """How ``device_clock`` times this device, for the record's evidence."""
    import torch
    if device.type != "cpu" and getattr(torch.get_device_module(device.type), "Event", None) is not None:
        return "%s events around N back-to-back ops, max over ranks" % device.type
    return "wall clock around N back-to-back ops after a %s synchronize, max over ranks" % device.type


def slowest(seconds, device):
    """The max over ranks, reduced on the collective's device (NCCL and HCCL refuse a CPU tensor). float32:
    every backend reduces it, and 7 digits are plenty for a time."""
    import torch
    import torch.distributed as dist
    value = torch.full((1,), float(seconds), dtype=torch.float32, device=device)
    dist.all_reduce(value, op=dist.ReduceOp.MAX)
    return float(value.item())


def iterations_within(budget_s, one_op_s, iters):
    """How many ops fit the size's budget (at least 1, at most ``iters``), from the slowest rank's calibration:
    the same figure on every rank, so every rank runs the same number of collectives."""
    if one_op_s <= 0:
        return max(1, int(iters))
    return max(1, min(int(iters), int(budget_s / one_op_s)))


def timed(op, device, iters, budget_s, warmup=1):
    """Seconds per op as nccl-tests times it: ``warmup`` ops, a calibration op that sizes the run to the
    budget (a slow link must not turn a sweep into an hour), then N ops back to back between two device
    events (or a synchronize and the wall clock), the max over ranks. Returns (seconds per op, N)."""
    import torch.distributed as dist
    for _ in range(max(1, int(warmup))):
        op()
    start, stop = device_clock(device)
    start()
    op()
    one = slowest(stop(), device)
    count = iterations_within(budget_s, one, iters)
    dist.barrier()
    start()
    for _ in range(count):
        op()
    seconds = stop() / count
    return slowest(seconds, device), count


def sweep(config, device, collectives):
    """Per size: correctness on this rank (result known exactly), then timing. Returns rows and local errors."""
    import torch
    import torch.distributed as dist
    rank, world = dist.get_rank(), dist.get_world_size()
    sizes = [int(s) for s in (config.get("sizes") or DEFAULT_SIZES)]
    iters = int(config.get("iters", 20))
    warmup = int(config.get("warmup", 2))
    budget = float(config.get("size_budget_s", 5.0))
    rows, wrong = [], []
    expected_sum = world * (world + 1) / 2.0
    for collective in collectives:
        for size in sizes:
            if collective == "allreduce":
                count = max(1, size // 4)
                check = torch.full((count,), float(rank + 1), dtype=torch.float32, device=device)
                dist.all_reduce(check)
                bad = int((check != expected_sum).sum().item())
                del check  # at 8 GiB a second buffer matters: time with one
                work = torch.zeros(count, dtype=torch.float32, device=device)

                def op(work=work):
                    dist.all_reduce(work)
            else:
                # nccl-tests: S is the gathered total, sendcount x type x n.
                per_rank = max(1, size // 4 // world)
                mine = torch.full((per_rank,), float(rank + 1), dtype=torch.float32, device=device)
                out = torch.empty(per_rank * world, dtype=torch.float32, device=device)
                gather = getattr(dist, "all_gather_single", None) or getattr(dist, "all_gather_into_tensor", None)
                try:
                    gather(out, mine)
                except (RuntimeError, TypeError, AttributeError):
                    gather = None
                    parts = [torch.empty_like(mine) for _ in range(world)]
                    dist.all_gather(parts, mine)
                    out = torch.cat(parts)
                want = torch.arange(1, world + 1, dtype=torch.float32, device=device).repeat_interleave(per_rank)
                bad = int((out != want).sum().item())
                del want
                count = per_rank * world

                def op(mine=mine, out=out, gather=gather):
                    if gather is not None:
                        gather(out, mine)
                    else:
                        dist.all_gather([torch.empty_like(mine) for _ in range(world)], mine)
            if bad:
                wrong.append({"collective": collective, "bytes": size, "wrong_elements": bad, "rank": rank})
            seconds, done = timed(op, device, iters, budget, warmup)
            rows.append(size_row(collective, count * 4, seconds, world, done))
    # One flag per collective, so a rank that gathers wrong fails allgather and not allreduce too.
    mine = [1 if any(w["collective"] == c for w in wrong) else 0 for c in collectives]
    flags = torch.tensor(mine, dtype=torch.int32).to(device)
    every = [torch.zeros(len(collectives), dtype=torch.int32, device=device) for _ in range(world)]
    dist.all_gather(every, flags)
    seen = [f.cpu().tolist() for f in every]  # the result, read back to the host after the collective
    bad_ranks = dict((c, [r for r in range(world) if seen[r][i]]) for i, c in enumerate(collectives))
    return rows, wrong, bad_ranks


def summarize(collective, rows, world, bad_ranks, wrong, extra=None, evidence=None):
    mine = [r for r in rows if r["collective"] == collective]
    metrics = {"ranks": world, "sizes": mine}
    if mine:
        top = mine[-1]
        metrics.update(algbw_gbps=top["algbw_gbps"], at_bytes=top["bytes"])
        if "busbw_gbps" in top:
            metrics["busbw_gbps"] = top["busbw_gbps"]
        else:
            metrics["busbw_note"] = ONE_RANK_NOTE
    metrics.update(extra or {})
    if bad_ranks:
        mine_wrong = [w for w in wrong if w["collective"] == collective] or wrong
        return result(collective, "fail", "%s returned wrong values on rank(s) %s" % (
            collective, ",".join(map(str, bad_ranks))), metrics, dict(evidence or {}, wrong=mine_wrong),
            "a rank computes wrong sums: check that device's health (dmesg, vendor tool) and run the single-node "
            "check on its host")
    top = mine[-1] if mine else {}
    if "busbw_gbps" in top:
        figure = "busbw %.3f GB/s" % top["busbw_gbps"]
    else:
        figure = "algbw %.3f GB/s (busbw is not defined for one rank)" % top.get("algbw_gbps", 0.0)
    return result(collective, "pass", "%s over %d rank(s) correct; %s at %d bytes" % (
        collective, world, figure, top.get("bytes", 0)), metrics, evidence)


# ----- single node: spawned ranks -----

def rank_run(local_rank, world, config, init_method):
    """One rank's work (init, then a barrier or the sweep), as a dict: its device, timings, rows, or its error."""
    out = {"rank": local_rank}
    try:
        device, bound, backend, init_s = init_group(config, local_rank, world, local_rank, init_method)
        import torch.distributed as dist
        out.update(device=str(device), device_id=bound, backend=backend, init_s=round(init_s, 3))
        if config.get("mode") == "init":
            dist.barrier()
        else:
            rows, wrong, bad = sweep(config, device, config.get("collectives") or ["allreduce", "allgather"])
            out.update(rows=rows, wrong=wrong, bad_ranks=bad, timing=timing_method(device))
        dist.destroy_process_group()
    except BaseException:  # reported through the rank's result
        out["error"] = traceback.format_exc().splitlines()[-12:]
    return out


def spawned_rank(local_rank, world, config, init_method, outdir):
    guard(config.get("deadline_s"))
    out = rank_run(local_rank, world, config, init_method)
    with open(os.path.join(outdir, "rank%d.json" % local_rank), "w") as handle:
        json.dump(out, handle)


# The ranks' result files live in a folder of this process's own (its pid in the name): removed when the ranks are
# done, and a folder whose process is gone (killed at its time limit) is removed by the next run. A health check
# every few minutes must not leave a folder behind each time.
OUTDIR_PREFIX = "accelstack-coll-"


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process: alive
        return True
    return True


def remove_stale_outdirs(base=None, now=None):
    """Remove the rank folders of runs whose process is gone (and, from before folders carried a pid, any older
    than an hour). Returns the folders removed."""
    base = base or tempfile.gettempdir()
    now = time.time() if now is None else now
    removed = []
    try:
        names = os.listdir(base)
    except OSError:
        return removed
    for name in names:
        if not name.startswith(OUTDIR_PREFIX):
            continue
        path = os.path.join(base, name)
        owner = name[len(OUTDIR_PREFIX):].split("-", 1)[0]
        try:
            stale = not _alive(int(owner)) if owner.isdigit() else now - os.path.getmtime(path) > 3600
        except OSError:
            continue
        if stale and os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


def run_ranks(world, config, init_method, kind="cpu"):
    """Every rank's result and the spawn error (None when the ranks ran). One rank runs in this process (one torch
    import and one context fewer: a one-GPU node's whole quick tier is then one interpreter); more are started, one
    process per device, with their results in a folder of this run that is removed before returning. Ranks on a
    device are spawned (a fresh interpreter: a CUDA or NPU runtime does not survive a fork); gloo ranks on the CPU
    are forked from this process, which has torch imported already, so they do not import it again."""
    if world == 1:
        return [rank_run(0, 1, config, init_method)], None
    import torch.multiprocessing as mp
    remove_stale_outdirs()
    outdir = tempfile.mkdtemp(prefix="%s%d-" % (OUTDIR_PREFIX, os.getpid()))
    spawn_error = None
    try:
        try:
            mp.start_processes(spawned_rank, args=(world, config, init_method, outdir), nprocs=world, join=True,
                               start_method="fork" if kind == "cpu" else "spawn")
        except Exception as exc:  # a dead rank is the finding; its file says why
            spawn_error = "%s: %s" % (type(exc).__name__, str(exc).strip().splitlines()[-1] if str(exc) else "")
        ranks = []
        for r in range(world):
            path = os.path.join(outdir, "rank%d.json" % r)
            if os.path.exists(path):
                with open(path) as handle:
                    ranks.append(json.load(handle))
            else:
                ranks.append({"rank": r, "error": ["rank wrote no result (killed?)"]})
    finally:
        shutil.rmtree(outdir, ignore_errors=True)
    return ranks, spawn_error


def free_port():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return port


def error_line(lines):
    """The line of a rank's traceback that says what went wrong: the exception's own line (``torch.AcceleratorError:
    CUDA error: out of memory``), not the hints CUDA errors print after it."""
    text = [line.strip() for line in lines if line.strip()]
    for line in reversed(text):
        if re.match(r"^[A-Za-z_][\w.]*(Error|Exception|Interrupt|Exit)\b.*:", line) or line.startswith("RuntimeError"):
            return line
    return text[-1] if text else ""


def held_result(config, found, evidence=None):
    """The skip records of a run that left devices another process holds alone."""
    what = "the %s" % ("communicator init" if config.get("mode") == "init" else "collective sweep")
    ev = dict(evidence or {})
    ev.update(skip_evidence(found))
    return [result(c, "skip", skip_summary(what, found), {}, ev) for c in checks_for(config)]


def single_node(config):
    mode = config.get("mode", "sweep")
    vendor = config.get("vendor", "cpu")
    has_devices = vendor_module(vendor).HAS_DEVICES
    devices = None
    if has_devices:
        # Before torch is imported and a rank opens a device: is one of those the ranks would take someone else's
        # now (a job beside this check)? As many ranks as devices the tool lists, unless nproc says fewer.
        devices, _tool_error = read_devices(vendor)
        ranks = len(devices or []) or int(config.get("nproc") or 1)
        found = held(vendor, visible_indices(vendor, min(int(config.get("nproc") or ranks), ranks)),
                     devices=devices)
        if found:
            return held_result(config, found)
    kind, count = device_kind(vendor)
    world = int(config.get("nproc") or count or 2)
    if kind != "cpu" and count:
        world = min(world, count)
    init_method = "tcp://127.0.0.1:%d" % free_port()
    started = time.monotonic()
    ranks, spawn_error = run_ranks(world, config, init_method, kind)
    wall = round(time.monotonic() - started, 3)
    errors = {str(r["rank"]): r["error"] for r in ranks if r.get("error")}
    first = ranks[0]
    note = ("gloo on CPU has no device to bind: init_process_group ran without device_id"
            if kind == "cpu" else "device_id=%s" % first.get("device_id"))
    evidence = {"backend": first.get("backend"), "device_id": first.get("device_id"), "note": note,
                "wall_s": wall}
    if (errors or spawn_error) and has_devices:
        text = "\n".join(line for lines in errors.values() for line in lines) + "\n" + (spawn_error or "")
        found = held_after(vendor, text, visible_indices(vendor, world), devices=devices)
        if found:
            return held_result(config, found, dict(evidence, rank_errors=errors))
    if errors or spawn_error:
        evidence.update(rank_errors=errors, spawn_error=spawn_error)
        checks = ["collective_init"] if mode == "init" else (config.get("collectives") or ["allreduce", "allgather"])
        # The error's own line: a CUDA error's traceback ends with hints and a blank line after it.
        tail = error_line(next(iter(errors.values()))) if errors else spawn_error
        # Initialising the communicator is what collective_init measures: a rank that cannot is the host's
        # failure. A sweep whose ranks raise measured nothing: error, and collective_init says why.
        status = "fail" if mode == "init" else "error"
        return [result(c, status, "%d-rank %s %s %s on rank(s) %s: %s" % (
            world, evidence["backend"] or config.get("backend"), "init" if mode == "init" else c,
            "failed" if mode == "init" else "could not run", ",".join(sorted(errors)) or "?", tail),
            {"ranks": world}, evidence,
            "read the rank errors; for hccl/nccl set HCCL/NCCL debug logging (NCCL_DEBUG=INFO) and check the "
            "env, libraries and collective_init checks first") for c in checks]
    if mode == "init":
        init_s = max(r.get("init_s") or 0 for r in ranks)
        return [result("collective_init", "pass", "%d rank(s) initialised %s (%s) in %.2f s" % (
            world, first.get("backend"), note, init_s), {"ranks": world, "init_s": init_s}, evidence)]
    rows = first.get("rows") or []
    bad = first.get("bad_ranks") or {}
    wrong = [w for r in ranks for w in (r.get("wrong") or [])]
    evidence["timing"] = first.get("timing")
    return [summarize(c, rows, world, bad.get(c) or [], wrong, {"wall_s": wall}, evidence) for c in
            (config.get("collectives") or ["allreduce", "allgather"])]


# ----- multi node: a torchrun worker -----

def torchrun_worker(config):
    guard(config.get("deadline_s"))
    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    node = int(os.environ.get("GROUP_RANK", os.environ.get("NODE_RANK", "0")))
    host = socket.gethostname()
    started = time.monotonic()
    try:
        device, bound, backend, init_s = init_group(config, rank, world, local_rank)
        rows, wrong, bad = sweep(config, device, ["allreduce"])
        import torch.distributed as dist
        dist.destroy_process_group()
        check = summarize("multinode", [dict(r, collective="multinode") for r in rows], world, bad["allreduce"],
                          [dict(w, collective="multinode") for w in wrong],
                          {"init_s": round(init_s, 3), "node_rank": node, "wall_s": round(time.monotonic() - started, 3)},
                          {"backend": backend, "device_id": bound, "host": host, "timing": timing_method(device)})
        status = 0
    except BaseException:  # the node's failure is reported, then the process exits non-zero
        lines = traceback.format_exc().splitlines()
        # The collective could not run on this node; the control side isolates the node or link at fault.
        check = result("multinode", "error", "rank %d on %s could not run the collective: %s" % (
            rank, host, lines[-1]),
                       {"node_rank": node, "rank": rank, "wall_s": round(time.monotonic() - started, 3)},
                       {"traceback": lines[-12:], "host": host})
        status = 1
    if local_rank == 0:
        sys.stdout.write(json.dumps({"checks": [check], "node_rank": node}, default=str) + "\n")
        sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)


# ----- multi node: one Slurm step (srun), the rendezvous taken from Slurm's environment -----

SLURM_PORT_BASE = 20000
SLURM_PORT_SPAN = 10000


def slurm_port(job_id, step_id):
    """The rendezvous port of one step: the same figure on every rank (each computes it from the same job and step
    ids), and another one for another step, so the concurrent steps of a bisection round do not collide. Pure."""
    try:
        job, step = int(job_id), int(step_id or 0)
    except (TypeError, ValueError):
        job, step = 0, 0
    return SLURM_PORT_BASE + (job * 7 + step) % SLURM_PORT_SPAN


def expand_hostlist(text):
    """A Slurm hostlist (``lab[1-3,5],gpu07``) as names, for when ``scontrol show hostnames`` is not there.
    Pure; one bracket per name, the form Slurm writes for ``SLURM_JOB_NODELIST``."""
    names, depth, item = [], 0, ""
    for char in (text or "") + ",":
        if char == "," and depth == 0:
            if item:
                names.extend(_expand_one(item))
            item = ""
            continue
        depth += 1 if char == "[" else -1 if char == "]" else 0
        item += char
    return names


def _expand_one(item):
    if "[" not in item:
        return [item]
    prefix, rest = item.split("[", 1)
    ranges, suffix = rest.split("]", 1)
    out = []
    for part in ranges.split(","):
        low, _, high = part.partition("-")
        if not high:
            out.append(prefix + low + suffix)
            continue
        for number in range(int(low), int(high) + 1):
            out.append(prefix + str(number).zfill(len(low)) + suffix)
    return out


def first_node(nodelist):
    """The step's first node (where task 0 runs): ``scontrol show hostnames``, else our own expansion."""
    try:
        proc = subprocess.run(["scontrol", "show", "hostnames", nodelist], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, timeout=15)
        names = proc.stdout.decode("utf-8", "replace").split() if proc.returncode == 0 else []
    except (OSError, subprocess.TimeoutExpired):
        names = []
    names = names or expand_hostlist(nodelist)
    return names[0] if names else ""


def slurm_rendezvous(config, environ):
    """torchrun's variables from Slurm's: RANK, WORLD_SIZE, LOCAL_RANK, NODE_RANK, MASTER_ADDR, MASTER_PORT.
    MASTER_ADDR is the first node's address: the control side sends every node's address (``node_addrs``,
    scontrol's NodeAddr), else the name is resolved here."""
    nodelist = environ.get("SLURM_STEP_NODELIST") or environ.get("SLURM_JOB_NODELIST") or ""
    master = first_node(nodelist)
    addrs = config.get("node_addrs") or {}
    address = addrs.get(master) or (socket.gethostbyname(master) if master else "")
    return {"RANK": environ["SLURM_PROCID"], "WORLD_SIZE": environ.get("SLURM_NTASKS", "1"),
            "LOCAL_RANK": environ.get("SLURM_LOCALID", "0"), "NODE_RANK": environ.get("SLURM_NODEID", "0"),
            "LOCAL_WORLD_SIZE": environ.get("SLURM_NTASKS_PER_NODE", "1").split("(")[0].split(",")[0],
            "MASTER_ADDR": address,
            "MASTER_PORT": str(config.get("master_port") or slurm_port(environ.get("SLURM_JOB_ID"),
                                                                       environ.get("SLURM_STEP_ID")))}


def slurm_worker(config):
    """A rank of the Slurm step: the torchrun worker, once Slurm's environment is turned into torchrun's."""
    try:
        os.environ.update(slurm_rendezvous(config, os.environ))
    except Exception:  # no address for the first node: this rank measured nothing
        lines = traceback.format_exc().splitlines()
        check = result("multinode", "error", "rank %s on %s found no rendezvous: %s" % (
            os.environ.get("SLURM_PROCID", "?"), socket.gethostname(), lines[-1]),
            {"rank": os.environ.get("SLURM_PROCID")}, {"traceback": lines[-12:]})
        if os.environ.get("SLURM_LOCALID", "0") == "0":
            sys.stdout.write(json.dumps({"checks": [check]}) + "\n")
            sys.stdout.flush()
        os._exit(1)
    torchrun_worker(config)


def main(config):
    if "RANK" in os.environ and "LOCAL_WORLD_SIZE" in os.environ:
        torchrun_worker(config)
    if config.get("mode") == "cluster" and "SLURM_PROCID" in os.environ:
        slurm_worker(config)
    return single_node(config)


def checks_for(config):
    """The checks this run was for: an error is reported for each of them."""
    if config.get("mode") == "init":
        return ["collective_init"]
    return config.get("collectives") or ["allreduce", "allgather"]


if __name__ == "__main__":
    main_entry("collectives", main, error_checks=checks_for)
