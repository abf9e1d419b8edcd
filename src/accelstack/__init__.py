"""accelstack: pinned software stacks and proof-of-training for Ascend NPU and NVIDIA GPU fleets."""

__version__ = "0.1.0"
