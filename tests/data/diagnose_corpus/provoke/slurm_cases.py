"""Provoke real Slurm job ends on the lab's real Slurm (Debian's slurmctld/slurmd) and keep srun's console output.

    PYTHONPATH=src:. python tests/data/diagnose_corpus/provoke/slurm_cases.py OUTDIR   (root; the lab is in the checkout)

Brings up a two-host lab of its own (tag ``crp6``), Slurm over it, runs each case, and takes it all down again:
- time-limit: a training loop under ``srun --time=1`` that runs past its minute;
- node-failure: a two-node step whose second node loses its slurmd and every process of it (as a node that
  lost power), so the controller declares the node down and ends the job;
- healthy: a two-node step that trains a few steps and ends well;
- healthy-queued: a step that waits for resources behind another job ("queued and waiting"), then runs to the end;
- cancelled: a two-node training step that an operator cancels with ``scancel`` while it runs;
- bad-partition, bad-gres, too-much-memory: a training step whose request the controller refuses (a partition
  the cluster does not have, GPUs the lab's nodes do not declare, more memory than a node has).

    ... slurm_cases.py OUTDIR [CASE...]     (all cases when none is named)
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from accelstack_lab import Lab
from accelstack_lab.slurm import SlurmLab, _read_pid, _session_members

SHORT = ("for i in 1 2 3 4 5; do echo \"[$(hostname)] step $i loss 2.$((RANDOM % 1000)) lr 3.0e-04\"; sleep 1; done; "
         "echo \"[$(hostname)] training finished, checkpoint saved\"")
LOOP = ("i=0; while true; do i=$((i+1)); echo \"[$(hostname)] step $i loss 2.$((RANDOM % 1000)) "
        "lr 3.0e-04 tokens/s 1843.2\"; sleep 2; done")


def srun(slurm: SlurmLab, out: Path, *argv: str) -> subprocess.Popen[str]:
    """srun in the background, its stdout and stderr together into ``out`` (as a user pastes them)."""
    handle = out.open("w")
    return subprocess.Popen(["srun", *argv], env=slurm.env(), stdout=handle, stderr=subprocess.STDOUT, text=True,
                            stdin=subprocess.DEVNULL)


def main() -> None:
    out = Path(sys.argv[1])
    cases = sys.argv[2:] or ["time-limit", "node-failure", "healthy", "healthy-queued"]
    out.mkdir(parents=True, exist_ok=True)
    root = Path(tempfile.mkdtemp(prefix="corpus-slurm-"))
    (root / "inventories").mkdir()
    lab = Lab(root, tag="crp6", subnet="10.239")
    lab.down()
    lab.up(2)
    slurm = SlurmLab(lab)
    try:
        slurm.up(health_check=False)
        if "healthy" in cases:
            proc = srun(slurm, out / "slurm-healthy.log", "-N2", "--ntasks-per-node=1", "-J", "finetune", "bash", "-c",
                        SHORT)
            proc.wait(timeout=120)
            print("healthy exit", proc.returncode)
        if "healthy-queued" in cases:
            blocker = srun(slurm, out / "slurm-blocker.log", "-N2", "--exclusive", "-J", "eval", "sleep", "8")
            time.sleep(2)
            proc = srun(slurm, out / "slurm-healthy-queued.log", "-N2", "--exclusive", "-J", "finetune", "bash", "-c",
                        SHORT)
            proc.wait(timeout=120)
            blocker.wait(timeout=60)
            (out / "slurm-blocker.log").unlink()
            print("healthy-queued exit", proc.returncode)
        if "cancelled" in cases:
            proc = srun(slurm, out / "slurm-cancelled.log", "-N2", "--ntasks-per-node=1", "-J", "sft-13b",
                        "bash", "-c", LOOP)
            time.sleep(10)
            subprocess.run(["scancel", "--name", "sft-13b"], env=slurm.env(), check=True)
            proc.wait(timeout=120)
            print("cancelled exit", proc.returncode)
        refused = {"bad-partition": ["-p", "a100-80g"], "bad-gres": ["--gres=gpu:8"], "too-much-memory": ["--mem=900G"]}
        for case, request in refused.items():
            if case in cases:
                proc = srun(slurm, out / f"slurm-{case}.log", "-N1", *request, "-J", "sft-13b", "bash", "-c", SHORT)
                proc.wait(timeout=120)
                print(case, "exit", proc.returncode)
        if "time-limit" not in cases:
            return
        proc = srun(slurm, out / "slurm-time-limit.log", "--time=1", "-N1", "-J", "pretrain-7b", "bash", "-c", LOOP)
        proc.wait(timeout=300)
        print("time-limit exit", proc.returncode)
        if "node-failure" not in cases:
            return

        proc = srun(slurm, out / "slurm-node-failure.log", "-N2", "--ntasks-per-node=1", "-J", "pretrain-7b",
                    "bash", "-c", LOOP)
        time.sleep(15)
        slurmd = _read_pid(slurm.dir / "nodes" / "lab2" / "mypid")
        victims = [slurmd, *_session_members([slurmd])]
        for pid in victims:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            proc.wait(timeout=240)
        except subprocess.TimeoutExpired:
            proc.kill()
        print("node-failure exit", proc.returncode)
    finally:
        slurm.down()
        lab.down()


if __name__ == "__main__":
    main()
