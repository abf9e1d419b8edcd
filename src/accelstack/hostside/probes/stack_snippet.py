# accelstack facts probe, stack part: runs under the stack's python (the one torch lives in) and prints one JSON
# object: that python's version, torch and torch_npu as installed, and the NCCL library torch loads.
#
# Python 3.6 syntax, stdlib only. It must not import torch (seconds per host, and it may crash on a broken
# driver): find_spec locates a top-level package without executing it. The shell probe (facts_probe.sh) runs it
# as `PYTHON -c <this file>` only when that python exists, under the probe's time limit.
import json
import os
import sys

out = {"python": "%d.%d.%d" % sys.version_info[:3], "executable": sys.executable, "packages": {}}  # type: dict
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
