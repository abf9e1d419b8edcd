"""What ``accelstack node-check`` costs a node, per tier: wall time and CPU seconds (the command and everything it
starts), beside what a node would run instead.

The node is a SIMULATED 8-GPU H100 node (``accelstack.lab.simulated.gpu_node``: the lab's simulated ``nvidia-smi``,
which is a python script, so each call costs a python start that the real tool does not; a kernel log without
Xids), with the node file provisioning renders for an NVIDIA stack. Rows:

- ``node-check --tier health``: what the README's HealthCheckProgram runs every few minutes beside jobs. Target:
  <= 2 s wall and <= 1 CPU-second (issue 21).
- the same checks with one interpreter each (``host_groups`` patched to one check a group): the cost before the
  health tier's checks shared one interpreter and one read of each vendor tool.
- the floor: one ``nvidia-smi -q -x`` and one ``python3 -c pass``, what any python health check pays at least;
  and NHC-style shell reads (``nvidia-smi -q -x``, ``nvlink -s``, the kernel log and sysfs through grep), what a
  shell health check like NHC or the cloud suites' scripts does.
- ``node-check --tier quick`` on a CPU node (torch 2.13.0 CPU, two gloo ranks, as the lab's hosts): the prolog tier,
  which imports torch and makes a communicator (target on a GPU node: <= 10 s; ``bench/gpu_node_check.sh`` measures
  that on a real GPU), and the same with one interpreter each.

CPU is the children's user + system time (``getrusage(RUSAGE_CHILDREN)`` around each command: the command, its
shells, pythons and tools). Medians of ``--repeat``.

    python bench/node_check.py [--repeat 5] [--gpus 8] [--no-quick]
    python bench/node_check.py --tiny     # one round, 2 GPUs, health tier only: the CI smoke test
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))

from accelstack.lab.simulated.gpu_node import make_gpu_node, render_node_file  # noqa: E402

# The health tier's checks each in an interpreter of its own: the run as it was before they shared one.
ONE_BY_ONE = ("import sys; import accelstack.validate.host as h; h.host_groups = lambda vs: [[v] for v in vs]; "
              "from accelstack.cli import entry; sys.argv = ['accelstack'] + sys.argv[1:]; entry()")
NHC_STYLE = ("nvidia-smi -q -x | grep -c '<gpu id' >/dev/null; nvidia-smi -q -x | grep -q '<current_ecc>Enabled'; "
             "nvidia-smi nvlink -s | grep -c inactive >/dev/null; dmesg | grep -c 'NVRM: Xid' >/dev/null; "
             "cat /sys/bus/pci/devices/*/numa_node >/dev/null 2>&1; cat /proc/meminfo >/dev/null; exit 0")


def measured(argv: list[str], env: dict[str, str]) -> tuple[float, float, int]:
    """(wall s, CPU s of the command and everything it started, exit status)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    proc = subprocess.run(argv, env=env, cwd="/", stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=600)
    wall = time.perf_counter() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if proc.returncode not in (0, 1, 2):  # 1/2: a check failed or could not run (torch is a CPU build here)
        raise SystemExit(f"{argv[:4]} exited {proc.returncode}: {proc.stderr[-800:]}")
    return wall, cpu, proc.returncode


def median_of(repeat: int, argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    runs = [measured(argv, env) for _ in range(repeat)]
    return statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)


def cpu_node(folder: Path) -> Path:
    """A CPU node's node file (the cpu stack, this python's torch, gloo on the loopback), as provisioning writes it."""
    values = {"expect_devices": 0, "accelerator": "cpu", "gloo_socket_ifname": "lo", "stack_python": sys.executable}
    return render_node_file(folder / "cpu-node.yml", stack="cpu", node="cpu01", values=values,
                            env_file=folder / "no-env-file.sh", runs_dir=folder / "runs")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--no-quick", action="store_true", help="leave out the quick tier (it imports torch)")
    parser.add_argument("--tiny", action="store_true", help="one round, 2 GPUs, health tier only (smoke test)")
    args = parser.parse_args()
    repeat, gpus, quick = (1, 2, False) if args.tiny else (args.repeat, args.gpus, not args.no_quick)

    with tempfile.TemporaryDirectory(prefix="acs-nodecheck-") as tmp:
        node = make_gpu_node(Path(tmp) / "gpu", count=gpus)
        env = node.env()
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO / "src"), env.get("PYTHONPATH", "")) if p)
        env["ACCELSTACK_RUNS"] = str(Path(tmp) / "runs")
        py = sys.executable
        node_check = [py, "-m", "accelstack", "node-check", "--config", str(node.node_file), "--node", "gpu01",
                      "--json"]
        print(f"node-check on a simulated {gpus}-GPU H100 node (the lab's nvidia-smi: a python script per call), "
              f"median of {repeat}; this machine: {os.cpu_count()} CPU(s), load {os.getloadavg()[0]:.2f}")
        print(f"{'what':<68} {'wall s':>7} {'CPU s':>7}")

        def row(label: str, argv: list[str], run_env: dict[str, str] | None = None, note: str = "") -> None:
            wall, cpu = median_of(repeat, argv, run_env or env)
            print(f"{label:<68} {wall:>7.2f} {cpu:>7.2f}  {note}".rstrip(), flush=True)

        row("accelstack node-check --tier health (default)", node_check + ["--tier", "health"],
            note="target <= 2 s, <= 1 CPU-s")
        row("  the same checks, one interpreter each (before)",
            [py, "-c", ONE_BY_ONE, "node-check", *node_check[4:], "--tier", "health"])
        row("floor: nvidia-smi -q -x + python3 -c pass",
            ["/bin/sh", "-c", "nvidia-smi -q -x >/dev/null && python3 -c pass"])
        row("NHC-style shell reads (nvidia-smi -q -x x2, nvlink -s, dmesg, sysfs)", ["/bin/sh", "-c", NHC_STYLE])
        if quick:
            cpu_file = cpu_node(Path(tmp))
            quick_check = [py, "-m", "accelstack", "node-check", "--config", str(cpu_file), "--node", "cpu01",
                           "--json", "--tier", "quick"]
            row("accelstack node-check --tier quick, CPU node (torch, 2 gloo ranks)", quick_check,
                note="target on a GPU node <= 10 s")
            row("  the same checks, one interpreter each (before)",
                [py, "-c", ONE_BY_ONE, "node-check", *quick_check[4:]])
    return 0


if __name__ == "__main__":
    sys.exit(main())
