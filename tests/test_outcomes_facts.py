"""Every outcome the versions, libraries, env and ports checks can give, each reached by a test; the H100 run's
defects in libraries, env, ports and the dmesg evidence filter are among them, named so a reader finds them."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from accelstack.engines.ssh.cluster import Member, ports_records
from accelstack.inventory import Host
from accelstack.stacks import load_stack, run_drift
from accelstack.stacks.context import resolve_contexts
from accelstack.validate.config import host_config
from accelstack.validate.judge import dmesg_lines

from .helpers import VALIDATORS, load_validator

H100 = Path(__file__).parent / "data" / "h100"


def run_script(name: str, argument: str) -> dict[str, Any]:
    proc = subprocess.run([sys.executable, str(VALIDATORS / f"{name}.py"), argument], capture_output=True,
                          text=True, timeout=60)
    return json.loads(proc.stdout.strip().splitlines()[-1])["checks"][0]


# ----- versions (the drift layer under validate's names): pass, warn, fail, error -----

def test_versions_pass_warn_fail_and_error() -> None:
    stack = load_stack(H100 / "h100-real.yml")
    installed = {"python": "3.12.3", "torch": "2.11.0+cu130", "torch_cuda": "13.0", "nvidia_driver": "580.159.04",
                 "cuda": "13.0.88", "nccl": "2.28.3"}
    records = {r.check: r for r in run_drift({"h100": installed, "down": TimeoutError("no route")},
                                             {"h100": stack, "down": stack})}
    assert records["drift.torch_cuda"].status == "pass"
    assert records["drift.nccl"].status == "fail"  # 2.28.3 under torch 2.11 breaks the torch-nccl rule
    assert records["drift"].status == "error" and records["drift"].host == "down"
    warned = {r.check: r for r in run_drift({"h100": {**installed, "nccl": "2.28.9", "python": "3.11.9"}},
                                            {"h100": stack})}
    assert warned["drift.python"].status == "warn" and warned["drift.nccl"].status == "pass"


# ----- libraries: skip, pass, fail, error -----

LIBC = next(p for p in (Path("/lib/x86_64-linux-gnu/libc.so.6"), Path("/usr/lib/x86_64-linux-gnu/libc.so.6"),
                        Path("/lib64/libc.so.6"), Path("/usr/lib64/libc.so.6")) if p.exists())


def env_file_with(tmp_path: Path, ld_path: str) -> str:
    path = tmp_path / "accelstack.sh"
    path.write_text(f"export LD_LIBRARY_PATH={ld_path}\n")
    return str(path)


def test_libraries_skips_a_stack_without_library_symbols() -> None:
    check = load_validator("libraries").main({"stack": "cpu", "required_symbols": {}})[0]
    assert check["status"] == "skip" and "gloo" in check["summary"]


def test_libraries_passes_and_fails_on_the_stacks_own_library(tmp_path: Path) -> None:
    venv_lib = tmp_path / "venv" / "lib" / "python3.12" / "site-packages" / "nvidia" / "nccl" / "lib"
    venv_lib.mkdir(parents=True)
    (venv_lib / "libnccl.so.2").write_bytes(LIBC.read_bytes())  # a real ELF file standing in, by its symbols
    config = {"env_file": env_file_with(tmp_path, ""), "remedy": "use the wheel's NCCL",
              "library_dirs": [str(tmp_path / "venv" / "lib" / "python3*" / "site-packages" / "nvidia" / "nccl"
                                   / "lib")]}
    libraries = load_validator("libraries")
    passed = libraries.main({**config, "required_symbols": {"libnccl.so.2": ["malloc", "free"]}})[0]
    assert passed["status"] == "pass", passed["summary"]
    assert passed["evidence"]["libraries"]["libnccl.so.2"]["found_in"] == "the stack's folder"
    failed = libraries.main({**config, "required_symbols": {"libnccl.so.2": ["malloc", "ncclCommSplit"]}})[0]
    assert failed["status"] == "fail" and "ncclCommSplit" in failed["summary"]
    assert failed["remedy"] == "use the wheel's NCCL"


def test_h100_libraries_errors_instead_of_passing_a_library_torch_never_loads(tmp_path: Path) -> None:
    # The shipped stack's venv was absent on the H100 and the check passed on the system libnccl 2.28.3.
    # Here the system library is libc (in the loader's default folders), the stack's folder is missing.
    config = {"env_file": env_file_with(tmp_path, ""), "host": "h100",
              "library_dirs": [str(tmp_path / "missing-venv" / "lib" / "python3*" / "site-packages")],
              "required_symbols": {LIBC.name: ["malloc"]}}
    check = load_validator("libraries").main(config)[0]
    assert check["status"] == "error", check["summary"]
    assert f"{tmp_path}/missing-venv/lib is missing (not provisioned)" in check["summary"]
    assert "different library" in check["summary"] and "inv provision --limit h100" in check["remedy"]
    # A venv that is there but has no NCCL wheel: its torch links the loader's copy, which is then judged.
    (tmp_path / "missing-venv" / "lib").mkdir(parents=True)
    linked = load_validator("libraries").main(config)[0]
    assert linked["status"] == "pass", linked["summary"]
    # So is it when the stack names no folder of its own.
    own = load_validator("libraries").main({**config, "library_dirs": []})[0]
    assert own["status"] == "pass", own["summary"]


def test_libraries_errors_on_a_library_found_nowhere_and_on_bad_config(tmp_path: Path) -> None:
    check = load_validator("libraries").main({"env_file": env_file_with(tmp_path, str(tmp_path)),
                                           "required_symbols": {"libnccl-nowhere.so.2": ["x"]}})[0]
    assert check["status"] == "error" and "nowhere on the search path" in check["summary"]
    assert run_script("libraries", "{not json")["status"] == "error"


# ----- env: pass, warn, fail, error (it has nothing to skip: every host has an environment) -----

ETH0_UP = {"eth0": {"up": True, "operstate": "up", "ipv4": "192.0.2.2"},
           "ib0": {"up": False, "operstate": "down", "ipv4": None},
           "lo": {"up": True, "operstate": "unknown", "ipv4": "127.0.0.1"}}


def test_h100_env_fails_when_inventory_and_rendered_file_disagree_and_names_both() -> None:
    # The H100 inventory said nccl_socket_ifname: doesnotexist; the rendered file exported eth0, which was judged.
    config = {"host": "h100", "socket_ifnames": {"NCCL_SOCKET_IFNAME": "doesnotexist"},
              "socket_ifname_sources": {"NCCL_SOCKET_IFNAME": "inventory var nccl_socket_ifname"}}
    checks = load_validator("env").check_ifnames({"NCCL_SOCKET_IFNAME": "eth0"}, config, ETH0_UP)
    assert [c["status"] for c in checks] == ["fail"]
    summary = checks[0]["summary"]
    assert "inventory var nccl_socket_ifname says doesnotexist" in summary and "has eth0" in summary
    assert checks[0]["check"] == "env.nccl_socket_ifname"
    assert checks[0]["evidence"]["matches"] == {"doesnotexist": [], "eth0": ["eth0"]}


def test_env_passes_an_agreeing_usable_interface_and_fails_a_down_one() -> None:
    env = load_validator("env")
    config = {"socket_ifnames": {"NCCL_SOCKET_IFNAME": "eth0"}}
    passed = env.check_ifnames({"NCCL_SOCKET_IFNAME": "eth0"}, config, ETH0_UP)
    assert [c["status"] for c in passed] == ["pass"] and "eth0 192.0.2.2" in passed[0]["summary"]
    down = env.check_ifnames({"GLOO_SOCKET_IFNAME": "ib"}, {}, ETH0_UP)
    assert [c["status"] for c in down] == ["fail"] and "ib0 down" in down[0]["summary"]


def test_env_warns_on_a_visible_device_list_that_is_not_0_to_n() -> None:
    checks = load_validator("env").check_visible({"CUDA_VISIBLE_DEVICES": "2,3"}, {"expect_devices": 8})
    assert [c["status"] for c in checks] == ["warn"]


def test_env_errors_when_it_cannot_run() -> None:
    assert run_script("env", "{not json")["status"] == "error"


def test_inventory_socket_ifname_reaches_the_env_check_with_where_it_was_set() -> None:
    host = Host(name="h100", address="localhost", connection="local",
                vars={"stack": "nvidia-cuda13.0", "nccl_socket_ifname": "doesnotexist"})
    config = host_config(resolve_contexts([host], run_preflight=False)["h100"])
    assert config["socket_ifnames"] == {"NCCL_SOCKET_IFNAME": "doesnotexist"}
    assert config["socket_ifname_sources"] == {"NCCL_SOCKET_IFNAME": "inventory var nccl_socket_ifname"}


# ----- ports: pass, fail, error, skip -----

def test_ports_probe_passes_an_open_port_and_fails_a_closed_one() -> None:
    ports = load_validator("ports")
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(4)
        open_port = listener.getsockname()[1]
        with socket.socket() as spare:
            spare.bind(("127.0.0.1", 0))
            closed_port = spare.getsockname()[1]  # bound, never listening: refused
            reached = ports.probe({"peers": [{"host": "a", "address": "127.0.0.1", "ports": [open_port]}]})[0]
            refused = ports.probe({"peers": [{"host": "b", "address": "127.0.0.1", "ports": [closed_port]}]})[0]
    assert reached["status"] == "pass" and reached["metrics"]["reached"] == 1
    assert refused["status"] == "fail" and f"b:{closed_port}" in refused["summary"]


def test_ports_errors_when_it_cannot_run() -> None:
    assert run_script("ports", "{not json")["status"] == "error"


def test_h100_ports_on_one_host_is_a_skip_with_its_reason_not_silence() -> None:
    member = Member(ctx=SimpleNamespace(host=SimpleNamespace(name="h100")), transport=None,  # type: ignore[arg-type]
                    remote="/nowhere", config={})
    records = ports_records([member], rendezvous_port=29500)
    assert [(r.host, r.check, r.status) for r in records] == [("h100", "ports", "skip")]
    assert "one host" in records[0].summary


# ----- the evidence filter -----

def test_h100_dmesg_filter_matches_words_not_npu_inside_input() -> None:
    # The line the H100 run attached to five unrelated failures.
    assert dmesg_lines("[Mon Nov 23 07:06:06 2026]     input device check on") == []
    kept = ["[1] davinci3: device heartbeat lost", "[2] hisi_npu 0000:c1:00.0: npu reset", "[3] HCCL timeout",
            "[4] NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus"]
    assert dmesg_lines("\n".join(kept)) == kept
