"""Preflight: refuse an incompatible stack before any host is touched (exit code 3).

Every violated rule is listed at once, each with its source, the nearest compatible choices and the symptom the
combination would have produced at training time, so one edit of the stack file can fix them all.
"""

from __future__ import annotations

from ..errors import StackError
from .compat import Matrix, Violation, check_stack, load_matrix
from .model import Stack


def format_violations(violations: list[Violation]) -> str:
    return "\n".join(violation.describe() for violation in violations)


def preflight_stack(stack: Stack, matrix: Matrix | None = None) -> list[Violation]:
    """Raise :class:`StackError` if the stack breaks any compatibility rule; return the warnings otherwise.

    Warnings (a combination only a disputed row allows, a release missing from the matrix, a driver that runs a
    torch wheel only through minor-version compatibility) do not refuse the stack: they are facts a person
    should see, not proof it will fail.
    """
    violations = check_stack(stack, matrix or load_matrix())
    errors = [v for v in violations if v.severity == "error"]
    if errors:
        count = f"{len(errors)} compatibility rule{'s' if len(errors) != 1 else ''}"
        text = f"stack {stack.name} breaks {count}:\n" + format_violations(violations)
        raise StackError(
            text, where=str(stack.source) if stack.source else None,
            hint=f"change the pins named above to one of the nearest choices, then run: {stack.check_command}",
        )
    return violations
