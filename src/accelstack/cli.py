"""The ``accelstack`` console script: an invoke Program over the same collection as ``inv`` in a checkout."""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Sequence
from typing import Any

from invoke import Collection, Program

from . import __version__
from .paths import project_root


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


_program: AccelstackProgram | None = None


def __getattr__(name: str) -> Any:
    # ``program`` over the whole collection, for callers that run it in-process (tests); main() builds its own.
    global _program
    if name == "program":
        if _program is None:
            from .tasks import ns

            _program = program_for(ns)
        return _program
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def entry() -> None:
    """The console script and ``python -m accelstack``: :func:`main`, then a quick exit.

    By then everything a run keeps is on disk (records are flushed as they arrive and the run writer has synced
    and closed its files; reports are written and closed), so the interpreter's own teardown is skipped: a
    garbage collection over every object the run made and every module's namespace, 0.3 to 0.4 s of CPU after
    facts on 256 hosts, and a wait for any fan-out worker still stuck in a connect past its deadline (the run
    reported it already). ``main`` itself keeps raising ``SystemExit``, for callers that run it in-process.
    """
    try:
        main()
        code: object = 0
    except SystemExit as exc:
        code = exc.code
    if code is not None and not isinstance(code, int):
        print(code, file=sys.stderr)  # as SystemExit("message") prints it
        code = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass  # a closed pipe (`| head`): nothing more can reach it
    os._exit(code or 0)


def _first_task(args: Sequence[str]) -> str | None:
    """The task a command line runs: its first bare word that names one. ``facts --limit diagnose`` runs facts
    (the word "diagnose" there is a pattern, and spreading it into --log flags made facts refuse its own line)."""
    from .tasks import TASK_MODULES

    names = {name for names in TASK_MODULES.values() for name in names}
    return next((word for word in args[1:] if not word.startswith("-") and word.split(".", 1)[0] in names), None)


def main(argv: Sequence[str] | None = None) -> None:
    from .tasks import build_collection, modules_for

    args = list(sys.argv if argv is None else argv)
    if _first_task(args) == "diagnose":  # the diagnose task module (and rich with it) is imported only when named
        from .tasks.diagnose import spread_positional_logs

        # invoke has no variadic positionals (pyinvoke/invoke#378): `accelstack diagnose a.log b.log` is rewritten
        # to repeated --log flags here. Under plain `inv`, pass `-l a.log -l b.log`.
        args = spread_positional_logs(args)
    # Only the task modules this command line names are imported (all of them for --list or bare help).
    program = program_for(build_collection(modules_for(args)))
    # What start-up made (modules, classes, the task collection) lives as long as the process: out of the
    # garbage collector's sight, its full collections during a large fan-out stop re-walking all of it.
    gc.freeze()
    program.run(argv=args)
