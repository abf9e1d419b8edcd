"""Multi-node allreduce: accelstack's validator against a plain torchrun allreduce loop, on 3 lab hosts.

    sudo python bench/allreduce.py [--hosts 3] [--repeat 2]

Both run torchrun over SSH on every host with the same sizes, iterations, ranks per node and backend (gloo on the
lab's CPU stack). Printed side by side: busbw per size (nccl-tests' allreduce formula) and wall time from this
machine's first SSH command to the last host's exit. Targets: busbw within 10 % of the plain loop, wall time at
most 1.5x. Uses its own lab (tag acw) and removes it at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "src"))

from accelstack.engines.collective import CPU_CLUSTER_SWEEP  # noqa: E402
from accelstack.engines.ssh.run import validate_inventory  # noqa: E402
from accelstack.inventory import load_inventory  # noqa: E402
from accelstack.transport.fanout import HostPool  # noqa: E402
from accelstack_lab import Lab, lab_ids  # noqa: E402
from tests.labtools import install_venv  # noqa: E402

PLAIN = '''
import datetime, json, os, time, torch, torch.distributed as dist
sizes, iters, warmup = json.loads(os.environ["BENCH_SIZES"]), int(os.environ["BENCH_ITERS"]), int(os.environ["BENCH_WARMUP"])
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
n = dist.get_world_size()
rows = []
for size in sizes:
    t = torch.zeros(size // 4)
    for _ in range(warmup):
        dist.all_reduce(t)
    dist.barrier()
    start = time.perf_counter()
    for _ in range(iters):
        dist.all_reduce(t)
    sec = torch.tensor([(time.perf_counter() - start) / iters], dtype=torch.float64)
    dist.all_reduce(sec, op=dist.ReduceOp.MAX)
    rows.append({"bytes": size, "busbw_gbps": size / sec.item() / 1e9 * 2 * (n - 1) / n})
if dist.get_rank() == 0:
    print(json.dumps(rows))
dist.destroy_process_group()
'''


def plain_run(lab: Lab, inventory: str, sweep: dict, nproc: int) -> tuple[list[dict], float]:
    hosts = load_inventory(inventory).select(None)
    master = hosts[0].address
    port = 29123
    with HostPool() as pool:
        transports = [pool.connect(h) for h in hosts]
        for t in transports:
            with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as handle:
                handle.write(PLAIN)
            t.put(handle.name, "/var/tmp/bench_plain.py")
        env = (f"GLOO_SOCKET_IFNAME=eth0 OMP_NUM_THREADS=1 BENCH_SIZES={shlex.quote(json.dumps(sweep['sizes']))} "
               f"BENCH_ITERS={sweep['iters']} BENCH_WARMUP={sweep['warmup']}")

        def run(i: int) -> str:
            cmd = (f"cd /var/tmp && {env} /opt/accelstack/venv/bin/python -m torch.distributed.run "
                   f"--nnodes={len(hosts)} --node-rank={i} --nproc-per-node={nproc} --master-addr={master} "
                   f"--master-port={port} --local-addr={hosts[i].address} /var/tmp/bench_plain.py")
            return transports[i].run(cmd, timeout=300).stdout

        started = time.monotonic()
        with ThreadPoolExecutor(len(hosts)) as pool:
            outputs = list(pool.map(run, range(len(hosts))))
        wall = time.monotonic() - started
    rows = json.loads([line for line in outputs[0].splitlines() if line.startswith("[")][-1])
    return rows, wall


def validator_run(inventory: str) -> tuple[list[dict], float]:
    started = time.monotonic()
    inv = load_inventory(inventory)
    records = validate_inventory(inv, inv.select(), only={"multinode"})
    wall = time.monotonic() - started
    record = next(r for r in records if r.check == "multinode")
    if record.status not in ("pass", "warn"):
        raise SystemExit(f"validator run failed: {record.summary}")
    return [{"bytes": s["bytes"], "busbw_gbps": s["busbw_gbps"]} for s in record.metrics["sizes"]], wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hosts", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=2, help="alternating runs of each; medians are printed")
    parser.add_argument("--tiny", action="store_true",
                        help="the validator's single-node allreduce on this machine only (no lab): CI smoke test")
    args = parser.parse_args()
    if args.tiny:
        os.environ.setdefault("ACCELSTACK_RUNS", tempfile.mkdtemp(prefix="acw-tiny-"))
        local = load_inventory(None)
        records = validate_inventory(local, local.select(), only={"allreduce"})
        for record in records:
            print(f"{record.host} {record.check}: {record.status} {record.summary}")
        if not records or any(r.status in ("fail", "error") for r in records):
            raise SystemExit(1)
        return
    root = Path(tempfile.mkdtemp(prefix="acw-"))
    os.environ.setdefault("ACCELSTACK_RUNS", str(root / "runs"))  # bench runs are not the user's history
    (root / "inventories").mkdir()
    tag, subnet = lab_ids("acw", "10.220")
    lab = Lab(root, tag=tag, subnet=subnet)
    lab.down()
    try:
        lab.up(args.hosts)  # writes each host's /etc/hosts itself (Lab._write_name_service)
        install_venv(lab)
        inventory = str(lab.inventory)
        sweep = dict(CPU_CLUSTER_SWEEP, size_budget_s=30.0)  # the plain loop has no budget: run all iters
        import yaml
        doc = yaml.safe_load(Path(inventory).read_text())
        doc["vars"].update({"cluster_size_budget_s": sweep["size_budget_s"]})
        Path(inventory).write_text(yaml.safe_dump(doc))
        nproc = 2
        runs: dict[str, list[tuple[list[dict], float]]] = {"validator": [], "plain": []}
        for _ in range(args.repeat):
            runs["validator"].append(validator_run(inventory))
            runs["plain"].append(plain_run(lab, inventory, sweep, nproc))
        print(f"3-host gloo allreduce, {args.hosts} nodes x {nproc} ranks, sizes {sweep['sizes']}, "
              f"iters {sweep['iters']}, warmup {sweep['warmup']}, medians of {args.repeat} runs")
        print(f"{'bytes':>10} {'validator busbw':>16} {'plain busbw':>12} {'ratio':>6}")
        for i, size in enumerate(sweep["sizes"]):
            v = statistics.median(r[0][i]["busbw_gbps"] for r in runs["validator"])
            p = statistics.median(r[0][i]["busbw_gbps"] for r in runs["plain"])
            print(f"{size:>10} {v:>13.4f} GB/s {p:>9.4f} GB/s {v / p:>6.2f}")
        vw = statistics.median(r[1] for r in runs["validator"])
        pw = statistics.median(r[1] for r in runs["plain"])
        print(f"wall time: validator {vw:.1f} s (includes connect, upload check, cleanup), plain torchrun {pw:.1f} s, "
              f"ratio {vw / pw:.2f}")
    finally:
        lab.down()


if __name__ == "__main__":
    main()
