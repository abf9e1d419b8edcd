"""The facts parsers on captured outputs (tests/data/captures, sources in its README), plus bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from accelstack.facts import Facts, parse_sections
from accelstack.facts import parsers as p

CAPTURES = Path(__file__).parent / "data" / "captures"


def capture(name: str) -> str:
    return (CAPTURES / name).read_text(encoding="utf-8")


# --- host basics ------------------------------------------------------------------------------------------


def test_os_release_debian() -> None:
    info = p.parse_os_release(capture("os_release_debian12.txt"))
    assert (info.name, info.id, info.version_id) == ("Debian GNU/Linux", "debian", "12")
    assert info.pretty_name == "Debian GNU/Linux 12 (bookworm)"


def test_os_release_quotes_and_comments() -> None:
    info = p.parse_os_release('# comment\nNAME="openEuler"\nVERSION_ID="22.03"\nID=openEuler\n')
    assert (info.name, info.id, info.version_id) == ("openEuler", "openEuler", "22.03")


def test_meminfo() -> None:
    info = p.parse_meminfo(capture("proc_meminfo_x86_64.txt"))
    assert info.total_kib == 24684084
    assert info.values_kib["MemTotal"] == 24684084
    assert "HugePages_Total" in info.values_kib


def test_ip_json_lab() -> None:
    interfaces = {i.name: i for i in p.parse_ip_json(capture("ip_j_addr_lab.json"))}
    assert set(interfaces) == {"lo", "ifb0", "ifb1", "eth0"}
    eth0 = interfaces["eth0"]
    assert (eth0.state, eth0.mtu, eth0.up) == ("UP", 1400, True)
    assert [(a.family, a.address, a.prefixlen) for a in eth0.addresses][:2] == [
        ("inet", "192.0.2.2", 24),
        ("inet6", "fd00::2", 64),
    ]
    assert interfaces["ifb0"].up is False and interfaces["ifb0"].addresses == []


def test_ip_oneline_matches_json() -> None:
    from_text = p.parse_ip_oneline(capture("ip_o_addr_lab.txt"), capture("ip_o_link_lab.txt"))
    from_json = p.parse_ip_json(capture("ip_j_addr_lab.json"))
    assert [(i.name, i.state, i.mtu, i.up) for i in from_text] == [
        (i.name, i.state, i.mtu, i.up) for i in from_json
    ]
    assert [[a.address for a in i.addresses] for i in from_text] == [
        [a.address for a in i.addresses] for i in from_json
    ]


def test_ip_oneline_addr_only_and_garbage() -> None:
    interfaces = p.parse_ip_oneline(capture("ip_o_addr_lab.txt"))
    assert [i.name for i in interfaces] == ["lo", "eth0"]
    assert interfaces[1].mtu is None  # -o addr has no MTU
    assert p.parse_ip_oneline("", "") == []
    assert p.parse_ip_oneline('Object "addr" is unknown, try "ip help".') == []


def test_sys_class_net_matches_ip_json() -> None:
    # The same lab machine read without iproute2 (the H100 had none): the probe's /sys/class/net section and
    # /proc/net/if_inet6 give what ip -j addr gives (iproute2 adds a scope to IPv4 addresses; sysfs has none).
    from_sys = {i.name: i for i in p.parse_sys_class_net(capture("net_sys_lab.json"),
                                                          capture("proc_net_if_inet6_lab.txt"))}
    from_json = {i.name: i for i in p.parse_ip_json(capture("ip_j_addr_lab.json"))}
    assert set(from_sys) == set(from_json)
    for name, iface in from_json.items():
        got = from_sys[name]
        assert (got.state, got.mtu, got.up) == (iface.state, iface.mtu, iface.up), name
        assert sorted((a.family, a.address, a.prefixlen) for a in got.addresses) == sorted(
            (a.family, a.address, a.prefixlen) for a in iface.addresses), name
    assert [a.scope for a in from_sys["eth0"].addresses if a.family == "inet6"] == ["global", "link"]
    with pytest.raises(ValueError, match="net_sys"):
        p.parse_sys_class_net("not json")
    assert p.parse_proc_if_inet6("garbage\n") == {}


@pytest.mark.parametrize("text", ["", "not json", '{"ifname": "eth0"}'])
def test_ip_json_malformed_raises(text: str) -> None:
    with pytest.raises(ValueError, match="ip -j addr"):
        p.parse_ip_json(text)


def test_pci_devices() -> None:
    text = json.dumps(
        [
            {
                "slot": "0000:C1:00.0",
                "vendor": "0x19e5",
                "device": "0xd802",
                "class": "0x120000",
                "numa_node": "6",
            },
            {
                "slot": "0000:18:00.0",
                "vendor": "0x10de",
                "device": "0x2330",
                "class": "0x030200",
                "numa_node": "-1",
            },
        ]
    )
    npu, gpu = p.parse_pci_devices(text)
    assert (npu.bus_id, npu.vendor, npu.device_id, npu.numa_node) == ("0000:c1:00.0", "huawei", "0xd802", 6)
    assert (gpu.vendor, gpu.pci_class, gpu.numa_node) == ("nvidia", "0x030200", None)
    assert p.parse_pci_devices("[]") == []
    with pytest.raises(ValueError, match="pci"):
        p.parse_pci_devices("{")


# --- NVIDIA -----------------------------------------------------------------------------------------------


def test_nvidia_proc_version_proprietary_and_open() -> None:
    assert p.parse_nvidia_proc_version(capture("synthetic_proc_driver_nvidia_version_535.txt")) == "535.54.03"
    assert (
        p.parse_nvidia_proc_version(capture("synthetic_proc_driver_nvidia_version_open_550.txt"))
        == "550.54.14"
    )
    assert p.parse_nvidia_proc_version("") is None


def test_nvidia_smi_csv_with_header_and_units() -> None:
    (gpu,) = p.parse_nvidia_smi_csv(capture("nvidia_smi_query_h100_590.48.01.csv"))
    assert gpu.index == 0
    assert gpu.name == "NVIDIA H100 80GB HBM3"
    assert gpu.uuid == "GPU-00000000-0000-0000-0000-000000000000"
    assert gpu.bus_id == "00000000:00:09.0"
    assert gpu.driver_version == "590.48.01"
    assert (gpu.memory_total_mib, gpu.memory_used_mib, gpu.temperature_c) == (81559, 0, 41.0)
    assert gpu.utilization_pct is None  # not in that capture's columns


def test_nvidia_smi_csv_other_column_order() -> None:
    (gpu,) = p.parse_nvidia_smi_csv(capture("nvidia_smi_query_rtx2080s_466.63.csv"))
    assert (gpu.index, gpu.name, gpu.driver_version, gpu.memory_used_mib) == (
        0,
        "NVIDIA GeForce RTX 2080 SUPER",
        "466.63",
        575,
    )
    assert gpu.memory_total_mib is None


def test_nvidia_smi_csv_probe_format() -> None:
    gpus = p.parse_nvidia_smi_csv(capture("derived_nvidia_smi_query_noheader_nounits.csv"))
    assert [g.index for g in gpus] == [0, 1]
    assert gpus[1].memory_used_mib == 1024 and gpus[1].utilization_pct is None  # [N/A]
    assert gpus[0].utilization_pct == 0.0


def test_nvidia_smi_csv_failure_message_and_empty() -> None:
    failed = "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n"
    assert p.parse_nvidia_smi_csv(failed) == []
    assert p.parse_nvidia_smi_csv("") == []


def test_nvidia_smi_xml() -> None:
    log = p.parse_nvidia_smi_xml(capture("derived_nvidia_smi_q_x_a100_535.54.03.xml"))
    assert (log.driver_version, log.cuda_version, log.attached_gpus) == ("535.54.03", "12.2", 4)
    (gpu,) = log.gpus
    assert gpu.bus_id == "00000000:01:00.0"
    assert gpu.product_name == "NVIDIA A100-SXM4-80GB"
    assert gpu.uuid == "GPU-513536b6-7d19-9063-b049-1e69664bb298"
    assert (gpu.mig_mode, gpu.ecc_mode, gpu.reset_required) == ("Enabled", "Enabled", "No")
    assert (gpu.memory_total_mib, gpu.memory_used_mib) == (81920, 50)
    assert (gpu.temperature_c, gpu.power_draw_w, gpu.power_limit_w) == (27.0, 67.03, 500.0)
    assert (gpu.pcie_gen_current, gpu.pcie_width_current) == (4, "16x")
    assert gpu.ecc_volatile_dram_uncorrectable == 0


def test_nvidia_smi_xml_elided_fragment_is_rejected() -> None:
    # The reference's fragment has "..." in place of closing tags: not XML, and we say so.
    with pytest.raises(ValueError, match="not well-formed XML"):
        p.parse_nvidia_smi_xml(capture("nvidia_smi_q_x_a100_535.54.03_fragment.xml"))
    with pytest.raises(ValueError):
        p.parse_nvidia_smi_xml("")
    with pytest.raises(ValueError, match="expected <nvidia_smi_log>"):
        p.parse_nvidia_smi_xml("<other/>")


def test_topo_two_gpus_tabs() -> None:
    topo = p.parse_nvidia_topo(capture("nvidia_smi_topo_m_2x5090.txt"))
    assert topo.devices == ["GPU0", "GPU1"]
    assert topo.links["GPU0"]["GPU1"] == "PHB" and topo.links["GPU1"]["GPU1"] == "X"
    assert topo.cpu_affinity == {"GPU0": "0-63", "GPU1": "0-63"}
    assert topo.numa_affinity == {"GPU0": "0", "GPU1": "0"}
    assert topo.gpu_numa_id == {"GPU0": None, "GPU1": None}


def test_topo_dgx_a100_with_nics() -> None:
    topo = p.parse_nvidia_topo(capture("nvidia_smi_topo_m_dgx_a100_first_rows.txt"))
    assert len(topo.devices) == 20 and topo.devices[8] == "NIC0"
    assert topo.links["GPU0"]["GPU7"] == "NV12"
    assert topo.links["GPU2"]["NIC2"] == "PXB"
    assert topo.cpu_affinity["GPU2"] == "16-31,144-159"
    assert topo.numa_affinity == {"GPU0": "3", "GPU1": "3", "GPU2": "1"}
    assert p.parse_cpu_list(topo.cpu_affinity["GPU0"] or "")[:2] == [48, 49]
    assert len(p.parse_cpu_list("48-63,176-191")) == 32


def test_topo_nic_rows_and_ansi_and_legend() -> None:
    topo = p.parse_nvidia_topo(capture("nvidia_smi_topo_m_nic_rows.txt"))
    assert topo.links["NIC0"] == {"GPU0": "NODE", "NIC0": "X", "NIC1": "PIX", "NIC2": "NODE", "NIC3": "NODE"}
    assert topo.cpu_affinity == {"GPU0": "0-31,64-95"}
    ansi = (
        "\x1b[4mGPU0\tNIC0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\x1b[0m\nGPU0\t X \tSYS\t0-7\t0\t\tN/A\n"
    )
    ansi += "NIC0\tSYS\t X \n\nNIC Legend:\n\n  NIC0: mlx5_0\n"
    topo = p.parse_nvidia_topo(ansi)
    assert topo.devices == ["GPU0", "NIC0"] and topo.nic_names == {"NIC0": "mlx5_0"}
    assert topo.cpu_affinity == {"GPU0": "0-7"}


def test_topo_garbage() -> None:
    assert p.parse_nvidia_topo("") == p.TopoMatrix()
    assert p.parse_nvidia_topo("NVIDIA-SMI has failed").devices == []
    with pytest.raises(ValueError):
        p.parse_cpu_list("zero")


def test_cuda_versions() -> None:
    assert p.parse_cuda_version_json(capture("synthetic_cuda_version_12.4.json")) == "12.4.1"
    assert p.parse_cuda_version_txt(capture("synthetic_cuda_version_10.2.txt")) == "10.2.89"
    assert p.parse_nvcc_version(capture("synthetic_nvcc_version_12.4.txt")) == "12.4.131"
    assert p.parse_nvcc_version("Cuda compilation tools, release 9.0") == "9.0"
    assert p.parse_cuda_version_json("{}") is None
    assert p.parse_cuda_version_txt("") is None and p.parse_nvcc_version("") is None
    with pytest.raises(ValueError, match="version.json"):
        p.parse_cuda_version_json("{")


def test_nccl_versions() -> None:
    assert p.parse_nccl_header(capture("synthetic_nccl_h_2.21.5.txt")) == "2.21.5"
    assert p.parse_nccl_header("#define NCCL_MAJOR 2\n") is None
    assert p.parse_nccl_library_name("/usr/lib/x86_64-linux-gnu/libnccl.so.2.21.5") == "2.21.5"
    assert p.parse_nccl_library_name("/usr/lib/x86_64-linux-gnu/libnccl.so.2") is None


# --- Ascend -----------------------------------------------------------------------------------------------


def test_driver_version_info_23() -> None:
    info = p.parse_ascend_version_info(capture("ascend_driver_version_23.0.7.txt"))
    assert (info.version, info.package_version, info.release) == ("23.0.7", "23.0.7", "23.0.7")
    assert info.ascendhal_version == "7.35.19"
    assert info.innerversion == "V100R001C15SPC012B220"
    assert info.compatible_version == ["V100R001C29", "V100R001C30", "V100R001C13", "V100R001C15"]
    assert info.compatible_version_fw == ["7.0.0,7.1.99"]


def test_driver_version_info_25() -> None:
    info = p.parse_ascend_version_info(capture("ascend_driver_version_25.0.rc1.1.txt"))
    assert info.release == "25.0.rc1.1"
    assert "V100R001C21" in info.compatible_version
    assert info.compatible_version_fw == ["7.0.0,7.7.99"]


def test_driver_version_info_without_package_version_falls_back() -> None:
    info = p.parse_ascend_version_info("Version=24.1.rc1\ncompatible_version_fw=[7.0.0,7.2.99]\n")
    assert info.package_version is None and info.release == "24.1.rc1"


def test_firmware_version_info() -> None:
    old = p.parse_ascend_version_info(capture("ascend_firmware_version_7.1.0.11.220.txt"))
    assert (old.version, old.package_version) == ("7.1.0.11.220", "23.0.7")
    assert old.compatible_version_drv == ["23.0.rc3,23.0.rc3.", "23.0.0,23.0.0."]
    new = p.parse_ascend_version_info(capture("ascend_firmware_version_7.7.0.1.231.txt"))
    assert new.version == "7.7.0.1.231"
    assert new.compatible_version_drv[-1] == "25.0,25.0."


def test_toolkit_install_info() -> None:
    old = p.parse_ascend_install_info(capture("ascend_toolkit_install_7.0.T10.txt"))
    assert (old.package_name, old.version, old.arch) == ("Ascend-cann-toolkit", "7.0.T10", "aarch64")
    assert old.innerversion == "V100R001C13B222"
    new = p.parse_ascend_install_info(capture("ascend_toolkit_install_8.1.RC1.txt"))
    assert (new.version, new.innerversion) == ("8.1.RC1", "V100R001C21SPC001B238")
    assert new.path == "/usr/local/Ascend/ascend-toolkit/8.1.RC1/aarch64-linux"
    assert new.compatible_version[-1] == "V100R001C21"


def test_cann_version_cfg() -> None:
    cfg = p.parse_cann_version_cfg(capture("cann_version_cfg_8.1.RC1.txt"))
    runtime = cfg.running("runtime")
    assert runtime is not None and (runtime.internal, runtime.release) == ("7.7.0.1.238", "8.1.RC1")
    kernels = cfg.running("opp_kernel")
    assert kernels is not None and kernels.release == "8.1.RC1"
    assert "runtime_upgrade" in cfg.entries
    assert cfg.running("nonexistent") is None


def test_runtime_version_info_internal_number() -> None:
    fields = p.parse_key_values(capture("cann_runtime_version_info_8.1.RC1.txt"))
    assert (fields["Version"], fields["version_dir"]) == ("7.7.0.1.238", "8.1.RC1")
    assert fields["required_opp_abi_version"] == ">=6.3, <=7.7"


def test_nnal_version_info() -> None:
    info = p.parse_nnal_version_info(capture("nnal_atb_version_info_8.1.RC1.txt"))
    assert (info.name, info.version, info.build_version) == ("Ascend-cann-atb", "8.1.RC1", "8.1.RC1.B150")
    assert info.platform == "aarch64"
    assert info.commit == "e3f94af7c59175d9f33d5578dc3859679560690c"


def test_etc_ascend_install_info() -> None:
    fields = p.parse_key_values(capture("etc_ascend_install_info.txt"))
    assert fields["Driver_Install_Path_Param"] == "/usr/local/Ascend"
    assert fields["UserName"] == "HwHiAiUser"


def test_npu_smi_info_a2_910b3() -> None:
    info = p.parse_npu_smi_info(capture("npu_smi_info_910b3_a2_25.2.0.txt"))
    assert info.version == "25.2.0"
    assert [c.npu_id for c in info.chips] == list(range(8))
    first = info.chips[0]
    assert (first.name, first.health, first.chip_id, first.bus_id) == ("910B3", "OK", 0, "0000:C1:00.0")
    assert (first.power_w, first.temp_c, first.aicore_pct) == (97.9, 34.0, 0.0)
    assert (first.hbm_used_mb, first.hbm_total_mb) == (3408, 65536)
    assert (first.hugepages_used, first.hugepages_total, first.memory_used_mb) == (0, 0, 0)
    # The 5-digit hazard: "41052/ 65536".
    assert (info.chips[2].hbm_used_mb, info.chips[2].hbm_total_mb) == (41052, 65536)
    assert info.chips[2].bus_id == "0000:81:00.0"
    assert [(x.npu_id, x.chip_id, x.pid, x.name, x.memory_mb) for x in info.processes] == [
        (2, 0, 1333928, "", 37709)
    ]


def test_npu_smi_info_a3_two_chips_per_npu() -> None:
    info = p.parse_npu_smi_info(capture("npu_smi_info_a3_26.0.rc2_truncated.txt"))
    assert info.version == "26.0.rc2"
    assert [(c.npu_id, c.chip_id, c.phy_id) for c in info.chips] == [(0, 0, 0), (0, 1, 1)]
    assert info.chips[1].power_w is None  # "-" on the second die
    assert info.chips[1].bus_id == "0000:9F:00.0" and info.chips[1].hbm_used_mb == 2874


def test_npu_smi_info_older_910a() -> None:
    info = p.parse_npu_smi_info(capture("npu_smi_info_910a_23.0.rc2.txt"))
    assert info.version == "23.0.rc2"
    (chip,) = info.chips
    assert (chip.npu_id, chip.name, chip.power_w, chip.temp_c) == (3, "910A", 62.2, 26.0)
    assert (chip.memory_used_mb, chip.memory_total_mb, chip.hbm_used_mb, chip.hbm_total_mb) == (
        2280,
        15039,
        0,
        32768,
    )
    assert info.processes == []


def test_npu_smi_info_310p_without_hbm() -> None:
    info = p.parse_npu_smi_info(capture("npu_smi_info_310p3_23.0.rc3.txt"))
    assert [(c.npu_id, c.chip_id, c.phy_id, c.name) for c in info.chips] == [
        (0, 0, 0, "310P3"),
        (64, 0, 1, "310P3"),
    ]
    first = info.chips[0]
    assert first.power_w is None  # NA
    assert (first.memory_used_mb, first.memory_total_mb, first.hbm_total_mb) == (3841, 21527, None)
    assert (first.hugepages_used, first.hugepages_total) == (996, 996)


@pytest.mark.parametrize(
    "text", ["", "npu-smi: command not found", "dcmi module initialize failed. ret is -8005\n", "| | |\n+--+"]
)
def test_npu_smi_info_garbage(text: str) -> None:
    info = p.parse_npu_smi_info(text)
    assert info.chips == [] and info.processes == [] and info.version is None


def test_npu_smi_board_910a_and_910b() -> None:
    old = p.parse_npu_smi_board(capture("npu_smi_info_board_910a_23.0.5.txt"))
    assert (old.npu_id, old.software_version, old.firmware_version) == (0, "23.0.5", "7.1.0.7.220")
    assert (old.bus_id, old.vendor_id, old.device_id) == ("0000:61:00.0", "0x19E5", "0xD801")
    new = p.parse_npu_smi_board(capture("npu_smi_info_board_910b_25.5.1.txt"))
    assert (new.software_version, new.firmware_version, new.device_id) == ("25.5.1", "7.8.0.6.201", "0xD802")
    assert new.fields["Serial Number"] == "1025C9048791"
    chip = p.parse_npu_smi_board(capture("npu_smi_info_chip_board_910a_23.0.5.txt"))
    assert chip.chip_name == "910A" and chip.fields["VDie ID"].startswith("42C711D4")
    health = p.parse_key_values(capture("npu_smi_info_health_910a_23.0.5.txt"), sep=":")
    assert health["Health Status"] == "OK"
    assert p.parse_npu_smi_board("") == p.NpuBoardInfo()


def test_hccn_ip() -> None:
    assert p.parse_hccn_ip(capture("hccn_tool_ip_g_dev0.txt")) == p.HccnIp("10.10.0.10", "255.255.255.0")
    assert p.parse_hccn_ip(capture("hccn_tool_ip_g_dev1.txt")).ipaddr == "10.10.0.11"
    assert p.parse_hccn_ip("") == p.HccnIp()  # an unconfigured NPU prints nothing


# --- torch ------------------------------------------------------------------------------------------------

TORCH_VERSION_PY = """from typing import Optional

__all__ = ['__version__', 'debug', 'cuda', 'git_version', 'hip', 'rocm', 'xpu']
__version__ = '2.13.0+cpu'
debug = False
cuda: Optional[str] = None
git_version = 'cf30153c4c131c8164ee7798e5022d810682e2cb'
hip: Optional[str] = None
"""


def test_version_py() -> None:
    fields = p.parse_version_py(TORCH_VERSION_PY)
    assert fields["__version__"] == "2.13.0+cpu"
    assert fields["cuda"] is None and fields["git_version"].startswith("cf30153c")  # type: ignore[union-attr]
    assert "debug" not in fields  # not a string
    assert p.parse_version_py("__version__ = (") == {}


def test_stack_python_report() -> None:
    report = {
        "python": "3.10.12",
        "executable": "/opt/venv/bin/python",
        "packages": {
            "torch": {
                "version": "2.6.0+cu124",
                "location": "/opt/venv/lib/python3.10/site-packages",
                "package_dir": "/opt/venv/lib/python3.10/site-packages/torch",
                "version_py": "__version__ = '2.6.0+cu124'\ncuda = '12.4'\ngit_version = 'abc'\nhip = None\n",
            },
            "torch_npu": {
                "version": "2.6.0",
                "location": "/opt/venv/lib/python3.10/site-packages",
                "package_dir": "/opt/venv/lib/python3.10/site-packages/torch_npu",
                "version_py": "__version__ = '2.6.0'\ngit_version = 'def'\n",
            },
        },
    }
    stack = p.parse_stack_python(json.dumps(report))
    assert (stack.version, stack.executable) == ("3.10.12", "/opt/venv/bin/python")
    assert stack.torch is not None
    assert (stack.torch.version, stack.torch.cuda, stack.torch.git_version) == ("2.6.0+cu124", "12.4", "abc")
    assert (stack.torch.torch_npu, stack.torch.torch_npu_git_version) == ("2.6.0", "def")
    empty = p.parse_stack_python('{"python": "3.9.18", "packages": {"torch": null, "torch_npu": null}}')
    assert empty.torch is None and empty.version == "3.9.18"
    with pytest.raises(ValueError, match="stack_python"):
        p.parse_stack_python("Traceback (most recent call last):")


# --- a support bundle: the same code from saved outputs ---------------------------------------------------


def test_parse_sections_ascend_bundle() -> None:
    sections = {
        "hostname": "npu-node-01\n",
        "npu_smi": capture("npu_smi_info_910b3_a2_25.2.0.txt"),
        "cpu_count": "192",
    }
    files: dict[str, str | None] = {
        "/usr/local/Ascend/driver/version.info": capture("ascend_driver_version_25.0.rc1.1.txt"),
        "/usr/local/Ascend/firmware/version.info": capture("ascend_firmware_version_7.7.0.1.231.txt"),
        "/usr/local/Ascend/ascend-toolkit/latest/aarch64-linux/ascend_toolkit_install.info": capture(
            "ascend_toolkit_install_8.1.RC1.txt"
        ),
        "/usr/local/Ascend/ascend-toolkit/latest/version.cfg": capture("cann_version_cfg_8.1.RC1.txt"),
        "/usr/local/Ascend/nnal/atb/8.1.RC1/version.info": capture("nnal_atb_version_info_8.1.RC1.txt"),
        "/usr/local/cuda/version.json": None,
    }
    facts = parse_sections(sections, files)
    assert facts.hostname == "npu-node-01" and facts.cpus == 192
    assert facts.nvidia is None
    assert facts.ascend is not None and len(facts.ascend.npus) == 8
    assert facts.ascend.cann_internal == "7.7.0.1.238"
    assert facts.ascend.cann_innerversion == "V100R001C21SPC001B238"
    components = facts.components()
    assert components["ascend_driver"] == "25.0.rc1.1"
    assert components["ascend_firmware"] == "7.7.0.1.231"
    assert components["cann_toolkit"] == "8.1.RC1"
    assert components["cann_kernels"] == "8.1.RC1"
    assert components["nnal"] == "8.1.RC1"
    assert facts.probe_errors == []
    assert Facts.from_dict(json.loads(json.dumps(facts.to_dict()))) == facts


def test_parse_sections_nvidia_bundle() -> None:
    files: dict[str, str | None] = {
        "/proc/driver/nvidia/version": capture("synthetic_proc_driver_nvidia_version_535.txt"),
        "/usr/local/cuda/version.json": capture("synthetic_cuda_version_12.4.json"),
        "/usr/include/nccl.h": capture("synthetic_nccl_h_2.21.5.txt"),
    }
    sections = {
        "nvidia_smi": capture("derived_nvidia_smi_query_noheader_nounits.csv"),
        "nccl_libs": '["/usr/lib/x86_64-linux-gnu/libnccl.so.2.21.5"]',
        "pci": json.dumps(
            [{"slot": "0000:18:00.0", "vendor": "0x10de", "device": "0x2330", "numa_node": "0"}]
        ),
    }
    facts = parse_sections(sections, files)
    assert facts.nvidia is not None and len(facts.nvidia.gpus) == 2
    components = facts.components()
    assert (components["nvidia_driver"], components["cuda"], components["nccl"]) == (
        "535.54.03",
        "12.4.1",
        "2.21.5",
    )
    assert facts.ascend is None
    assert facts.accelerators[0].numa_node == 0


def test_parse_sections_bad_parts_become_errors() -> None:
    facts = parse_sections(
        {"pci": "{", "cpu_count": "many", "ip_addr": "[oops"}, {"/usr/local/cuda/version.json": "{"}
    )
    assert facts.cpus is None and facts.accelerators == [] and facts.interfaces == []
    joined = "\n".join(facts.probe_errors)
    for name in ("pci", "cpu_count", "ip_addr", "cuda version.json"):
        assert name in joined
    assert parse_sections({}, {}) == Facts()


def test_torch_nccl_reads_the_library_torch_loads_by_wheel_string_or_name() -> None:
    wheel = "/v/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2"
    assert p.torch_nccl({"libraries": [wheel], "wheels": {"nvidia-nccl-cu13": "2.28.9"}}) == (
        "2.28.9", wheel, "nvidia-nccl-cu13 2.28.9 package metadata")
    # A library bundled in torch/lib is not the wheel's, whatever pip says: its own string decides.
    bundled = "/v/lib/python3.12/site-packages/torch/lib/libnccl.so.2"
    assert p.torch_nccl({"libraries": [bundled], "wheels": {"nvidia-nccl-cu12": "2.21.5"},
                         "embedded": "2.27.3+cuda12.9"})[0] == "2.27.3"
    assert p.torch_nccl({"libraries": ["/v/torch/lib/libnccl.so.2.26.2"], "wheels": {}}) == (
        "2.26.2", "/v/torch/lib/libnccl.so.2.26.2", "the library's file name")
    assert p.torch_nccl({"libraries": [], "wheels": {}}) == (None, None, None)  # the system one then judges
    assert p.torch_nccl(None) == (None, None, None)  # a probe that did not look


def test_pip_freeze_names_the_nccl_wheel() -> None:
    text = (Path(__file__).parent / "data" / "h100" / "bundle" / "commands" / "pip_list.txt").read_text()
    assert p.parse_pip_freeze(text)["torch"] == "2.11.0"
    assert p.nccl_wheel_in_pip_list(text) == ("nvidia-nccl-cu13", "2.28.9")
    assert p.nccl_wheel_in_pip_list("torch==2.13.0+cpu\n") is None
