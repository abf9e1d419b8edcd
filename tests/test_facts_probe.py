"""The facts probe, really run on this machine (no SSH: the same command line a host would get)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from accelstack.facts import Facts, ProbeOptions, parse_probe_output, probe_command
from accelstack.facts.probe import probe_script

CAPTURES = Path(__file__).parent / "data" / "captures"


def capture(name: str) -> str:
    return (CAPTURES / name).read_text(encoding="utf-8")


def run_probe(
    options: ProbeOptions | None = None, shell: str = "sh", env: dict[str, str] | None = None
) -> str:
    result = subprocess.run(
        [shutil.which(shell) or shell, "-c", probe_command(options)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def path_with(tmp_path: Path, tools: dict[str, str], python: str = sys.executable) -> dict[str, str]:
    """An environment whose PATH holds only python3 and the given fake tools (name -> sh script body)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "python3").symlink_to(python)
    for name, body in tools.items():
        tool = bin_dir / name
        tool.write_text("#!/bin/sh\n" + body)
        tool.chmod(0o755)
    return {"PATH": str(bin_dir), "HOME": str(tmp_path)}


@pytest.fixture(scope="module")
def local_facts() -> Facts:
    return parse_probe_output(
        run_probe(ProbeOptions(python=sys.executable, disk_paths=["/", "/nonexistent"]))
    )


def test_probe_on_this_machine(local_facts: Facts) -> None:
    facts = local_facts
    uname = os.uname()
    assert facts.hostname == socket.gethostname()
    assert (facts.kernel, facts.arch) == (uname.release, uname.machine)
    assert facts.cpus == os.cpu_count()
    with open("/proc/meminfo") as f:
        mem_total = int(f.readline().split()[1])
    assert facts.mem_total_kib == mem_total
    assert facts.os_name and facts.os_version
    assert facts.python_version  # the host's python3
    assert facts.numa_nodes and facts.numa_nodes[0] == 0
    assert any(i.name == "lo" and i.up for i in facts.interfaces)
    assert facts.shm_bytes and facts.shm_bytes > 0
    assert facts.memlock_known
    assert facts.disk_free["/"] and facts.disk_free["/nonexistent"] is None


def test_probe_finds_torch_through_the_python_option(local_facts: Facts) -> None:
    import torch

    assert local_facts.torch is not None
    assert local_facts.torch.version == torch.__version__
    assert local_facts.torch.version.startswith("2.13.0")
    assert local_facts.torch.cuda is None  # CPU build
    assert local_facts.torch.git_version == torch.version.git_version
    assert local_facts.stack_python_version == ".".join(map(str, sys.version_info[:3]))
    components = local_facts.components()
    assert components["torch"] == torch.__version__ and components["torch_cuda"] is None
    assert components["torch_npu"] is None


def test_no_accelerators_here_is_data_not_a_crash(local_facts: Facts) -> None:
    facts = local_facts
    assert facts.accelerators == []
    assert facts.ascend is None
    # A CUDA toolkit without a driver is still worth reporting, so NvidiaFacts may exist, but holds no GPU.
    assert facts.nvidia is None or (facts.nvidia.gpus == [] and facts.nvidia.driver_version is None)
    assert {"nvidia-smi", "npu-smi"} <= set(facts.missing_tools)
    assert facts.probe_errors == []
    components = facts.components()
    assert set(components) == {
        "python", "torch", "torch_npu", "torch_cuda", "ascend_driver", "ascend_firmware",
        "cann_toolkit", "cann_kernels", "nnal", "nvidia_driver", "cuda", "nccl",
    }  # fmt: skip
    assert components["ascend_driver"] is None and components["nvidia_driver"] is None
    summary = facts.summary()
    assert f"{facts.cpus} CPUs" in summary and "0 accelerators" in summary and "torch 2.13.0" in summary


def test_facts_round_trip_through_json(local_facts: Facts) -> None:
    assert Facts.from_dict(json.loads(json.dumps(local_facts.to_dict()))) == local_facts


def test_command_works_under_bash_too() -> None:
    facts = parse_probe_output(run_probe(ProbeOptions(python=sys.executable), shell="bash"))
    assert facts.hostname == socket.gethostname()


def test_fake_path_without_tools(tmp_path: Path) -> None:
    env = path_with(tmp_path, {})
    facts = parse_probe_output(run_probe(ProbeOptions(python="python3"), env=env))
    assert facts.hostname == socket.gethostname()
    assert {"nvidia-smi", "npu-smi"} <= set(facts.missing_tools)
    assert facts.ascend is None and facts.accelerators == []
    assert facts.torch is not None  # python3 on the fake PATH is this python


def test_fake_tools_failing_hanging_and_reporting(tmp_path: Path) -> None:
    (tmp_path / "npu.txt").write_text(capture("npu_smi_info_910b3_a2_25.2.0.txt"))
    env = path_with(
        tmp_path,
        {
            "npu-smi": f'exec /bin/cat "{tmp_path}/npu.txt"\n',
            "nvidia-smi": 'echo "NVIDIA-SMI has failed because it couldn\'t communicate with the NVIDIA driver."\n'
            "exit 9\n",
            "nvcc": "exec /bin/sleep 60\n",
        },
    )
    started = time.monotonic()
    facts = parse_probe_output(run_probe(ProbeOptions(python="python3", timeout=1), env=env))
    assert time.monotonic() - started < 30  # the hung nvcc was killed, not waited for
    assert facts.ascend is not None and len(facts.ascend.npus) == 8
    assert facts.ascend.npu_smi_version == "25.2.0"
    errors = "\n".join(facts.probe_errors)
    assert "nvidia_smi" in errors and "exited 9" in errors and "couldn't communicate" in errors
    assert "nvcc" in errors and "timed out" in errors


def test_missing_python3_gives_a_json_document(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    out = run_probe(env={"PATH": str(empty)})
    doc = json.loads(out)
    assert doc["fatal"] == "python3 not found on PATH"
    facts = parse_probe_output(out)
    assert facts.probe_errors[0] == "python3 not found on PATH"
    assert facts.hostname is None


def test_missing_stack_python_is_recorded() -> None:
    facts = parse_probe_output(run_probe(ProbeOptions(python="/nonexistent/bin/python")))
    assert facts.torch is None
    assert "/nonexistent/bin/python" in facts.missing_tools


def _fake_ascend_root(root: Path, arch: str) -> None:
    files = {
        "driver/version.info": "ascend_driver_version_25.0.rc1.1.txt",
        "firmware/version.info": "ascend_firmware_version_7.7.0.1.231.txt",
        f"ascend-toolkit/latest/{arch}-linux/ascend_toolkit_install.info": "ascend_toolkit_install_8.1.RC1.txt",
        "ascend-toolkit/latest/version.cfg": "cann_version_cfg_8.1.RC1.txt",
        "ascend-toolkit/latest/runtime/version.info": "cann_runtime_version_info_8.1.RC1.txt",
        "nnal/atb/8.1.RC1/version.info": "nnal_atb_version_info_8.1.RC1.txt",
    }
    for rel, name in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(capture(name))


def test_fake_ascend_root_gives_ascend_components(tmp_path: Path) -> None:
    root = tmp_path / "Ascend"
    _fake_ascend_root(root, os.uname().machine)
    facts = parse_probe_output(run_probe(ProbeOptions(python=sys.executable, ascend_root=str(root))))
    assert facts.ascend is not None
    components = facts.components()
    assert components["ascend_driver"] == "25.0.rc1.1"
    assert components["ascend_firmware"] == "7.7.0.1.231"
    assert components["cann_toolkit"] == "8.1.RC1"
    assert components["cann_kernels"] == "8.1.RC1"
    assert components["nnal"] == "8.1.RC1"
    assert facts.ascend.cann_internal == "7.7.0.1.238"
    assert facts.ascend.driver_ascendhal == "7.35.23"
    assert "V100R001C21" in facts.ascend.driver_compatible_cann
    assert "Ascend driver 25.0.rc1.1" in facts.summary() and "CANN 8.1.RC1" in facts.summary()


def test_fake_ascend_root_new_cann_layout(tmp_path: Path) -> None:
    # CANN 8.5+: /usr/local/Ascend/cann/<arch>-linux/*_install.info, no ascend-toolkit folder.
    root = tmp_path / "Ascend"
    arch_dir = root / "cann" / f"{os.uname().machine}-linux"
    arch_dir.mkdir(parents=True)
    (arch_dir / "ascend_toolkit_install.info").write_text(
        "package_name=Ascend-cann-toolkit\nversion=8.5.0\ninnerversion=V100R001C25B100\n"
    )
    (arch_dir / "ascend_ops_install.info").write_text("package_name=Ascend-cann-ops\nversion=8.5.0\n")
    facts = parse_probe_output(run_probe(ProbeOptions(python=sys.executable, ascend_root=str(root))))
    components = facts.components()
    assert (components["cann_toolkit"], components["cann_kernels"]) == ("8.5.0", "8.5.0")
    assert components["ascend_driver"] is None


def test_option_values_are_not_shell_code(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    evil = f"'; touch {marker}; '"
    options = ProbeOptions(
        python=evil,
        ascend_root=f"$(touch {marker}2)",
        disk_paths=[f"`touch {marker}3`", f'"; touch {marker}4; "'],
    )
    command = probe_command(options)
    for shell in ("sh", "bash"):
        facts = parse_probe_output(run_probe(options, shell=shell))
        assert facts.hostname == socket.gethostname()
        assert evil in facts.missing_tools  # the value reached the probe intact, as data
        assert set(facts.disk_free) == set(options.disk_paths)
    assert not list(tmp_path.iterdir()), command


def test_probe_script_never_raises_on_bad_options() -> None:
    for argv in (["not json"], ["[1, 2]"], ['{"timeout": "soon", "disk_paths": "/"}']):
        result = subprocess.run(
            [sys.executable, "-c", probe_script(), *argv],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert result.returncode == 0, result.stderr
        doc = json.loads(result.stdout)
        assert doc["sections"]["hostname"]["out"] == socket.gethostname()
        if argv[0] != '{"timeout": "soon", "disk_paths": "/"}':
            assert doc["errors"] and doc["errors"][0].startswith("options:")


@pytest.mark.skipif(
    not Path("/root/.pyenv/versions/3.6.15/bin/python3").exists(), reason="no python 3.6 here"
)
def test_probe_runs_on_python_36(tmp_path: Path) -> None:
    py36 = "/root/.pyenv/versions/3.6.15/bin/python3"
    env = path_with(tmp_path, {}, python=py36)
    facts = parse_probe_output(run_probe(ProbeOptions(python="python3"), env=env))
    assert facts.python_version == "3.6.15"
    assert facts.stack_python_version == "3.6.15"
    assert facts.cpus == os.cpu_count() and facts.probe_errors == []


def test_parse_probe_output_rejects_non_json() -> None:
    with pytest.raises(ValueError, match="not JSON: 'bash: line 1: python3: Permission denied"):
        parse_probe_output("bash: line 1: python3: Permission denied\n" + "x" * 500)
    with pytest.raises(ValueError, match="not a probe document"):
        parse_probe_output('{"hello": 1}')


def test_command_is_one_line_and_quotes_its_payload() -> None:
    command = probe_command()
    assert "\n" not in command
    assert command.startswith("if command -v python3 >/dev/null 2>&1; then python3 -c '")
    assert len(command) < 32_000  # well under any ARG_MAX and sshd's command limits


def test_old_iproute2_without_json_falls_back_to_oneline(tmp_path: Path) -> None:
    real_ip = shutil.which("ip") or "/usr/sbin/ip"
    env = path_with(
        tmp_path,
        {
            "ip": f'if [ "$1" = "-j" ]; then echo \'Option "-j" is unknown, try "ip -help".\' >&2; exit 255; fi\n'
            f'exec {real_ip} "$@"\n'
        },
    )
    facts = parse_probe_output(run_probe(ProbeOptions(python="python3"), env=env))
    lo = next(i for i in facts.interfaces if i.name == "lo")
    assert lo.up and lo.mtu == 65536 and any(a.address == "127.0.0.1" for a in lo.addresses)
    assert facts.probe_errors == []  # the fallback covered it


def fake_torch_site(tmp_path: Path, *, wheel: str | None, library_text: bytes) -> Path:
    """A site-packages with a torch package that reports a CUDA build and an NCCL library beside it, laid out
    as pip installs them: nvidia/nccl/lib/libnccl.so.2 and, for a wheel, its dist-info."""
    site = tmp_path / "site"
    (site / "torch").mkdir(parents=True)
    (site / "torch" / "__init__.py").write_text("raise ImportError('the probe must not import torch')\n")
    (site / "torch" / "version.py").write_text("__version__ = '2.11.0+cu130'\ncuda = '13.0'\n")
    lib = site / "nvidia" / "nccl" / "lib"
    lib.mkdir(parents=True)
    (lib / "libnccl.so.2").write_bytes(library_text)
    if wheel:
        name, version = wheel.split("==")
        info = site / f"{name.replace('-', '_')}-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    return site


def probe_with_site(tmp_path: Path, site: Path) -> Facts:
    env = {**path_with(tmp_path, {}), "PYTHONPATH": str(site)}
    return parse_probe_output(run_probe(ProbeOptions(python="python3"), env=env))


def test_h100_versions_nccl_probe_finds_the_nccl_wheel_torch_loads(tmp_path: Path) -> None:
    site = fake_torch_site(tmp_path, wheel="nvidia-nccl-cu13==2.28.9", library_text=b"\x7fELF not read")
    facts = probe_with_site(tmp_path, site)
    assert facts.torch is not None and facts.torch.version == "2.11.0+cu130"
    assert facts.torch.nccl == "2.28.9"
    assert facts.torch.nccl_library == str(site / "nvidia" / "nccl" / "lib" / "libnccl.so.2")
    assert facts.torch.nccl_from == "nvidia-nccl-cu13 2.28.9 package metadata"
    assert facts.components()["nccl"] == "2.28.9"


def test_h100_versions_nccl_probe_reads_the_version_a_library_carries(tmp_path: Path) -> None:
    # No wheel metadata (a library copied in by hand): the string NCCL logs at init, past the first 8 MiB read.
    body = b"\x7fELF" + b"\0" * (9 << 20) + b"NCCL version 2.28.9+cuda13.0\0" + b"\0" * 16
    facts = probe_with_site(tmp_path, fake_torch_site(tmp_path, wheel=None, library_text=body))
    assert facts.torch is not None
    assert facts.torch.nccl == "2.28.9"
    assert facts.torch.nccl_from == "'NCCL version 2.28.9+cuda13.0' in the library"


def test_h100_facts_without_ip_list_interfaces_from_sys_class_net(tmp_path: Path) -> None:
    # The H100 had no iproute2. An `ip` that cannot run stands in for it (the real one sits in /usr/sbin, which
    # the probe also searches); the interfaces must still come back, as /sys/class/net and ioctls give them.
    env = path_with(tmp_path, {"ip": "echo 'ip: cannot run here' >&2; exit 127\n"})

    def view(interfaces: list) -> dict:
        return {i.name: (i.state, i.mtu, i.up, sorted((a.family, a.address, a.prefixlen) for a in i.addresses))
                for i in interfaces}

    for _attempt in range(3):  # other suites' labs add and remove bridges and veths: read both again on a race
        facts = parse_probe_output(run_probe(ProbeOptions(python="python3"), env=env))
        real = parse_probe_output(run_probe(ProbeOptions(python=sys.executable)))
        if view(facts.interfaces) == view(real.interfaces):
            break
    assert real.interfaces, "this machine's ip -j addr lists interfaces"
    assert view(facts.interfaces) == view(real.interfaces)
    assert facts.probe_errors == []  # the fallback covered the failing ip
