"""``bench/gpu_node_check.py`` renders its node file from a stack that pins what the GPU node has, so a healthy node
is all green (the shipped stack's venv is not on the lent image: ``libraries`` was an error, ``versions`` judged the
image against pins it never had). Checked here on the real H200's capture (tests/data/h200/)."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest
import yaml

from accelstack.errors import StackError
from accelstack.flows.bundle.run import bundle_facts
from accelstack.stacks import drift_records, load_matrix, load_stack, preflight_stack

from .helpers import REPO, load_bench

H200 = REPO / "tests" / "data" / "h200"
# What bench/gpu_node_check.py reads on that host (READ_TORCH, nvidia-smi, /usr/local/cuda/version.json), as its
# capture shows it: tests/data/h200/README.md, bundle/ and dev-real.yml.
H200_TORCH = {"python": "3.12.3", "executable": "/opt/torch/.venv/bin/python3", "prefix": "/opt/torch/.venv",
              "torch": "2.11.0+cu130", "torch_cuda": "13.0", "nccl": [2, 28, 9], "cuda_available": True,
              "devices": 1}


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return load_bench("gpu_node_check")


def write_stack(bench: ModuleType, folder: Path, found: dict, **kwargs: object) -> Path:
    path = folder / f"{bench.STACK_NAME}.yml"
    path.write_text(bench.installed_stack(found, **{"driver": "580.159.04", "cuda": "13.0.88", "sku": "H200",
                                                    **kwargs}))
    return path


def test_the_installed_stack_pins_what_the_h200_has_and_judges_it_all_green(bench: ModuleType,
                                                                            tmp_path: Path) -> None:
    stack = load_stack(write_stack(bench, tmp_path, H200_TORCH))
    preflight_stack(stack)  # no rule broken: node-check would not stop at exit 3
    real = load_stack(H200 / "dev-real.yml", check_name=False)
    assert {k: (p.version, p.match) for k, p in stack.pins.items()} == \
        {k: (p.version, p.match) for k, p in real.pins.items()}
    assert stack.paths["venv"] == "/opt/torch/.venv" and stack.paths["python"] == "/opt/torch/.venv/bin/python3"
    assert stack.devices == ["H200"] and stack.vendor == "nvidia"
    facts = bundle_facts(H200 / "bundle")
    records = drift_records("h200", stack, facts.components(), load_matrix())
    assert {r.check for r in records} == {f"drift.{k}" for k in stack.pins}
    assert {r.check: r.status for r in records} == {r.check: "pass" for r in records}, \
        [(r.check, r.status, r.summary) for r in records if r.status != "pass"]


def test_nothing_is_pinned_that_was_not_found(bench: ModuleType, tmp_path: Path) -> None:
    # A CPU build of torch has no CUDA and loads no NCCL: the stack leaves both out and is refused, naming them,
    # rather than pinning something made up.
    cpu_torch = {**H200_TORCH, "torch": "2.13.0+cpu", "torch_cuda": None, "nccl": None}
    text = bench.installed_stack(cpu_torch, driver="580.159.04", cuda=None, sku="H200")
    assert set(yaml.safe_load(text)["components"]) == {"python", "torch", "nvidia_driver"}
    with pytest.raises(StackError, match="torch_cuda|nccl|cuda"):
        load_stack(write_stack(bench, tmp_path, cpu_torch, cuda=None))


@pytest.mark.parametrize(("reported", "text"), [((2, 28, 9), "2.28.9"), ([2, 21, 5], "2.21.5"), (22809, "2.28.9"),
                                                (2708, "2.7.8"), (None, None), (0, None)])
def test_torch_nccl_version_is_read_in_both_shapes(bench: ModuleType, reported: object, text: str | None) -> None:
    assert bench.nccl_text(reported) == text


def test_the_cuda_toolkit_version_falls_back_to_nvcc_as_the_facts_probe_does(bench: ModuleType, tmp_path: Path) -> None:
    """The lent H200 image has no /usr/local/cuda/version.json: the stack pinned no cuda and the run stopped with
    "a nvidia stack must pin: cuda". Its nvcc's own output gives 13.0.88, as the facts probe reads it."""
    nvcc = tmp_path / "nvcc"
    captured = REPO / "tests" / "data" / "h200" / "bundle" / "commands" / "usr_local_cuda_bin_nvcc_--version.txt"
    nvcc.write_text(f"#!/bin/sh\ncat {captured}\n")
    nvcc.chmod(0o755)
    assert bench.cuda_toolkit_version(tmp_path / "no-version.json", nvcc) == "13.0.88"
    assert bench.cuda_toolkit_version(tmp_path / "no-version.json", tmp_path / "no-nvcc") is None
