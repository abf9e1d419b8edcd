"""The facts probe, really run on this machine (no SSH: the same command line a host would get)."""

from __future__ import annotations

import ast
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
from accelstack.facts.probe import (
    MARKER,
    NET_SNIPPET,
    STACK_SNIPPET,
    probe_argv,
    read_probe_output,
    without_comment_lines,
)
from accelstack.paths import hostside

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
        "cann_toolkit", "cann_kernels", "nnal", "nvidia_driver", "cuda", "nccl", "system_nccl",
        "torch_rocm", "amdgpu_driver", "rocm",
    }  # fmt: skip
    assert components["ascend_driver"] is None and components["nvidia_driver"] is None
    assert components["amdgpu_driver"] is None and facts.section("amd") is None  # no AMD GPU, no ROCm here
    summary = facts.summary()
    assert f"{facts.cpus} CPUs" in summary and "0 accelerators" in summary and "torch 2.13.0" in summary


def test_facts_round_trip_through_json(local_facts: Facts) -> None:
    assert Facts.from_dict(json.loads(json.dumps(local_facts.to_dict()))) == local_facts


def test_command_works_under_bash_too() -> None:
    facts = parse_probe_output(run_probe(ProbeOptions(python=sys.executable), shell="bash"))
    assert facts.hostname == socket.gethostname()


@pytest.mark.parametrize("shell", [("dash",), ("bash",), ("bash", "--posix"), ("busybox", "sh")])
def test_the_script_reads_the_same_host_under_every_posix_shell(shell: tuple[str, ...],
                                                                 local_facts: Facts) -> None:
    # /bin/sh is dash on Debian and Ubuntu, bash on RHEL, EulerOS, openEuler and Kylin, busybox's ash in minimal
    # images: the script itself, run by each, reads this host as the default /bin/sh does.
    assert shutil.which(shell[0]), f"{shell[0]} is not installed (.ci/run installs it)"
    options = ProbeOptions(python=sys.executable, disk_paths=["/", "/nonexistent"])
    result = subprocess.run(probe_argv(options, shell=shell), capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    facts = parse_probe_output(result.stdout)
    assert facts.probe_errors == [], facts.probe_errors

    # Labs of other tests (and other checkouts) bring interfaces up and down while the suite runs on several
    # workers: what both runs saw must read the same, and this host's own loopback is always among it.
    common = {i.name for i in facts.interfaces} & {i.name for i in local_facts.interfaces}
    assert "lo" in common

    def stable(f: Facts) -> dict:
        view = f.to_dict()
        view["disk_free"] = sorted((k, v is None) for k, v in f.disk_free.items())  # free space moves
        view["interfaces"] = sorted(i.name for i in f.interfaces if i.name in common)
        return view

    assert stable(facts) == stable(local_facts)


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


def test_a_host_without_python3_still_gives_its_facts(tmp_path: Path) -> None:
    # Only the shell and the tools it finds: the host's facts come back, and the missing python3 (which the
    # validators need) is said first.
    tools = tmp_path / "tools"
    tools.mkdir()
    for name in ("ip", "stat", "timeout", "cat", "uname"):
        found = shutil.which(name)
        if found:
            (tools / name).symlink_to(found)
    out = run_probe(env={"PATH": str(tools)})
    facts = parse_probe_output(out)
    assert facts.probe_errors[0] == "python3 not found on PATH: the validators need it"
    assert "python3" in facts.missing_tools
    assert facts.hostname == socket.gethostname() and facts.cpus == os.cpu_count()
    assert facts.python_version is None and facts.torch is None
    assert any(i.name == "lo" for i in facts.interfaces)


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


def test_a_noisy_login_shell_and_a_cut_off_probe() -> None:
    out = run_probe(ProbeOptions(python="/nonexistent/bin/python"))
    # What a .bashrc prints before the probe begins is not the probe's.
    facts = parse_probe_output("Welcome to node07!\nLast login: never\n" + out)
    assert facts.hostname == socket.gethostname() and facts.probe_errors == []
    # A probe cut off mid-way (the link died) keeps what came and says it was cut short.
    cut = out[:out.index(f"{MARKER} run ip_addr")]
    doc = read_probe_output(cut)
    assert doc["sections"]["hostname"]["out"] == socket.gethostname()
    assert "ip_addr" not in doc["sections"]
    assert doc["errors"] == ["the facts probe's output was cut short (the host or the link went away mid-probe)"]
    assert parse_probe_output(cut).probe_errors[0].startswith("the facts probe's output was cut short")


def test_the_framing_reads_back_exactly() -> None:
    # A tool's stdout and stderr, with and without final newlines, and a file without one, read back as printed.
    text = (f"{MARKER} begin 2\n"
            f"{MARKER} run t1 tool one\nwarning: a\nwarning: b\n\n{MARKER} out t1 3\nline 1\nline 2\n"
            f"{MARKER} run t2 tool two\n\n{MARKER} out t2 timeout\n\n"
            f"{MARKER} missing t3 nvidia-smi -L\nnvidia-smi\n"
            f"{MARKER} file /etc/a b\nno final newline\n"
            f"{MARKER} file /etc/c\nends in one\n\n"
            f"{MARKER} nofile /etc/d\n"
            f"{MARKER} note something to say\n"
            f"{MARKER} end\n")
    doc = read_probe_output(text)
    assert doc["sections"]["t1"] == {"cmd": "tool one", "rc": 3, "out": "line 1\nline 2",
                                     "err": "warning: a\nwarning: b\n"}
    assert doc["sections"]["t2"] == {"cmd": "tool two", "rc": None, "out": "", "err": "timed out", "timeout": True}
    assert doc["sections"]["t3"] == {"cmd": "nvidia-smi -L", "rc": None, "out": "", "err": "", "missing": True,
                                     "tool": "nvidia-smi"}
    assert doc["files"] == {"/etc/a b": "no final newline", "/etc/c": "ends in one\n", "/etc/d": None}
    assert doc["errors"] == ["something to say"]
    with pytest.raises(ValueError, match="not the facts probe's output"):
        read_probe_output('{"probe": 1}')


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


def test_parse_probe_output_rejects_what_is_not_the_probe() -> None:
    with pytest.raises(ValueError, match="neither the probe's framed text nor JSON: 'sh: 1: /bin/sh: Permission"):
        parse_probe_output("sh: 1: /bin/sh: Permission denied\n" + "x" * 500)
    with pytest.raises(ValueError, match="not a probe document"):
        parse_probe_output('{"hello": 1}')


def test_command_runs_the_script_under_sh_and_quotes_its_payload() -> None:
    command = probe_command()
    assert command.startswith("/bin/sh -c 'set -f\n")
    assert "\n#" not in command  # comment lines stay home
    assert len(command) < 32_000  # well under any ARG_MAX and sshd's command limits
    for name in (STACK_SNIPPET, NET_SNIPPET):
        source = hostside("probes", name).read_text()
        assert ast.dump(ast.parse(without_comment_lines(source))) == ast.dump(ast.parse(source))


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


def test_a_disk_path_that_looks_like_an_option_costs_only_itself() -> None:
    # stat reads its paths after `--`: a path beginning with "-" is a path (unmeasured, as it does not exist),
    # not an option that fails the whole statvfs and with it /dev/shm and every other disk path.
    facts = parse_probe_output(run_probe(ProbeOptions(python=sys.executable, disk_paths=["/", "-x", "--help"])))
    assert facts.shm_bytes
    assert facts.disk_free["/"]
    assert facts.disk_free["-x"] is None and facts.disk_free["--help"] is None


def test_ip_that_lists_links_but_no_addresses_falls_back_to_sys_class_net(tmp_path: Path) -> None:
    # As the python probe did: /sys/class/net (and its ioctls) whenever neither ip -j addr nor ip -o addr gave
    # the addresses, whatever ip -o link did.
    real_ip = shutil.which("ip") or "/usr/sbin/ip"
    env = path_with(
        tmp_path,
        {"ip": f'case "$1 $2" in "-o link") exec {real_ip} "$@" ;; esac\necho "ip: broken" >&2; exit 1\n'},
    )
    facts = parse_probe_output(run_probe(ProbeOptions(python="python3"), env=env))
    lo = next(i for i in facts.interfaces if i.name == "lo")
    assert any(a.address == "127.0.0.1" for a in lo.addresses)


# ----- the components scope: what the versions check reads, every health check -----------------------------------

NVIDIA_PROC = "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  {version}  Release Build  (dvs-builder@U16)\n"
SMI_ROW = "0, NVIDIA H100 80GB HBM3, GPU-0f4c, 00000000:18:00.0, {version}, 81559, 0, 31, 0"


def counted_tools(tmp_path: Path, smi_version: str = "580.65.06") -> tuple[dict[str, str], Path]:
    """A PATH whose nvidia-smi, npu-smi and ip write down each call (to ``calls``) before answering."""
    calls = tmp_path / "calls"
    note = f'echo "${{0##*/}} $*" >> {calls}\n'
    env = path_with(tmp_path, {
        "nvidia-smi": note + f"echo '{SMI_ROW.format(version=smi_version)}'\n",
        "npu-smi": note + "exit 1\n",
        "ip": note + "echo '[]'\n",
        "nvcc": "echo 'Cuda compilation tools, release 13.0, V13.0.88'\n",
    })
    env["PATH"] += ":/usr/bin:/bin"  # cat, which reads the driver's file, as on any host
    return env, calls


def probe_with_driver_file(options: ProbeOptions, env: dict[str, str], version: str | None) -> str:
    """The probe with a loaded driver's /proc/driver/nvidia/version (``version``; None: no such file, as on this
    machine), made as a GPU node has it: a tmpfs over /proc/driver in a mount namespace of the probe's own (root: a
test that gives a version asks for ``as_root``)."""
    if version is None:
        return run_probe(options, env=env)
    tools = [shutil.which(name) for name in ("unshare", "mount", "mkdir")]
    assert all(tools), "a driver file under /proc needs unshare and mount (util-linux, mount: .ci/run installs them)"
    unshare, mount, mkdir = tools
    setup = (f'{mount} -t tmpfs accelstack-test /proc/driver && {mkdir} /proc/driver/nvidia && '
             'printf %s "$1" > /proc/driver/nvidia/version && exec /bin/sh -c "$0"')
    result = subprocess.run([str(unshare), "-m", "--propagation", "private", "/bin/sh", "-c", setup,
                             probe_command(options), NVIDIA_PROC.format(version=version)],
                            capture_output=True, text=True, timeout=120, env=env, check=False)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_the_components_scope_reads_the_same_versions_as_the_whole_probe(tmp_path: Path) -> None:
    components_agree_with_the_whole_probe(tmp_path, None)


@pytest.mark.parametrize("driver_file", ["580.65.06", "580.159.04"])
def test_with_a_loaded_drivers_proc_file_the_components_scope_reads_it_and_no_nvidia_smi(
        as_root: None, tmp_path: Path, driver_file: str) -> None:
    components_agree_with_the_whole_probe(tmp_path, driver_file)


def components_agree_with_the_whole_probe(tmp_path: Path, driver_file: str | None) -> None:
    env, calls = counted_tools(tmp_path)
    scopes = {}
    for scope in ("host", "components"):
        calls.unlink(missing_ok=True)
        options = ProbeOptions(python=sys.executable, disk_paths=["/"], scope=scope)
        facts = parse_probe_output(probe_with_driver_file(options, env, driver_file))
        made = calls.read_text().splitlines() if calls.exists() else []
        scopes[scope] = (facts, made)
    host, components = scopes["host"][0], scopes["components"][0]
    assert dict(components.components()) == dict(host.components())
    assert components.components().details == host.components().details
    assert host.nvidia is not None and host.nvidia.driver_version == (driver_file or "580.65.06")
    assert sorted(c.split()[0] for c in scopes["host"][1]) == ["ip", "npu-smi", "nvidia-smi"]  # each vendor's part, in any order
    # The components scope: no network, free space, PCI or npu-smi reads; nvidia-smi only without the file.
    assert [c.split()[0] for c in scopes["components"][1]] == ([] if driver_file else ["nvidia-smi"])
    assert components.interfaces == [] and components.disk_free == {} and components.hostname is None


def test_a_driver_file_without_a_version_still_asks_nvidia_smi(as_root: None, tmp_path: Path) -> None:
    env, calls = counted_tools(tmp_path, smi_version="580.95.05")
    facts = parse_probe_output(probe_with_driver_file(ProbeOptions(python=sys.executable, scope="components"),
                                                      env, "unknown"))
    assert facts.nvidia is not None and facts.nvidia.driver_version == "580.95.05"
    assert calls.read_text().split()[0] == "nvidia-smi"


def test_an_unknown_probe_scope_is_refused() -> None:
    with pytest.raises(ValueError, match="scope 'everything'"):
        probe_argv(ProbeOptions(scope="everything"))


@pytest.mark.parametrize("shell", [("dash",), ("bash",), ("bash", "--posix"), ("busybox", "sh")])
def test_the_components_scope_reads_the_same_under_every_posix_shell(shell: tuple[str, ...]) -> None:
    assert shutil.which(shell[0]), f"{shell[0]} is not installed (.ci/run installs it)"
    options = ProbeOptions(python=sys.executable, scope="components")
    result = subprocess.run(probe_argv(options, shell=shell), capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    facts = parse_probe_output(result.stdout)
    assert facts.probe_errors == [], facts.probe_errors
    whole = parse_probe_output(run_probe(ProbeOptions(python=sys.executable)))
    assert dict(facts.components()) == dict(whole.components())
