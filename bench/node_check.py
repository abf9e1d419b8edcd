"""What ``accelstack node-check`` costs a node, per tier: wall time and CPU seconds (the command and everything it
starts), beside what a node would run instead, and where the health tier's CPU goes.

The node is a SIMULATED 8-GPU H100 node (``accelstack_lab.simulated.gpu_node``: the lab's simulated ``nvidia-smi``,
which is a python script, so each call costs a python start that the real tool does not; a kernel log without
Xids), with the node file provisioning renders for an NVIDIA stack, and a stack python laid out as the real H200's
``/opt/torch/.venv`` (tests/data/h200/: a venv with the metadata and a folder of each of its 207 packages, torch
2.11.0+cu130's ``version.py`` and the ``nvidia-nccl-cu13`` wheel's library). What a node has that this machine does
not, it is given: the loaded driver's ``/proc/driver/nvidia/version`` (a tmpfs over ``/proc/driver`` in a mount namespace of
each run's own, where this runs as root with ``unshare``; otherwise the versions check asks ``nvidia-smi``, and the
figures say so), a ``python3`` that is an interpreter (this machine's PATH may lead to a pyenv shim, a bash script),
a HOME without this machine's profile (a login shell reads /etc/profile, not pyenv's init) and compiled bytecode (as
pip leaves an installed package). Rows:

- ``node-check --tier health``: what the README's HealthCheckProgram runs every few minutes beside jobs. Target:
  <= 2 s wall and <= 1 CPU-second (issue 21), with the ``nvidia-smi`` calls one run makes.
- where that CPU goes, from one more run that splits it by process: node-check's own (python start, imports,
  judging, records), the health batch (one python3 for the system-python checks, with the vendor-tool reads it
  makes), the versions check's probe, and any other command (the validators' folder check, dmesg after a failure).
- the versions check's probe alone, which reads the stack python's files, beside the stack python's snippet alone
  (an interpreter start with its site and package metadata scan: what the probe ran before, and still runs where
  files cannot tell).
- the same checks with one interpreter each (``host_groups`` patched to one check a group): the cost before the
  health tier's checks shared one interpreter and one read of each vendor tool.
- the floor: one ``nvidia-smi -q -x`` and one ``python3 -c pass``, what any python health check pays at least;
  and NHC-style shell reads (``nvidia-smi -q -x``, ``nvlink -s``, the kernel log and sysfs through grep), what a
  shell health check like NHC or the cloud suites' scripts does.
- ``node-check --tier quick`` on a CPU node (torch 2.13.0 CPU, two gloo ranks, as the lab's hosts): the prolog tier,
  which imports torch and makes a communicator (target on a GPU node: <= 10 s; ``bench/gpu_node_check.py``
  measures that on a real GPU), and the same with one interpreter each.

CPU is the children's user + system time (``getrusage(RUSAGE_CHILDREN)`` around each command: the command, its
shells, pythons and tools). Medians of ``--repeat``.

    python bench/node_check.py [--repeat 5] [--gpus 8] [--no-quick]
    python bench/node_check.py --tiny     # one round, 2 GPUs, health tier only: the CI smoke test
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO))  # the lab (accelstack_lab) lives in the checkout, outside the package

from _node_cpu import SPLIT, split_parts  # noqa: E402

from accelstack.facts.probe import STACK_SNIPPET, ProbeOptions, probe_argv  # noqa: E402
from accelstack.paths import hostside  # noqa: E402
from accelstack_lab.simulated.gpu_node import DRIVER, make_gpu_node, render_node_file  # noqa: E402

H200 = REPO / "tests" / "data" / "h200"

# The health tier's checks each in an interpreter of its own: the run as it was before they shared one.
ONE_BY_ONE = ("import sys; import accelstack.engines.ssh.host as h; h.host_groups = lambda vs: [[v] for v in vs]; "
              "from accelstack.cli import entry; sys.argv = ['accelstack'] + sys.argv[1:]; entry()")
NHC_STYLE = ("nvidia-smi -q -x | grep -c '<gpu id' >/dev/null; nvidia-smi -q -x | grep -q '<current_ecc>Enabled'; "
             "nvidia-smi nvlink -s | grep -c inactive >/dev/null; dmesg | grep -c 'NVRM: Xid' >/dev/null; "
             "cat /sys/bus/pci/devices/*/numa_node >/dev/null 2>&1; cat /proc/meminfo >/dev/null; exit 0")
# A loaded driver's file, under a tmpfs over /proc/driver in a mount namespace of the command's own.
DRIVER_FILE = ("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  {driver}  Release Build  (simulated)\n"
               "GCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n")
WITH_DRIVER_FILE = ('{mount} -t tmpfs accelstack-bench /proc/driver && {mkdir} /proc/driver/nvidia && '
                    'printf %s "$0" > /proc/driver/nvidia/version && exec "$@"')


def driver_file_prefix() -> list[str]:
    """The argv prefix that gives a command the driver's /proc file, or [] where that cannot be made here."""
    tools = [shutil.which(name) for name in ("unshare", "mount", "mkdir")]
    if os.geteuid() != 0 or not all(tools):
        return []
    unshare, mount, mkdir = tools
    prefix = [str(unshare), "-m", "--propagation", "private", "/bin/sh", "-c",
              WITH_DRIVER_FILE.format(mount=mount, mkdir=mkdir), DRIVER_FILE.format(driver=DRIVER)]
    check = subprocess.run([*prefix, "cat", "/proc/driver/nvidia/version"], capture_output=True, text=True,
                           timeout=30)
    return prefix if check.returncode == 0 and DRIVER in check.stdout else []


def measured(argv: list[str], env: dict[str, str]) -> tuple[float, float, int, str]:
    """(wall s, CPU s of the command and everything it started, exit status, stderr)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    proc = subprocess.run(argv, env=env, cwd="/", stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=600,
                          text=True)
    wall = time.perf_counter() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if proc.returncode not in (0, 1, 2):  # 1/2: a check failed or could not run (torch is a CPU build here)
        raise SystemExit(f"{argv[:4]} exited {proc.returncode}: {proc.stderr[-800:]}")
    return wall, cpu, proc.returncode, proc.stderr


def median_of(repeat: int, argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    runs = [measured(argv, env) for _ in range(repeat)]
    return statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)


def h200_venv(folder: Path, base: str = sys.executable) -> str:
    """A venv laid out as the real H200's /opt/torch/.venv (tests/data/h200/): each of its 207 packages (its pip list)
    with its dist-info METADATA and a package folder, torch 2.11.0+cu130's version.py as the stack snippet read it
    there, and the nvidia-nccl-cu13 wheel's libnccl.so.2 (a stub: only its path is read). Returns its python3."""
    subprocess.run([base, "-m", "venv", "--without-pip", str(folder)], check=True, timeout=120)
    site = next((folder / "lib").glob("python3.*/site-packages"))
    commands = H200 / "bundle" / "commands"
    for line in (commands / "pip_list.txt").read_text().split():
        name, _, version = line.partition("==")
        stem = re.sub(r"[-_.]+", "_", name).lower()
        info = site / f"{stem}-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
        (site / stem).mkdir(exist_ok=True)
        (site / stem / "__init__.py").write_text("")
    captured = json.loads((commands / "opt_torch_.venv_bin_python3_-c_stack_snippet.txt").read_text())
    (site / "torch" / "version.py").write_text(captured["packages"]["torch"]["version_py"])
    library = site / "nvidia" / "nccl" / "lib" / "libnccl.so.2"
    library.parent.mkdir(parents=True)
    library.write_bytes(b"\x7fELF (a stub: the probe reads its path, the nvidia-nccl-cu13 wheel its version)")
    return str(folder / "bin" / "python3")


def cpu_node(folder: Path) -> Path:
    """A CPU node's node file (the cpu stack, this python's torch, gloo on the loopback), as provisioning writes it."""
    values = {"expect_devices": 0, "accelerator": "cpu", "gloo_socket_ifname": "lo", "stack_python": sys.executable}
    return render_node_file(folder / "cpu-node.yml", stack="cpu", node="cpu01", values=values,
                            env_file=folder / "no-env-file.sh", runs_dir=folder / "runs")


def counting_smi(folder: Path, real_bin: Path) -> tuple[Path, Path]:
    """A bin folder whose nvidia-smi writes down each call, then runs the simulated one."""
    bindir = folder / "count-bin"
    bindir.mkdir()
    calls = folder / "nvidia-smi-calls"
    wrapper = bindir / "nvidia-smi"
    wrapper.write_text(f'#!/bin/sh\necho "nvidia-smi $*" >> {calls}\nexec {real_bin / "nvidia-smi"} "$@"\n')
    wrapper.chmod(0o755)
    return bindir, calls


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--no-quick", action="store_true", help="leave out the quick tier (it imports torch)")
    parser.add_argument("--tiny", action="store_true", help="one round, 2 GPUs, health tier only (smoke test)")
    args = parser.parse_args()
    repeat, gpus, quick = (1, 2, False) if args.tiny else (args.repeat, args.gpus, not args.no_quick)
    # Bytecode, as pip leaves an installed package (this machine sets PYTHONDONTWRITEBYTECODE).
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(REPO / "src" / "accelstack")], check=True)

    with tempfile.TemporaryDirectory(prefix="acs-nodecheck-") as tmp:
        stack_python = h200_venv(Path(tmp) / "opt" / "torch" / ".venv")
        node = make_gpu_node(Path(tmp) / "gpu", count=gpus, node_vars={"stack_python": stack_python})
        home = Path(tmp) / "home"
        home.mkdir()
        env = node.env()
        # python3 is an interpreter on a node: this one's folder next, before any shim on this machine's PATH.
        env["PATH"] = os.pathsep.join([str(node.bin_dir), str(Path(sys.executable).parent), env["PATH"]])
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO / "src"), env.get("PYTHONPATH", "")) if p)
        env["ACCELSTACK_RUNS"] = str(Path(tmp) / "runs")
        env["HOME"] = str(home)
        env.pop("PYTHONDONTWRITEBYTECODE", None)  # the validators' own bytecode, written once as on a node
        py = sys.executable
        driver = driver_file_prefix()
        flags = ["--config", str(node.node_file), "--node", "gpu01", "--json", "--tier", "health"]
        node_check = [*driver, py, "-m", "accelstack", "node-check", *flags]
        print(f"node-check on a simulated {gpus}-GPU H100 node (the lab's nvidia-smi: a python script per call), "
              f"median of {repeat}; this machine: {os.cpu_count()} CPU(s), load {os.getloadavg()[0]:.2f}")
        print("  the driver's /proc/driver/nvidia/version: " + (
            "given (a tmpfs in a mount namespace per run)" if driver else
            "not here (needs root and unshare): versions reads the driver's version through nvidia-smi"))
        print(f"{'what':<72} {'wall s':>7} {'CPU s':>7}")

        def row(label: str, argv: list[str], run_env: dict[str, str] | None = None, note: str = "") -> None:
            wall, cpu = median_of(repeat, argv, run_env or env)
            print(f"{label:<72} {wall:>7.2f} {cpu:>7.2f}  {note}".rstrip(), flush=True)

        measured(node_check, env)  # a first run writes the validators and their bytecode, as a node's first does
        counted_bin, calls = counting_smi(Path(tmp), node.bin_dir)
        measured(node_check, {**env, "PATH": f"{counted_bin}{os.pathsep}{env['PATH']}"})
        smi_calls = calls.read_text().splitlines() if calls.exists() else []
        row("accelstack node-check --tier health (default)", node_check,
            note=f"target <= 2 s, <= 1 CPU-s; {len(smi_calls)} nvidia-smi call(s): "
                 + ", ".join(c.split(" ", 1)[1][:24] for c in smi_calls))
        splits = [split_parts(measured([*driver, py, "-c", SPLIT, "node-check", *flags], env)[3])
                  for _ in range(repeat)]
        parts = {k: statistics.median(s.get(k, 0.0) for s in splits) for k in ("own", "batch", "probe", "other")}
        smi_cpu = median_of(repeat, ["/bin/sh", "-c", "nvidia-smi -q -x >/dev/null"], env)[1]
        in_batch = len([c for c in smi_calls if "--query-gpu" not in c])  # the probe's is a --query-gpu
        print("  where its CPU goes (one more run, split by process):")
        for key, label in (("own", "node-check's own process: python start, imports, judging, records"),
                           ("batch", f"the health batch: one python3, {in_batch} nvidia-smi call(s) of ~{smi_cpu:.2f}"),
                           ("probe", "versions' probe: sh, the stack python's files, the driver's files"),
                           ("other", "other commands: the validators' folder, dmesg after a failure")):
            print(f"    {label:<68} {'':>7} {parts[key]:>7.2f}")
        probe = probe_argv(ProbeOptions(python=stack_python, scope="components"))
        row("versions' probe alone: the stack python (an H200-like venv) read from its files", [*driver, *probe])
        row("  the stack python's snippet alone (what the probe started before)",
            [stack_python, "-c", hostside("probes", STACK_SNIPPET).read_text()])
        row("  the same checks, one interpreter each (before)",
            [*driver, py, "-c", ONE_BY_ONE, "node-check", *flags])
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
