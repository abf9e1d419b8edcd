"""What a command line runs without invoke: the task boundary (an exit code, and the one line that says why) and
node-check's command. ``tasks.common.boundary`` wraps every invoke task with :func:`exit_code_of`; the console
script runs a plain ``accelstack node-check ...`` line through :func:`node_check_command` without loading invoke,
fabric or paramiko (``accelstack.cli``), so Slurm's HealthCheckProgram does not pay for them at every start.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from ..errors import EXIT_INTERRUPTED, EXIT_OK, AccelstackError
from .stdout import guard_stdout

guard_stdout()  # a reader that leaves (`| head`) ends no run and prints no traceback


def exit_code_of(call: Callable[..., Any], *args: Any, **kwargs: Any) -> int:
    """Run a task's call and give the process's exit code: its integer result (0 otherwise), or, for an
    :class:`AccelstackError`, the error's code with its one line on stderr; Ctrl-C is 130 and says the finished
    records are kept."""
    try:
        code = call(*args, **kwargs)
    except AccelstackError as err:
        print(f"accelstack: {err}", file=sys.stderr)
        return err.exit_code
    except KeyboardInterrupt:
        print("accelstack: interrupted; finished records are in the run folder", file=sys.stderr)
        return EXIT_INTERRUPTED
    return code if isinstance(code, int) else EXIT_OK


def node_check_command(*, tier: str = "health", only: str | None = None, json: bool = False, drain: bool = False,
                       config: str | None = None, node: str | None = None) -> int:
    """``node-check``'s flags to its run (:func:`accelstack.flows.nodecheck.run.node_check`), and a drain said on stderr.
    The parameters are the invoke task's (a test holds them together)."""
    from ..flows.nodecheck.run import node_check

    result = node_check(tier=tier, only=only, json_lines=json, drain=drain, config=config, node=node)
    outcome = result.drain
    if outcome is not None:
        if outcome.ok:
            print(f"accelstack: drained {outcome.host}: {outcome.reason}", file=sys.stderr)
        else:
            print(f"accelstack: could not drain {outcome.host} ({outcome.output}); reason was: {outcome.reason}",
                  file=sys.stderr)
    return result.code
