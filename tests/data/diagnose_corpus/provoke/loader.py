"""A DataLoader whose workers hand batches back through shared memory (provoke.sh cases shm-small, loader-*).

LOADER_MODE picks what each item is: ``frames`` (one 3x224x224 image), ``fields`` (48 small tensors per item, so
every batch passes 48 file descriptors under the ``file_descriptor`` sharing strategy) or ``decode`` (a worker
that decodes a video clip into 768 MiB of frames before it crops one).
"""

from __future__ import annotations

import os

import torch
import torch.multiprocessing
from torch.utils.data import DataLoader, Dataset

MODE = os.environ.get("LOADER_MODE", "frames")


class Frames(Dataset):
    def __len__(self) -> int:
        return 64

    def __getitem__(self, index: int) -> object:
        if MODE == "fields":
            return [torch.full((16,), float(index)) for _ in range(48)]
        if MODE == "decode":
            clip = torch.ones(192, 1024, 1024)  # 768 MiB of decoded frames
            return clip[0, :224, :224].clone()
        return torch.randn(3, 224, 224)


if __name__ == "__main__":
    if MODE == "fields":
        torch.multiprocessing.set_sharing_strategy("file_descriptor")
    loader = DataLoader(Frames(), batch_size=16, num_workers=int(os.environ.get("LOADER_WORKERS", "2")))
    for step, batch in enumerate(loader):
        first = batch[0] if isinstance(batch, list) else batch
        print(f"step {step} batch {tuple(first.shape)} mean {first.mean():.4f}", flush=True)
    print("epoch done")
