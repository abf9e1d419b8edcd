"""Tasks on pinned stacks: ``stack.check`` (preflight, no host touched) and ``stack.list``."""

from __future__ import annotations

import sys
from typing import Any, cast

from invoke.collection import Collection
from invoke.context import Context
from invoke.tasks import Task
from rich.console import Console

from ..errors import EXIT_BAD_INPUT, EXIT_OK, StackError
from ..stacks import check_stack, list_stacks, load_matrix, load_stack, preflight_stack
from ..stacks.render import stacks_table
from .common import boundary, task


@task(positional=["name"], help={"name": "stack name (stacks/NAME.yml) or path to a stack file"})
@boundary
def check(c: Context, name: str) -> int:
    """Check a stack against the compatibility matrices before any host is touched (exit 0 OK, 3 refused).

    Prints OK, or every broken rule with its source, the nearest compatible choices and the symptom the
    combination would cause at training time. A stack file whose name: differs from its file name is refused
    for that, and still gets its compatibility verdict. `inv stack.list` shows the verdict for every shipped
    stack.
    """
    console = Console(highlight=False, soft_wrap=True)
    stack = load_stack(name, check_name=False)
    naming = stack.naming_error
    if naming is not None:
        print(f"accelstack: {naming}", file=sys.stderr)
    try:
        warnings = preflight_stack(stack, load_matrix())
    except StackError as err:
        if naming is None:
            raise
        print(f"accelstack: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    verdict = "compatible" if naming is not None else "OK "
    console.print(f"{verdict} {stack.name}" + (f" ({len(warnings)} warning(s))" if warnings else ""))
    for warning in warnings:
        console.print(warning.describe(), markup=False)
    return EXIT_BAD_INPUT if naming is not None else EXIT_OK


@task
@boundary
def list_(c: Context) -> int:
    """List the shipped stacks with their key pins and preflight verdict (exit 3 if any is refused)."""
    matrix = load_matrix()
    verdicts = [(stack, [v for v in check_stack(stack, matrix) if v.severity == "error"]) for stack in list_stacks()]
    Console().print(stacks_table(verdicts))
    refused = sum(bool(errors) for _stack, errors in verdicts)
    if refused:
        # A shipped stack that fails its own matrix is a configuration error, whichever stack it is.
        raise StackError(f"{refused} shipped stack(s) break the compatibility matrices",
                         hint="inv stack.check NAME shows the rules, sources and nearest choices")
    return EXIT_OK


ns = Collection("stack")
# boundary() keeps the body's signature for invoke, but mypy only sees the decorator's Callable type.
ns.add_task(cast("Task[Any]", check))
ns.add_task(cast("Task[Any]", list_), name="list")
