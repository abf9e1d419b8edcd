"""Inventory load time for big fleets: 20k and 100k hosts, racks of 16 as groups, in an Ansible INI file.

Each figure is the wall time of ``load_inventory`` plus ``select()`` of every host (what every task does
before it touches a host), best of ``--repeat``. Beside it, what a user would use instead: ansible-core's
``InventoryManager`` on the same file, when ansible-core is installed (it is not a dependency of accelstack;
the line says so when it is missing). Target: 100k hosts in under 5 s.

    python bench/inventory.py [--hosts 20000 100000] [--repeat 3]
    python bench/inventory.py --tiny      # one small round: the CI smoke test
"""

from __future__ import annotations

import argparse
import functools
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))

from accelstack.inventory import load_inventory  # noqa: E402

RACK = 16


def write_inventory(folder: Path, hosts: int) -> Path:
    """``[rackNNNN]`` groups of 16 hosts with an address each, all racks children of ``[npu]``, vars on it."""
    path = folder / f"fleet{hosts}.ini"
    lines: list[str] = []
    racks = (hosts + RACK - 1) // RACK
    for rack in range(racks):
        lines.append(f"[rack{rack:05d}]")
        for index in range(rack * RACK, min(hosts, (rack + 1) * RACK)):
            lines.append(f"node{index:06d} ansible_host=10.{index >> 16 & 255}.{index >> 8 & 255}.{index & 255}")
        lines.append("")
    lines.append("[npu:children]")
    lines.extend(f"rack{rack:05d}" for rack in range(racks))
    lines += ["", "[npu:vars]", "stack=cpu", "ansible_user=root", ""]
    path.write_text("\n".join(lines))
    return path


def best_of(repeat: int, func: Callable[[], int]) -> tuple[float, int]:
    best = float("inf")
    count = 0
    for _ in range(repeat):
        began = time.perf_counter()
        count = func()
        best = min(best, time.perf_counter() - began)
    return best, count


def accelstack_load(path: Path) -> int:
    return len(load_inventory(str(path)).select(None))


def ansible_load(path: Path) -> Callable[[], int] | None:
    try:
        from ansible.inventory.manager import InventoryManager  # type: ignore[import-not-found]
        from ansible.parsing.dataloader import DataLoader  # type: ignore[import-not-found]
    except ImportError:
        return None
    return lambda: len(InventoryManager(loader=DataLoader(), sources=[str(path)]).get_hosts())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hosts", type=int, nargs="+", default=[20000, 100000])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--tiny", action="store_true", help="one round on 200 hosts (smoke test, no target)")
    args = parser.parse_args()
    sizes, repeat = ([200], 1) if args.tiny else (args.hosts, args.repeat)

    print(f"{'hosts':>8}  {'accelstack':>11}  {'ansible-core InventoryManager':>30}")
    with tempfile.TemporaryDirectory(prefix="acs-inv-") as tmp:
        for size in sizes:
            path = write_inventory(Path(tmp), size)
            seconds, count = best_of(repeat, functools.partial(accelstack_load, path))
            if count != size:
                print(f"accelstack loaded {count} hosts of {size}", file=sys.stderr)
                return 1
            other = ansible_load(path)
            other_text = "not installed" if other is None else f"{best_of(repeat, other)[0]:.2f} s"
            print(f"{size:>8}  {seconds:>9.2f} s  {other_text:>30}", flush=True)
    if not args.tiny and 100000 in sizes:
        print("target: 100000 hosts load in under 5 s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
