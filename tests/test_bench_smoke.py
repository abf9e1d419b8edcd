"""Every benchmark runs: one tiny round each (``--tiny``), so a bench cannot rot unnoticed.

No timing is asserted: a figure on a shared CI machine says nothing. A bench added to ``bench/`` is picked up
here and must offer ``--tiny`` (no root, no lab of its own, seconds not minutes).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import REPO

BENCHES = sorted(p for p in (REPO / "bench").glob("*.py") if not p.name.startswith("_"))


def test_there_are_benchmarks_to_smoke() -> None:
    assert {"fanout.py", "inventory.py", "provision.py", "slurm_scale.py"} <= {p.name for p in BENCHES}


@pytest.mark.parametrize("bench", BENCHES, ids=[p.stem for p in BENCHES])
def test_bench_runs_one_tiny_round(bench: Path, tmp_path: Path) -> None:
    path = os.pathsep.join(p for p in (str(REPO / "src"), os.environ.get("PYTHONPATH", "")) if p)
    proc = subprocess.run([sys.executable, str(bench), "--tiny"], cwd=REPO, capture_output=True, text=True,
                          timeout=300, env={**os.environ, "PYTHONPATH": path, "ACCELSTACK_RUNS": str(tmp_path)})
    assert proc.returncode == 0, f"{bench.name} --tiny exited {proc.returncode}:\n{proc.stdout[-2000:]}\n" \
                                 f"{proc.stderr[-3000:]}"
    assert proc.stdout.strip(), f"{bench.name} --tiny printed no figure"
    assert "Traceback" not in proc.stderr
