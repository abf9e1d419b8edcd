"""A wheel, installed into a fresh venv outside the checkout, runs ``accelstack validate`` as the README's first
command does: the host-side scripts come from the package, the embedded default inventory, the stacks and the
compat matrices from the data the wheel installs under ``<prefix>/share/accelstack``.

The wheel is built from a copy of the build inputs (a stale ``build/`` in a checkout can leak deleted modules
into a wheel), without the network: ``--no-build-isolation`` uses the setuptools already installed. The venv sees
the system site-packages (torch, fabric and the rest are installed there, and this test must not download them),
so the test proves the venv's own copy of accelstack is the one that runs, not the editable checkout.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # a wheel built and installed into a fresh venv

REPO = Path(__file__).resolve().parents[1]
BUILD_INPUTS = ("pyproject.toml", "README.md", "src", "inventories", "stacks", "compat", "roles", "templates")
DEFAULTS = ("inventories", "stacks", "compat", "roles", "templates")
SHARE = "share/accelstack"


def run(argv: list[str], *, cwd: Path, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    # Nothing of the checkout may leak in: no PYTHONPATH to its src, no ACCELSTACK_HOME, runs in the cwd.
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "ACCELSTACK_HOME", "ACCELSTACK_RUNS")}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return subprocess.run(argv, cwd=str(cwd), env=env, capture_output=True, text=True, timeout=timeout)


def checked(proc: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    assert proc.returncode == 0, (proc.args, proc.stdout[-3000:], proc.stderr[-3000:])
    return proc


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("wheel")
    source = base / "source"
    source.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info", "*.pyc")
    for name in BUILD_INPUTS:
        if (REPO / name).is_dir():
            shutil.copytree(REPO / name, source / name, ignore=ignore)
        else:
            shutil.copy2(REPO / name, source / name)
    dist = base / "dist"
    checked(run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
                 "--no-cache-dir", "-w", str(dist), str(source)], cwd=base))
    [wheel] = dist.glob("accelstack-*.whl")
    venv = base / "venv"
    # No pip of its own: the system's pip (visible through the system site-packages) installs into the venv.
    checked(run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(venv)], cwd=base))
    python = venv / "bin" / "python"
    # --force-reinstall: the editable checkout is "already installed" in the system site-packages; pip leaves
    # that one alone (outside the environment) and puts the wheel's copy in the venv's own site-packages.
    checked(run([str(python), "-m", "pip", "install", "--no-deps", "--no-index", "--force-reinstall", str(wheel)],
                cwd=base))
    work = base / "work"  # no inventories/ here, nothing of the checkout
    work.mkdir()
    return {"wheel": wheel, "venv": venv, "python": python, "work": work}


def shipped_files(folder: str) -> set[str]:
    """Every file of the checkout under ``folder`` that git tracks or would track (not ignored)."""
    try:  # safe.directory: CI runs as root in a checkout another user may own
        proc = subprocess.run(["git", "-c", "safe.directory=*", "ls-files", "--cached", "--others",
                               "--exclude-standard", "--", folder], cwd=str(REPO), capture_output=True, text=True)
    except FileNotFoundError:
        proc = None
    if proc is None or proc.returncode != 0:  # no git here: what is on disk, less what .gitignore names
        every = (p.relative_to(REPO).as_posix() for p in (REPO / folder).rglob("*") if p.is_file())
        return {p for p in every if p != "inventories/lab.yml" and "__pycache__" not in p}
    return {line for line in proc.stdout.splitlines() if line and (REPO / line).is_file()}


def test_the_wheel_ships_the_host_side_scripts_and_the_defaults(installed: dict[str, Path]) -> None:
    names = set(zipfile.ZipFile(installed["wheel"]).namelist())
    hostside = {p for p in shipped_files("src/accelstack/hostside") if p.endswith((".py", ".sh"))}
    assert {"src/accelstack/hostside/validators/_common.py", "src/accelstack/hostside/probes/facts_probe.sh",
            "src/accelstack/hostside/probes/stack_snippet.py"} <= hostside
    assert {p.removeprefix("src/") for p in hostside} <= names
    # Each vendor's folder travels whole: its code, its host-side module, its data (floors, compat rows, diagnosis
    # tables, roles).
    vendors = {p for p in shipped_files("src/accelstack/vendors") if "__pycache__" not in p}
    assert {"src/accelstack/vendors/nvidia/hostside.py", "src/accelstack/vendors/nvidia/floors.yml",
            "src/accelstack/vendors/ascend/diagnose/ascend-cann.yml"} <= vendors
    assert {p.removeprefix("src/") for p in vendors} <= names, sorted({p.removeprefix("src/") for p in vendors} - names)
    data = next(n.split("/data/", 1)[0] for n in names if ".data/data/" in n)
    defaults = set().union(*(shipped_files(folder) for folder in DEFAULTS))
    assert "inventories/local.yml" in defaults and "stacks/cpu.yml" in defaults
    missing = sorted(p for p in defaults if f"{data}/data/{SHARE}/{p}" not in names)
    assert not missing, f"pyproject's [tool.setuptools.data-files] leaves out {missing}"
    # lab.up's generated inventory never travels in a wheel.
    assert not any(n.endswith(f"{SHARE}/inventories/lab.yml") for n in names)


def test_the_wheel_carries_none_of_the_lab(installed: dict[str, Path]) -> None:
    """The lab (real sshd hosts, simulated vendor tools and installers) is a checkout's test tooling: no file of
    it in the wheel, and the installed console script has none of its tasks."""
    names = zipfile.ZipFile(installed["wheel"]).namelist()
    assert not [n for n in names if "accelstack_lab" in n or "/lab/" in n or "simulated" in n.lower()], names
    accelstack = installed["venv"] / "bin" / "accelstack"
    listed = checked(run([str(accelstack), "--list"], cwd=installed["work"])).stdout
    tasks = {line.split()[0] for line in listed.splitlines()[1:] if line.strip()}
    assert "validate" in tasks and "node-check" in tasks
    assert not [t for t in tasks if t.split(".")[0] in ("lab", "repo")], tasks
    proc = run([str(accelstack), "lab.up"], cwd=installed["work"])
    assert proc.returncode != 0 and "lab.up" in proc.stderr, (proc.stdout, proc.stderr)


def test_the_venv_runs_its_own_installed_copy(installed: dict[str, Path]) -> None:
    proc = checked(run([str(installed["python"]), "-c",
                        "import accelstack, accelstack.paths as p, accelstack.validate.registry as r;"
                        "print(accelstack.__file__); print(p.project_root()); print(r.validators_dir())"],
                       cwd=installed["work"]))
    module, root, validators = (Path(line) for line in proc.stdout.splitlines())
    venv = installed["venv"].resolve()
    assert module.resolve().is_relative_to(venv / "lib"), module  # the wheel's copy, not REPO/src
    assert root.resolve() == venv / "share" / "accelstack", root
    assert validators.resolve().is_relative_to(venv / "lib") and (validators / "devices.py").is_file()


def test_accelstack_validate_from_the_wheel_runs_the_real_validators(installed: dict[str, Path]) -> None:
    accelstack = installed["venv"] / "bin" / "accelstack"
    proc = run([str(accelstack), "validate", "--tier", "quick", "--json"], cwd=installed["work"], timeout=300)
    assert proc.returncode in (0, 1, 2), (proc.returncode, proc.stdout[-2000:], proc.stderr[-2000:])
    records = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    by_check = {r["check"]: r for r in records}
    assert {"devices", "torch_devices", "env", "collective_init", "versions.torch", "clock"} <= set(by_check), \
        sorted(by_check)
    assert all(r["host"] == "localhost" for r in records)
    devices = by_check["torch_devices"]
    # Ran for real: the script's own verdict (torch imports on the cpu stack), uploaded from the wheel's copy.
    assert devices["status"] == "pass" and "torch" in devices["summary"], devices
    command = devices["evidence"]["command"]
    assert "/var/tmp/accelstack/validators/" in command and "/torch_devices.py " in command
    # The embedded default inventory and the cpu stack came from the data the wheel installed.
    config = json.loads(command.rsplit(" '", 1)[1].rstrip("'"))
    assert Path(config["inventory"]).resolve() == installed["venv"].resolve() / SHARE / "inventories" / "local.yml"
    assert config["stack"] == "cpu"
    assert by_check["versions.torch"]["status"] == "pass", by_check["versions.torch"]
    assert list((installed["work"] / "runs").glob("*/results.jsonl")), "the run folder lands in the cwd"
