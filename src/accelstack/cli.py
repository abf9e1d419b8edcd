"""The ``accelstack`` console script: an invoke Program over the same collection as ``inv`` in a checkout."""

from __future__ import annotations

import sys

from invoke import Program

from . import __version__
from .tasks import ns
from .tasks.diagnose import spread_positional_logs

program = Program(namespace=ns, version=__version__, name="accelstack", binary="accelstack")


def main() -> None:
    # invoke has no variadic positionals (pyinvoke/invoke#378): `accelstack diagnose a.log b.log` is rewritten to
    # repeated --log flags here. Under plain `inv`, pass `-l a.log -l b.log`.
    program.run(argv=spread_positional_logs(sys.argv))
