"""Declares ``hostside/validators/libraries.py``: the communication library's exported symbols."""

from . import Check

CHECKS = (
    Check(("libraries",), "health", script="libraries.py", python="system", timeout=60,
          help="the symbols torch_npu/torch need (`HcclCommInitRootInfoConfig`, ...) exported by the "
               "libhccl/libnccl the stack's environment loads; `error` when the stack is not installed where it "
               "says and only some other copy (a system libnccl) is found",
          config=("host", "stack", "env_file", "required_symbols", "library_dirs", "remedy"),
          confirms=("cann-mismatch",)),
)
