"""algbw and busbw as nccl-tests defines them (https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md).
Pure.

``algbw = S / t`` in GB/s (1e9 bytes); ``busbw = algbw x factor`` with n ranks: allreduce 2(n-1)/n; allgather,
reducescatter and alltoall (n-1)/n; broadcast and reduce 1. For allgather S is the gathered total. busbw is the
figure comparable with the hardware's bottleneck bandwidth whatever n is, so thresholds are busbw.

One rank has no bus: the factor is 0 (allreduce) or undefined, so :func:`busbw_gbps` answers ``None`` there and a
one-rank result carries algbw only (no busbw reaches a threshold, a report, a baseline or a metric).
"""

from __future__ import annotations

FACTORS = {
    "allreduce": lambda n: 2.0 * (n - 1) / n,
    "allgather": lambda n: (n - 1) / n,
    "reducescatter": lambda n: (n - 1) / n,
    "alltoall": lambda n: (n - 1) / n,
    "broadcast": lambda n: 1.0,
    "reduce": lambda n: 1.0,
}


def busbw_factor(collective: str, ranks: int) -> float:
    if collective not in FACTORS:
        raise ValueError(f"no busbw factor for {collective!r}; known: {', '.join(FACTORS)}")
    if ranks < 1:
        raise ValueError(f"ranks must be at least 1, not {ranks}")
    return FACTORS[collective](ranks)


def algbw_gbps(nbytes: int, seconds: float) -> float:
    if seconds <= 0:
        raise ValueError(f"time must be positive, not {seconds}")
    return nbytes / seconds / 1e9


def busbw_defined(ranks: int) -> bool:
    """Bus bandwidth needs at least two ranks to move data between."""
    return ranks >= 2


def busbw_gbps(collective: str, nbytes: int, seconds: float, ranks: int) -> float | None:
    """``None`` for one rank (see the module's note)."""
    algbw = algbw_gbps(nbytes, seconds)
    factor = busbw_factor(collective, ranks)
    return algbw * factor if busbw_defined(ranks) else None
