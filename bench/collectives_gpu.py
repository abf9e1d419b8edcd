"""Single-node collectives: accelstack's validator sweep against a plain torch loop timed with device events.

    python bench/collectives_gpu.py                # on a GPU (or NPU) host: all devices, 1 MiB .. 8 GiB
    python bench/collectives_gpu.py --tiny         # anywhere: 2 CPU ranks over gloo, two small sizes (CI smoke)

Both sides run the same ranks (one per device; 2 on the CPU), the same backend (nccl, hccl or gloo), sizes,
iterations and warm-up. The plain loop is what a user would write by hand, and what the H100 capture
(tests/data/h100/plain_torch_reference.txt) used: warm-up, then N ops between two device events (wall clock
after a barrier on the CPU), the max over ranks. Printed per collective and size: the validator's algbw, the
plain loop's algbw and their ratio (busbw is algbw times the same factor on both sides, and is not defined on
one rank). Target: >= 0.95x at every size >= 64 MiB.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
VALIDATOR = REPO / "src" / "accelstack" / "hostside" / "validators" / "collectives.py"
TARGET = 0.95
TARGET_FROM = 64 << 20


def accelerator() -> tuple[str, int]:
    import torch

    accel = getattr(torch, "accelerator", None)
    if accel is not None and accel.is_available():
        return accel.current_accelerator().type, int(accel.device_count())
    return "cpu", 0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def plain_rank(rank: int, world: int, kind: str, backend: str, sizes: list[int], iters: int, warmup: int,
               port: int, out: str) -> None:
    import torch
    import torch.distributed as dist

    device = torch.device(kind, rank) if kind != "cpu" else torch.device("cpu")
    kwargs: dict[str, Any] = {}
    if kind != "cpu":
        torch.get_device_module(kind).set_device(rank)
        kwargs["device_id"] = device
    dist.init_process_group(backend, init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=300), **kwargs)
    module = torch.get_device_module(kind) if kind != "cpu" else None

    def seconds_per_op(op: Any) -> float:
        for _ in range(warmup):
            op()
        dist.barrier()
        if module is not None:
            begin, end = module.Event(enable_timing=True), module.Event(enable_timing=True)
            module.synchronize()
            begin.record()
            for _ in range(iters):
                op()
            end.record()
            end.synchronize()
            took = begin.elapsed_time(end) / 1e3 / iters
        else:
            import time
            started = time.perf_counter()
            for _ in range(iters):
                op()
            took = (time.perf_counter() - started) / iters
        value = torch.full((1,), took, dtype=torch.float32, device=device)
        dist.all_reduce(value, op=dist.ReduceOp.MAX)
        return float(value.item())

    rows = []
    for size in sizes:
        work = torch.zeros(size // 4, dtype=torch.float32, device=device)
        seconds = seconds_per_op(lambda work=work: dist.all_reduce(work))
        rows.append({"collective": "allreduce", "bytes": size, "algbw_gbps": size / seconds / 1e9})
        per_rank = max(1, size // 4 // world)
        mine = torch.ones(per_rank, dtype=torch.float32, device=device)
        gathered = torch.empty(per_rank * world, dtype=torch.float32, device=device)
        seconds = seconds_per_op(lambda out=gathered, mine=mine: dist.all_gather_into_tensor(out, mine))
        total = per_rank * world * 4
        rows.append({"collective": "allgather", "bytes": total, "algbw_gbps": total / seconds / 1e9})
        del work, mine, gathered
        if module is not None and hasattr(module, "empty_cache"):
            module.empty_cache()
    if rank == 0:
        Path(out).write_text(json.dumps(rows))
    dist.destroy_process_group()


def plain_run(world: int, kind: str, backend: str, sizes: list[int], iters: int, warmup: int) -> list[dict]:
    import torch.multiprocessing as mp

    with tempfile.TemporaryDirectory(prefix="accelstack-bench-") as folder:
        out = os.path.join(folder, "plain.json")
        mp.start_processes(plain_rank, args=(world, kind, backend, sizes, iters, warmup, free_port(), out),
                           nprocs=world, join=True, start_method="spawn")
        return list(json.loads(Path(out).read_text()))


def validator_run(world: int, vendor: str, backend: str, sizes: list[int], iters: int, warmup: int) -> list[dict]:
    # A budget no size reaches: the plain loop has none, so both run every iteration.
    config = {"vendor": vendor, "backend": backend, "nproc": world, "sizes": sizes, "iters": iters,
              "warmup": warmup, "size_budget_s": 600.0, "collective_timeout_s": 600, "deadline_s": 1800}
    proc = subprocess.run([sys.executable, str(VALIDATOR), json.dumps(config)], capture_output=True, text=True,
                          timeout=3600)
    line = [x for x in proc.stdout.splitlines() if x.startswith('{"checks"')][-1]
    rows: list[dict] = []
    for check in json.loads(line)["checks"]:
        if check["status"] not in ("pass", "warn"):
            raise SystemExit(f"validator {check['check']}: {check['status']}: {check['summary']}")
        rows.extend(check["metrics"]["sizes"])
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tiny", action="store_true", help="2 CPU ranks over gloo, 64 KiB and 1 MiB, 5 iterations")
    parser.add_argument("--sizes", default="", help="comma-separated bytes (default: 1 MiB, 64 MiB, 1 GiB, 8 GiB)")
    parser.add_argument("--iters", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--nproc", type=int, default=0, help="ranks (default: every device; 2 on the CPU)")
    parser.add_argument("--repeat", type=int, default=1, help="alternating runs of each; medians are printed")
    args = parser.parse_args()
    kind, count = ("cpu", 0) if args.tiny else accelerator()
    vendor = {"cuda": "nvidia", "npu": "ascend"}.get(kind, "cpu")
    backend = {"cuda": "nccl", "npu": "hccl"}.get(kind, "gloo")
    if args.tiny:
        sizes, iters, warmup = [1 << 16, 1 << 20], 5, 1
    else:
        sizes = [int(s) for s in args.sizes.split(",") if s] or [1 << 20, 1 << 26, 1 << 30, 1 << 33]
        iters, warmup = args.iters, args.warmup
    world = args.nproc or count or 2
    runs: dict[str, list[list[dict]]] = {"validator": [], "plain": []}
    for _ in range(args.repeat):
        runs["validator"].append(validator_run(world, vendor, backend, sizes, iters, warmup))
        runs["plain"].append(plain_run(world, kind, backend, sizes, iters, warmup))

    def median(side: str, collective: str, index: int) -> float:
        return statistics.median([r for r in run if r["collective"] == collective][index]["algbw_gbps"]
                                 for run in runs[side])

    print(f"{world} rank(s) on {kind}, backend {backend}, iters {iters}, warm-up {warmup}, "
          f"medians of {args.repeat} run(s); algbw in GB/s (S/t; S the gathered total for allgather)")
    print(f"{'collective':<10} {'bytes':>11} {'validator':>11} {'plain torch':>12} {'ratio':>6}  target")
    missed = []
    for collective in ("allreduce", "allgather"):
        plain_rows = [r for r in runs["plain"][0] if r["collective"] == collective]
        for index, row in enumerate(plain_rows):
            v, p = median("validator", collective, index), median("plain", collective, index)
            ratio = v / p if p else float("nan")
            judged = row["bytes"] >= TARGET_FROM
            mark = ("ok" if ratio >= TARGET else "MISSED") if judged else "-"
            if judged and ratio < TARGET:
                missed.append(f"{collective} {row['bytes']}")
            print(f"{collective:<10} {row['bytes']:>11} {v:>11.3f} {p:>12.3f} {ratio:>6.2f}  {mark}")
    print(f"target >= {TARGET}x at every size >= {TARGET_FROM >> 20} MiB: "
          + ("met" if not missed else "missed at " + ", ".join(missed)))


if __name__ == "__main__":
    main()
