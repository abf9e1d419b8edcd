"""A person's view of one host's facts: a rich table, one row per subject, values a person reads at a glance."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..vendors import vendors
from .model import Facts

if TYPE_CHECKING:
    from rich.table import Table


def _gib(value: int | None, unit: int) -> str:
    return "-" if value is None else f"{value * unit / 2**30:.1f} GiB"


def facts_rows(facts: Facts) -> list[tuple[str, str]]:
    rows = [
        ("host", f"{facts.hostname or '-'}: {facts.os_name or '?'} {facts.os_version or ''}".strip()),
        ("kernel", f"{facts.kernel or '-'} {facts.arch or ''}".strip()),
        ("cpu / memory", f"{facts.cpus or '?'} CPUs, {_gib(facts.mem_total_kib, 1024)}, "
                         f"NUMA nodes {','.join(map(str, facts.numa_nodes)) or '-'}"),
        ("python", f"{facts.python_version or '-'} (probe); stack {facts.stack_python or '-'} "
                   f"{facts.stack_python_version or ''}".strip()),
    ]
    nics = []
    for nic in facts.interfaces:
        if nic.name == "lo":
            continue
        inet = ",".join(f"{a.address}/{a.prefixlen}" for a in nic.addresses if a.family == "inet")
        nics.append(f"{nic.name} {'up' if nic.up else 'down'} mtu {nic.mtu} {inet}".rstrip())
    rows.append(("interfaces", "\n".join(nics) or "-"))
    accels = [f"{d.vendor} {d.device_id or ''} {d.bus_id} numa {d.numa_node if d.numa_node is not None else '-'}"
              for d in facts.accelerators]
    rows.append(("accelerators (PCI)", "\n".join(accels) or "none"))
    memlock = "unlimited" if facts.memlock is None and facts.memlock_known else (
        "-" if facts.memlock is None else f"{facts.memlock // 1024} KiB")
    rows.append(("/dev/shm, memlock", f"{_gib(facts.shm_bytes, 1)}, {memlock}"))
    rows.append(("disk free", ", ".join(f"{p} {_gib(v, 1)}" for p, v in facts.disk_free.items()) or "-"))
    for vendor in vendors():  # each vendor's section, as the vendor shows it
        section = facts.section(vendor.name)
        if section is not None:
            rows.extend(vendor.facts_rows(section))
    if facts.torch:
        t = facts.torch
        build = f"CUDA {t.cuda}" if t.cuda else "no CUDA"
        nccl = f", loads NCCL {t.nccl} ({t.nccl_library or t.nccl_from})" if t.nccl else ""
        rows.append(("torch", f"{t.version or '-'} ({build})" + (f", torch_npu {t.torch_npu}" if t.torch_npu else "")
                     + nccl))
    else:
        rows.append(("torch", "not installed in the stack python"))
    if facts.missing_tools:
        rows.append(("not installed", ", ".join(facts.missing_tools)))
    if facts.probe_errors:
        rows.append(("probe notes", "\n".join(facts.probe_errors)))
    return rows


def facts_table(name: str, facts: Facts) -> Table:
    from rich.table import Table  # only a person's view draws tables: --json never imports rich

    table = Table(title=name, show_header=False, title_justify="left")
    table.add_column("subject", style="bold")
    table.add_column("value", overflow="fold")
    for subject, value in facts_rows(facts):
        table.add_row(subject, value)
    return table
