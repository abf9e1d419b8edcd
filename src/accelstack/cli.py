"""The ``accelstack`` console script: an invoke Program over the same collection as ``inv`` in a checkout."""

from __future__ import annotations

import sys

from invoke import Program

from . import __version__
from .paths import project_root
from .tasks import ns
from .tasks.diagnose import spread_positional_logs


class AccelstackProgram(Program):
    """Reads the project's ``invoke.yaml`` (beside ``tasks.py``) as ``inv`` in the checkout does.

    invoke loads a project configuration file only for a collection it found on disk; a Program given its
    namespace reads none, so ``accelstack.forks`` in the checkout's invoke.yaml would hold for ``inv`` alone.
    """

    def parse_collection(self) -> None:
        super().parse_collection()
        self.config.set_project_location(str(project_root()))
        self.config.load_project()


program = AccelstackProgram(namespace=ns, version=__version__, name="accelstack", binary="accelstack")


def main() -> None:
    # invoke has no variadic positionals (pyinvoke/invoke#378): `accelstack diagnose a.log b.log` is rewritten to
    # repeated --log flags here. Under plain `inv`, pass `-l a.log -l b.log`.
    program.run(argv=spread_positional_logs(sys.argv))
