# accelstack facts probe: runs on the managed host with its own python3 and prints ONE JSON document.
#
# Contract (parsed control-side by accelstack.facts.parse_probe_output):
#   {"probe": 1, "options": {...},
#    "sections": {NAME: {"cmd", "rc", "out", "err"[, "missing", "tool", "timeout"]}},
#    "files": {PATH: TEXT | null}, "errors": [TEXT, ...]}
#
# Rules this file keeps, and why:
# - stdlib only and Python 3.6 syntax: Ascend hosts run EulerOS/openEuler/Kylin with old pythons, and the probe
#   must work before we have installed anything. So: no f-strings, no walrus, no dataclasses, no
#   subprocess.run(capture_output=/text=).
# - raw text only: vendor output is interpreted on the control side, where parsers are tested on captures and
#   can be fixed without touching hundreds of hosts.
# - a missing tool is data, a hung tool is data (npu-smi can hang on a wedged device): every command has a
#   timeout, runs in its own process group so the whole group can be killed, and nothing here may raise.
# The control side's lint rules assume Python 3.10 and code that may fail loudly; this script targets 3.6 and
# must swallow every error into its JSON document, so blind excepts and %-formatting are deliberate here.
import glob
import json
import os
import signal
import socket
import subprocess
import sys

PROBE_VERSION = 1
MAX_FILE_BYTES = 256 * 1024
MAX_OUT_CHARS = 256 * 1024

DEFAULT_OPTIONS = {  # type: dict
    "python": "python3",
    "ascend_root": "/usr/local/Ascend",
    "disk_paths": ["/"],
    "timeout": 10.0,
}

# Where vendor tools live when they are not on a non-login SSH session's PATH.
EXTRA_TOOL_DIRS = ["/usr/local/bin", "/usr/local/sbin", "/usr/sbin", "/sbin", "/usr/bin", "/bin",
                   "/usr/local/cuda/bin", "/usr/local/nvidia/bin"]

NCCL_LIB_DIRS = ["/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib",
                 "/usr/local/lib", "/usr/local/cuda/lib64", "/usr/local/nccl/lib", "/opt/nccl/lib"]
NCCL_HEADERS = ["/usr/include/nccl.h", "/usr/local/cuda/include/nccl.h", "/usr/local/include/nccl.h",
                "/usr/local/nccl/include/nccl.h"]

PCI_VENDORS = ("0x10de", "0x19e5")

NVIDIA_QUERY = ("index,name,uuid,pci.bus_id,driver_version,memory.total,memory.used,"
                "temperature.gpu,utilization.gpu")

# Runs under the stack python. It must not import torch (seconds per host, and it may crash on a broken
# driver); find_spec locates a top-level package without executing it.
STACK_SNIPPET = r'''
import json, os, sys
out = {"python": "%d.%d.%d" % sys.version_info[:3], "executable": sys.executable, "packages": {}}
def dist_info(name):
    try:
        from importlib import metadata
        d = metadata.distribution(name)
        return d.version, str(d.locate_file(""))
    except Exception:
        pass
    try:
        import pkg_resources
        d = pkg_resources.get_distribution(name)
        return d.version, d.location
    except Exception:
        return None, None
def package_dir(name):
    try:
        import importlib.util
        spec = importlib.util.find_spec(name)
    except Exception:
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return list(spec.submodule_search_locations)[0]
for name in ("torch", "torch_npu"):
    version, location = dist_info(name)
    pdir = package_dir(name)
    text = None
    if pdir:
        try:
            with open(os.path.join(pdir, "version.py")) as f:
                text = f.read(65536)
        except Exception:
            text = None
    if version is None and pdir is None:
        out["packages"][name] = None
        continue
    out["packages"][name] = {"version": version, "location": location, "package_dir": pdir,
                             "version_py": text}
def embedded_nccl_version(path, limit=1 << 30):
    # libnccl carries "NCCL version 2.28.9+cuda13.0" (what it logs at init); read in chunks, stop at the first.
    marker = b"NCCL version "
    try:
        with open(path, "rb") as f:
            tail, seen = b"", 0
            while seen < limit:
                chunk = f.read(8 << 20)
                data = tail + chunk
                at = data.find(marker)
                if at >= 0 and (len(data) - at > 64 or not chunk):
                    text = data[at + len(marker):at + len(marker) + 40].split(b"\0")[0]
                    return text.decode("ascii", "replace").split()[0] if text.strip() else None
                if not chunk:
                    return None
                seen += len(chunk)
                tail = data[-128:]
    except Exception:
        return None
    return None
def torch_nccl():
    # The NCCL torch loads: the nvidia-nccl wheel's library, found the way torch finds it (RPATH to its own
    # site-packages' nvidia/nccl/lib, then sys.path), else a libnccl bundled in torch/lib; never the system one.
    import glob
    torch = out["packages"].get("torch") or {}
    pdir = torch.get("package_dir")
    roots = ([os.path.dirname(pdir)] if pdir else []) + [p for p in sys.path if p]
    libraries = []
    for root in roots:
        for pattern in ("nvidia/nccl/lib/libnccl.so*", "nvidia/cu*/lib/libnccl.so*"):
            for path in sorted(glob.glob(os.path.join(root, pattern))):
                if path not in libraries:
                    libraries.append(path)
    if pdir:
        libraries.extend(sorted(glob.glob(os.path.join(pdir, "lib", "libnccl.so*"))))
    wheels = {}
    for name in ("nvidia-nccl-cu13", "nvidia-nccl-cu12", "nvidia-nccl-cu11", "nvidia-nccl"):
        version, _location = dist_info(name)
        if version:
            wheels[name] = version
    embedded = None
    if libraries and not wheels:
        embedded = embedded_nccl_version(os.path.realpath(libraries[0]))
    return {"libraries": libraries, "wheels": wheels, "embedded": embedded}
if out["packages"].get("torch"):
    out["nccl"] = torch_nccl()
print(json.dumps(out))
'''


def _text(data):
    if data is None:
        return ""
    if isinstance(data, bytes):
        data = data.decode("utf-8", "replace")
    if len(data) > MAX_OUT_CHARS:
        data = data[:MAX_OUT_CHARS]
    return data


def find_tool(name, extra_dirs=None):
    path_dirs = os.environ.get("PATH", "").split(os.pathsep)
    for d in path_dirs + list(extra_dirs or []):
        if not d:
            continue
        candidate = os.path.join(d, name)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


def run_command(argv, timeout):
    """Run argv (no shell) and return a section dict; never raises."""
    section = {"cmd": " ".join(argv), "rc": None, "out": "", "err": ""}  # type: dict
    try:
        # C locale: parsers are written against English tool output.
        env = dict(os.environ, LC_ALL="C", LANG="C")
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=True, env=env)
    except OSError as exc:
        section["err"] = str(exc)
        section["missing"] = True
        section["tool"] = argv[0]
        return section
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        # Kill the whole group: a wrapper script's children would otherwise keep our pipes open.
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except Exception:
            pass
        try:
            out, err = proc.communicate(timeout=2)
        except Exception:
            out, err = b"", b""
        section["timeout"] = True
        section["out"] = _text(out)
        section["err"] = _text(err) + ("\ntimed out after %ss" % timeout)
        return section
    except Exception as exc:
        section["err"] = "probe error: %r" % (exc,)
        return section
    section["rc"] = proc.returncode
    section["out"] = _text(out)
    section["err"] = _text(err)
    return section


def run_tool(name, args, timeout, extra_dirs=None):
    path = find_tool(name, EXTRA_TOOL_DIRS + list(extra_dirs or []))
    if path is None:
        return {"cmd": " ".join([name] + list(args)), "rc": None, "out": "", "err": "", "missing": True,
                "tool": name}
    return run_command([path] + list(args), timeout)


def native(cmd, func):
    """A section computed in this python (no child process); its out is text, JSON where structured."""
    section = {"cmd": cmd, "rc": None, "out": "", "err": "", "native": True}  # type: dict
    try:
        value = func()
        section["out"] = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
        section["rc"] = 0
    except Exception as exc:
        section["err"] = "%s: %s" % (type(exc).__name__, exc)
    return section


def read_file(path):
    try:
        with open(path, "rb") as f:
            return _text(f.read(MAX_FILE_BYTES))
    except Exception:
        return None


def read_sys(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except Exception:
        return None


def uname_info():
    u = os.uname()
    return {"sysname": u[0], "nodename": u[1], "release": u[2], "version": u[3], "machine": u[4]}


def numa_nodes():
    names = [os.path.basename(p) for p in glob.glob("/sys/devices/system/node/node[0-9]*")]
    return sorted(names, key=lambda n: int(n[4:]) if n[4:].isdigit() else 0)


def pci_accelerators():
    found = []
    for dev in sorted(glob.glob("/sys/bus/pci/devices/*")):
        vendor = read_sys(os.path.join(dev, "vendor"))
        if vendor is None or vendor.lower() not in PCI_VENDORS:
            continue
        found.append({
            "slot": os.path.basename(dev),
            "vendor": vendor,
            "device": read_sys(os.path.join(dev, "device")),
            "class": read_sys(os.path.join(dev, "class")),
            "numa_node": read_sys(os.path.join(dev, "numa_node")),
        })
    return found


def shm_info():
    st = os.statvfs("/dev/shm")
    return {"total": st.f_frsize * st.f_blocks, "free": st.f_frsize * st.f_bavail}


def memlock_limit():
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_MEMLOCK)

    def show(v):
        return "unlimited" if v == resource.RLIM_INFINITY else v
    return {"soft": show(soft), "hard": show(hard)}


def disk_free(paths):
    result = {}  # type: dict
    for p in paths:
        try:
            st = os.statvfs(p)
            result[p] = st.f_frsize * st.f_bavail
        except Exception:
            result[p] = None
    return result


SIOCGIFADDR = 0x8915
SIOCGIFNETMASK = 0x891b


def _ifreq_ipv4(name, request):
    import fcntl
    import struct
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        packed = fcntl.ioctl(sock.fileno(), request, struct.pack("256s", name[:15].encode()))
        return socket.inet_ntoa(packed[20:24])
    except Exception:
        return None  # no IPv4 address on it (EADDRNOTAVAIL), or no such ioctl here
    finally:
        sock.close()


def sys_class_net():
    """Interfaces without iproute2: name, operstate, mtu and flags from /sys/class/net, IPv4 from ioctls."""
    found = []
    base = "/sys/class/net"
    for name in sorted(os.listdir(base)):
        found.append({
            "name": name,
            "operstate": read_sys(os.path.join(base, name, "operstate")),
            "mtu": read_sys(os.path.join(base, name, "mtu")),
            "flags": read_sys(os.path.join(base, name, "flags")),
            "ipv4": _ifreq_ipv4(name, SIOCGIFADDR),
            "netmask": _ifreq_ipv4(name, SIOCGIFNETMASK),
        })
    return found


def nccl_libraries():
    found = []
    for d in NCCL_LIB_DIRS:
        found.extend(glob.glob(os.path.join(d, "libnccl.so*")))
    return sorted(set(found))


def ascend_files(root, machine):
    """Version files of the Ascend stack: both the CANN <= 8.3 (ascend-toolkit) and 8.5+ (cann) layouts."""
    fixed = [
        "/etc/ascend_install.info",
        os.path.join(root, "driver", "version.info"),
        os.path.join(root, "firmware", "version.info"),
        os.path.join(root, "ascend-toolkit", "latest", "version.cfg"),
        os.path.join(root, "ascend-toolkit", "latest", machine + "-linux", "ascend_toolkit_install.info"),
        os.path.join(root, "ascend-toolkit", "latest", "runtime", "version.info"),
        os.path.join(root, "ascend-toolkit", "latest", "opp_kernel", "version.info"),
        os.path.join(root, "cann", "version.cfg"),
        os.path.join(root, "cann", machine + "-linux", "ascend_toolkit_install.info"),
        os.path.join(root, "cann", machine + "-linux", "ascend_ops_install.info"),
        os.path.join(root, "nnal", "atb", "latest", "version.info"),
    ]
    # Globs catch an arch directory that differs from uname (containers) and versioned nnal folders.
    patterns = [
        os.path.join(root, "ascend-toolkit", "latest", "*-linux", "ascend_*_install.info"),
        os.path.join(root, "cann", "*-linux", "ascend_*_install.info"),
        os.path.join(root, "nnal", "atb", "*", "version.info"),
    ]
    paths = list(fixed)
    for pattern in patterns:
        for p in sorted(glob.glob(pattern)):
            if p not in paths:
                paths.append(p)
    return paths


def load_options(argv):
    options = dict(DEFAULT_OPTIONS)
    errors = []
    if len(argv) > 1:
        try:
            given = json.loads(argv[1])
            if isinstance(given, dict):
                options.update(given)
            else:
                errors.append("options: expected a JSON object, got %s" % type(given).__name__)
        except Exception as exc:
            errors.append("options: not JSON: %s" % exc)
    try:
        options["timeout"] = float(options.get("timeout") or DEFAULT_OPTIONS["timeout"])
    except Exception:
        options["timeout"] = DEFAULT_OPTIONS["timeout"]
    if not isinstance(options.get("disk_paths"), list):
        options["disk_paths"] = list(DEFAULT_OPTIONS["disk_paths"])
    return options, errors


def read_host(options):
    timeout = options["timeout"]
    sections = {}
    files = {}
    machine = os.uname()[4]

    sections["hostname"] = native("socket.gethostname()", socket.gethostname)
    sections["uname"] = native("os.uname()", uname_info)
    sections["cpu_count"] = native("os.cpu_count()", lambda: str(os.cpu_count()))
    sections["numa_nodes"] = native("glob /sys/devices/system/node/node*", numa_nodes)
    sections["probe_python"] = native("sys.version_info", lambda: "%d.%d.%d" % tuple(sys.version_info[:3]))
    sections["pci"] = native("walk /sys/bus/pci/devices", pci_accelerators)
    sections["shm"] = native("os.statvfs('/dev/shm')", shm_info)
    sections["memlock"] = native("resource.getrlimit(RLIMIT_MEMLOCK)", memlock_limit)
    sections["disk_free"] = native("os.statvfs(disk_paths)", lambda: disk_free(options["disk_paths"]))

    for path in ("/etc/os-release", "/proc/meminfo"):
        files[path] = read_file(path)

    sections["ip_addr"] = run_tool("ip", ["-j", "addr"], timeout)
    ip_json = sections["ip_addr"]
    if not ip_json.get("missing") and (ip_json["rc"] != 0 or not ip_json["out"].lstrip().startswith("[")):
        # iproute2 older than 4.13 (CentOS 7, old EulerOS) has no -j.
        sections["ip_addr_text"] = run_tool("ip", ["-o", "addr"], timeout)
        sections["ip_link_text"] = run_tool("ip", ["-o", "link"], timeout)
    text_ok = sections.get("ip_addr_text", {}).get("rc") == 0
    if ip_json.get("missing") or (ip_json["rc"] != 0 and not text_ok):
        sections["net_sys"] = native("read /sys/class/net", sys_class_net)
        files["/proc/net/if_inet6"] = read_file("/proc/net/if_inet6")

    # NVIDIA
    files["/proc/driver/nvidia/version"] = read_file("/proc/driver/nvidia/version")
    sections["nvidia_smi"] = run_tool(
        "nvidia-smi", ["--query-gpu=" + NVIDIA_QUERY, "--format=csv,noheader,nounits"], timeout)
    for path in ("/usr/local/cuda/version.json", "/usr/local/cuda/version.txt"):
        files[path] = read_file(path)
    sections["nvcc"] = run_tool("nvcc", ["--version"], timeout)
    sections["nccl_libs"] = native("glob libnccl.so*", nccl_libraries)
    for path in NCCL_HEADERS:
        content = read_file(path)
        if content is not None:
            files[path] = content

    # Ascend
    root = str(options.get("ascend_root") or DEFAULT_OPTIONS["ascend_root"])
    for path in ascend_files(root, machine):
        files[path] = read_file(path)
    sections["npu_smi"] = run_tool("npu-smi", ["info"], timeout)

    # The stack's python: the one torch lives in, not necessarily this one.
    python = str(options.get("python") or "python3")
    # A cold site-packages on network storage can take a while to scan: allow more than a tool gets.
    stack_timeout = max(timeout, 20.0)
    if os.sep in python:
        sections["stack_python"] = run_command([python, "-c", STACK_SNIPPET], stack_timeout)
    else:
        sections["stack_python"] = run_tool(python, ["-c", STACK_SNIPPET], stack_timeout)
    sections["stack_python"]["cmd"] = python + " -c <stack snippet>"
    return sections, files


def main(argv):
    doc = {"probe": PROBE_VERSION, "options": {}, "sections": {}, "files": {}, "errors": []}  # type: dict
    try:
        options, errors = load_options(argv)
        doc["options"] = options
        doc["errors"].extend(errors)
        doc["sections"], doc["files"] = read_host(options)
    except BaseException as exc:  # the probe's contract: always one JSON document
        doc["errors"].append("probe failed: %s: %s" % (type(exc).__name__, exc))
    try:
        text = json.dumps(doc, sort_keys=True)
    except Exception as exc:
        text = json.dumps({"probe": PROBE_VERSION, "sections": {}, "files": {},
                           "errors": ["probe output not serialisable: %s" % exc]})
    sys.stdout.write(text + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    main(sys.argv)
