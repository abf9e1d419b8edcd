"""What every task shares: the error boundary and the common flags' help texts.

Tasks are thin: they parse flags, call the package, and turn its result into an exit code. This is the only
place that raises ``invoke.Exit``.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any, TypeVar

from invoke.exceptions import Exit

from ..errors import AccelstackError

F = TypeVar("F", bound=Callable[..., Any])

HELP_COMMON = {
    "inventory": "inventory name (inventories/NAME.yml) or path; Ansible INI/YAML read as they are "
                 "(default: local, this machine)",
    "limit": "host pattern: names, groups, globs, '!exclude', '&intersect', comma-separated",
    "json": "print JSON Lines records on stdout instead of tables",
    "forks": "hosts worked on at once (default 64)",
}


def boundary(func: F) -> F:
    """Run a task body; map its integer result or an AccelstackError to the process exit code."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            code = func(*args, **kwargs)
        except AccelstackError as err:
            print(f"accelstack: {err}", file=sys.stderr)
            raise Exit(code=err.exit_code) from None
        except KeyboardInterrupt:
            print("accelstack: interrupted; finished records are in the run folder", file=sys.stderr)
            raise Exit(code=130) from None
        if isinstance(code, int) and code != 0:
            raise Exit(code=code)
        return None

    return wrapper  # type: ignore[return-value]
