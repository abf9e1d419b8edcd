"""Declares ``hostside/validators/collectives.py``, one script with three uses (``config["mode"]``): communicator
init, single-node sweeps, and the multi-node torchrun worker."""

from ..judge import judge_multinode_bandwidth, judge_single_node_bandwidth
from . import Check

# What a collective confirms in a failed job's logs: the communicator comes up and a collective completes.
COLLECTIVE_CAUSES = ("collective-timeout", "connect-timeout", "hccl-api-error", "nccl-internal", "peer-exited",
                     "rdma")
RUN = ("vendor", "backend", "nproc", "collective_timeout_s")
SWEEP = (*RUN, "sizes", "iters")

CHECKS = (
    Check(("collective_init",), "quick", script="collectives.py", python="stack", timeout=180, mode="init",
          help="`init_process_group` with `device_id` on hccl/nccl/gloo as the stack says",
          config=RUN, confirms=COLLECTIVE_CAUSES),
    Check(("allreduce", "allgather"), "standard", script="collectives.py", python="stack", timeout=420,
          mode="sweep",
          help="single-node sweeps, algbw and busbw with nccl-tests' formulas (allreduce `2(n-1)/n`, allgather "
               "`(n-1)/n`)",
          config=(*SWEEP, "accelerator"), judge=judge_single_node_bandwidth, thresholds=("rows", "margin"),
          confirms=COLLECTIVE_CAUSES, rerun_below_floor=True),
    # Orchestrated by its runner (torchrun across the hosts over SSH; under --engine slurm, one Slurm step). Each
    # node's record is judged by `judge` against the multi-node allreduce rows; the isolation runs that follow a
    # failure (engines.ssh.cluster.bisect_members) are held to the same rows, per group size, inside the runner: they
    # are runs of a few hosts, not records, so no declaration can judge them.
    Check(("multinode",), "standard", script="collectives.py", python="stack", timeout=600, scope="cluster",
          mode="cluster",
          help="allreduce across hosts through torchrun over SSH, every rank's result checked, a deadline after "
               "which every remote process is killed, then bisection that names the node or link at fault (below)",
          config=(*SWEEP, "accelerator", "socket_ifnames"), judge=judge_multinode_bandwidth,
          thresholds=("rows", "margin"), runner="accelstack.engines.ssh.cluster:run_multinode", needs_peers=True,
          owns_join_errors=True),
)
