"""Thin: the task collection lives in the package, so `inv --list` works in a checkout."""

from accelstack.tasks import ns  # noqa: F401
