"""Helpers of the lab tests: a lab host's files, the lab's artifact repository, the CPU stack's venv on the hosts, a
lab's inventory cut for a test, faults healed, and a module's own lab. What every test module shares (the command
line, Ctrl-C, scripts loaded as modules) is in helpers.py."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

# torch's dependency wheels, downloaded once from the package index and kept across runs.
DEPS_CACHE = Path("/var/tmp/accelstack-test-deps")
# The CPU stack's venv for lab hosts that validate without provisioning: torch and the wheels it imports.
TORCH_WHEEL = Path("/opt/wheels/torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl")
DEPS = ["filelock", "typing-extensions", "sympy", "networkx", "jinja2", "fsspec", "mpmath", "markupsafe"]
# Outside every folder a lab host shadows, so the hosts can read it as it is.
WHEELHOUSE = Path("/var/tmp/accelstack-acv-wheels")
VENV_CACHE = Path("/var/tmp/accelstack-acv-venv")
VENV = "/opt/accelstack/venv"


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
def fresh_lab(root: Path, tag: str, subnet: str, hosts: int) -> Iterator[object]:
    """A lab of a module's own (tag and subnet apart from the session lab's): one an interrupted earlier session
    left is removed first, and this one is removed on the way out. For a fixture that asks for ``as_root`` (so its
    tests are marked ``root``)."""
    from accelstack_lab import Lab

    (root / "inventories").mkdir(parents=True, exist_ok=True)
    lab = Lab(root, tag=tag, subnet=subnet)
    lab.down()
    lab.up(hosts)
    try:
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


@contextmanager
def own_lab(root: Path, tag: str, subnet: str, hosts: int) -> Iterator[object]:
    """:func:`fresh_lab`, with the CPU stack's venv on its hosts."""
    with fresh_lab(root, tag, subnet, hosts) as lab:
        install_venv(lab)
        yield lab


@contextmanager
def provisioning_lab(root: Path, tag: str, subnet: str, hosts: int,
                     stacks: list[str]) -> Iterator[tuple[object, Path, dict]]:
    """:func:`fresh_lab` to provision: the lab's artifact repository for ``stacks`` (built before the hosts come
    up) and the lab's inventory document with it, and a reboot that is a no-op."""
    import yaml

    repo = lab_repository(root / "repo", stacks)
    with fresh_lab(root, tag, subnet, hosts) as lab:
        doc = yaml.safe_load(lab.inventory.read_text())  # type: ignore[attr-defined]
        doc["vars"].update({"artifact_repo": str(repo), "reboot_command": "true", "reboot_settle": 0,
                            "reboot_expect_new_boot": False})
        yield lab, repo, doc
