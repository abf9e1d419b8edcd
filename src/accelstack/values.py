"""Typed values read from text: a number with its range, parsed once, with a message that says what and where.

Flags (``--forks``), configuration (``accelstack.forks`` in invoke.yaml, ``ACCELSTACK_FORKS``), inventory vars
(``expect_devices``) and ``--set`` all read numbers through :class:`Number`, so each says the same thing about the
same mistake: ``'abc' is not a whole number (expected a whole number >= 1)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from .errors import ConfigError


@dataclass(frozen=True)
class Number:
    """A number: its type, its range (inclusive unless ``above``), and the placeholder --help shows."""

    kind: type
    minimum: float | None = None
    maximum: float | None = None
    above: bool = False  # minimum excluded: a timeout of 0 s means nothing
    placeholder: str = "INT"

    def parse(self, raw: Any, what: str, *, where: str | None = None,
              error: type[ConfigError] = ConfigError) -> int | float:
        """``raw`` (a number, or text holding one) as this number, or ``error`` naming ``what`` (and ``where``)."""
        text = str(raw).strip()
        try:
            if isinstance(raw, bool) or raw is None:
                raise ValueError
            if self.kind is int:
                if isinstance(raw, float) and raw.is_integer():
                    raw = int(raw)  # 8.0 from a YAML file is eight
                value: int | float = raw if isinstance(raw, int) else int(text, 10)
            else:
                value = float(raw) if isinstance(raw, (int, float)) else float(text)
                if not math.isfinite(value):
                    raise ValueError
        except (ValueError, TypeError):
            shown = repr(raw) if not isinstance(raw, str) else repr(text)
            raise error(f"{what}: {shown} is not {self.noun}{self.range_text()}", where=where) from None
        low_bad = self.minimum is not None and (value <= self.minimum if self.above else value < self.minimum)
        high_bad = self.maximum is not None and value > self.maximum
        if low_bad or high_bad:
            raise error(f"{what}: {text} is out of range{self.range_text()}", where=where)
        return value

    @property
    def noun(self) -> str:
        return "a whole number" if self.kind is int else "a number"

    def range_text(self) -> str:
        """`` (expected a whole number >= 1)``: what a good value looks like."""
        return f" (expected {self.describe()})"

    def describe(self) -> str:
        parts = []
        if self.minimum is not None:
            parts.append(f"{'>' if self.above else '>='} {self.minimum:g}")
        if self.maximum is not None:
            parts.append(f"<= {self.maximum:g}")
        return self.noun + (" " + " and ".join(parts) if parts else "")


SECONDS = Number(float, 0, above=True, placeholder="SECONDS")


def only_checks(only: str | None) -> set[str] | None:
    """``--only a,b`` as a set of names; None when the flag is absent. ``--only ''`` (an unset variable in a
    script) names nothing, so it is refused rather than read as "every check of the tier"."""
    if only is None:
        return None
    wanted = {item.strip() for item in only.split(",") if item.strip()}
    if not wanted:
        raise ConfigError(f"--only {only!r} names no check", hint="leave --only out to run the whole tier")
    return wanted
