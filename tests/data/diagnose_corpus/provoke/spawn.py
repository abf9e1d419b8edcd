"""Start two ranks with torch.multiprocessing.spawn, the entry point a closure (provoke.sh case spawn-closure)."""

from __future__ import annotations

import torch.multiprocessing as mp


def main() -> None:
    lr = 3e-4

    def worker(rank: int) -> None:
        print(f"[rank{rank}] training with lr {lr}", flush=True)

    mp.spawn(worker, nprocs=2)


if __name__ == "__main__":
    main()
