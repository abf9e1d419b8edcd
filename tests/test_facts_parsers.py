"""The facts parsers where a test needs logic: two parsers agreeing, properties and methods, round trips.

Plain "this captured output parses to these fields" tests are data: tests/data/facts/<parser>/<case>.json, run
by tests/test_facts_cases.py (captures in tests/data/captures, sources in its README)."""

from __future__ import annotations

import json
from pathlib import Path

from accelstack.facts import Facts, parse_sections
from accelstack.facts import parsers as p
from accelstack.vendors.ascend import parsers as ascend_parsers

CAPTURES = Path(__file__).parent / "data" / "captures"


def capture(name: str) -> str:
    return (CAPTURES / name).read_text(encoding="utf-8")


def test_ip_oneline_matches_json() -> None:
    from_text = p.parse_ip_oneline(capture("ip_o_addr_lab.txt"), capture("ip_o_link_lab.txt"))
    from_json = p.parse_ip_json(capture("ip_j_addr_lab.json"))
    assert [(i.name, i.state, i.mtu, i.up) for i in from_text] == [
        (i.name, i.state, i.mtu, i.up) for i in from_json
    ]
    assert [[a.address for a in i.addresses] for i in from_text] == [
        [a.address for a in i.addresses] for i in from_json
    ]


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


def test_ascend_release_falls_back_to_version() -> None:
    """``release`` is a property (package_version, else Version): the cases see fields, not properties."""
    assert ascend_parsers.parse_ascend_version_info(capture("ascend_driver_version_23.0.7.txt")).release == "23.0.7"
    assert ascend_parsers.parse_ascend_version_info(capture("ascend_driver_version_25.0.rc1.1.txt")).release == "25.0.rc1.1"
    info = ascend_parsers.parse_ascend_version_info("Version=24.1.rc1\ncompatible_version_fw=[7.0.0,7.2.99]\n")
    assert info.package_version is None and info.release == "24.1.rc1"


def test_cann_version_cfg_running() -> None:
    """``running(component)`` is a method over the entries the case parse_cann_version_cfg/8.1.RC1 checks."""
    cfg = ascend_parsers.parse_cann_version_cfg(capture("cann_version_cfg_8.1.RC1.txt"))
    runtime = cfg.running("runtime")
    assert runtime is not None and (runtime.internal, runtime.release) == ("7.7.0.1.238", "8.1.RC1")
    kernels = cfg.running("opp_kernel")
    assert kernels is not None and kernels.release == "8.1.RC1"
    assert cfg.running("nonexistent") is None


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
    assert (components["nvidia_driver"], components["cuda"], components["system_nccl"]) == (
        "535.54.03",
        "12.4.1",
        "2.21.5",
    )
    # No torch in this bundle: nothing loads an NCCL, whatever the system has.
    assert components["nccl"] is None
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



def _two_system_nccls(loader: str | None) -> Facts:
    """A host with the distribution's libnccl 2.28.3 (as the H200 host) and a 2.28.9 in /usr/local/nccl."""
    header = capture("synthetic_nccl_h_2.21.5.txt")
    files: dict[str, str | None] = {
        "/usr/include/nccl.h": header.replace("NCCL_MINOR 21", "NCCL_MINOR 28").replace("NCCL_PATCH 5", "NCCL_PATCH 3"),
        "/usr/local/nccl/include/nccl.h": header.replace("NCCL_MINOR 21", "NCCL_MINOR 28").replace(
            "NCCL_PATCH 5", "NCCL_PATCH 9")}
    sections = {"nccl_libs": json.dumps([
        "/usr/lib/x86_64-linux-gnu/libnccl.so.2", "/usr/lib/x86_64-linux-gnu/libnccl.so.2.28.3",
        "/usr/local/nccl/lib/libnccl.so.2", "/usr/local/nccl/lib/libnccl.so.2.28.9"])}
    if loader is not None:
        sections["nccl_loader"] = loader
    return parse_sections(sections, files)


def test_the_system_nccl_is_the_one_the_loader_gives_a_program() -> None:
    # ld.so.conf names /usr/local/nccl/lib first (the system_nccl role's accelstack-nccl.conf sorts before the
    # distribution's x86_64-linux-gnu.conf): that libnccl is what nccl-tests load, so it is the system NCCL.
    facts = _two_system_nccls(capture("ldconfig_p_two_system_nccl.txt"))
    assert facts.nvidia is not None
    assert facts.nvidia.nccl_loader_library == "/usr/local/nccl/lib/libnccl.so.2"
    assert facts.components()["system_nccl"] == "2.28.9"
    # The other order: the distribution's comes first (on a merged-/usr system the cache names /lib).
    other = _two_system_nccls("\tlibnccl.so.2 (libc6,x86-64) => /lib/x86_64-linux-gnu/libnccl.so.2\n")
    assert other.components()["system_nccl"] == "2.28.3"


def test_without_the_loaders_answer_the_first_header_names_the_system_nccl() -> None:
    # No ldconfig on the host (or an older probe's bundle): /usr/include/nccl.h, as before.
    assert _two_system_nccls(None).components()["system_nccl"] == "2.28.3"
    # The loader's library without a versioned file beside it: the nccl.h of its prefix.
    facts = parse_sections({"nccl_libs": json.dumps(["/usr/local/nccl/lib/libnccl.so.2"]),
                            "nccl_loader": "\tlibnccl.so.2 (libc6,x86-64) => /usr/local/nccl/lib/libnccl.so.2\n"},
                           {"/usr/local/nccl/include/nccl.h": capture("synthetic_nccl_h_2.21.5.txt")})
    assert facts.components()["system_nccl"] == "2.21.5"


def test_two_releases_in_one_folder_read_as_the_file_the_loaders_name_leads_to() -> None:
    # Going from one stack's system NCCL to another's leaves the older file beside the newer; libnccl.so.2 (the
    # name the loader gives) leads to the one installed last, which the probe resolves with readlink -f.
    libs = ["/usr/local/nccl/lib/libnccl.so.2", "/usr/local/nccl/lib/libnccl.so.2.21.5",
            "/usr/local/nccl/lib/libnccl.so.2.26.2"]
    for target in ("2.21.5", "2.26.2"):
        facts = parse_sections({
            "nccl_libs": json.dumps(libs),
            "nccl_loader": "\tlibnccl.so.2 (libc6,x86-64) => /usr/local/nccl/lib/libnccl.so.2\n",
            "nccl_loader_file": f"/usr/local/nccl/lib/libnccl.so.{target}\n"}, {})
        assert facts.components()["system_nccl"] == target


def test_the_stack_files_lines_read_as_the_snippets_report_on_the_real_h200() -> None:
    # What the probe prints for the H200's venv, read from files, gives the facts its snippet's JSON gave there.
    commands = Path(__file__).parent / "data" / "h200" / "bundle" / "commands"
    report = json.loads((commands / "opt_torch_.venv_bin_python3_-c_stack_snippet.txt").read_text())
    torch = report["packages"]["torch"]
    lines = [f"executable {report['executable']}", f"version Python {report['python']}",
             f"dist torch {torch['version']} {torch['location']}", f"package torch {torch['package_dir']}",
             *(f"library {path}" for path in report["nccl"]["libraries"]),
             *(f"wheel {name} {version}" for name, version in report["nccl"]["wheels"].items())]
    files = {torch["package_dir"] + "/version.py": torch["version_py"]}
    assert p.parse_stack_files("\n".join(lines) + "\n", files) == p.parse_stack_python(json.dumps(report))
    # torch's version.py not sent (unreadable): the metadata's version, as the snippet gives without it.
    report["packages"]["torch"]["version_py"] = None
    assert p.parse_stack_files("\n".join(lines), {}) == p.parse_stack_python(json.dumps(report))
