"""Helpers the test modules share: the real CLI with a run folder of the test's (run to the end, or started and
interrupted), its records, a lab host's files, and a host-side script loaded as a module."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parent.parent
VALIDATORS = REPO / "src" / "accelstack" / "hostside" / "validators"
# torch's dependency wheels, downloaded once from the package index and kept across runs.
DEPS_CACHE = Path("/var/tmp/accelstack-test-deps")
# The CPU stack's venv for lab hosts that validate without provisioning: torch and the wheels it imports.
TORCH_WHEEL = Path("/opt/wheels/torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl")
DEPS = ["filelock", "typing-extensions", "sympy", "networkx", "jinja2", "fsspec", "mpmath", "markupsafe"]
# Outside every folder a lab host shadows, so the hosts can read it as it is.
WHEELHOUSE = Path("/var/tmp/accelstack-acv-wheels")
VENV_CACHE = Path("/var/tmp/accelstack-acv-venv")
VENV = "/opt/accelstack/venv"


def cli(*args: str, runs: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """``python -m accelstack ARGS`` as a user runs it, its records going to ``runs``."""
    return subprocess.run([sys.executable, "-m", "accelstack", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, "ACCELSTACK_RUNS": str(runs)})


def records(proc: subprocess.CompletedProcess[str]) -> list[dict]:
    return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]


def by_host(proc: subprocess.CompletedProcess[str], check: str = "provision") -> dict[str, dict]:
    return {r["host"]: r for r in records(proc) if r["check"] == check}


def host_root(lab: object, host: str) -> Path:
    """The folder behind a lab host's private /opt, /usr/local, ... (``<root>/opt`` is its /opt)."""
    return lab.dir / "hosts" / host / "root"  # type: ignore[attr-defined,no-any-return]


def lab_repository(dest: Path, stacks: list[str]) -> Path:
    """The lab's artifact repository for ``stacks``, with the wheels torch needs for a ``--no-index`` install."""
    from accelstack.provision.artifacts import add_dependency_wheels
    from accelstack_lab.simulated import build_lab_repository

    repo = build_lab_repository(dest, torch_wheel=None, stacks=stacks, fault_fixtures=False)
    if not DEPS_CACHE.exists() or not list(DEPS_CACHE.glob("*.whl")):
        torch = next((repo / "wheels").glob("torch-*.whl"))
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "-d", str(DEPS_CACHE), str(torch)], check=True)
    add_dependency_wheels(repo, download=DEPS_CACHE)
    return repo


def wheelhouse() -> Path:
    WHEELHOUSE.mkdir(parents=True, exist_ok=True)
    target = WHEELHOUSE / TORCH_WHEEL.name
    if not target.exists():
        try:
            os.link(TORCH_WHEEL, target)
        except OSError:
            subprocess.run(["cp", str(TORCH_WHEEL), str(target)], check=True)
    if len(list(WHEELHOUSE.glob("*.whl"))) < len(DEPS) + 1:
        subprocess.run(["pip", "download", "--no-deps", "-q", "-d", str(WHEELHOUSE), *DEPS], check=True,
                       timeout=300)
    return WHEELHOUSE


def venv_cache(lab: object) -> Path:
    """The CPU stack's venv, built once inside a lab host (so its paths are the host's) and cached beside the
    wheels: ``VENV_CACHE/accelstack/venv``."""
    hosts = lab.load()  # type: ignore[attr-defined]
    first = hosts["lab1"]
    stamp = VENV_CACHE / ".complete"
    if not stamp.exists():
        wheels = wheelhouse()
        script = (f"/usr/bin/python3 -m venv {VENV} && {VENV}/bin/pip install -q --no-index --no-deps "
                  f"{wheels}/*.whl")
        subprocess.run(["nsenter", "-t", str(first.anchor_pid), "-m", "-n", "--", "/bin/sh", "-c", script],
                       check=True, timeout=300)
        subprocess.run(["rm", "-rf", str(VENV_CACHE)], check=True)
        VENV_CACHE.mkdir(parents=True)
        opt = lab._host_dir(first) / "root" / "opt"  # type: ignore[attr-defined]
        subprocess.run(["cp", "-a", str(opt / "accelstack"), str(VENV_CACHE / "accelstack")], check=True)
        stamp.touch()
    return VENV_CACHE / "accelstack"


def copy_tree(source: Path, target: Path) -> None:
    """Hard links where the filesystem allows (the venv is only read), a copy otherwise."""
    target.parent.mkdir(parents=True, exist_ok=True)
    if subprocess.run(["cp", "-al", str(source), str(target)], capture_output=True).returncode != 0:
        subprocess.run(["rm", "-rf", str(target)], check=True)
        subprocess.run(["cp", "-a", str(source), str(target)], check=True)


def install_venv(lab: object) -> None:
    """The CPU stack's venv on every lab host, copied from the cache into the hosts' private /opt."""
    cache = venv_cache(lab)
    for host in lab.load().values():  # type: ignore[attr-defined]
        opt = lab._host_dir(host) / "root" / "opt"  # type: ignore[attr-defined]
        if not (opt / "accelstack" / "venv" / "bin" / "python").exists():
            copy_tree(cache, opt / "accelstack")


def lab_inventory(lab: object, tmp_path: Path, **extra: object) -> str:
    """The lab's inventory with validation's deadlines and sizes cut for a lab test, and ``extra`` vars."""
    import yaml

    doc = yaml.safe_load(Path(lab.inventory).read_text())  # type: ignore[attr-defined]
    doc["vars"].update({"multinode_deadline_s": 45, "checkpoint_size_gb": 0.01, **extra})
    path = tmp_path / "lab.yml"
    path.write_text(yaml.safe_dump(doc))
    return str(path)


def heal_all(lab: object) -> None:
    """Every fault a test injected on the lab's hosts, healed."""
    for row in lab.status():  # type: ignore[attr-defined]
        if row["faults"]:
            lab.heal(row["host"])  # type: ignore[attr-defined]


@contextmanager
def own_lab(root: Path, tag: str, subnet: str, hosts: int) -> Iterator[object]:
    """A lab of a module's own (tag and subnet apart from the session lab's), with the CPU stack's venv; one an
    interrupted earlier session left is removed first, and this one is removed on the way out."""
    import pytest

    if os.geteuid() != 0:
        pytest.fail("the lab tests need root (network namespaces and sshd)")
    from accelstack_lab import Lab

    (root / "inventories").mkdir(parents=True, exist_ok=True)
    lab = Lab(root, tag=tag, subnet=subnet)
    lab.down()
    lab.up(hosts)
    try:
        install_venv(lab)
        yield lab
    finally:
        lab.down()


def bin_dir(tmp_path: Path) -> Path:
    """``tmp_path/bin``, with ``python3`` in it: the PATH of a validator run against simulated vendor tools."""
    folder = tmp_path / "bin"
    folder.mkdir(exist_ok=True)
    if not (folder / "python3").exists():
        (folder / "python3").symlink_to(sys.executable)
    return folder


def load_validator(name: str) -> ModuleType:
    """``hostside/validators/<name>.py`` imported as a module, so its pure parsers and judgements are testable
    (the scripts are files the hosts run, not modules of the package)."""
    spec = importlib.util.spec_from_file_location(f"validator_{name}", VALIDATORS / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load_vendor_hostside(vendor: str) -> ModuleType:
    """A vendor's host-side module (``vendors/<vendor>/hostside.py``), as the validators load it
    (``_common.vendor_module``): the same module object they call, so its parsers and judgements are testable."""
    if str(VALIDATORS) not in sys.path:
        sys.path.insert(0, str(VALIDATORS))
    common = importlib.import_module("_common")
    return common.vendor_module(vendor)  # type: ignore[no-any-return]


@contextmanager
def cli_process(*args: str, runs: Path) -> Iterator[subprocess.Popen[str]]:
    """``python -m accelstack ARGS`` started (this tree's package, records to ``runs``), killed on the way out
    if the test left it running."""
    env = {**os.environ, "ACCELSTACK_RUNS": str(runs), "PYTHONPATH": str(REPO / "src")}
    proc = subprocess.Popen([sys.executable, "-m", "accelstack", *args], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def first_results(runs: Path, timeout: float, poll: float = 0.1) -> Path:
    """The run's ``results.jsonl`` once a first record is in it."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        found = [p for p in runs.glob("*/results.jsonl") if p.stat().st_size] if runs.exists() else []
        if found:
            return found[0]
        time.sleep(poll)
    raise AssertionError(f"no record arrived in {runs} within {timeout:g} s")


def interrupt(proc: subprocess.Popen[str], timeout: float, times: int = 1) -> tuple[str, str]:
    """Ctrl-C (``times`` SIGINTs, apart so the kernel does not merge them); then the run's stdout and stderr."""
    for n in range(times):
        if n:
            time.sleep(0.02)
        proc.send_signal(signal.SIGINT)
    return proc.communicate(timeout=timeout)


def assert_interrupted(proc: subprocess.Popen[str], err: str) -> None:
    """Exit 130 and one line on stderr, never a traceback."""
    assert proc.returncode == 130, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
