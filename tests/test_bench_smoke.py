"""Every benchmark runs: one tiny round each (``--tiny``), so a bench cannot rot unnoticed.

No timing is asserted: a figure on a shared CI machine says nothing. A bench added to ``bench/`` is picked up
here and must offer ``--tiny`` (seconds, not minutes). Most tiny rounds need no root and no lab; the few whose
whole point is the lab (a lab's own isolation, Slurm at scale) bring one up, need root, and are ``root`` tests
(named in :data:`LAB_BENCHES`, since no fixture of the test can tell).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from .helpers import REPO

BENCHES = sorted(p for p in (REPO / "bench").glob("*.py") if not p.name.startswith("_"))
# The benches whose tiny round brings up a lab of its own (network namespaces, sshd, Slurm): ``root``.
LAB_BENCHES = {"isolate": "a lab's hosts, one link slowed", "slurm_scale": "a lab with Slurm"}


def test_there_are_benchmarks_to_smoke() -> None:
    assert {"fanout.py", "inventory.py", "provision.py", "slurm_scale.py"} <= {p.name for p in BENCHES}


def test_every_bench_named_as_a_lab_bench_exists() -> None:
    assert set(LAB_BENCHES) <= {p.stem for p in BENCHES}


@pytest.mark.slow  # a benchmark's whole tiny round
@pytest.mark.parametrize("bench", [pytest.param(p, marks=pytest.mark.root) if p.stem in LAB_BENCHES else p
                                   for p in BENCHES], ids=[p.stem for p in BENCHES])
def test_bench_runs_one_tiny_round(bench: Path, tmp_path: Path) -> None:
    path = os.pathsep.join(p for p in (str(REPO / "src"), os.environ.get("PYTHONPATH", "")) if p)
    proc = subprocess.run([sys.executable, str(bench), "--tiny"], cwd=REPO, capture_output=True, text=True,
                          timeout=300, env={**os.environ, "PYTHONPATH": path, "ACCELSTACK_RUNS": str(tmp_path)})
    assert proc.returncode == 0, f"{bench.name} --tiny exited {proc.returncode}:\n{proc.stdout[-2000:]}\n" \
                                 f"{proc.stderr[-3000:]}"
    assert proc.stdout.strip(), f"{bench.name} --tiny printed no figure"
    assert "Traceback" not in proc.stderr
