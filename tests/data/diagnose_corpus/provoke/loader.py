"""A DataLoader with two workers that hand back large batches through /dev/shm (provoke.sh case shm-small)."""

from __future__ import annotations

import os

import torch
from torch.utils.data import DataLoader, Dataset


class Frames(Dataset):
    def __len__(self) -> int:
        return 64

    def __getitem__(self, index: int) -> torch.Tensor:
        return torch.randn(3, 224, 224)


if __name__ == "__main__":
    loader = DataLoader(Frames(), batch_size=16, num_workers=int(os.environ.get("LOADER_WORKERS", "2")))
    for step, batch in enumerate(loader):
        print(f"step {step} batch {tuple(batch.shape)} mean {batch.mean():.4f}", flush=True)
    print("epoch done")
