"""Installer inside every SIMULATED accelstack lab package (the payload's install.py). Not a vendor installer.

Runs on the host under python3 (stdlib only, 3.6+). The .run header unpacks the payload next to this file and
calls it with the command line; ``package.json`` says which package it is. It honours the vendor's flags,
refuses unknown ones, checks what the real installer checks (HwHiAiUser for the Ascend driver, the toolkit for
kernels and NNAL) and installs at the vendor's paths.

``ACCELSTACK_SIM_ROOT`` (default empty) prefixes every absolute path written, ``--install-path`` included, and
selects ``$ACCELSTACK_SIM_ROOT/etc/passwd`` and ``/etc/group`` for the user check, so tests need no real
``/usr/local``. ``ACCELSTACK_SIM_DEVICES`` (JSON) describes the simulated devices the driver packages record.

Atomicity: every folder is assembled in a temporary sibling and renamed into place; every single file is
written to a temporary name and renamed. A killed install leaves either the old or the new version file,
never half of one. The version file a provisioner checks changes last.
"""

import grp
import hashlib
import json
import os
import pwd
import shutil
import socket
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.environ.get("ACCELSTACK_SIM_ROOT", "").rstrip("/")


class InstallError(Exception):
    def __init__(self, message, code=1):  # type: (str, int) -> None
        Exception.__init__(self, message)
        self.code = code


def rooted(path):  # type: (str) -> str
    """Prefix the simulation root once: a path already under it is left alone."""
    if not ROOT or not path.startswith("/"):
        return path
    if path == ROOT or path.startswith(ROOT + "/"):
        return path
    return ROOT + path


def now():  # type: () -> str
    return time.strftime("%Y-%m-%d %H:%M:%S")


# ----- atomic file operations ---------------------------------------------------------------------------

def write_file(path, data, mode=0o644):  # type: (str, bytes, int) -> None
    directory = os.path.dirname(path)
    if directory:
        os.makedirs(directory, exist_ok=True)
    tmp = "%s.simulated-tmp-%d" % (path, os.getpid())
    with open(tmp, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    os.chmod(tmp, mode)
    os.replace(tmp, path)


def write_text(path, text, mode=0o644):  # type: (str, str, int) -> None
    write_file(path, text.encode("utf-8"), mode)


def replace_symlink(link, target):  # type: (str, str) -> None
    os.makedirs(os.path.dirname(link), exist_ok=True)
    tmp = "%s.simulated-tmp-%d" % (link, os.getpid())
    if os.path.lexists(tmp):
        os.unlink(tmp)
    os.symlink(target, tmp)
    os.replace(tmp, link)


def remove_path(path):  # type: (str) -> None
    if os.path.islink(path) or os.path.isfile(path):
        os.unlink(path)
    elif os.path.isdir(path):
        shutil.rmtree(path)


def staging_dir(target):  # type: (str) -> str
    parent = os.path.dirname(target)
    os.makedirs(parent, exist_ok=True)
    # Leftovers of a killed install are ours to clear: same name pattern, never the target itself.
    base = os.path.basename(target)
    for name in os.listdir(parent):
        if name.startswith(base + ".simulated-tmp-") or name.startswith(base + ".simulated-old-"):
            remove_path(os.path.join(parent, name))
    tmp = "%s.simulated-tmp-%d" % (target, os.getpid())
    os.makedirs(tmp)
    return tmp


def swap_into_place(staged, target):  # type: (str, str) -> None
    """Rename the staged folder to the target; the old target (if any) goes aside first, then away."""
    old = None
    if os.path.lexists(target):
        old = "%s.simulated-old-%d" % (target, os.getpid())
        os.rename(target, old)
    os.rename(staged, target)
    if old is not None:
        remove_path(old)


# ----- the payload --------------------------------------------------------------------------------------

def load_package():  # type: () -> dict
    with open(os.path.join(HERE, "package.json")) as handle:
        return json.load(handle)


def substitute(data, tokens):  # type: (bytes, dict) -> bytes
    for key, value in tokens.items():
        data = data.replace(("@@%s@@" % key).encode(), value.encode())
    return data


def copy_tree(package, section, dest, tokens):  # type: (dict, str, str, dict) -> None
    """Copy payload ``tree/<section>/...`` into ``dest``, templating the files marked as templates."""
    for entry in package["files"]:
        if entry["section"] != section:
            continue
        with open(os.path.join(HERE, entry["payload"]), "rb") as handle:
            data = handle.read()
        if entry.get("template"):
            data = substitute(data, tokens)
        target = os.path.join(dest, entry["path"])
        if entry.get("symlink"):
            os.makedirs(os.path.dirname(target), exist_ok=True)
            os.symlink(data.decode(), target)
            continue
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "wb") as handle:
            handle.write(data)
        os.chmod(target, entry.get("mode", 0o644))
    for folder in package.get("folders", {}).get(section, []):
        os.makedirs(os.path.join(dest, folder), exist_ok=True)


def payload_file(package, name, tokens):  # type: (dict, str, dict) -> bytes
    for entry in package["files"]:
        if entry["section"] == "tools" and entry["path"] == name:
            with open(os.path.join(HERE, entry["payload"]), "rb") as handle:
                data = handle.read()
            return substitute(data, tokens) if entry.get("template") else data
    raise InstallError("simulated package is missing tools/%s" % name)


# ----- command line -------------------------------------------------------------------------------------

ASCEND_FLAGS = {
    "ascend_driver": ["--full", "--install", "--upgrade", "--uninstall", "--devel", "--quiet", "--nox11",
                      "--install-for-all", "--force", "--help", "--version"],
    "ascend_firmware": ["--full", "--upgrade", "--uninstall", "--quiet", "--nox11", "--help", "--version"],
    "cann_toolkit": ["--full", "--install", "--upgrade", "--uninstall", "--devel", "--quiet", "--nox11",
                     "--install-for-all", "--help", "--version"],
    "cann_kernels": ["--install", "--full", "--upgrade", "--uninstall", "--quiet", "--nox11", "--install-for-all",
                     "--help", "--version"],
    "nnal": ["--install", "--full", "--upgrade", "--uninstall", "--quiet", "--nox11", "--install-for-all",
             "--help", "--version"],
    "nccl": ["--install", "--full", "--upgrade", "--uninstall", "--quiet", "--silent", "--help", "--version"],
}
ASCEND_VALUE_FLAGS = {
    "ascend_driver": ["--install-path", "--install-username", "--install-usergroup"],
    "ascend_firmware": ["--install-path"],
    "cann_toolkit": ["--install-path", "--install-username", "--install-usergroup"],
    "cann_kernels": ["--install-path", "--install-username", "--install-usergroup"],
    "nnal": ["--install-path", "--install-username", "--install-usergroup"],
    "nccl": ["--install-path"],
}
NVIDIA_DRIVER_FLAGS = {
    "-s": "--silent", "--silent": "--silent", "-a": "--accept-license", "--accept-license": "--accept-license",
    "-q": "--no-questions", "--no-questions": "--no-questions", "--dkms": "--dkms", "--no-dkms": "--no-dkms",
    "--disable-nouveau": "--disable-nouveau", "--no-nouveau-check": "--no-nouveau-check",
    "--no-cc-version-check": "--no-cc-version-check", "--no-x-check": "--no-x-check",
    "--install-libglvnd": "--install-libglvnd", "--no-opengl-files": "--no-opengl-files",
    "--no-drm": "--no-drm", "--uninstall": "--uninstall", "--help": "--help", "-h": "--help",
    "--version": "--version", "-v": "--version", "--nox11": "--nox11",
}
NVIDIA_DRIVER_VALUE_FLAGS = ["--ui", "--kernel-module-type", "-m", "--tmpdir", "--log-file-name"]
CUDA_FLAGS = ["--silent", "--toolkit", "--driver", "--override", "--no-man-page", "--no-drm",
              "--no-opengl-libs", "--help", "--version", "--nox11"]
CUDA_VALUE_FLAGS = ["--toolkitpath", "--defaultroot", "--tmpdir", "--installpath", "--librarypath"]


def parse_args(kind, argv):  # type: (str, list) -> dict
    flags = {}  # type: dict
    if kind == "nvidia_driver":
        simple, valued = NVIDIA_DRIVER_FLAGS, NVIDIA_DRIVER_VALUE_FLAGS
    elif kind == "cuda":
        simple, valued = {f: f for f in CUDA_FLAGS}, CUDA_VALUE_FLAGS
    else:
        simple = {f: f for f in ASCEND_FLAGS[kind]}
        valued = ASCEND_VALUE_FLAGS[kind]
    for arg in argv:
        if arg in simple:
            flags[simple[arg]] = True
            continue
        name, sep, value = arg.partition("=")
        if sep and name in valued:
            flags[name] = value
            continue
        raise InstallError(unknown_flag_message(kind, arg), code=1)
    return flags


def unknown_flag_message(kind, arg):  # type: (str, str) -> str
    runfile = os.path.basename(os.environ.get("ACCELSTACK_SIM_RUNFILE", "installer.run"))
    if kind == "nvidia_driver":
        return ("ERROR: Unrecognized option: '%s'; please run `%s --help` for usage information."
                % (arg, runfile))
    if kind == "cuda":
        return "Unknown option: %s\nRun '%s --help' for the options (simulated CUDA runfile)." % (arg, runfile)
    return ("[ERROR]Unrecognized parameters: %s. Try './%s --help' for more information." % (arg, runfile))


def usage(package):  # type: (dict) -> str
    kind = package["kind"]
    if kind == "nvidia_driver":
        options = sorted(set(NVIDIA_DRIVER_FLAGS)) + [f + "=..." for f in NVIDIA_DRIVER_VALUE_FLAGS]
    elif kind == "cuda":
        options = CUDA_FLAGS + [f + "=..." for f in CUDA_VALUE_FLAGS]
    else:
        options = ASCEND_FLAGS[kind] + [f + "=..." for f in ASCEND_VALUE_FLAGS[kind]]
    return "%s (simulated)\nUsage: ./%s [options]\nOptions: %s\n       --check\n" % (
        package["label"], package["runfile"], " ".join(options))


def say(flags, text):  # type: (dict, str) -> None
    if not flags.get("--quiet") and not flags.get("--silent"):
        print(text)


def mode_of(flags, allowed):  # type: (dict, list) -> str
    chosen = [m for m in allowed if flags.get(m)]
    if len(chosen) != 1:
        raise InstallError("[ERROR]Choose exactly one of %s." % ", ".join(allowed))
    return chosen[0]


# ----- users --------------------------------------------------------------------------------------------

def user_exists(name):  # type: (str) -> bool
    if ROOT:
        return _listed(os.path.join(ROOT, "etc", "passwd"), name)
    try:
        pwd.getpwnam(name)
        return True
    except KeyError:
        return False


def group_exists(name):  # type: (str) -> bool
    if ROOT:
        return _listed(os.path.join(ROOT, "etc", "group"), name)
    try:
        grp.getgrnam(name)
        return True
    except KeyError:
        return False


def _listed(path, name):  # type: (str, str) -> bool
    try:
        with open(path) as handle:
            return any(line.split(":", 1)[0] == name for line in handle)
    except OSError:
        return False


def run_user(flags):  # type: (dict) -> tuple
    user = flags.get("--install-username") or "HwHiAiUser"
    group = flags.get("--install-usergroup") or "HwHiAiUser"
    if user != "root" and not user_exists(user):
        raise InstallError(
            "[ERROR]The user %s does not exist. Create it first (groupadd %s; useradd -g %s -d /home/%s -m %s "
            "-s /bin/bash), or pass --install-username and --install-usergroup." % (user, group, group, user, user))
    if group != "root" and not group_exists(group):
        raise InstallError("[ERROR]The group %s does not exist. Create it first (groupadd %s)." % (group, group))
    return user, group


# ----- /etc/ascend_install.info -------------------------------------------------------------------------

INSTALL_INFO_ORDER = ["UserName", "UserGroup", "Firmware_Install_Type", "Firmware_Install_Path_Param",
                      "Driver_Install_Type", "Driver_Install_Path_Param", "Driver_Install_For_All"]


def update_install_info(values, drop_prefix=None):  # type: (dict, object) -> None
    path = rooted("/etc/ascend_install.info")
    current = {}  # type: dict
    if os.path.exists(path):
        with open(path) as handle:
            for line in handle:
                key, sep, value = line.rstrip("\n").partition("=")
                if sep:
                    current[key] = value
    if isinstance(drop_prefix, str):
        current = {k: v for k, v in current.items() if not k.startswith(drop_prefix)}
    current.update(values)
    keys = [k for k in INSTALL_INFO_ORDER if k in current] + sorted(k for k in current if k not in INSTALL_INFO_ORDER)
    write_text(path, "".join("%s=%s\n" % (k, current[k]) for k in keys))


# ----- simulated devices --------------------------------------------------------------------------------

ASCEND_BUS_IDS = ["0000:C1:00.0", "0000:C2:00.0", "0000:81:00.0", "0000:82:00.0",
                  "0000:01:00.0", "0000:02:00.0", "0000:41:00.0", "0000:42:00.0"]
NVIDIA_BUS_IDS = ["00000000:18:00.0", "00000000:2A:00.0", "00000000:3A:00.0", "00000000:5D:00.0",
                  "00000000:9A:00.0", "00000000:AB:00.0", "00000000:BA:00.0", "00000000:DB:00.0"]
HBM_MB = {"910B1": 65536, "910B2": 65536, "910B3": 65536, "910B4": 32768}


def device_spec():  # type: () -> dict
    text = os.environ.get("ACCELSTACK_SIM_DEVICES", "").strip()
    if not text:
        return {}
    try:
        spec = json.loads(text)
    except ValueError as exc:
        raise InstallError("[ERROR]ACCELSTACK_SIM_DEVICES is not JSON: %s" % exc) from None
    if isinstance(spec, int):
        spec = {"count": spec}
    if not isinstance(spec, dict):
        raise InstallError("[ERROR]ACCELSTACK_SIM_DEVICES must be a JSON object, e.g. {\"count\": 8}")
    return spec


def _per_device(spec, key, index, default):  # type: (dict, str, int, object) -> object
    value = spec.get(key)
    if isinstance(value, dict):
        return value.get(str(index), default)
    if isinstance(value, list):
        return value[index] if index < len(value) else default
    return default if value is None else value


def _stable_hex(*parts):  # type: (*object) -> str
    return hashlib.sha256("/".join(str(p) for p in parts).encode()).hexdigest()


def ascend_devices(spec):  # type: (dict) -> dict
    count = int(spec.get("count", 8))
    chip = str(spec.get("chip", "910B3"))
    octet = int(spec.get("host_octet", 1))
    missing = set(int(i) for i in spec.get("missing", []))
    host = socket.gethostname()
    devices = []
    for i in range(count):
        bus = ASCEND_BUS_IDS[i] if i < len(ASCEND_BUS_IDS) else "0000:%02X:00.0" % (0x10 + i)
        total = int(_per_device(spec, "hbm_total_mb", i, HBM_MB.get(chip, 65536)))  # type: ignore[call-overload]
        devices.append({
            "id": i,
            "present": i not in missing,
            "health": _per_device(spec, "health", i, "OK"),
            "bus_id": _per_device(spec, "bus_ids", i, bus),
            "hbm_total_mb": total,
            "hbm_used_mb": int(_per_device(spec, "hbm_used_mb", i, 3400)),  # type: ignore[call-overload]
            "power_w": round(90.0 + 1.1 * i, 1),
            "temp_c": 33 + i % 5,
            "aicore_pct": 0,
            # Rails: device i of every server shares 192.168.(100+i).0/24, the common A2 layout.
            "ip": _per_device(spec, "ips", i, "192.168.%d.%d" % (100 + i, octet)),
            "netmask": str(spec.get("netmask", "255.255.255.0")),
            "link": "UP",
            "serial": _stable_hex(host, "npu", i)[:12].upper(),
        })
    return {"simulated": True, "vendor": "ascend", "chip": chip, "devices": devices}


def nvidia_devices(spec, driver, cuda):  # type: (dict, str, str) -> dict
    count = int(spec.get("count", 8))
    name = str(spec.get("name", "NVIDIA H100 80GB HBM3"))
    missing = set(int(i) for i in spec.get("missing", []))
    host = socket.gethostname()
    cpus = int(spec.get("cpus_per_numa", 48))
    devices = []
    for i in range(count):
        digest = _stable_hex(host, "gpu", i)
        numa = 0 if i < max(1, count // 2) else 1
        devices.append({
            "index": i,
            "present": i not in missing,
            "name": name,
            "uuid": "GPU-%s-%s-%s-%s-%s" % (digest[:8], digest[8:12], digest[12:16], digest[16:20], digest[20:32]),
            "serial": str(int(digest[:12], 16))[:13],
            "bus_id": _per_device(spec, "bus_ids", i, NVIDIA_BUS_IDS[i] if i < 8 else "00000000:%02X:00.0" % i),
            "memory_total_mib": int(spec.get("memory_total_mib", 81559)),
            "memory_used_mib": int(_per_device(spec, "memory_used_mib", i, 0)),  # type: ignore[call-overload]
            "temperature_c": 31 + i % 6,
            "power_draw_w": round(68.0 + 0.7 * i, 2),
            "power_limit_w": float(spec.get("power_limit_w", 700.0)),
            "utilization_pct": 0,
            "vbios": "96.00.A5.00.01",
            "reset_required": "No",
            "ecc_dram_uncorrectable": 0,
            "numa": numa,
            "cpu_affinity": "%d-%d" % (numa * cpus, numa * cpus + cpus - 1),
        })
    return {"simulated": True, "vendor": "nvidia", "driver_version": driver, "cuda_version": cuda,
            "nvlinks": int(spec.get("nvlinks", 18)), "devices": devices}


def persist_hccn_conf(devices_json):  # type: (str) -> None
    """Device IPs into ``/etc/hccn.conf`` as ``hccn_tool -i N -ip -s`` leaves them on a real host (the site set
    them once; the simulated devices come configured). Only devices the file lacks: what is there stays."""
    path = rooted("/etc/hccn.conf")
    lines = []  # type: list
    if os.path.exists(path):
        with open(path) as handle:
            lines = handle.read().splitlines()
    listed = set(line.partition("=")[0].strip() for line in lines if "=" in line)
    added = []
    for device in json.loads(devices_json).get("devices", []):
        if device.get("ip") and "address_%s" % device["id"] not in listed:
            added += ["address_%s=%s" % (device["id"], device["ip"]),
                      "netmask_%s=%s" % (device["id"], device.get("netmask") or "255.255.255.0")]
    if added:
        write_text(path, "".join(line + "\n" for line in lines + added))


def keep_or_make_devices(existing_path, make):  # type: (str, object) -> str
    """A driver re-install keeps the recorded devices (a dropped device stays dropped) unless a spec is given."""
    if not os.environ.get("ACCELSTACK_SIM_DEVICES") and os.path.exists(existing_path):
        with open(existing_path) as handle:
            return handle.read()
    return json.dumps(make(), indent=1, sort_keys=True) + "\n"  # type: ignore[operator]


# ----- Ascend driver and firmware -----------------------------------------------------------------------

def ascend_base(flags):  # type: (dict) -> str
    return rooted(flags.get("--install-path") or "/usr/local/Ascend")


def read_version_info(path):  # type: (str) -> dict
    values = {}  # type: dict
    try:
        with open(path) as handle:
            for line in handle:
                key, sep, value = line.strip().partition("=")
                if sep:
                    values[key] = value
    except OSError:
        pass
    return values


def install_ascend_driver(package, flags):  # type: (dict, dict) -> int
    base = ascend_base(flags)
    target = os.path.join(base, "driver")
    if flags.get("--uninstall"):
        return uninstall(target, [rooted("/usr/local/bin/npu-smi"), rooted("/usr/local/sbin/npu-smi")],
                         "Driver", drop_prefix="Driver_", flags=flags)
    mode = mode_of(flags, ["--full", "--install", "--upgrade", "--devel"])
    if mode == "--upgrade" and not os.path.exists(os.path.join(target, "version.info")):
        raise InstallError("[ERROR]Driver is not installed, --upgrade needs an installed driver; use --full.")
    user, group = run_user(flags)
    tokens = {
        "DRIVER_HOME": target,
        "FIRMWARE_HOME": os.path.join(base, "firmware"),
        "DEVICES_FILE": os.path.join(target, ".simulated", "devices.json"),
        "NPU_SMI": rooted("/usr/local/bin/npu-smi"),
        "NPU_SMI_SBIN": rooted("/usr/local/sbin/npu-smi"),
        "INSTALL_INFO": rooted("/etc/ascend_install.info"),
        "HCCN_CONF": rooted("/etc/hccn.conf"),
    }
    staged = staging_dir(target)
    copy_tree(package, "driver", staged, tokens)
    devices = keep_or_make_devices(tokens["DEVICES_FILE"], lambda: ascend_devices(device_spec()))
    write_text(os.path.join(staged, ".simulated", "devices.json"), devices)
    persist_hccn_conf(devices)
    # Tools and the install record first, the folder holding version.info last (see the module docstring).
    write_file(tokens["NPU_SMI"], payload_file(package, "npu-smi", tokens), 0o755)
    replace_symlink(tokens["NPU_SMI_SBIN"], "../bin/npu-smi")
    update_install_info({
        "UserName": user, "UserGroup": group,
        "Driver_Install_Type": "upgrade" if mode == "--upgrade" else mode.lstrip("-"),
        "Driver_Install_Path_Param": base,
        "Driver_Install_For_All": "yes" if flags.get("--install-for-all") else "no",
    })
    swap_into_place(staged, target)
    say(flags, "[Driver] [%s] [INFO]Driver package installed successfully! The new version takes effect "
               "immediately. (simulated %s)" % (now(), package["version"]))
    return 0


def install_ascend_firmware(package, flags):  # type: (dict, dict) -> int
    base = ascend_base(flags)
    target = os.path.join(base, "firmware")
    if flags.get("--uninstall"):
        return uninstall(target, [], "Firmware", drop_prefix="Firmware_", flags=flags)
    mode = mode_of(flags, ["--full", "--upgrade"])
    installed = read_version_info(os.path.join(target, "version.info")).get("Version")
    if mode == "--upgrade" and installed is None:
        raise InstallError("[ERROR]Firmware is not installed, --upgrade needs an installed firmware; use --full.")
    if installed == package["version"]:
        # Nothing flashed, so nothing waits for a reboot: exit 0, not 2.
        say(flags, "[Firmware] [%s] [INFO]The firmware version is already %s, no need to upgrade. (simulated)"
            % (now(), installed))
        return 0
    tokens = {"FIRMWARE_HOME": target, "INSTALL_INFO": rooted("/etc/ascend_install.info")}
    staged = staging_dir(target)
    copy_tree(package, "firmware", staged, tokens)
    write_text(os.path.join(staged, ".simulated", "reboot-required"),
               "firmware %s -> %s installed %s; takes effect after a reboot\n" % (installed, package["version"], now()))
    update_install_info({"Firmware_Install_Type": mode.lstrip("-"), "Firmware_Install_Path_Param": base})
    swap_into_place(staged, target)
    say(flags, "[Firmware] [%s] [INFO]Firmware package installed successfully! Reboot now or after driver "
               "installation for the installation/upgrade to take effect (simulated %s)" % (now(), package["version"]))
    # The vendor's "installed, reboot needed" status: ascend-deployer accepts rc 0 or 2 (Ascend/ascend-deployer
    # playbooks/install/task_firmware.yml, failed_when: rc != 0 and rc != 2).
    return 2


# ----- CANN ---------------------------------------------------------------------------------------------

def toolkit_home(flags):  # type: (dict) -> str
    return os.path.join(ascend_base(flags), "ascend-toolkit")


def write_version_cfg(home, package_version, internal, components):  # type: (str, str, str, list) -> None
    pair = "[%s:%s]" % (internal, package_version)
    lines = ["# version: 1.0"]
    for state in ("running", "upgrade", "installed"):
        lines += ["%s_%s_version=%s" % (c, state, pair) for c in components]
    write_text(os.path.join(home, "latest", "version.cfg"), "\n".join(lines) + "\n")


def install_cann_toolkit(package, flags):  # type: (dict, dict) -> int
    home = toolkit_home(flags)
    version = package["version"]
    if flags.get("--uninstall"):
        return uninstall(os.path.join(home, version), [], "Toolkit", flags=flags)
    mode = mode_of(flags, ["--full", "--install", "--upgrade", "--devel"])
    previous = [n for n in os.listdir(home) if os.path.isdir(os.path.join(home, n)) and n != "latest"
                and ".simulated-" not in n and not os.path.islink(os.path.join(home, n))] \
        if os.path.isdir(home) else []
    if mode == "--upgrade" and not previous:
        raise InstallError("[ERROR]No installed Ascend-cann-toolkit found, --upgrade needs one; use --install.")
    user = flags.get("--install-username") or "root"
    group = flags.get("--install-usergroup") or "root"
    tokens = {"TOOLKIT_HOME": home, "USER": user, "GROUP": group}
    target = os.path.join(home, version)
    staged = staging_dir(target)
    copy_tree(package, "toolkit", staged, tokens)
    swap_into_place(staged, target)

    latest = os.path.join(home, "latest")
    staged_latest = staging_dir(latest)
    for name in sorted(os.listdir(target)):
        if name.startswith("."):
            continue
        os.symlink(os.path.join("..", version, name), os.path.join(staged_latest, name))
    os.makedirs(os.path.join(staged_latest, "var"))
    with open(os.path.join(staged_latest, "var", "manager.info"), "w") as handle:
        handle.write("install_for_all=%s\n" % ("y" if flags.get("--install-for-all") else "n"))
    with open(os.path.join(staged_latest, "var", "ascend_package_db.info"), "w") as handle:
        handle.write("".join("%s|[%s:%s]\n" % (c, c, version) for c in package["components"]))
    with open(os.path.join(staged_latest, "version.cfg"), "w") as handle:
        pair = "[%s:%s]" % (package["internal"], version)
        lines = ["# version: 1.0"]
        for state in ("running", "upgrade", "installed"):
            lines += ["%s_%s_version=%s" % (c, state, pair) for c in package["components"]]
        handle.write("\n".join(lines) + "\n")
    # latest/ is what set_env.sh and every version check read, so it switches last.
    write_file(os.path.join(home, "set_env.sh"), payload_file(package, "set_env.sh", tokens), 0o755)
    write_file(os.path.join(home, "cann_uninstall.sh"), payload_file(package, "cann_uninstall.sh", tokens), 0o755)
    swap_into_place(staged_latest, latest)
    if mode == "--upgrade":
        for name in previous:
            if name != version:
                remove_path(os.path.join(home, name))
    say(flags, "[Toolkit] [%s] [INFO]Ascend-cann-toolkit install success. (simulated %s)" % (now(), version))
    return 0


def require_toolkit(flags, version):  # type: (dict, str) -> str
    home = toolkit_home(flags)
    cfg = read_version_info(os.path.join(home, "latest", "version.cfg"))
    installed = cfg.get("runtime_running_version", "").strip("[]").rpartition(":")[2]
    if not os.path.isdir(os.path.join(home, version)) or installed != version:
        raise InstallError(
            "[ERROR]Ascend-cann-toolkit %s is not installed under %s (found %s); install the toolkit of the same "
            "version first, to the same --install-path." % (version, home, installed or "none"))
    return home


def install_cann_kernels(package, flags):  # type: (dict, dict) -> int
    version = package["version"]
    home = toolkit_home(flags)
    if flags.get("--uninstall"):
        remove_path(os.path.join(home, version, "opp", "built-in", "op_impl", "ai_core", "tbe", "kernel"))
        return uninstall(os.path.join(home, version, "opp_kernel"), [], "Kernels", flags=flags)
    mode_of(flags, ["--install", "--full", "--upgrade"])
    require_toolkit(flags, version)
    tokens = {"TOOLKIT_HOME": home}
    for section, relative in (("kernel", os.path.join("opp", "built-in", "op_impl", "ai_core", "tbe", "kernel")),
                              ("opp_kernel", "opp_kernel")):
        target = os.path.join(home, version, relative)
        staged = staging_dir(target)
        copy_tree(package, section, staged, tokens)
        swap_into_place(staged, target)
    latest = os.path.join(home, "latest")
    replace_symlink(os.path.join(latest, "opp_kernel"), os.path.join("..", version, "opp_kernel"))
    components = list(package["toolkit_components"]) + ["opp_kernel"]
    write_version_cfg(home, version, package["internal"], components)
    say(flags, "[Kernels] [%s] [INFO]Ascend-cann-kernels install success. (simulated %s)" % (now(), version))
    return 0


def install_nnal(package, flags):  # type: (dict, dict) -> int
    version = package["version"]
    base = ascend_base(flags)
    atb = os.path.join(base, "nnal", "atb")
    if flags.get("--uninstall"):
        return uninstall(os.path.join(atb, version), [os.path.join(atb, "latest")], "NNAL", flags=flags)
    mode_of(flags, ["--install", "--full", "--upgrade"])
    # The real NNAL installer needs the toolkit's environment (source set_env.sh first: vllm-ascend's install guide,
    # https://github.com/vllm-project/vllm-ascend/blob/main/docs/source/installation.md).
    home = os.environ.get("ASCEND_TOOLKIT_HOME") or os.environ.get("ASCEND_HOME_PATH")
    if not home or not os.path.isdir(home):
        raise InstallError("[ERROR]ASCEND_TOOLKIT_HOME is not set or does not exist: source "
                           "<install-path>/ascend-toolkit/set_env.sh before installing NNAL.")
    tokens = {"NNAL_HOME": os.path.join(base, "nnal")}
    target = os.path.join(atb, version)
    staged = staging_dir(target)
    copy_tree(package, "nnal", staged, tokens)
    swap_into_place(staged, target)
    write_file(os.path.join(atb, "set_env.sh"), payload_file(package, "set_env.sh", tokens), 0o755)
    replace_symlink(os.path.join(atb, "latest"), version)
    say(flags, "[NNAL] [%s] [INFO]Ascend-cann-nnal install success. (simulated %s)" % (now(), version))
    return 0


# ----- NVIDIA -------------------------------------------------------------------------------------------

def install_nvidia_driver(package, flags):  # type: (dict, dict) -> int
    state = rooted("/usr/local/.simulated-nvidia")
    smi = rooted("/usr/local/bin/nvidia-smi")
    uninstaller = rooted("/usr/local/bin/nvidia-uninstall")
    if flags.get("--uninstall"):
        return uninstall(state, [smi, uninstaller], "NVIDIA driver", flags=flags)
    if flags.get("--kernel-module-type", "open") not in ("open", "proprietary"):
        raise InstallError("ERROR: Invalid --kernel-module-type: %s" % flags["--kernel-module-type"])
    tokens = {"DEVICES_FILE": os.path.join(state, "devices.json"), "STATE_DIR": state, "NVIDIA_SMI": smi,
              "NVIDIA_UNINSTALL": uninstaller}
    staged = staging_dir(state)
    copy_tree(package, "nvidia", staged, tokens)
    old = tokens["DEVICES_FILE"]
    text = keep_or_make_devices(old, lambda: nvidia_devices(device_spec(), package["version"], package["cuda"]))
    doc = json.loads(text)
    # A kept device file still reports the driver being installed now.
    doc["driver_version"], doc["cuda_version"] = package["version"], package["cuda"]
    write_text(os.path.join(staged, "devices.json"), json.dumps(doc, indent=1, sort_keys=True) + "\n")
    write_text(os.path.join(staged, "version"), package["version"] + "\n")
    write_file(smi, payload_file(package, "nvidia-smi", tokens), 0o755)
    write_file(uninstaller, payload_file(package, "nvidia-uninstall", tokens), 0o755)
    swap_into_place(staged, state)
    say(flags, "Installation of the NVIDIA Accelerated Graphics Driver for Linux-x86_64 (version: %s) is now "
               "complete. (simulated: nvidia-smi in /usr/local/bin, no kernel module)" % package["version"])
    return 0


def install_cuda(package, flags):  # type: (dict, dict) -> int
    if flags.get("--driver"):
        raise InstallError("ERROR: the simulated CUDA runfile installs the toolkit only; install the driver with "
                           "NVIDIA-Linux-x86_64-<version>.run")
    if not flags.get("--silent"):
        raise InstallError("ERROR: the interactive installer is not available in the simulated CUDA runfile; "
                           "pass --silent --toolkit")
    default = "/usr/local/cuda-%s" % package["minor"]
    target = rooted(flags.get("--toolkitpath") or flags.get("--installpath") or default)
    tokens = {"CUDA_HOME": target}
    staged = staging_dir(target)
    copy_tree(package, "cuda", staged, tokens)
    swap_into_place(staged, target)
    if not flags.get("--toolkitpath") and not flags.get("--installpath"):
        replace_symlink(rooted("/usr/local/cuda"), "cuda-%s" % package["minor"])
    say(flags, "===========\n= Summary =\n===========\n\nDriver:   Not Selected\nToolkit:  Installed in %s\n"
               "(simulated CUDA %s)" % (target, package["version"]))
    return 0


def install_nccl(package, flags):  # type: (dict, dict) -> int
    target = rooted(flags.get("--install-path") or "/usr/local/nccl")
    if flags.get("--uninstall"):
        return uninstall(target, [], "NCCL", flags=flags)
    tokens = {"NCCL_HOME": target}
    staged = staging_dir(target)
    copy_tree(package, "nccl", staged, tokens)
    swap_into_place(staged, target)
    say(flags, "NCCL %s installed in %s (simulated)" % (package["version"], target))
    return 0


# ----- uninstall ----------------------------------------------------------------------------------------

def uninstall(target, extra, what, drop_prefix=None, flags=None):  # type: (str, list, str, object, object) -> int
    if not os.path.lexists(target):
        raise InstallError("[ERROR]%s is not installed at %s." % (what, target))
    for path in extra:
        if os.path.lexists(path):
            remove_path(path)
    remove_path(target)
    if drop_prefix and os.path.exists(rooted("/etc/ascend_install.info")):
        update_install_info({}, drop_prefix=drop_prefix)
    say(flags if isinstance(flags, dict) else {}, "%s package uninstalled successfully! (simulated)" % what)
    return 0


INSTALLERS = {
    "ascend_driver": install_ascend_driver,
    "ascend_firmware": install_ascend_firmware,
    "cann_toolkit": install_cann_toolkit,
    "cann_kernels": install_cann_kernels,
    "nnal": install_nnal,
    "nvidia_driver": install_nvidia_driver,
    "cuda": install_cuda,
    "nccl": install_nccl,
}


def main(argv):  # type: (list) -> int
    package = load_package()
    try:
        flags = parse_args(package["kind"], argv)
        if flags.get("--help"):
            sys.stdout.write(usage(package))
            return 0
        if flags.get("--version"):
            print("%s (simulated)" % package["version"])
            return 0
        return INSTALLERS[package["kind"]](package, flags)
    except InstallError as exc:
        sys.stderr.write(str(exc) + "\n")
        return exc.code
    except OSError as exc:
        sys.stderr.write("[ERROR]simulated installer: %s\n" % exc)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

