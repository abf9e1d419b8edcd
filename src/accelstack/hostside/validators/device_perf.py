#!/usr/bin/env python3
# Declared in accelstack/validate/checks/device_perf.py (tier, python, timeout, config keys, judge, help).
"""Device performance, per device, measured with torch (what DCGM diag r3's memory_bandwidth and targeted stress,
and the NHC suites' GEMM and H2D/D2H checks, prove):

- ``perf.matmul``: bf16 dense matmul TFLOP/s (n x n by n x n, 2 n^3 flops each);
- ``perf.copy``: device-memory copy TB/s, read + write (2 x bytes per copy), as plain torch measures it;
- ``perf.h2d`` / ``perf.d2h``: host-to-device and device-to-host GB/s from pinned memory;
- ``perf.pcie``: the PCIe link's generation and width against its maximum, read from sysfs (and from the vendor's
  tool where it reads the link: nvidia-smi sees the device side of a passed-through GPU) while host-to-device copies
  are in flight: GPUs drop their link generation when idle, so an idle reading below the maximum is only a
  warning, a loaded one a fail.

Timing as the plain-torch reference does: warm-up first, then the device's events (``Event(enable_timing=True)``
from ``torch.get_device_module(kind)``) around N iterations; wall clock around a synchronize where a device module
has no timing events. Floors per SKU come in the config (``device_rows`` from the vendor's floors.yml): below a floor
fails, within ``device_margin`` above it warns, no floor is reported and not judged. The cpu stack: skip.
The vendor's part (its torch plugin and device type, its tool's link read, who holds a device) comes from its
host-side module (``vendors/<vendor>/hostside.py``). Python 3.6 syntax; stdlib plus torch.
"""

import importlib
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # _common.py lies beside this script
from _common import main_entry, pick_row, record, vendor_module
from _holders import held, held_after, read_devices, skip_evidence, skip_summary, visible_indices

DEFAULTS = {"perf_matmul_n": 8192, "perf_copy_mb": 1024, "perf_transfer_mb": 256, "perf_iters": 20,
            "perf_warmup": 3, "perf_link_load_iters": 100}
PCIE_GT = ((64.0, 6), (32.0, 5), (16.0, 4), (8.0, 3), (5.0, 2), (2.5, 1))
SYSFS_PCI = "/sys/bus/pci/devices"
PERF_CHECKS = ("perf.matmul", "perf.copy", "perf.h2d", "perf.d2h", "perf.pcie")
PERF_REMEDY = ("re-run once the host is idle (nvidia-smi / npu-smi lists no process); if it stays low: check "
               "clocks and throttling (inv validate --only health), cooling and power, then RMA the device")


# ----- pure -----

def pcie_gen(speed):
    """sysfs ``current_link_speed`` (``"32.0 GT/s PCIe"``, ``"16.0 GT/s"``, ``"2.5 GT/s"``) -> PCIe generation;
    ``None`` for ``Unknown`` and the unparsable."""
    match = re.match(r"^\s*(\d+(?:\.\d+)?)\s*GT/s", speed or "")
    if not match:
        return None
    rate = float(match.group(1))
    for gt, gen in PCIE_GT:
        if abs(rate - gt) < 0.01:
            return gen
    return None


def _int(text):
    match = re.match(r"^\s*(\d+)", text or "")
    return int(match.group(1)) if match else None


def parse_sysfs_link(values):
    """{current_link_speed, max_link_speed, current_link_width, max_link_width} (file contents) -> link dict."""
    return {"current_gen": pcie_gen(values.get("current_link_speed")),
            "max_gen": pcie_gen(values.get("max_link_speed")),
            "current_width": _int(values.get("current_link_width")),
            "max_width": _int(values.get("max_link_width"))}


def judge_floor(check, values, floor, margin, unit, what, sku=None, estimate=False):
    """One record for a per-device figure: ``values`` {device: number, or an error string}. The slowest device
    is judged: below ``floor`` fails, within ``margin`` above it warns; no floor passes unjudged, saying so."""
    errors = dict((d, v) for d, v in values.items() if isinstance(v, str))
    figures = dict((d, v) for d, v in values.items() if not isinstance(v, str))
    metrics = {"per_device": dict((d, round(v, 3)) for d, v in figures.items()), "floor": floor, "unit": unit}
    if figures:
        metrics["min"] = round(min(figures.values()), 3)
    if not figures:
        return record(check, "error", "%s not measured: %s" % (what, "; ".join(
            "%s: %s" % (d, e) for d, e in sorted(errors.items()))[:400]), metrics)
    shown = ", ".join("%s %.3g" % (d, v) for d, v in sorted(figures.items()))
    summary = "%s %s (%s)" % (what, shown, unit)
    if errors:
        return record(check, "error", summary + "; not measured on " + "; ".join(
            "%s: %s" % (d, e) for d, e in sorted(errors.items()))[:300], metrics)
    if floor is None:
        why = "no floor for %s in its vendor's floors.yml" % sku if sku else "unknown SKU: no per-SKU row matched"
        return record(check, "pass", "%s; not judged: %s" % (summary, why), metrics)
    basis = " (an estimate)" if estimate else ""
    worst_device = min(figures, key=figures.get)
    low = figures[worst_device]
    if low < floor:
        return record(check, "fail", "%s; %s below the %g %s floor for %s%s" % (summary, worst_device, floor, unit,
                                                                              sku, basis), metrics, remedy=PERF_REMEDY)
    if low < floor * (1 + margin):
        return record(check, "warn", "%s; %s within %d%% of the %g %s floor for %s%s" % (
            summary, worst_device, round(margin * 100), floor, unit, sku, basis), metrics, remedy=PERF_REMEDY)
    return record(check, "pass", "%s; above the %g %s floor for %s%s" % (summary, floor, unit, sku, basis), metrics)


def judge_link(links, row):
    """``links`` {device: link dict with ``under_load`` and ``source``, or an error string}. Width below its
    maximum fails; generation below its maximum fails under load and warns when the reading was not under load
    (an idle GPU drops its link generation to save power); a link whose maximum is below the SKU's warns (the
    slot or the host's root port limits it)."""
    problems, readings = [], {}
    for device in sorted(links):
        link = links[device]
        if isinstance(link, str):
            problems.append(("error", "%s: %s" % (device, link)))
            continue
        readings[device] = "Gen%s x%s of Gen%s x%s" % (link.get("current_gen"), link.get("current_width"),
                                                         link.get("max_gen"), link.get("max_width"))
        cur_w, max_w, cur_g, max_g = (link.get("current_width"), link.get("max_width"), link.get("current_gen"),
                                      link.get("max_gen"))
        if None in (cur_w, max_w, cur_g, max_g):
            problems.append(("error", "%s: link state unreadable (%s)" % (device, readings[device])))
            continue
        if cur_w < max_w:
            problems.append(("fail", "%s: link trained at x%d of x%d" % (device, cur_w, max_w)))
        if cur_g < max_g:
            if link.get("under_load"):
                problems.append(("fail", "%s: link at Gen%d of Gen%d under load" % (device, cur_g, max_g)))
            else:
                problems.append(("warn", "%s: link at Gen%d of Gen%d, read while idle (GPUs downclock the link "
                                         "at idle): re-run under load" % (device, cur_g, max_g)))
        if row and row.get("pcie_gen") and max_g < int(row["pcie_gen"]):
            problems.append(("warn", "%s: the link tops out at Gen%d; %s is Gen%d (slot or root port)" % (
                device, max_g, row.get("sku"), int(row["pcie_gen"]))))
        if row and row.get("pcie_width") and max_w < int(row["pcie_width"]):
            problems.append(("warn", "%s: the link tops out at x%d; %s is x%d (slot)" % (
                device, max_w, row.get("sku"), int(row["pcie_width"]))))
    metrics = {"links": readings}
    if not problems:
        return record("perf.pcie", "pass", "PCIe links at their maximum under load: %s" % "; ".join(
            "%s %s" % (d, r) for d, r in sorted(readings.items())), metrics)
    order = ["pass", "warn", "error", "fail"]
    status = max((s for s, _ in problems), key=order.index)
    texts = [t for s, t in problems if s == status] + [t for s, t in problems if s != status]
    return record("perf.pcie", status, "; ".join(texts[:6]), metrics,
                  remedy=None if status == "error" else "reseat the device or its riser, check the slot's BIOS "
                  "link settings (Gen / bifurcation) and the AER counters in dmesg; a link that stays below its "
                  "maximum under load halves host transfers")


# ----- measuring (torch) -----

def device_module(torch, kind):
    getter = getattr(torch, "get_device_module", None)
    return getter(kind) if getter is not None else getattr(torch, kind)


def timed(mod, kind, fn, iters, warmup, during=None):
    """Seconds for ``iters`` calls of ``fn`` after ``warmup`` untimed ones, with the device's timing events (wall
    clock around a synchronize where the module has none, as the cpu module); ``during()`` runs while the timed
    work is still queued on the device, and its result comes back too."""
    for _ in range(warmup):
        fn()
    mod.synchronize()
    event = getattr(mod, "Event", None)
    if kind != "cpu" and event is not None:
        start, end = event(enable_timing=True), event(enable_timing=True)
        start.record()
        for _ in range(iters):
            fn()
        end.record()
        seen = during() if during else None
        end.synchronize()
        return start.elapsed_time(end) / 1000.0, seen
    began = time.perf_counter()
    for _ in range(iters):
        fn()
    seen = during() if during else None
    mod.synchronize()
    return time.perf_counter() - began, seen


def measure_matmul(torch, mod, kind, device, n, iters, warmup):
    a = torch.randn(n, n, dtype=torch.bfloat16, device=device)
    b = torch.randn(n, n, dtype=torch.bfloat16, device=device)
    out = torch.empty(n, n, dtype=torch.bfloat16, device=device)
    seconds, _ = timed(mod, kind, lambda: torch.mm(a, b, out=out), iters, warmup)
    return 2.0 * n ** 3 * iters / seconds / 1e12


def measure_copy(torch, mod, kind, device, nbytes, iters, warmup):
    src = torch.empty(nbytes, dtype=torch.uint8, device=device)
    dst = torch.empty_like(src)
    seconds, _ = timed(mod, kind, lambda: dst.copy_(src), iters, warmup)
    return 2.0 * nbytes * iters / seconds / 1e12  # read + write, as the plain-torch reference counts it


def measure_transfers(torch, mod, kind, device, nbytes, iters, warmup, link_iters=0, read_link=None):
    """(h2d GB/s, d2h GB/s, link read while host-to-device copies were in flight)."""
    pin = kind != "cpu"
    host = torch.empty(nbytes, dtype=torch.uint8, pin_memory=pin)
    dev = torch.empty(nbytes, dtype=torch.uint8, device=device)
    h2d_s, _ = timed(mod, kind, lambda: dev.copy_(host, non_blocking=True), iters, warmup)
    d2h_s, _ = timed(mod, kind, lambda: host.copy_(dev, non_blocking=True), iters, warmup)
    link = None
    if read_link is not None:
        _, link = timed(mod, kind, lambda: dev.copy_(host, non_blocking=True), max(1, link_iters), 0, read_link)
    return nbytes * iters / h2d_s / 1e9, nbytes * iters / d2h_s / 1e9, link


def pci_address(mod, index):
    props = mod.get_device_properties(index)
    domain, bus, dev = (getattr(props, "pci_domain_id", None), getattr(props, "pci_bus_id", None),
                        getattr(props, "pci_device_id", None))
    if None in (domain, bus, dev):
        return None
    return "%04x:%02x:%02x.0" % (domain, bus, dev)


def read_sysfs_link(address, base=None):
    base = base or os.environ.get("ACCELSTACK_SIM_ROOT", "").rstrip("/") + SYSFS_PCI
    values = {}
    for name in ("current_link_speed", "max_link_speed", "current_link_width", "max_link_width"):
        try:
            with open(os.path.join(base, address, name)) as handle:
                values[name] = handle.read().strip()
        except (IOError, OSError):
            values[name] = None
    return parse_sysfs_link(values)


def link_reader(vendor, address):
    """A function reading the link now: the vendor's tool where it reads one (nvidia-smi for a GPU: the device side;
    sysfs in a VM shows the emulated port), sysfs otherwise or where the tool does not answer."""
    module = vendor_module(vendor)

    def read():
        link = module.pcie_link(address)
        source = module.TOOL
        if link is None or None in link.values():
            link, source = read_sysfs_link(address), "sysfs"
        link["under_load"], link["source"], link["address"] = True, source, address
        return link
    return read


def main(config):
    vendor = config.get("vendor") or "cpu"
    module = vendor_module(vendor)
    if not module.HAS_DEVICES:
        return [record("perf", "skip", "%s stack: no device to measure" % module.NAME)]
    settings = dict(DEFAULTS)
    settings.update(dict((k, config[k]) for k in DEFAULTS if config.get(k) is not None))
    # Before torch opens a device: a device another process holds (a job beside this check) is left alone.
    devices, _tool_error = read_devices(vendor)
    visible = visible_indices(vendor, len(devices or []))  # the devices torch will number 0..n-1
    found = held(vendor, visible, devices=devices)
    if found:
        return [record("perf", "skip", skip_summary("every perf figure", found), evidence=skip_evidence(found))]
    try:
        import torch
        if module.TORCH_PLUGIN:
            importlib.import_module(module.TORCH_PLUGIN)  # registers the vendor's device type (torch_npu: npu)
    except Exception as exc:  # a broken install raises more than ImportError
        return [record("perf", "error", "torch does not import in the stack's python: %s: %s"
                       % (type(exc).__name__, exc), remedy="inv provision --limit <host> installs the stack's pins")]
    # ``device_kind`` (default from the vendor) lets the tests drive this loop on torch's cpu device.
    kind = config.get("device_kind") or module.TORCH_DEVICE
    mod = device_module(torch, kind)
    count = mod.device_count() if mod.is_available() else 0
    if not count:
        return [record("perf", "error", "torch sees no %s device: nothing to measure (see the devices check)" % kind)]
    deadline = time.monotonic() + float(config.get("deadline_s") or 280)
    results = dict((c, {}) for c in PERF_CHECKS)
    names = []
    for index in range(count):
        label = "%s:%d" % (kind, index)
        names.append(str(mod.get_device_name(index)))
        if time.monotonic() > deadline:
            for check in PERF_CHECKS:
                results[check][label] = "out of time (deadline_s)"
            continue
        mod.set_device(index)
        device = torch.device(kind, index)
        iters, warmup = int(settings["perf_iters"]), int(settings["perf_warmup"])
        steps = (("perf.matmul", measure_matmul, int(settings["perf_matmul_n"])),
                 ("perf.copy", measure_copy, int(settings["perf_copy_mb"]) << 20))
        for check, measure, size in steps:
            try:
                results[check][label] = measure(torch, mod, kind, device, size, iters, warmup)
            except Exception as exc:  # OOM (memory held by another job), a kernel failure: this device, this figure
                results[check][label] = "%s: %s" % (type(exc).__name__, str(exc).splitlines()[0][:160] if str(exc) else "")
        address = pci_address(mod, index)
        reader = link_reader(vendor, address) if address else None
        try:
            h2d, d2h, link = measure_transfers(torch, mod, kind, device, int(settings["perf_transfer_mb"]) << 20,
                                               int(settings["perf_iters"]), int(settings["perf_warmup"]),
                                               int(settings["perf_link_load_iters"]), reader)
            results["perf.h2d"][label], results["perf.d2h"][label] = h2d, d2h
            results["perf.pcie"][label] = link if link is not None else "no PCI address from torch for this device"
        except Exception as exc:
            message = "%s: %s" % (type(exc).__name__, str(exc).splitlines()[0][:160] if str(exc) else "")
            for check in ("perf.h2d", "perf.d2h", "perf.pcie"):
                results[check][label] = message
        empty = getattr(mod, "empty_cache", None)
        if empty is not None:
            empty()
    failures = "\n".join(v for figures in results.values() for v in figures.values() if isinstance(v, str))
    found = held_after(vendor, failures, visible, devices=devices) if failures else None
    if found:
        return [record("perf", "skip", skip_summary("every perf figure", found), evidence=skip_evidence(found))]
    row = pick_row(config.get("device_rows"), names, config.get("accelerator") or "")
    margin = float(config.get("device_margin") or 0.10)
    sku = row.get("sku") if row else None
    estimate = bool(row and row.get("estimate"))

    def floor(key):
        return row.get(key) if row else None
    checks = [
        judge_floor("perf.matmul", results["perf.matmul"], floor("min_matmul_bf16_tflops"), margin, "TFLOP/s",
                    "bf16 %d^3 matmul" % int(settings["perf_matmul_n"]), sku, estimate),
        judge_floor("perf.copy", results["perf.copy"], floor("min_copy_tbps"), margin, "TB/s",
                    "device copy read+write", sku, estimate),
        judge_floor("perf.h2d", results["perf.h2d"], floor("min_h2d_gbps"), margin, "GB/s",
                    "host-to-device (pinned)", sku),
        judge_floor("perf.d2h", results["perf.d2h"], floor("min_d2h_gbps"), margin, "GB/s",
                    "device-to-host (pinned)", sku),
    ]
    pcie = results["perf.pcie"]
    if pcie and all(v == "no PCI address from torch for this device" for v in pcie.values()):
        checks.append(record("perf.pcie", "skip", "torch gives no PCI address for %s devices: link state not read "
                             "(the figures of perf.h2d still judge the link)" % kind))
    else:
        checks.append(judge_link(pcie, row))
    for check in checks:
        check["evidence"]["devices"] = names
        check["evidence"]["sku"] = sku
    return checks


if __name__ == "__main__":
    main_entry("perf", main)
