"""Makes ``import torch`` (and ``torch_npu``) fail in every python started with this folder on ``PYTHONPATH``, and
writes each attempt to ``$ACCELSTACK_TORCH_IMPORT_LOG``: the health tier must run with no torch at all.

Finding a package is left alone (``importlib.util.find_spec`` still locates torch, as the facts probe's stack snippet
does to read its version files without importing it); executing it is what is refused."""

import importlib.abc
import importlib.machinery
import os
import sys

REFUSED = ("torch", "torch_npu")


class _Refuse(importlib.abc.Loader):
    def __init__(self, name: str) -> None:
        self.name = name

    def create_module(self, spec):  # type: ignore[no-untyped-def]
        return None

    def exec_module(self, module):  # type: ignore[no-untyped-def]
        log = os.environ.get("ACCELSTACK_TORCH_IMPORT_LOG")
        if log:
            with open(log, "a") as handle:
                handle.write("%d %s imported %s\n" % (os.getpid(), " ".join(sys.argv)[:300], self.name))
        raise ImportError("%s imported where no torch may be (tests/no_torch)" % self.name, name=self.name)


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):  # type: ignore[no-untyped-def]
        if name.split(".")[0] not in REFUSED:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is not None:
            spec.loader = _Refuse(name)
        return spec


sys.meta_path.insert(0, _Finder())
