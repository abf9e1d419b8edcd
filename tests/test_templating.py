"""Templating: StrictUndefined, the atomic write line, collective settings against facts, the rank table."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from accelstack.errors import TemplateError
from accelstack.facts import Facts, Interface
from accelstack.provision.templating import (
    RankTableServer,
    atomic_write_command,
    build_rank_table,
    check_collective_settings,
    collective_env,
    render_template,
    template_environment,
)
from accelstack.vendors.ascend.facts import AscendFacts, NpuChip


def test_undefined_variable_is_an_error_naming_the_template(tmp_path: Path) -> None:
    (tmp_path / "t.j2").write_text("x={{ missing }}\n")
    with pytest.raises(TemplateError, match="missing"):
        render_template(template_environment([tmp_path]), "t.j2", {})


def test_atomic_write_replaces_the_file_whole_with_its_mode(tmp_path: Path) -> None:
    target = tmp_path / "sub" / "env.sh"
    command = atomic_write_command(str(target), 0o640)
    subprocess.run(["/bin/sh", "-c", command], input=b"export A=1\n", check=True)
    assert target.read_text() == "export A=1\n" and oct(target.stat().st_mode & 0o777) == "0o640"
    assert not list(tmp_path.glob("sub/*.accelstack-tmp"))


def test_collective_settings_are_checked_against_the_host() -> None:
    facts = Facts(interfaces=[Interface("eth0"), Interface("lo")],
                  vendor_facts={"ascend": AscendFacts(npus=[NpuChip(npu_id=i) for i in range(8)])})
    assert check_collective_settings({"hccl_socket_ifname": "eth0", "visible_devices": "0,1,7"}, facts,
                                     "ascend") == []
    problems = check_collective_settings({"nccl_socket_ifname": "ib0", "hccl_connect_timeout": 30,
                                          "visible_devices": [3, 1], "nccl_ib_disable": "yes"}, facts, "ascend")
    assert [p.var for p in problems] == ["nccl_socket_ifname", "nccl_ib_disable", "hccl_connect_timeout",
                                         "visible_devices"]


def test_collective_env_names_and_visible_devices_per_vendor() -> None:
    env = collective_env({"nccl_ib_disable": True, "torch_nccl_async_error_handling": 3,
                          "visible_devices": [0, 1]}, "nvidia")
    assert env == {"NCCL_IB_DISABLE": "1", "TORCH_NCCL_ASYNC_ERROR_HANDLING": "3", "CUDA_VISIBLE_DEVICES": "0,1"}
    assert collective_env({"visible_devices": "0,1"}, "ascend") == {"ASCEND_RT_VISIBLE_DEVICES": "0,1"}


def test_rank_table_values_are_strings_and_device_ip_optional() -> None:
    table = build_rank_table([RankTableServer("node_0", ["192.168.1.8", None])], device_port="16667")
    assert table["server_list"][0]["device"] == [
        {"device_id": "0", "device_ip": "192.168.1.8", "device_port": "16667", "rank_id": "0"},
        {"device_id": "1", "device_port": "16667", "rank_id": "1"}]
    assert all(isinstance(v, str) for k, v in table.items() if k != "server_list")
