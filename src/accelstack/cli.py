"""The ``accelstack`` console script: an invoke Program over the same collection as ``inv`` in a checkout.

Run from a checkout, it loads the checkout's ``tasks.py`` as ``inv`` does, for the task modules the checkout adds
to the product's (the lab's: ``lab.*``, ``repo.build``), so both programs stay one (:func:`checkout_task_modules`);
an installed wheel has none of them.

A plain ``accelstack node-check ...`` line (what Slurm's HealthCheckProgram runs on every node every few minutes)
is the one exception: it runs the node-check task's own call at the task's boundary without loading invoke
(:func:`_direct_node_check`), with the same records, output and exit codes; anything else on such a line goes
through invoke as ``inv node-check`` would."""

from __future__ import annotations

import gc
import importlib.util
import os
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .tasks.program import AccelstackProgram

_program: AccelstackProgram | None = None


def __getattr__(name: str) -> Any:
    # ``program`` over the whole collection, for callers that run it in-process (tests); main() builds its own.
    global _program
    if name == "program":
        if _program is None:
            from .tasks import build_collection
            from .tasks.program import program_for

            _program = program_for(build_collection(extra=checkout_task_modules()))
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


# The name the checkout's tasks.py is loaded under: not ``tasks``, which would shadow nothing today but could.
CHECKOUT_TASKS_MODULE = "accelstack_checkout_tasks"


def checkout_task_modules() -> dict[str, tuple[str, ...]]:
    """The task modules the checkout this package runs from adds to the product's (its ``tasks.py``'s
    ``EXTRA_TASK_MODULES``: the lab's), as :func:`accelstack.tasks.build_collection` takes them; none when the
    package runs from an install. ``tasks.py`` only names them here: nothing is imported until a task is wanted."""
    from .paths import checkout

    root = checkout()
    if root is None:
        return {}
    module = sys.modules.get(CHECKOUT_TASKS_MODULE)
    if module is None:
        spec = importlib.util.spec_from_file_location(CHECKOUT_TASKS_MODULE, root / "tasks.py")
        if spec is None or spec.loader is None:
            return {}
        module = importlib.util.module_from_spec(spec)
        sys.modules[CHECKOUT_TASKS_MODULE] = module
        spec.loader.exec_module(module)
    return dict(getattr(module, "EXTRA_TASK_MODULES", {}))


def _first_task(args: Sequence[str], extra: Mapping[str, tuple[str, ...]] | None = None) -> str | None:
    """The task a command line runs: its first bare word that names one. ``facts --limit diagnose`` runs facts
    (the word "diagnose" there is a pattern, and spreading it into --log flags made facts refuse its own line)."""
    from .tasks import task_names

    names = set(task_names(extra))
    return next((word for word in args[1:] if not word.startswith("-") and word.split(".", 1)[0] in names), None)


def main(argv: Sequence[str] | None = None) -> None:
    args = list(sys.argv if argv is None else argv)
    direct = _direct_node_check(args)
    if direct is not None:
        # node-check runs on every node every few minutes (Slurm's HealthCheckProgram): a plain node-check line is
        # run here without invoke, fabric or paramiko (a tenth of a CPU-second or more of every run), with the
        # task's boundary; help, anything unusual on the line and any invoke configuration go through invoke.
        from .tasks.direct import exit_code_of, node_check_command

        raise SystemExit(exit_code_of(node_check_command, **direct))

    from .tasks import build_collection, modules_for
    from .tasks.program import program_for

    extra = checkout_task_modules()
    if _first_task(args, extra) == "diagnose":  # the diagnose task module (and rich with it) is imported only when named
        from .tasks.diagnose import spread_positional_logs

        # invoke has no variadic positionals (pyinvoke/invoke#378): `accelstack diagnose a.log b.log` is rewritten
        # to repeated --log flags here. Under plain `inv`, pass `-l a.log -l b.log`.
        args = spread_positional_logs(args)
    # Only the task modules this command line names are imported (all of them for --list or bare help).
    program = program_for(build_collection(modules_for(args, extra), extra))
    # What start-up made (modules, classes, the task collection) lives as long as the process: out of the
    # garbage collector's sight, its full collections during a large fan-out stop re-walking all of it.
    gc.freeze()
    program.run(argv=args)


# Where invoke looks for configuration (its Config: system, user and project files, a runtime file, INVOKE_*
# variables). Where any is present, node-check goes through invoke, which reads and checks it (exit 3 for a broken
# one) as `inv node-check` does; without any, invoke would read nothing that node-check uses.
_INVOKE_FILE_SUFFIXES = (".yaml", ".yml", ".json", ".py")


def _invoke_configured(environ: Mapping[str, str]) -> bool:
    from .paths import project_root

    if any(name.startswith("INVOKE_") for name in environ):
        return True
    stems = ["/etc/invoke", os.path.expanduser("~/.invoke"), str(project_root() / "invoke")]
    return any(os.path.exists(stem + suffix) for stem in stems for suffix in _INVOKE_FILE_SUFFIXES)


def _direct_node_check(args: Sequence[str], environ: Mapping[str, str] | None = None
                       ) -> dict[str, Any] | None:
    """The flags of a plain ``accelstack node-check [--flag VALUE | --flag=VALUE | --switch]...`` line, as the
    node-check task's parameters, or None for any other line: another task, a core flag, help, a flag node-check
    does not have, a flag given twice or a value that is empty or begins with ``-`` (invoke then parses it, and
    says what is wrong as `inv` would), or when invoke has configuration to read (:func:`_invoke_configured`)."""
    if len(args) < 2 or args[1] != "node-check":
        return None
    from .flows.nodecheck.run import NODE_CHECK_FLAGS  # node-check's own modules, only for a node-check line

    values: dict[str, Any] = {}
    words = list(args[2:])
    while words:
        word = words.pop(0)
        if not word.startswith("--"):
            return None
        name, eq, value = word[2:].partition("=")
        if name not in NODE_CHECK_FLAGS or name in values:
            return None
        if not NODE_CHECK_FLAGS[name]:
            if eq:
                return None
            values[name] = True
            continue
        if not eq:
            if not words:
                return None
            value = words.pop(0)
        if not value or value.startswith("-"):
            return None
        values[name] = value
    if _invoke_configured(os.environ if environ is None else environ):
        return None
    return values
