"""The stack python read from its files (the probe's ``stack_files``), held to what the interpreter itself says.

Every case lays out a real python's packages on disk (a venv, a venv over its base's packages, the interpreter's
own prefix, Debian's python with a user site, PYTHONPATH, .pth files, egg-info, NCCL wheels in both layouts) and
runs both: the stack snippet in that python (what the probe ran before, and still runs where files cannot tell)
and the probe, which must answer from the files alone, with no interpreter start but ``-V``, and give the same
facts, paths included. The cases the files cannot answer must fall back to the snippet, and still agree.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from accelstack.facts import ProbeOptions
from accelstack.facts.assemble import parse_probe_document
from accelstack.facts.parsers import StackPython, parse_stack_python
from accelstack.facts.probe import STACK_SNIPPET, probe_argv, read_probe_output
from accelstack.paths import hostside

from .helpers import REPO, load_bench

SHELLS = [("dash",), ("bash",), ("bash", "--posix"), ("busybox", "sh")]
H200 = REPO / "tests" / "data" / "h200"
CUDA_VERSION_PY = ("from typing import Optional\n\n__all__ = ['__version__', 'debug', 'cuda', 'git_version']\n"
                   "__version__ = '{version}'\ndebug = False\ncuda: Optional[str] = {cuda}\n"
                   "git_version = '70d99e998b4955e0049d13a98d77ae1b14db1f45'\nhip: Optional[str] = None\n")


def pyenv_pythons(pattern: str) -> list[str]:
    """Interpreters of other versions this machine has (pyenv's), matching ``pattern`` (``3.1[0-9]*``)."""
    found = [str(p) for p in sorted(Path("/root/.pyenv/versions").glob(f"{pattern}/bin/python3"))]
    return [p for p in found if Path(p).resolve() != Path(sys.executable).resolve()]


def or_none_here(pythons: list[str]) -> list:
    return pythons or [pytest.param(None, marks=pytest.mark.skip(reason="no such python here"))]


def dist_info(site: Path, name: str, version: str, *, egg: bool = False) -> None:
    """``name``'s metadata as pip (dist-info/METADATA) or setuptools (egg-info/PKG-INFO) leaves it; the
    description's own "Version:" line must not be read."""
    folder = site / (f"{name.replace('-', '_')}-{version}" + (".egg-info" if egg else ".dist-info"))
    folder.mkdir(parents=True, exist_ok=True)
    (folder / ("PKG-INFO" if egg else "METADATA")).write_text(
        f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\nSummary: test\n\nVersion: 0.0.0 in the text\n")


def package(site: Path, name: str, version_py: str | None) -> Path:
    folder = site / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "__init__.py").write_text("raise ImportError('read, never imported')\n")
    if version_py is not None:
        (folder / "version.py").write_text(version_py)
    return folder


def torch_site(site: Path, *, version: str = "2.11.0+cu130", dist: str | None = "2.11.0", cuda: str | None = "13.0",
               nccl: str | None = "nvidia/nccl/lib", wheels: tuple[str, ...] = ("nvidia-nccl-cu13==2.28.9",)) -> Path:
    """A CUDA torch as pip installs it: torch/, its dist-info, the NCCL wheel's library and metadata."""
    package(site, "torch", CUDA_VERSION_PY.format(version=version, cuda=repr(cuda)))
    if dist:
        dist_info(site, "torch", dist)
    if nccl:
        (site / nccl).mkdir(parents=True, exist_ok=True)
        (site / nccl / "libnccl.so.2").write_bytes(b"\x7fELF not read")
    for wheel in wheels:
        dist_info(site, *wheel.split("=="))
    return site


def venv(folder: Path, base: str = sys.executable, *, system_site: bool = False) -> tuple[str, Path]:
    """(its python, its site-packages): a real venv of ``base``."""
    subprocess.run([base, "-m", "venv", "--without-pip", *(["--system-site-packages"] if system_site else []),
                    str(folder)], check=True, timeout=120)
    site = next((folder / "lib").glob("python3.*/site-packages"))
    return str(folder / "bin" / "python"), site


def environment(tmp_path: Path, **extra: str) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return {"PATH": "/usr/bin:/bin", "HOME": str(home), **extra}


def snippet(python: str, env: dict[str, str], cwd: Path) -> StackPython:
    """What the interpreter itself says: the stack snippet, run as the probe ran it before."""
    run = subprocess.run([python, "-c", hostside("probes", STACK_SNIPPET).read_text()], env=env, cwd=cwd,
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    return parse_stack_python(run.stdout)


def probe(python: str, env: dict[str, str], cwd: Path, shell: tuple[str, ...] = ("sh",)) -> dict:
    assert shutil.which(shell[0]), f"{shell[0]} is not installed (.ci/run installs it)"
    run = subprocess.run(probe_argv(ProbeOptions(python=python, scope="components"), shell=shell), env=env, cwd=cwd,
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    return read_probe_output(run.stdout)


def agree(python: str, env: dict[str, str], cwd: Path, *, from_files: bool = True,
          shell: tuple[str, ...] = ("sh",)) -> StackPython:
    """The probe's reading equals the interpreter's; ``from_files``: the probe read files only (no snippet)."""
    want = snippet(python, env, cwd)
    doc = probe(python, env, cwd, shell)
    sections = doc["sections"]
    if from_files:
        assert "stack_files" in sections and "stack_python" not in sections, sections.get("stack_python")
    else:
        assert "stack_python" in sections and "stack_files" not in sections, sections.get("stack_files")
    facts = parse_probe_document(doc)
    assert facts.probe_errors == [], facts.probe_errors
    assert (facts.stack_python_version, facts.stack_python) == (want.version, want.executable)
    assert facts.torch == want.torch
    return want


# ----- what the files answer -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("shell", SHELLS)
def test_a_venv_with_the_nccl_wheel_reads_the_same_under_every_posix_shell(tmp_path: Path,
                                                                          shell: tuple[str, ...]) -> None:
    python, site = venv(tmp_path / "venv")
    torch_site(site)
    want = agree(python, environment(tmp_path), tmp_path, shell=shell)
    assert want.torch is not None
    assert (want.torch.version, want.torch.dist_version, want.torch.cuda) == ("2.11.0+cu130", "2.11.0", "13.0")
    assert (want.torch.nccl, want.torch.nccl_from) == ("2.28.9", "nvidia-nccl-cu13 2.28.9 package metadata")
    assert want.torch.nccl_library == str(site / "nvidia" / "nccl" / "lib" / "libnccl.so.2")


@pytest.mark.parametrize("python", or_none_here(pyenv_pythons("3.[89].*") + pyenv_pythons("3.1[0-9].*")))
def test_venvs_of_other_python_versions(tmp_path: Path, python: str) -> None:
    vpython, site = venv(tmp_path / "venv", python)
    torch_site(site, nccl="nvidia/cu13/lib")
    agree(vpython, environment(tmp_path), tmp_path)


@pytest.mark.parametrize("python", or_none_here(pyenv_pythons("3.[67].*")))
def test_python_36_and_37_without_setuptools_read_the_metadata_their_snippet_could_not(tmp_path: Path,
                                                                                       python: str) -> None:
    # Before 3.8 there is no importlib.metadata: the snippet read package metadata through setuptools'
    # pkg_resources, which a venv made --without-pip lacks, so it knew torch only from its version.py and looked for
    # the NCCL version inside the library. The files give the metadata; the versions judged are the same.
    vpython, site = venv(tmp_path / "venv", python)
    torch_site(site)
    (site / "nvidia/nccl/lib/libnccl.so.2").write_bytes(b"\x7fELF" + b"\0" * 64 + b"NCCL version 2.28.9+cuda13.0\0")
    env = environment(tmp_path)
    old = snippet(vpython, env, tmp_path)
    doc = probe(vpython, env, tmp_path)
    assert "stack_files" in doc["sections"] and "stack_python" not in doc["sections"]
    new = parse_probe_document(doc)
    assert old.torch is not None and new.torch is not None
    assert (old.torch.dist_version, old.torch.nccl_from) == (None, "'NCCL version 2.28.9+cuda13.0' in the library")
    assert (new.torch.dist_version, new.torch.nccl_from) == ("2.11.0", "nvidia-nccl-cu13 2.28.9 package metadata")
    assert (new.torch.version, new.torch.cuda, new.torch.nccl) == (old.torch.version, old.torch.cuda, old.torch.nccl)
    assert (new.stack_python_version, new.stack_python) == (old.version, old.executable)


def test_the_interpreter_itself_with_its_own_packages_and_an_editable_pth(tmp_path: Path) -> None:
    # This machine's python: no venv, torch 2.13.0 CPU in its prefix's site-packages, a .pth naming a source folder.
    want = agree(sys.executable, environment(tmp_path), tmp_path)
    assert want.torch is not None and want.torch.version.startswith("2.13.0") and want.torch.nccl is None


def test_a_venv_over_its_base_packages_and_a_user_site(tmp_path: Path) -> None:
    # include-system-site-packages: the venv's folder, then the user site, then the base's (torch 2.13.0 CPU).
    python, site = venv(tmp_path / "venv", system_site=True)
    env = environment(tmp_path)
    assert agree(python, env, tmp_path).torch.version.startswith("2.13.0")  # type: ignore[union-attr]
    user = Path(env["HOME"]) / ".local" / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"
    torch_site(user, version="2.10.0+cu128", dist="2.10.0", cuda="12.8", wheels=("nvidia-nccl-cu12==2.27.3",))
    assert agree(python, env, tmp_path).torch.nccl == "2.27.3"  # type: ignore[union-attr]
    # ... unless PYTHONNOUSERSITE; and the venv's own torch before both.
    assert agree(python, {**env, "PYTHONNOUSERSITE": "1"}, tmp_path).torch.version.startswith("2.13.0")  # type: ignore[union-attr]
    torch_site(site, version="2.9.1+cu126", dist="2.9.1", cuda="12.6", wheels=())
    assert agree(python, env, tmp_path).torch.version == "2.9.1+cu126"  # type: ignore[union-attr]


def test_an_isolated_venv_sees_neither_the_user_site_nor_the_base(tmp_path: Path) -> None:
    python, site = venv(tmp_path / "venv")
    env = environment(tmp_path)
    user = Path(env["HOME"]) / ".local" / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"
    torch_site(user)
    package(site, "torch", CUDA_VERSION_PY.format(version="2.11.0+cpu", cuda=None))  # no metadata: version.py's
    want = agree(python, env, tmp_path)
    assert want.torch is not None and (want.torch.version, want.torch.dist_version) == ("2.11.0+cpu", None)


@pytest.mark.skipif(not Path("/usr/lib/python3/dist-packages").is_dir() or not Path("/usr/bin/python3").exists(),
                    reason="not a Debian or Ubuntu python")
def test_debians_python_with_a_user_site(tmp_path: Path) -> None:
    # Debian's site.py reads dist-packages, not site-packages; the user site comes first.
    env = environment(tmp_path)
    version = subprocess.run(["/usr/bin/python3", "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    user = Path(env["HOME"]) / ".local" / "lib" / f"python{version}" / "site-packages"
    torch_site(user, nccl="nvidia/cu13/lib")
    want = agree("/usr/bin/python3", env, tmp_path)
    assert want.torch is not None and want.torch.nccl == "2.28.9"
    # A venv of it: its own site-packages, then the dist-packages folders Debian's site.py adds inside it.
    python, site = venv(tmp_path / "venv", "/usr/bin/python3")
    dist_packages = tmp_path / "venv" / "lib" / "python3" / "dist-packages"
    torch_site(dist_packages, version="2.9.1+cu126", dist="2.9.1", cuda="12.6", wheels=("nvidia-nccl-cu12==2.27.3",))
    package(tmp_path / "venv" / "local" / "lib" / f"python{version}" / "dist-packages", "torch_npu",
            "__version__ = '2.9.1'\n")
    want = agree(python, env, tmp_path)
    assert want.torch is not None and (want.torch.version, want.torch.nccl, want.torch.torch_npu) == (
        "2.9.1+cu126", "2.27.3", "2.9.1")


def test_pythonpath_comes_first_made_absolute(tmp_path: Path) -> None:
    python, site = venv(tmp_path / "venv")
    torch_site(site)
    first = torch_site(tmp_path / "first", version="2.12.0+cu130", dist="2.12.0", nccl="nvidia/cu13/lib",
                       wheels=("nvidia-nccl-cu13==2.29.1",))
    env = environment(tmp_path, PYTHONPATH=f"::first/:{tmp_path}//nowhere/..:")  # relative, empty, unnormalised
    want = agree(python, env, tmp_path)
    assert want.torch is not None and want.torch.version == "2.12.0+cu130" and want.torch.nccl == "2.29.1"
    assert want.torch.location == str(first / "torch")


def test_pth_lines_name_folders_and_their_import_lines_are_not_paths(tmp_path: Path) -> None:
    python, site = venv(tmp_path / "venv")
    extra = tmp_path / "extra"
    torch_site(extra, wheels=("nvidia-nccl-cu12==2.26.2",), nccl="nvidia/nccl/lib")
    package(extra, "torch_npu", "__version__ = '2.5.1'\ngit_version = 'abc'\n")
    dist_info(extra, "torch_npu", "2.5.1", egg=True)
    (site / "a_first.pth").write_text(f"# a comment\nimport os\n\n{extra}  \nrelative-missing\n")
    (site / "b_second.pth").write_text("../../../../extra\n")
    want = agree(python, environment(tmp_path), tmp_path)
    assert want.torch is not None and want.torch.torch_npu == "2.5.1" and want.torch.nccl == "2.26.2"


def test_torch_npu_beside_a_cpu_torch_and_no_nccl(tmp_path: Path) -> None:
    python, site = venv(tmp_path / "venv")
    torch_site(site, version="2.5.1", dist="2.5.1", cuda=None, nccl=None, wheels=())
    package(site, "torch_npu", "__version__ = '2.5.1.post2'\ngit_version = 'def'\n")
    dist_info(site, "torch_npu", "2.5.1.post2")
    want = agree(python, environment(tmp_path), tmp_path)
    assert want.torch is not None and want.torch.torch_npu == "2.5.1.post2" and want.torch.nccl is None


def test_wheels_without_their_library_and_a_library_in_torch_lib(tmp_path: Path) -> None:
    python, site = venv(tmp_path / "venv")
    torch_site(site, nccl=None, wheels=("nvidia-nccl-cu12==2.26.2", "nvidia-nccl-cu13==2.28.9"))
    assert agree(python, environment(tmp_path), tmp_path).torch.nccl == "2.28.9"  # type: ignore[union-attr]
    (site / "torch" / "lib").mkdir()
    (site / "torch" / "lib" / "libnccl.so.2.27.5").write_bytes(b"\x7fELF")
    # A wheel, but torch loads its own copy: that copy's name tells.
    assert agree(python, environment(tmp_path), tmp_path).torch.nccl == "2.27.5"  # type: ignore[union-attr]


# ----- what only the interpreter can tell: the snippet runs, as before --------------------------------------------

def test_a_library_without_its_wheel_is_read_by_the_snippet(tmp_path: Path) -> None:
    python, site = venv(tmp_path / "venv")
    torch_site(site, wheels=())
    (site / "nvidia/nccl/lib/libnccl.so.2").write_bytes(b"\x7fELF" + b"\0" * 64 + b"NCCL version 2.28.9+cuda13.0\0")
    want = agree(python, environment(tmp_path), tmp_path, from_files=False)
    assert want.torch is not None and want.torch.nccl == "2.28.9"


def test_no_torch_by_its_files_asks_the_interpreter(tmp_path: Path) -> None:
    python, _site = venv(tmp_path / "venv")
    assert agree(python, environment(tmp_path), tmp_path, from_files=False).torch is None


@pytest.mark.parametrize("layout", ["torch in the working folder", "a torch namespace folder first",
                                    "two torch dist-infos", "metadata without the package",
                                    "metadata without a version", "PYTHONHOME", "a relative python"])
def test_what_the_files_cannot_tell_falls_back_to_the_snippet(tmp_path: Path, layout: str) -> None:
    python, site = venv(tmp_path / "venv")
    torch_site(site)
    env, cwd = environment(tmp_path), tmp_path
    if layout == "torch in the working folder":
        cwd = tmp_path / "work"
        package(cwd, "torch", CUDA_VERSION_PY.format(version="2.0.0", cuda=None))
    elif layout == "a torch namespace folder first":
        (tmp_path / "ns" / "torch").mkdir(parents=True)
        env["PYTHONPATH"] = str(tmp_path / "ns")
    elif layout == "two torch dist-infos":
        dist_info(site, "torch", "2.10.0")
    elif layout == "metadata without the package":
        shutil.rmtree(site / "torch")
    elif layout == "metadata without a version":  # in its headers: the description's "Version:" is text
        (site / "torch-2.11.0.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: torch\n\nVersion: 1\n")
    elif layout == "PYTHONHOME":
        env["PYTHONHOME"] = str(Path(sys.base_prefix))
    elif layout == "a relative python":
        python, cwd = "venv/bin/python", tmp_path
    agree(python, env, cwd, from_files=False)


# ----- the real H200's venv, laid out on disk from its capture -----------------------------------------------------

@pytest.fixture(scope="module")
def node_bench() -> ModuleType:
    return load_bench("node_check")


def test_the_h200_venv_from_its_capture_reads_as_its_snippet_did(tmp_path: Path, node_bench: ModuleType) -> None:
    # Its 207 packages' metadata (its pip list), torch's version.py and the NCCL wheel as the snippet saw them there.
    python = node_bench.h200_venv(tmp_path / "opt" / "torch" / ".venv")
    want = agree(python, environment(tmp_path), tmp_path)
    captured = json.loads((H200 / "bundle" / "commands" / "opt_torch_.venv_bin_python3_-c_stack_snippet.txt")
                          .read_text())
    site = next((tmp_path / "opt/torch/.venv/lib").glob("python3.*/site-packages"))  # this python's X.Y, not 3.12
    relocated = parse_stack_python(json.dumps(captured).replace("/opt/torch/.venv/lib/python3.12/site-packages",
                                                                str(site)))
    assert relocated.torch is not None and want.torch is not None
    assert want.torch == relocated.torch
    assert (want.torch.version, want.torch.cuda, want.torch.nccl) == ("2.11.0+cu130", "13.0", "2.28.9")
