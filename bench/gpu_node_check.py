"""node-check on a real GPU node, once: what the health and quick tiers cost there, and what they say while another
process holds the GPU (a training job's caching allocator: all but about 400 MB).

Run from the repository root on the GPU machine (no network needed; about 2-3 minutes, every step under its own time
limit, under 4 minutes in all). It only reads the GPU's settings (``nvidia-smi --query-gpu``): it never changes a
compute mode, persistence mode or clock, and never resets anything.

    python3 bench/gpu_node_check.py              # on the GPU machine; the log and each run's records go to $OUT
    python bench/gpu_node_check.py --tiny        # the CI smoke test: the same steps on a simulated GPU node

Steps: (1) find a python whose torch sees the GPU (``python3``, ``/opt/*/.venv``, ``/opt/*/venv``) and read what is
installed: its torch, ``torch.version.cuda``, ``torch.cuda.nccl.version()``, its python and venv, the driver
``nvidia-smi`` reports and ``/usr/local/cuda/version.json``; (2) make sure accelstack's own dependencies import (on
the lent H100/H200 image invoke, fabric and paramiko are missing: wheels in ``.whl/`` are installed into a folder
under /tmp with ``pip --no-index``; see the README's "node-check on a real GPU"), and compile accelstack and them to
bytecode, as pip leaves an installed package; (3) render the node file ``inv provision`` would write for a stack
that pins exactly what step 1 read (so a healthy node is all green: the shipped stack's venv is not on this image),
this node's GPU count and SKU; (4) ``node-check --tier health`` three times and ``--tier quick`` twice, wall and CPU
(the command and everything it starts) with each run's verdicts and how many times ``nvidia-smi`` ran; (5) a torch
process allocates all but about 400 MB of every GPU, then ``node-check --tier health --drain`` and ``--tier quick
--drain`` (every check, versions too) run beside it, with a stand-in ``scontrol`` that only writes down what it is
asked: the verdicts, the exit codes and whether a drain was asked for; (6) the holder is stopped.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
DEPS = ("invoke", "fabric", "paramiko", "yaml", "jinja2", "rich", "packaging")
HOLD_MB = 400
STACK_NAME = "this-gpu-node"
# What the torch python reports about itself and its torch (one torch import; no CUDA context is made).
READ_TORCH = r"""
import json, sys
import torch
try:
    nccl = torch.cuda.nccl.version()
except Exception:
    nccl = None
print(json.dumps({"python": "%d.%d.%d" % sys.version_info[:3], "executable": sys.executable, "prefix": sys.prefix,
                  "torch": torch.__version__, "torch_cuda": torch.version.cuda, "nccl": nccl,
                  "cuda_available": torch.cuda.is_available(), "devices": torch.cuda.device_count()}))
"""
BUDGET_S = 225.0  # every step's limit is cut to what is left of this: the whole run stays under 4 minutes
HOLDER = r"""
import sys, time, torch
held = []
for index in range(torch.cuda.device_count()):
    free, total = torch.cuda.mem_get_info(index)
    keep = int(sys.argv[1]) << 20
    held.append(torch.empty(max(0, free - keep), dtype=torch.uint8, device="cuda:%d" % index))
    free_now, _ = torch.cuda.mem_get_info(index)
    print("held gpu %d: %d of %d MiB free" % (index, free_now >> 20, total >> 20), flush=True)
print("holding", flush=True)
time.sleep(float(sys.argv[2]))
"""


def say(text: str = "") -> None:
    print(text, flush=True)


STARTED = time.monotonic()


def left(limit: float) -> float:
    """A step's time limit, cut to what is left of the run's budget (at least a second: it then times out)."""
    return max(1.0, min(limit, BUDGET_S - (time.monotonic() - STARTED)))


def run(argv: list[str], *, timeout: float, env: dict[str, str] | None = None,
        stdin: int | None = subprocess.DEVNULL) -> subprocess.CompletedProcess[str] | None:
    try:
        return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=left(timeout), stdin=stdin)
    except (OSError, subprocess.TimeoutExpired) as err:
        say(f"  ({' '.join(argv[:3])}...: {type(err).__name__}: {err})")
        return None


def torch_python(candidates: list[str]) -> tuple[str | None, dict[str, Any]]:
    """The first python whose torch sees a GPU, and what it reports (:data:`READ_TORCH`)."""
    for cand in candidates:
        if not cand or not (shutil.which(cand) or os.path.exists(cand)):
            continue
        proc = run([cand, "-c", READ_TORCH], timeout=90)
        if proc is None or proc.returncode != 0:
            continue
        try:
            found = json.loads(proc.stdout.strip().splitlines()[-1])
        except (ValueError, IndexError):
            continue
        if found.get("cuda_available"):
            return cand, found
    return None, {}


def nccl_text(version: Any) -> str | None:
    """``torch.cuda.nccl.version()`` as a version: a tuple (2, 28, 9) in recent torch, NCCL_VERSION_CODE (22809)
    in older ones."""
    if isinstance(version, (list, tuple)) and version:
        return ".".join(str(part) for part in version)
    if isinstance(version, int) and version > 0:
        major, rest = divmod(version, 10000) if version >= 10000 else divmod(version, 1000)
        minor, patch = divmod(rest, 100)
        return f"{major}.{minor}.{patch}"
    return None


def installed_stack(found: dict[str, Any], *, driver: str | None, cuda: str | None, sku: str,
                    name: str = STACK_NAME) -> str:
    """A stack file (YAML) that pins what this node has: ``found`` from :data:`READ_TORCH`, the driver nvidia-smi
    reports, the CUDA toolkit's version (``/usr/local/cuda/version.json``). A component nothing was found for is
    left out (the stack is then refused, exit 3, naming it: nothing here makes a pin up)."""
    import yaml

    parts = [int(p) for p in found["python"].split(".")[:2]]
    components = {"python": f"{parts[0]}.{parts[1]}", "torch": found.get("torch"),
                  "torch_cuda": found.get("torch_cuda"), "nvidia_driver": driver,
                  "cuda": ".".join(cuda.split(".")[:2]) if cuda else None, "nccl": nccl_text(found.get("nccl"))}
    stack: dict[str, Any] = {
        "name": name, "vendor": "nvidia", "backend": "nccl",
        "description": f"what this GPU node has installed, read by bench/gpu_node_check.py ({found['executable']})",
        "components": {key: str(value) for key, value in components.items() if value},
        "paths": {"cuda": "/usr/local/cuda", "venv": found["prefix"], "python": found["executable"]},
        "devices": [sku], "env": {"NCCL_DEBUG": "WARN"}}
    if driver and driver.split(".")[0].isdigit():
        stack["nvidia_driver_branch"] = f"R{driver.split('.')[0]}"
    return yaml.safe_dump(stack, sort_keys=False)


def cuda_toolkit_version(path: Path = Path("/usr/local/cuda/version.json"),
                         nvcc: Path = Path("/usr/local/cuda/bin/nvcc")) -> str | None:
    """The CUDA toolkit's version as the facts probe reads it: ``version.json``, else ``nvcc --version`` (the
    lent H200 image has no version.json: the toolkit's nvcc said 13.0.88)."""
    try:
        return str(json.loads(path.read_text())["cuda"]["version"])
    except (OSError, ValueError, KeyError, TypeError):
        pass
    from accelstack.vendors.nvidia.parsers import parse_nvcc_version

    try:
        out = subprocess.run([str(nvcc), "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return parse_nvcc_version(out)


def accelstack_env(python: str, work: Path) -> tuple[dict[str, str] | None, str]:
    """The environment in which ``python -m accelstack`` runs from this checkout: ``src`` on PYTHONPATH, and the
    dependencies from ``.whl/`` (or ``$ACCELSTACK_WHEELS``) installed under ``work`` when they do not import."""
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    check = [python, "-c", "import " + ", ".join(DEPS)]
    proc = run(check, timeout=60, env=env)
    if proc is not None and proc.returncode == 0:
        compile_bytecode(python, [REPO / "src" / "accelstack"])
        return env, "accelstack's dependencies import"
    wheels = sorted(glob.glob(os.path.join(os.environ.get("ACCELSTACK_WHEELS") or str(REPO / ".whl"), "*.whl")))
    if not wheels:
        return None, f"accelstack's dependencies do not import ({(proc.stderr if proc else '').strip()[-200:]}) " \
                     "and there are no wheels in .whl/"
    site = work / "site"
    install = run([python, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile",
                   "--disable-pip-version-check", "--target", str(site), *wheels], timeout=120)
    if install is None or install.returncode != 0:
        return None, f"pip could not install the wheels: {(install.stderr if install else '').strip()[-300:]}"
    env["PYTHONPATH"] = f"{REPO / 'src'}{os.pathsep}{site}"
    proc = run(check, timeout=60, env=env)
    if proc is None or proc.returncode != 0:
        return None, f"still missing after installing {len(wheels)} wheel(s): {(proc.stderr if proc else '')[-300:]}"
    compile_bytecode(python, [REPO / "src" / "accelstack", site])
    return env, f"{len(wheels)} wheel(s) from .whl/ installed into {site}"


def compile_bytecode(python: str, folders: list[Path]) -> None:
    """Bytecode for accelstack (and the wheels installed for it), as pip leaves an installed package: without it,
    and with PYTHONDONTWRITEBYTECODE set, every run compiles every module it imports from source."""
    run([python, "-m", "compileall", "-q", *map(str, folders)], timeout=120)


def measured(argv: list[str], env: dict[str, str], timeout: float) -> tuple[float, float, int, str]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    proc = run(argv, timeout=timeout, env=env)
    wall = time.perf_counter() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if proc is None:
        return wall, cpu, -1, ""
    return wall, cpu, proc.returncode, proc.stdout


def count_smi_calls(argv: list[str], env: dict[str, str], work: Path) -> list[str]:
    """The nvidia-smi calls of one (untimed) run: a wrapper first on PATH writes each down, then runs the tool."""
    real = shutil.which("nvidia-smi", path=env.get("PATH"))
    if real is None:
        return []
    bindir = work / "count-bin"
    bindir.mkdir(exist_ok=True)
    calls = work / "nvidia-smi-calls"
    calls.unlink(missing_ok=True)
    wrapper = bindir / "nvidia-smi"
    wrapper.write_text(f'#!/bin/sh\necho "$*" >> {calls}\nexec {real} "$@"\n')
    wrapper.chmod(0o755)
    measured(argv, {**env, "PATH": f"{bindir}{os.pathsep}{env.get('PATH', '')}"}, 60)
    return calls.read_text().splitlines() if calls.exists() else []


def verdicts(stdout: str) -> list[str]:
    out = []
    for line in stdout.splitlines():
        if line.startswith("{"):
            record = json.loads(line)
            out.append(f"    {record['status'].upper():5} {record['check']}: {record['summary'][:150]}")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tiny", action="store_true", help="a simulated GPU node, one run per tier (smoke test)")
    args = parser.parse_args()
    out_dir = Path(os.environ["OUT"]) if os.environ.get("OUT") else None
    work = Path(tempfile.mkdtemp(prefix="accelstack-gpu-check-"))
    say(f"accelstack node-check on {'a SIMULATED GPU node (--tiny)' if args.tiny else 'this GPU node'}; "
        f"repo {REPO}; {os.cpu_count()} CPU(s)")

    sys.path.insert(0, str(REPO / "src"))
    sys.path.insert(0, str(REPO))  # the lab (accelstack_lab) lives in the checkout, outside the package
    sys.path.insert(0, str(REPO / "bench"))
    from _node_cpu import SPLIT, split_parts

    base_env: dict[str, str] = dict(os.environ)
    if args.tiny:
        from accelstack_lab.simulated.gpu_node import make_gpu_node

        node = make_gpu_node(work / "sim", count=2)
        base_env = node.env()
        py, torch_text, found = sys.executable, "the CPU torch of this python (the simulated node has no CUDA)", {}
    else:
        candidates = [sys.executable, "python3", *sorted(glob.glob("/opt/*/.venv/bin/python3")),
                      *sorted(glob.glob("/opt/*/venv/bin/python3")), "/usr/bin/python3"]
        chosen, found = torch_python(candidates)
        if chosen is None:
            say("no python here imports a torch that sees a GPU: nothing to measure")
            return 3
        py = chosen
        torch_text = (f"python {found['python']} in {found['prefix']}, torch {found['torch']}, CUDA "
                      f"{found['torch_cuda']}, NCCL {nccl_text(found.get('nccl'))}, {found['devices']} GPU(s)")
    say(f"[1] torch python: {py} ({torch_text})")
    env, how = accelstack_env(py, work)
    if env is None:
        say(f"[2] {how}")
        say("    carry the wheels: see the README's 'node-check on a real GPU' (invoke, fabric, paramiko and theirs)")
        return 3
    for key in ("PATH", "NCCL_SOCKET_IFNAME", "NCCL_DEBUG"):
        if key in base_env:
            env[key] = base_env[key]
    say(f"[2] {how}")

    smi = run(["nvidia-smi", "--query-gpu=index,name,memory.used,memory.total,compute_mode,driver_version",
               "--format=csv,noheader,nounits"], timeout=30, env=env)
    rows = [r.split(", ") for r in (smi.stdout.strip().splitlines() if smi and smi.returncode == 0 else [])]
    if not rows:
        say("nvidia-smi lists no GPU: nothing to measure")
        return 3
    name = rows[0][1]
    sku = "H200" if "H200" in name else "H100" if "H100" in name else name
    say(f"[3] nvidia-smi: {len(rows)} x {name}; " + "; ".join(f"gpu {r[0]}: {r[2]}/{r[3]} MiB used, compute mode "
                                                             f"{r[4]}" for r in rows))
    from accelstack_lab.simulated.gpu_node import render_node_file

    env_file = work / "accelstack.sh"
    env_file.write_text("# node-check's env file on this node: nothing to export for the check\n")
    if args.tiny:  # this python's torch is a CPU build: the simulated node keeps the shipped stack
        stack, about = "nvidia-cuda13.0", "the shipped nvidia-cuda13.0 (--tiny: no CUDA torch here to pin)"
    else:
        (work / "stacks").mkdir()
        stack_file = work / "stacks" / f"{STACK_NAME}.yml"
        stack_file.write_text(installed_stack(found, driver=rows[0][5] if len(rows[0]) > 5 else None,
                                              cuda=cuda_toolkit_version(), sku=sku))
        stack, about = str(stack_file), "pinning what step 1 read: " + " ".join(
            line.strip() for line in stack_file.read_text().split("components:", 1)[1].split("paths:", 1)[0]
            .splitlines() if line.strip())
    node_file = render_node_file(work / "node.yml", stack=stack, node="gpu01",
                                 values={"expect_devices": len(rows), "accelerator": sku, "stack_python": py},
                                 env_file=env_file, runs_dir=work / "runs")
    env["ACCELSTACK_RUNS"] = str(work / "runs")
    bindir = work / "bin"
    bindir.mkdir()
    calls = work / "scontrol-calls"
    (bindir / "scontrol").write_text(f'#!/bin/sh\necho "scontrol $*" >> {calls}\n')
    (bindir / "scontrol").chmod(0o755)
    check = [py, "-m", "accelstack", "node-check", "--config", str(node_file), "--node", "gpu01", "--json"]
    say(f"    node file {node_file}, stack {about}")
    log_lines: list[str] = []

    def tier(label: str, extra: list[str], times: int, limit: float, run_env: dict[str, str]) -> None:
        walls, cpus, last = [], [], ("", -1)
        for _ in range(times):
            wall, cpu, code, stdout = measured(check + extra, run_env, limit)
            walls.append(wall)
            cpus.append(cpu)
            last = (stdout, code)
        say(f"    {label}: wall {statistics.median(walls):.2f} s (runs {', '.join(f'{w:.2f}' for w in walls)}), "
            f"CPU {statistics.median(cpus):.2f} s (runs {', '.join(f'{c:.2f}' for c in cpus)}), exit {last[1]}")
        for line in verdicts(last[0]):
            say(line)
        log_lines.append(json.dumps({"label": label, "walls": walls, "cpus": cpus, "exit": last[1]}))
        if out_dir is not None:
            (out_dir / ("_".join(w for w in label.split() if not w.startswith("-")) + ".jsonl")).write_text(last[0])

    say("[4] idle node")
    smi_calls = count_smi_calls(check + ["--tier", "health"], env, work)
    say(f"    one health run calls nvidia-smi {len(smi_calls)} time(s): " + "; ".join(smi_calls))
    log_lines.append(json.dumps({"label": "nvidia-smi calls of one health run", "calls": smi_calls}))
    tier("health", ["--tier", "health"], 1 if args.tiny else 3, 60, env)
    split = run([py, "-c", SPLIT, "node-check", *check[4:], "--tier", "health"], timeout=60, env=env)
    if split is not None:
        parts = split_parts(split.stderr)
        say("    where one health run's CPU goes: " + ", ".join(
            f"{label} {parts.get(key, 0.0):.2f} s" for key, label in (
                ("own", "node-check's own process"), ("batch", "the health batch (its nvidia-smi reads too)"),
                ("probe", "versions' probe"), ("other", "other commands"))))
        log_lines.append(json.dumps({"label": "CPU of one health run by process", **parts}))
    if not args.tiny:
        tier("quick", ["--tier", "quick"], 2, 90, env)

    say(f"[5] beside a job: another process holds all but about {HOLD_MB} MB of every GPU")
    holder = None
    if args.tiny:
        node.hold(0, memory_mib=78000)
    else:
        holder = subprocess.Popen([py, "-c", HOLDER, str(HOLD_MB), "150"], stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + left(60)
        assert holder.stdout is not None
        while time.monotonic() < deadline:
            line = holder.stdout.readline()
            if not line:
                break
            say("    holder: " + line.strip())
            if line.startswith("holding"):
                break
    drain_env = {**env, "PATH": f"{bindir}{os.pathsep}{env.get('PATH', '')}", "SLURMD_NODENAME": "gpu01"}
    try:
        smi = run(["nvidia-smi", "--query-gpu=index,memory.used,memory.total", "--format=csv,noheader,nounits"],
                  timeout=30, env=env)
        say("    nvidia-smi now: " + (smi.stdout.strip().replace("\n", "; ") if smi else "no answer"))
        apps = run(["nvidia-smi", "--query-compute-apps=pid,process_name,used_memory", "--format=csv,noheader"],
                   timeout=30, env=env)
        say("    processes it lists: " + ((apps.stdout.strip().replace("\n", "; ") or "none") if apps else "no answer"))
        tier("beside-a-job health --drain", ["--tier", "health", "--drain"], 1, 60, drain_env)
        tier("beside-a-job quick --drain", ["--tier", "quick", "--drain"], 1, 90, drain_env)
    finally:
        if holder is not None:
            holder.terminate()
            try:
                holder.wait(15)
            except subprocess.TimeoutExpired:
                holder.kill()
                holder.wait(10)
    asked = calls.read_text().strip() if calls.exists() else ""
    say(f"    drains asked for beside the job: {asked or 'none'}")
    say(f"[6] done in {time.monotonic() - STARTED:.0f} s")
    if out_dir is not None:
        (out_dir / "gpu_node_check_runs.jsonl").write_text("\n".join(log_lines) + "\n")
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
