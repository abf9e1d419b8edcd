"""A fake accelerator and an NCCL-like process group for the collectives validator, on a CPU-only torch.

Why: NCCL and HCCL refuse a CPU tensor ("No backend type associated with device type cpu"), gloo takes it, and
CI has no GPU, so a collective that touches a CPU tensor passes every gloo test and fails on every GPU host. To
catch that class of bug the validator must run on a device that is *not* the CPU, over a backend that, like
NCCL, accepts only that device:

- ``fakeaccel``: torch's PrivateUse1 device set up as a Python backend
  (``torch.utils.backend_registration._setup_privateuseone_for_python_backend``), so ``torch.accelerator``
  reports it and the validator takes its accelerator path (``set_device``, ``device_id``, device events,
  ``torch.get_device_module(kind)``) exactly as on ``cuda`` or ``npu``. Its tensors are wrapper tensors whose
  ``device`` is ``fakeaccel:N`` and whose data is a CPU tensor; every op runs on that data, and, as on a real
  device, an op that mixes a ``fakeaccel`` tensor with a CPU tensor (other than a 0-dim scalar) raises.
- ``refusing``: registered with ``torch.distributed.Backend.register_backend(..., devices=["fakeaccel"])``. A
  Python process group (torch has no Python constructor for a per-device ``Backend``) that refuses any tensor
  not on ``fakeaccel`` with NCCL's own message, and runs the rest over a real gloo group on the same store, so
  results are real sums and gathers between real processes.

Limit: ``torch.tensor(data, device="fakeaccel")`` trips an internal assert of torch 2.13's Python PrivateUse1
path (the copy into the new tensor never reaches Python); ``torch.full``/``torch.zeros``/``.to(device)`` work, and
the validator uses them.

Loaded into every python of a test run by ``sitecustomize.py`` beside it (the test puts this folder first on
``PYTHONPATH``), so the ranks that ``torch.multiprocessing`` spawns and that torchrun starts load it too and the
validator runs unmodified. ``ACCELSTACK_FAKE_DEVICES`` sets the device count (default 2);
``ACCELSTACK_FAKE_CORRUPT="allreduce:1,allgather:0"`` makes those ranks' results of those collectives
wrong by one (a bad device). ``ACCELSTACK_FAKE_ERROR=oom|busy`` makes the first use of a device (``set_device``, a
tensor made on it) raise what CUDA raises when another process holds it: ``CUDA error: out of memory`` (the H200
beside a job) or ``CUDA-capable device(s) is/are busy or unavailable`` (an exclusive compute mode).
"""

from __future__ import annotations

import os
import time
from typing import Any

import torch
import torch.distributed as dist
import torch.utils.backend_registration as registration
from torch._C._distributed_c10d import _create_work_from_future
from torch.utils._pytree import tree_map

NAME = "fakeaccel"
BACKEND = "refusing"


class FakeEvent:
    """``torch.cuda.Event``'s surface: record, synchronize, elapsed_time in milliseconds. The fake device runs
    every op synchronously, so the host clock at record time is the device time."""

    def __init__(self, enable_timing: bool = False) -> None:
        self.enable_timing = enable_timing
        self.at: float | None = None

    def record(self, stream: Any = None) -> None:
        self.at = time.perf_counter()

    def synchronize(self) -> None:
        pass

    def elapsed_time(self, end: FakeEvent) -> float:
        if not (self.enable_timing and end.enable_timing) or self.at is None or end.at is None:
            raise RuntimeError("Both events must be recorded with enable_timing=True before elapsed_time")
        return (end.at - self.at) * 1e3


class FakeDeviceModule:
    """What ``torch.get_device_module("fakeaccel")`` answers (the subset torch.cuda and torch.npu share)."""

    Event = FakeEvent

    def __init__(self) -> None:
        self.current = 0

    def is_available(self) -> bool:
        return True

    def is_initialized(self) -> bool:
        return True

    def _is_in_bad_fork(self) -> bool:
        return False

    def device_count(self) -> int:
        return int(os.environ.get("ACCELSTACK_FAKE_DEVICES", "2"))

    def current_device(self) -> int:
        return self.current

    def set_device(self, device: Any) -> None:
        _device_error()
        index = device.index if isinstance(device, torch.device) else device
        self.current = int(index or 0)

    def synchronize(self, device: Any = None) -> None:
        pass

    def manual_seed_all(self, seed: int) -> None:
        pass


MODULE = FakeDeviceModule()
# CUDA's own words (torch.AcceleratorError's message, as the H200 capture and the CUDA runtime's error strings
# give them).
DEVICE_ERRORS = {"oom": "CUDA error: out of memory",
                 "busy": "CUDA error: CUDA-capable device(s) is/are busy or unavailable"}


def _device_error() -> None:
    kind = os.environ.get("ACCELSTACK_FAKE_ERROR", "")
    if kind in DEVICE_ERRORS:
        raise RuntimeError(DEVICE_ERRORS[kind] + "\nCompile with `TORCH_USE_CUDA_DSA` to enable device-side "
                           "assertions.\n")


def _is_fake_device(value: Any) -> bool:
    return value is not None and torch.device(value).type == NAME


class FakeTensor(torch.Tensor):
    """A tensor on ``fakeaccel:N`` whose data is the CPU tensor ``elem``."""

    elem: torch.Tensor

    @staticmethod
    def __new__(cls, elem: torch.Tensor) -> FakeTensor:
        fake = torch.Tensor._make_wrapper_subclass(  # type: ignore[attr-defined]
            cls, elem.size(), strides=elem.stride(), dtype=elem.dtype, device=torch.device(NAME, MODULE.current))
        fake.elem = elem
        return fake

    @classmethod
    def __torch_dispatch__(cls, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        flat = [a for a in list(args) + list(kwargs.values())]
        plain = [a for a in flat if isinstance(a, torch.Tensor) and not isinstance(a, FakeTensor) and a.dim() > 0]
        if plain and func.__name__.split(".")[0] not in ("copy_", "_to_copy", "_copy_from"):
            raise RuntimeError(f"Expected all tensors to be on the same device, but found at least two devices, "
                               f"{NAME}:{MODULE.current} and cpu! ({func})")
        moved = kwargs.get("device")

        def unwrap(value: Any) -> Any:
            return value.elem if isinstance(value, FakeTensor) else value

        call_kwargs = {k: (torch.device("cpu") if k == "device" and _is_fake_device(v) else unwrap(v))
                       for k, v in kwargs.items()}
        out = func(*tree_map(unwrap, args), **call_kwargs)
        stays = moved is None or _is_fake_device(moved)

        def rewrap(value: Any) -> Any:
            if not isinstance(value, torch.Tensor) or isinstance(value, FakeTensor) or not stays:
                return value
            for arg in args:  # an in-place op returns its own argument
                if isinstance(arg, FakeTensor) and arg.elem is value:
                    return arg
            return FakeTensor(value)

        return tree_map(rewrap, out)


def _factory_on_fake_device(op: Any, *args: Any, **kwargs: Any) -> Any:
    """PrivateUse1 fallback: an op with no tensor input (``torch.full(..., device="fakeaccel")``) runs on the
    CPU and its result is moved onto the fake device."""
    _device_error()
    kwargs = dict(kwargs)
    kwargs["device"] = torch.device("cpu")
    return tree_map(lambda v: FakeTensor(v) if isinstance(v, torch.Tensor) else v, op(*args, **kwargs))


def _device_data(tensors: list[torch.Tensor]) -> list[torch.Tensor]:
    for tensor in tensors:
        if tensor.device.type != NAME:
            # NCCL's words (ProcessGroup::getBackend), so the test sees what an H100 host saw.
            raise RuntimeError(f"No backend type associated with device type {tensor.device.type}")
    return [t.elem for t in tensors]  # type: ignore[attr-defined]


def _finished(work: Any, result: Any) -> Any:
    work.wait()
    future: torch.futures.Future[Any] = torch.futures.Future()
    future.set_result(result)
    return _create_work_from_future(future)


class RefusingProcessGroup(dist.ProcessGroup):
    """NCCL's contract on the fake device: tensors on ``fakeaccel`` only; the data moves over gloo."""

    def __init__(self, store: Any, rank: int, size: int, timeout: Any) -> None:
        super().__init__(rank, size)
        # "allreduce:1,allgather:0": the collectives whose results this rank gets wrong
        spec = [item.split(":") for item in os.environ.get("ACCELSTACK_FAKE_CORRUPT", "").split(",") if item]
        self.corrupt = {op for op, bad_rank in spec if bad_rank == str(rank)}
        self.gloo = dist.ProcessGroupGloo(store, rank, size, timeout)
        # init_process_group(device_id=fakeaccel:N) asks the group for its backend on that device type.
        self._register_backend(torch.device(NAME), dist.ProcessGroup.BackendType.CUSTOM, self.gloo)

    def getBackendName(self) -> str:
        return BACKEND

    def _spoil(self, op: str, data: list[torch.Tensor]) -> None:
        if op in self.corrupt:
            for item in data:
                # The data (float buffers), not a one-element timing value or the int flags: ranks stay in step
                # and the wrong values are reported, as a device that computes wrong sums would be.
                if item.is_floating_point() and item.numel() > 1:
                    item.add_(1)

    def allreduce(self, tensors: list[torch.Tensor], opts: Any) -> Any:
        data = _device_data(tensors)
        work = self.gloo.allreduce(data, opts)
        work.wait()
        self._spoil("allreduce", data)
        return _finished(work, tensors)

    def allgather(self, outputs: list[list[torch.Tensor]], inputs: list[torch.Tensor], opts: Any) -> Any:
        data = [_device_data(o) for o in outputs]
        work = self.gloo.allgather(data, _device_data(inputs), opts)
        work.wait()
        for parts in data:
            self._spoil("allgather", parts)
        return _finished(work, outputs)

    def _allgather_base(self, output: torch.Tensor, input: torch.Tensor, opts: Any) -> Any:
        out, = _device_data([output])
        inp, = _device_data([input])
        work = self.gloo._allgather_base(out, inp, opts)
        work.wait()
        self._spoil("allgather", [out])
        return _finished(work, output)

    def all_gather_single(self, output: torch.Tensor, input: torch.Tensor, opts: Any) -> Any:
        return self._allgather_base(output, input, opts)

    def barrier(self, opts: Any) -> Any:
        return _finished(self.gloo.barrier(opts), None)


def _create(store: Any, rank: int, size: int, timeout: Any) -> RefusingProcessGroup:
    return RefusingProcessGroup(store, rank, size, timeout)


_LIBRARY: Any = None


def install() -> None:
    global _LIBRARY
    if _LIBRARY is not None:
        return
    registration._setup_privateuseone_for_python_backend(NAME, backend_module=MODULE)  # type: ignore[attr-defined]
    _LIBRARY = torch.library.Library("_", "IMPL")
    _LIBRARY.fallback(_factory_on_fake_device, dispatch_key="PrivateUse1")
    dist.Backend.register_backend(BACKEND, _create, devices=[NAME])
