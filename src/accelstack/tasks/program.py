"""The invoke ``Program`` behind the ``accelstack`` console script (``accelstack.cli``), over the task collection."""

from __future__ import annotations

from invoke import Collection, Program

from .. import __version__
from ..paths import project_root


class AccelstackProgram(Program):
    """Reads the project's ``invoke.yaml`` (beside ``tasks.py``) as ``inv`` in the checkout does.

    invoke loads a project configuration file only for a collection it found on disk; a Program given its
    namespace reads none, so ``accelstack.forks`` in the checkout's invoke.yaml would hold for ``inv`` alone.
    """

    def parse_collection(self) -> None:
        super().parse_collection()
        self.config.set_project_location(str(project_root()))
        self.config.load_project()


def program_for(namespace: Collection) -> AccelstackProgram:
    return AccelstackProgram(namespace=namespace, version=__version__, name="accelstack", binary="accelstack")
