"""The lab's SIMULATED vendor packages and artifact repository (accelstack_lab.simulated).

Every installer runs for real (sh + the payload's python) under ACCELSTACK_SIM_ROOT, a temporary root, so no
test touches this machine's /usr/local or /etc.
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from accelstack.facts import parsers
from accelstack.vendors.ascend import parsers as ascend_parsers
from accelstack.vendors.nvidia import parsers as nvidia_parsers
from accelstack_lab.simulated import (
    COMPONENTS,
    FAULT_FIXTURE_CANN,
    build_lab_repository,
    cann_exports_rootinfo_config,
    drop_device_command,
    formats,
    packages,
    restore_devices_command,
    versions,
    wheel,
)

CAPTURES = Path(__file__).parent / "data" / "captures"


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_lab_repository(tmp_path_factory.mktemp("labrepo"), torch_wheel=None, stacks=[])


@pytest.fixture(scope="module")
def manifest(repo: Path) -> list[dict]:
    return yaml.safe_load((repo / "manifest.yml").read_text())["artifacts"]


def find(manifest: list[dict], component: str, version: str | None = None) -> str:
    for entry in manifest:
        if entry["component"] == component and (version is None or entry["version"] == version):
            return entry["file"]
    raise AssertionError(f"no {component} {version} in the manifest")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    r = tmp_path / "root"
    (r / "etc").mkdir(parents=True)
    (r / "etc" / "passwd").write_text("root:x:0:0::/root:/bin/sh\nHwHiAiUser:x:1000:1000::/home/HwHiAiUser:/bin/bash\n")
    (r / "etc" / "group").write_text("root:x:0:\nHwHiAiUser:x:1000:\n")
    return r


def run(repo: Path, file: str, *args: str, root: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    full = {k: v for k, v in os.environ.items() if not k.startswith(("ACCELSTACK_SIM", "ASCEND_"))}
    full["ACCELSTACK_SIM_ROOT"] = str(root)
    full.update(env or {})
    return subprocess.run(["sh", str(repo / file), *args], capture_output=True, text=True, env=full, timeout=60)


def tool(path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(path), *args], capture_output=True, text=True, timeout=30)


def stack_pins(component: str) -> set[str]:
    pins = set()
    for path in (Path(__file__).parent.parent / "stacks").glob("*.yml"):
        value = (yaml.safe_load(path.read_text()).get("components") or {}).get(component)
        if isinstance(value, dict):
            value = value.get("version")
        if value:
            pins.add(str(value))
    return pins


# ----- repository and manifest -----------------------------------------------------------------------------

def test_manifest_lists_every_file_with_true_sha256_and_size(repo: Path, manifest: list[dict]) -> None:
    assert {e["component"] for e in manifest} <= set(COMPONENTS)
    for entry in manifest:
        data = (repo / entry["file"]).read_bytes()
        assert hashlib.sha256(data).hexdigest() == entry["sha256"], entry["file"]
        assert len(data) == entry["size"]
        assert entry["simulated"] is (entry["component"] != "torch")
    listed = {e["file"] for e in manifest}
    on_disk = {p.relative_to(repo).as_posix() for p in repo.rglob("*") if p.is_file()
               and ".build-cache" not in p.parts and p.name != "manifest.yml"}
    assert on_disk == listed


def test_manifest_covers_the_stacks_pins(manifest: list[dict]) -> None:
    for component in ("ascend_driver", "ascend_firmware", "cann_toolkit", "cann_kernels", "nnal", "torch_npu",
                      "nvidia_driver", "cuda", "system_nccl"):
        built = {e["version"] for e in manifest if e["component"] == component}
        assert stack_pins(component) <= built, component
    torch = [e for e in manifest if e["component"] == "torch"]
    assert [e["version"] for e in torch] == ["2.13.0+cpu"] and torch[0]["file"].startswith("wheels/torch-2.13.0")
    assert FAULT_FIXTURE_CANN in {e["version"] for e in manifest if e["component"] == "cann_toolkit"}


def test_rebuild_is_idempotent_and_rewrites_nothing(repo: Path) -> None:
    before = {p: (p.stat().st_mtime_ns, p.stat().st_ino) for p in repo.rglob("*") if p.is_file()
              and ".build-cache" not in p.parts}
    manifest = (repo / "manifest.yml").read_bytes()
    build_lab_repository(repo, torch_wheel=None, stacks=[])
    after = {p: (p.stat().st_mtime_ns, p.stat().st_ino) for p in before}
    assert after == before
    assert (repo / "manifest.yml").read_bytes() == manifest


def test_packages_are_deterministic(tmp_path: Path) -> None:
    first = packages.cann_toolkit("8.1.RC1", "x86_64", cache_dir=tmp_path / "a")
    second = packages.cann_toolkit("8.1.RC1", "x86_64", cache_dir=tmp_path / "b")  # gcc runs again
    assert first.data == second.data
    assert wheel.torch_npu_wheel("2.5.1", "8.1.RC1") == wheel.torch_npu_wheel("2.5.1", "8.1.RC1")


def test_a_named_stack_builds_only_its_pins(tmp_path: Path) -> None:
    wheel_file = tmp_path / "torch-2.13.0+cpu-cp311-cp311-linux_x86_64.whl"
    wheel_file.write_bytes(b"not a real wheel, the builder only links it")
    dest = build_lab_repository(tmp_path / "r", torch_wheel=wheel_file, stacks=["nvidia-cuda12.4"],
                                fault_fixtures=False)
    entries = yaml.safe_load((dest / "manifest.yml").read_text())["artifacts"]
    assert sorted((e["component"], e["version"]) for e in entries) == [
        ("cuda", "12.4"), ("nvidia_driver", "550.54.15"), ("system_nccl", "2.21.5"), ("torch", "2.13.0+cpu")]


# ----- .run mechanics ------------------------------------------------------------------------------------

def test_check_verifies_the_payload_and_a_corrupt_file_is_refused(repo: Path, manifest: list[dict], root: Path,
                                                                tmp_path: Path) -> None:
    driver = find(manifest, "ascend_driver", "24.1.rc2")
    proc = run(repo, driver, "--check", root=root)
    assert proc.returncode == 0
    assert "SHA256 checksums are OK. All good." in proc.stdout
    bad = tmp_path / "bad.run"
    data = bytearray((repo / driver).read_bytes())
    data[-10] ^= 0xFF
    bad.write_bytes(bytes(data))
    proc = subprocess.run(["sh", str(bad), "--full"], capture_output=True, text=True,
                          env={**os.environ, "ACCELSTACK_SIM_ROOT": str(root)})
    assert proc.returncode == 1 and "Error in SHA256 checksums" in proc.stderr
    assert not (root / "usr").exists()


@pytest.mark.parametrize("component,flag", [
    ("ascend_driver", "--bogus"), ("ascend_firmware", "--install-for-all"), ("cann_toolkit", "--fulll"),
    ("cann_kernels", "--install-path"), ("nnal", "-x"), ("nvidia_driver", "--frobnicate"), ("cuda", "--toolkit-path=/x"),
    ("system_nccl", "--weird"),
])
def test_unknown_flags_are_refused_and_nothing_is_installed(repo: Path, manifest: list[dict], root: Path,
                                                            component: str, flag: str) -> None:
    proc = run(repo, find(manifest, component), flag, "--quiet" if component != "cuda" else "--silent", root=root)
    assert proc.returncode == 1
    assert flag.split("=")[0] in proc.stderr
    assert not (root / "usr").exists()


# ----- Ascend --------------------------------------------------------------------------------------------

def test_driver_needs_hwhiaiuser(repo: Path, manifest: list[dict], tmp_path: Path) -> None:
    bare = tmp_path / "bare"
    (bare / "etc").mkdir(parents=True)
    (bare / "etc" / "passwd").write_text("root:x:0:0::/root:/bin/sh\n")
    (bare / "etc" / "group").write_text("root:x:0:\n")
    driver = find(manifest, "ascend_driver", "24.1.rc2")
    proc = run(repo, driver, "--full", "--quiet", root=bare)
    assert proc.returncode == 1 and "HwHiAiUser does not exist" in proc.stderr
    assert not (bare / "usr/local/Ascend/driver").exists()
    # root as the run user is allowed when named, as the vendor documents.
    proc = run(repo, driver, "--full", "--quiet", "--install-username=root", "--install-usergroup=root", root=bare)
    assert proc.returncode == 0, proc.stderr


def test_driver_and_firmware_write_the_real_version_files(repo: Path, manifest: list[dict], root: Path) -> None:
    proc = run(repo, find(manifest, "ascend_driver", "25.0.rc1.1"), "--full", "--install-for-all", root=root)
    assert proc.returncode == 0, proc.stderr
    assert "Driver package installed successfully!" in proc.stdout
    ascend = root / "usr/local/Ascend"
    # The 25.0.rc1.1 file is the verbatim capture the reference quotes.
    assert (ascend / "driver/version.info").read_text() == (CAPTURES / "ascend_driver_version_25.0.rc1.1.txt").read_text()

    fw = find(manifest, "ascend_firmware", "7.7.0.1.231")
    proc = run(repo, fw, "--full", root=root)
    assert proc.returncode == 2, "a firmware install waits for a reboot: exit 2"
    assert "Reboot now or after driver installation" in proc.stdout
    assert (ascend / "firmware/version.info").read_text() == \
        (CAPTURES / "ascend_firmware_version_7.7.0.1.231.txt").read_text()
    assert run(repo, fw, "--full", "--quiet", root=root).returncode == 0, "same firmware again: nothing to reboot for"
    proc = run(repo, find(manifest, "ascend_firmware", "7.3.0.1.231"), "--upgrade", "--quiet", root=root)
    assert proc.returncode == 2
    info = ascend_parsers.parse_ascend_version_info((ascend / "firmware/version.info").read_text())
    assert info.version == "7.3.0.1.231" and info.package_version == "24.1.rc2"

    assert (root / "etc/ascend_install.info").read_text() == (
        "UserName=HwHiAiUser\nUserGroup=HwHiAiUser\nFirmware_Install_Type=upgrade\n"
        f"Firmware_Install_Path_Param={ascend}\nDriver_Install_Type=full\n"
        f"Driver_Install_Path_Param={ascend}\nDriver_Install_For_All=yes\n")
    assert os.access(ascend / "driver/script/uninstall.sh", os.X_OK)
    assert os.readlink(root / "usr/local/sbin/npu-smi") == "../bin/npu-smi"


def test_older_driver_has_no_package_version(repo: Path, manifest: list[dict], root: Path) -> None:
    assert run(repo, find(manifest, "ascend_driver", "24.1.rc1"), "--full", "--quiet", root=root).returncode == 0
    info = ascend_parsers.parse_ascend_version_info((root / "usr/local/Ascend/driver/version.info").read_text())
    assert info.package_version is None and info.release == "24.1.rc1"
    assert info.compatible_version_fw == ["7.0.0,7.2.99"]


def test_install_path_is_honoured(repo: Path, manifest: list[dict], root: Path) -> None:
    proc = run(repo, find(manifest, "ascend_driver", "24.1.rc2"), "--full", "--quiet",
               "--install-path=/opt/Ascend", root=root)
    assert proc.returncode == 0, proc.stderr
    assert (root / "opt/Ascend/driver/version.info").is_file()
    assert not (root / "usr/local/Ascend").exists()
    assert tool(root / "usr/local/bin/npu-smi", "info", "-l").returncode == 0


def test_killed_install_leftovers_are_cleared(repo: Path, manifest: list[dict], root: Path) -> None:
    driver = find(manifest, "ascend_driver", "24.1.rc2")
    assert run(repo, driver, "--full", "--quiet", root=root).returncode == 0
    base = root / "usr/local/Ascend"
    # What a SIGKILL between "stage" and "rename" leaves: a half-built sibling, never a half-written target.
    (base / "driver.simulated-tmp-99999").mkdir()
    (base / "driver.simulated-tmp-99999" / "version.info").write_text("Version=24.")
    assert run(repo, find(manifest, "ascend_driver", "25.0.rc1.1"), "--upgrade", "--quiet", root=root).returncode == 0
    assert sorted(p.name for p in base.iterdir()) == ["driver"]
    assert "Version=25.0.rc1.1\n" in (base / "driver/version.info").read_text()


def install_toolkit(repo: Path, manifest: list[dict], root: Path, version: str) -> Path:
    proc = run(repo, find(manifest, "cann_toolkit", version), "--full", "--quiet", root=root)
    assert proc.returncode == 0, proc.stderr
    return root / "usr/local/Ascend/ascend-toolkit"


def test_toolkit_version_files_and_set_env(repo: Path, manifest: list[dict], root: Path) -> None:
    home = install_toolkit(repo, manifest, root, "8.1.RC1")
    info = (home / "latest/x86_64-linux/ascend_toolkit_install.info").read_text()
    expected = (CAPTURES / "ascend_toolkit_install_8.1.RC1.txt").read_text()
    # The capture is aarch64 under /usr/local; ours is this machine's arch under the test root.
    expected = expected.replace("aarch64", "x86_64").replace("/usr/local/Ascend", str(root / "usr/local/Ascend"))
    assert info == expected
    cfg = ascend_parsers.parse_cann_version_cfg((home / "latest/version.cfg").read_text())
    assert cfg is not None
    assert "runtime_running_version=[7.7.0.1.238:8.1.RC1]" in (home / "latest/version.cfg").read_text()
    runtime = (home / "latest/runtime/version.info").read_text()
    assert runtime.startswith("Version=7.7.0.1.238\nversion_dir=8.1.RC1\ntimestamp=20250428_203017761\n")
    script = f". {home}/set_env.sh && env"
    env = dict(line.split("=", 1) for line in subprocess.run(
        ["sh", "-c", script], capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"}).stdout.splitlines()
        if "=" in line)
    latest = f"{home}/latest"
    assert env["ASCEND_TOOLKIT_HOME"] == latest == env["ASCEND_HOME_PATH"] == env["ASCEND_AICPU_PATH"]
    assert env["ASCEND_OPP_PATH"] == f"{latest}/opp"
    assert env["TOOLCHAIN_HOME"] == f"{latest}/toolkit"
    assert env["LD_LIBRARY_PATH"].split(":")[2] == f"{latest}/lib64"
    assert f"{latest}/python/site-packages" in env["PYTHONPATH"].split(":")
    assert f"{latest}/bin" in env["PATH"].split(":")
    for needed in ("runtime", "compiler", "opp", "lib64/libhccl.so"):  # torch_npu's import-time checks
        assert (Path(latest) / needed).exists(), needed


def test_kernels_need_the_toolkit_and_update_version_cfg(repo: Path, manifest: list[dict], root: Path) -> None:
    kernels = find(manifest, "cann_kernels", "8.1.RC1")
    assert "Ascend-cann-kernels-910b_8.1.RC1_linux-" in kernels
    proc = run(repo, kernels, "--install", "--quiet", root=root)
    assert proc.returncode == 1 and "toolkit" in proc.stderr
    home = install_toolkit(repo, manifest, root, "8.1.RC1")
    assert run(repo, kernels, "--install", "--quiet", root=root).returncode == 0
    assert "opp_kernel_running_version=[7.7.0.1.238:8.1.RC1]" in (home / "latest/version.cfg").read_text()
    assert (home / "latest/opp_kernel/version.info").read_text().startswith("Version=7.7.0.1.238\n")


def test_toolkit_upgrade_switches_latest_and_removes_the_old_version(repo: Path, manifest: list[dict],
                                                                     root: Path) -> None:
    home = install_toolkit(repo, manifest, root, "8.0.0")
    proc = run(repo, find(manifest, "cann_toolkit", "8.1.RC1"), "--upgrade", "--quiet", root=root)
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in home.iterdir()) == ["8.1.RC1", "cann_uninstall.sh", "latest", "set_env.sh"]
    assert os.readlink(home / "latest/runtime") == "../8.1.RC1/runtime"


def test_nnal_needs_the_toolkit_environment(repo: Path, manifest: list[dict], root: Path) -> None:
    nnal = find(manifest, "nnal", "8.1.RC1")
    proc = run(repo, nnal, "--install", "--quiet", root=root)
    assert proc.returncode == 1 and "set_env.sh" in proc.stderr
    home = install_toolkit(repo, manifest, root, "8.1.RC1")
    proc = run(repo, nnal, "--install", "--quiet", root=root, env={"ASCEND_TOOLKIT_HOME": str(home / "latest")})
    assert proc.returncode == 0, proc.stderr
    text = (root / "usr/local/Ascend/nnal/atb/latest/version.info").read_text()
    info = ascend_parsers.parse_nnal_version_info(text)
    assert info.version == "8.1.RC1"
    # Arguments to a sourced script are a bash feature (dash's "." ignores them); the vendor documents bash.
    env = subprocess.run(["bash", "-c", f"source {root}/usr/local/Ascend/nnal/atb/set_env.sh --cxx_abi=0 && "
                          "echo $ATB_HOME_PATH"], capture_output=True, text=True).stdout.strip()
    assert env == f"{root}/usr/local/Ascend/nnal/atb/latest/atb/cxx_abi_0" and Path(env, "lib").is_dir()


def exported(library: Path) -> set[str]:
    out = subprocess.run(["nm", "-D", "--defined-only", str(library)], capture_output=True, text=True, check=True)
    return {line.split()[-1] for line in out.stdout.splitlines() if line.strip()}


@pytest.mark.skipif(shutil.which("nm") is None, reason="binutils nm not installed")
def test_libhccl_exports_rootinfo_config_only_where_cann_has_it(repo: Path, manifest: list[dict],
                                                                tmp_path: Path) -> None:
    toolkits = [e["version"] for e in manifest if e["component"] == "cann_toolkit"]
    assert any(not cann_exports_rootinfo_config(v) for v in toolkits), "the fault fixture is built"
    for version in toolkits:
        root = tmp_path / version
        (root / "etc").mkdir(parents=True)
        home = install_toolkit(repo, manifest, root, version)
        lib = home / "latest/lib64/libhccl.so"
        symbols = exported(lib)
        assert {"HcclCommInitRootInfo", "HcclGetRootInfo", "HcclAllReduce"} <= symbols
        assert ("HcclCommInitRootInfoConfig" in symbols) is cann_exports_rootinfo_config(version), version
        handle = ctypes.CDLL(str(lib))
        assert hasattr(handle, "HcclCommInitRootInfo")
        assert hasattr(handle, "HcclCommInitRootInfoConfig") is cann_exports_rootinfo_config(version)
        assert "aclInit" in exported(home / "latest/lib64/libascendcl.so")


def test_cann_version_rule() -> None:
    order = ["7.0.RC1", "7.0.0", "8.0.RC2", "8.0.RC3", "8.0.0", "8.1.RC1", "8.2.RC1", "8.5.0"]
    assert sorted(order, key=versions.cann_sort_key) == order
    assert not cann_exports_rootinfo_config(FAULT_FIXTURE_CANN)
    assert all(cann_exports_rootinfo_config(v) for v in ("8.0.RC2", "8.0.0", "8.1.RC1", "8.2.RC1"))
    assert versions.kernels_package_name("8.1.RC1", "910b", "aarch64") == \
        "Ascend-cann-kernels-910b_8.1.RC1_linux-aarch64.run"
    assert versions.kernels_package_name("8.5.0", "910b", "x86_64") == "Ascend-cann-910b-ops_8.5.0_linux-x86_64.run"
    with pytest.raises(ValueError):
        versions.cann_sort_key("eight")


# ----- the simulated Ascend tools ---------------------------------------------------------------------------

def install_driver(repo: Path, manifest: list[dict], root: Path, spec: dict | None = None) -> Path:
    env = {"ACCELSTACK_SIM_DEVICES": json.dumps(spec)} if spec else {}
    proc = run(repo, find(manifest, "ascend_driver", "25.0.rc1.1"), "--full", "--quiet", root=root, env=env)
    assert proc.returncode == 0, proc.stderr
    fw = run(repo, find(manifest, "ascend_firmware", "7.7.0.1.231"), "--full", "--quiet", root=root)
    assert fw.returncode in (0, 2)  # 2 on the first install (reboot needed), 0 when already that version
    return root / "usr/local/bin/npu-smi"


def structure(text: str) -> list[str]:
    """The table's skeleton: rule lines as they are, header rows, and device rows reduced to their borders."""
    out = []
    for line in text.splitlines():
        if line.startswith("+"):
            out.append(line)
        elif line.startswith("|"):
            out.append("".join(c if c == "|" else "." for c in line))
    return out


def test_npu_smi_info_matches_the_real_capture(repo: Path, manifest: list[dict], root: Path) -> None:
    npu_smi = install_driver(repo, manifest, root)
    text = tool(npu_smi, "info").stdout
    capture = (CAPTURES / "npu_smi_info_910b3_a2_25.2.0.txt").read_text()
    # Same borders, same header rows, same column positions; the capture has one running process, we have none.
    assert structure(text)[:6] == structure(capture)[:6]
    assert text.splitlines()[3:5] == capture.splitlines()[3:5]
    assert structure(text)[6:9] == structure(capture)[6:9]
    info = ascend_parsers.parse_npu_smi_info(text)
    assert info.version == "25.0.rc1.1"
    assert [c.npu_id for c in info.chips] == list(range(8))
    chip = info.chips[0]
    assert (chip.name, chip.health, chip.bus_id, chip.hbm_used_mb, chip.hbm_total_mb) == \
        ("910B3", "OK", "0000:C1:00.0", 3400, 65536)
    assert info.processes == []


def test_npu_smi_queries_and_hccn_tool(repo: Path, manifest: list[dict], root: Path) -> None:
    npu_smi = install_driver(repo, manifest, root, {"count": 4, "chip": "910B4", "host_octet": 7})
    assert len(ascend_parsers.parse_npu_smi_info(tool(npu_smi, "info").stdout).chips) == 4
    listing = tool(npu_smi, "info", "-l").stdout
    assert parsers.parse_key_values(listing, sep=":")["Total Count"] == "4"
    mapping = tool(npu_smi, "info", "-m").stdout.splitlines()
    assert mapping[0].split() == (CAPTURES / "npu_smi_info_m_910a_23.0.5.txt").read_text().splitlines()[0].split()
    assert mapping[1].split() == ["0", "0", "0", "Ascend", "910B4"]
    board = ascend_parsers.parse_npu_smi_board(tool(npu_smi, "info", "-t", "board", "-i", "2").stdout)
    assert (board.npu_id, board.software_version, board.firmware_version, board.device_id) == \
        (2, "25.0.rc1.1", "7.7.0.1.231", "0xD802")
    real = ascend_parsers.parse_npu_smi_board((CAPTURES / "npu_smi_info_board_910b_25.5.1.txt").read_text())
    assert list(board.fields) == list(real.fields)
    assert ascend_parsers.parse_npu_smi_board(tool(npu_smi, "info", "-t", "board", "-i", "1", "-c", "0").stdout).chip_name \
        == "910B4"
    assert tool(npu_smi, "info", "-t", "board", "-i", "9").returncode != 0
    assert tool(npu_smi, "info", "--bogus").returncode != 0
    hccn = root / "usr/local/Ascend/driver/tools/hccn_tool"
    ip = ascend_parsers.parse_hccn_ip(tool(hccn, "-i", "3", "-ip", "-g").stdout)
    assert (ip.ipaddr, ip.netmask) == ("192.168.103.7", "255.255.255.0")
    assert tool(hccn, "-i", "0", "-link", "-g").stdout == "link status: UP\n"
    assert tool(hccn, "-i", "0", "-bogus", "-g").returncode != 0
    # The driver leaves the device IPs in /etc/hccn.conf, as `hccn_tool -ip -s` does on a real host.
    conf = (root / "etc/hccn.conf").read_text()
    assert ascend_parsers.parse_hccn_conf(conf) == {i: f"192.168.{100 + i}.7" for i in range(4)} and "netmask_3=255.255.255.0" in conf
    assert tool(hccn, "-i", "2", "-ip", "-s", "address", "10.1.2.3", "netmask", "255.255.0.0").returncode == 0
    ip = ascend_parsers.parse_hccn_ip(tool(hccn, "-i", "2", "-ip", "-g").stdout)
    assert (ip.ipaddr, ip.netmask) == ("10.1.2.3", "255.255.0.0")
    conf = (root / "etc/hccn.conf").read_text()
    assert ascend_parsers.parse_hccn_conf(conf)[2] == "10.1.2.3" and "netmask_2=255.255.0.0" in conf
    # A re-install keeps what the file says (the site's settings) and adds only devices it lacks.
    (root / "etc/hccn.conf").write_text("address_0=10.9.9.9\n")
    install_driver(repo, manifest, root)
    assert ascend_parsers.parse_hccn_conf((root / "etc/hccn.conf").read_text()) == {0: "10.9.9.9", 1: "192.168.101.7",
                                                                     2: "10.1.2.3", 3: "192.168.103.7"}


def test_drop_device_and_restore(repo: Path, manifest: list[dict], root: Path) -> None:
    npu_smi = install_driver(repo, manifest, root)
    sh = ["sh", "-c"]
    subprocess.run([*sh, drop_device_command(3, root=str(root))], check=True)
    info = ascend_parsers.parse_npu_smi_info(tool(npu_smi, "info").stdout)
    assert [c.npu_id for c in info.chips] == [0, 1, 2, 4, 5, 6, 7]
    subprocess.run([*sh, drop_device_command(5, root=str(root), state="unhealthy")], check=True)
    chips = {c.npu_id: c.health for c in ascend_parsers.parse_npu_smi_info(tool(npu_smi, "info").stdout).chips}
    assert chips[5] == "Critical"
    hccn = root / "usr/local/Ascend/driver/tools/hccn_tool"
    assert tool(hccn, "-i", "5", "-link", "-g").stdout == "link status: DOWN\n"
    # A driver re-install keeps the device file: a dropped device stays dropped until restored.
    install_driver(repo, manifest, root)
    assert len(ascend_parsers.parse_npu_smi_info(tool(npu_smi, "info").stdout).chips) == 7
    subprocess.run([*sh, restore_devices_command(root=str(root))], check=True)
    chips = {c.npu_id: c.health for c in ascend_parsers.parse_npu_smi_info(tool(npu_smi, "info").stdout).chips}
    assert chips == {i: "OK" for i in range(8)}
    with pytest.raises(ValueError):
        drop_device_command(1, state="on-fire")


# ----- NVIDIA --------------------------------------------------------------------------------------------

def install_nvidia(repo: Path, manifest: list[dict], root: Path, spec: dict | None = None) -> Path:
    env = {"ACCELSTACK_SIM_DEVICES": json.dumps(spec)} if spec else {}
    proc = run(repo, find(manifest, "nvidia_driver", "550.54.15"), "--silent", "--dkms", root=root, env=env)
    assert proc.returncode == 0, proc.stderr
    return root / "usr/local/bin/nvidia-smi"


def test_nvidia_smi_formats_parse(repo: Path, manifest: list[dict], root: Path) -> None:
    smi = install_nvidia(repo, manifest, root, {"count": 4})
    probe = tool(smi, "--query-gpu=" + ",".join(nvidia_parsers.NVIDIA_QUERY_FIELDS), "--format=csv,noheader,nounits")
    gpus = nvidia_parsers.parse_nvidia_smi_csv(probe.stdout)
    assert [g.index for g in gpus] == [0, 1, 2, 3]
    assert (gpus[0].name, gpus[0].driver_version, gpus[0].memory_total_mib, gpus[0].bus_id) == \
        ("NVIDIA H100 80GB HBM3", "550.54.15", 81559, "00000000:18:00.0")
    assert len({g.uuid for g in gpus}) == 4
    with_header = tool(smi, "--query-gpu=index,name,memory.total,memory.free,power.draw,utilization.gpu",
                       "--format=csv").stdout.splitlines()
    assert with_header[0] == "index, name, memory.total [MiB], memory.free [MiB], power.draw [W], utilization.gpu [%]"
    assert with_header[1].startswith("0, NVIDIA H100 80GB HBM3, 81559 MiB, 81559 MiB, ")
    log = nvidia_parsers.parse_nvidia_smi_xml(tool(smi, "-q", "-x").stdout)
    assert (log.driver_version, log.cuda_version, log.attached_gpus) == ("550.54.15", "12.4", 4)
    assert log.gpus[1].bus_id == "00000000:2A:00.0" and log.gpus[1].memory_total_mib == 81559
    topo = nvidia_parsers.parse_nvidia_topo(tool(smi, "topo", "-m").stdout)
    assert topo.devices == ["GPU0", "GPU1", "GPU2", "GPU3"]
    assert topo.links["GPU0"]["GPU1"] == "NV18" and topo.numa_affinity["GPU3"] == "1"
    assert tool(smi, "-L").stdout.splitlines()[0].startswith("GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-")
    assert "NVIDIA-SMI 550.54.15" in tool(smi).stdout
    bad = tool(smi, "--bogus")
    assert bad.returncode == 2 and "Invalid combination of input arguments" in bad.stdout
    assert tool(smi, "--query-gpu=nonsense", "--format=csv").returncode == 2
    assert tool(smi, "--query-gpu=index").returncode == 2


def test_nvidia_drop_device(repo: Path, manifest: list[dict], root: Path) -> None:
    smi = install_nvidia(repo, manifest, root)
    subprocess.run(["sh", "-c", drop_device_command(0, vendor="nvidia", root=str(root))], check=True)
    gpus = nvidia_parsers.parse_nvidia_smi_csv(tool(smi, "--query-gpu=index,name", "--format=csv").stdout)
    assert [g.index for g in gpus] == list(range(1, 8))
    subprocess.run(["sh", "-c", drop_device_command(2, vendor="nvidia", root=str(root), state="unhealthy")],
                   check=True)
    log = nvidia_parsers.parse_nvidia_smi_xml(tool(smi, "-q", "-x").stdout)
    assert [g.reset_required for g in log.gpus][1] == "Yes"


def test_nvidia_smi_shows_a_foreign_process_and_exclusive_mode(repo: Path, manifest: list[dict], root: Path) -> None:
    """What a GPU held by someone else's job looks like to each query the checks make: the process in ``-q -x``
    (with the real tool's element names), in ``--query-compute-apps`` and the default table; its memory in use; the
    compute mode in ``-q -x``, ``--query-gpu=compute_mode`` and the table's Compute M. column."""
    smi = install_nvidia(repo, manifest, root, {"count": 2})
    state = root / "usr/local/.simulated-nvidia/devices.json"
    assert tool(smi, "--query-compute-apps=pid,process_name,used_memory", "--format=csv,noheader").stdout == ""
    doc = json.loads(state.read_text())
    doc["devices"][1].update(processes=[{"pid": 4242, "name": "python3", "memory_mib": 70000}],
                             compute_mode="Exclusive_Process")
    state.write_text(json.dumps(doc))
    apps = tool(smi, "--query-compute-apps=pid,process_name,used_memory,gpu_uuid", "--format=csv,noheader,nounits")
    assert apps.stdout.strip() == f"4242, python3, 70000, {doc['devices'][1]['uuid']}"
    assert tool(smi, "--query-compute-apps=pid,used_memory", "--format=csv").stdout.splitlines() == [
        "pid, used_memory [MiB]", "4242, 70000 MiB"]
    rows = tool(smi, "--query-gpu=index,memory.used,compute_mode", "--format=csv,noheader,nounits").stdout
    assert rows.splitlines() == ["0, 0, Default", "1, 70000, Exclusive_Process"]
    xml = tool(smi, "-q", "-x").stdout
    log = nvidia_parsers.parse_nvidia_smi_xml(xml)
    assert [g.memory_used_mib for g in log.gpus] == [0, 70000]
    assert "<compute_mode>Exclusive_Process</compute_mode>" in xml
    assert "<pid>4242</pid>" in xml and "<process_name>python3</process_name>" in xml
    assert "<used_memory>70000 MiB</used_memory>" in xml
    table = tool(smi).stdout
    assert "4242" in table and "python3" in table and "E. Process" in table
    assert "No running processes found" not in table
    assert tool(smi, "--query-compute-apps=nonsense", "--format=csv").returncode == 2


def test_cuda_and_nccl(repo: Path, manifest: list[dict], root: Path) -> None:
    proc = run(repo, find(manifest, "cuda", "12.4"), "--silent", "--toolkit", root=root)
    assert proc.returncode == 0, proc.stderr
    local = root / "usr/local"
    assert os.readlink(local / "cuda") == "cuda-12.4"
    assert nvidia_parsers.parse_cuda_version_json((local / "cuda/version.json").read_text()) == "12.4.1"
    assert (local / "cuda/version.json").read_text() == (CAPTURES / "synthetic_cuda_version_12.4.json").read_text()
    assert nvidia_parsers.parse_nvcc_version(tool(local / "cuda/bin/nvcc", "--version").stdout) == "12.4.131"
    cudart = ctypes.CDLL(str(local / "cuda/lib64/libcudart.so"))
    value = ctypes.c_int()
    assert cudart.cudaRuntimeGetVersion(ctypes.byref(value)) == 0 and value.value == 12040
    assert run(repo, find(manifest, "cuda", "12.4"), "--toolkit", root=root).returncode == 1  # no --silent

    proc = run(repo, find(manifest, "system_nccl", "2.21.5"), "--quiet", root=root)
    assert proc.returncode == 0, proc.stderr
    lib = local / "nccl/lib/libnccl.so.2"
    nccl = ctypes.CDLL(str(lib))
    assert nccl.ncclGetVersion(ctypes.byref(value)) == 0 and value.value == 22105
    assert nvidia_parsers.parse_nccl_header((local / "nccl/include/nccl.h").read_text()) == "2.21.5"
    assert b"NCCL version 2.21.5+cuda12.4" in lib.read_bytes()
    assert versions.nccl_version_code("2.8.4") == 2804 and versions.nccl_version_code("2.28.9") == 22809


def test_formats_are_pure() -> None:
    assert formats.version_cfg(versions.cann_release("8.1.RC1"), ("runtime",)) == (
        "# version: 1.0\nruntime_running_version=[7.7.0.1.238:8.1.RC1]\n"
        "runtime_upgrade_version=[7.7.0.1.238:8.1.RC1]\nruntime_installed_version=[7.7.0.1.238:8.1.RC1]\n")
    assert formats.nnal_version_info("8.1.RC1", "aarch64").splitlines()[0] == "    Ascend-cann-atb : 8.1.RC1"


# ----- the simulated torch_npu wheel ------------------------------------------------------------------------

def test_torch_npu_wheel_installs_with_pip(repo: Path, manifest: list[dict], tmp_path: Path) -> None:
    file = find(manifest, "torch_npu", "2.5.1")
    assert "0simulated" in file
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    proc = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-index", "--no-deps",
                           "--quiet", str(repo / file)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    out = subprocess.run([str(python), "-c", "import sys, torch_npu; print(torch_npu.__version__, "
                          "'torch' in sys.modules, torch_npu.simulated)"], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["2.5.1", "False", "True"]
    show = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "show", "torch_npu"],
                          capture_output=True, text=True, check=True).stdout
    assert "Version: 2.5.1" in show and "SIMULATED" in show
    site = next(venv.glob("lib/python*/site-packages"))
    assert parsers.parse_version_py((site / "torch_npu/version.py").read_text())["__version__"] == "2.5.1"
