"""What the parsers of every vendor's tools and of the facts share: numbers that may read ``N/A``, ``key=value``
files, JSON with the start of the text in its error. Pure; no I/O."""

from __future__ import annotations

import json
import re
from typing import Any

NA = {"", "na", "n/a", "[n/a]", "[not supported]", "not supported", "-", "none", "unknown"}


def snippet(text: str) -> str:
    return repr(text[:200])


def number(value: str | None) -> float | None:
    if value is None or value.strip().lower() in NA:
        return None
    match = re.match(r"\s*(-?\d+(?:\.\d+)?)", value)
    return float(match.group(1)) if match else None


def whole(value: str | None) -> int | None:
    found = number(value)
    return int(found) if found is not None else None


def load_json(text: str, what: str) -> Any:
    try:
        return json.loads(text)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{what}: not valid JSON ({exc}): {snippet(text or '')}") from None


def parse_key_values(text: str, sep: str = "=") -> dict[str, str]:
    """``key=value`` lines (version.info, install.info, os-release); blank lines and ``#`` comments skipped.

    Later keys win, as a shell sourcing the file would see them. Surrounding quotes are removed.
    """
    result: dict[str, str] = {}
    for raw in (text or "").splitlines():
        line = raw.strip()
        if not line or line.startswith("#") or sep not in line:
            continue
        key, _, value = line.partition(sep)
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        result[key.strip()] = value
    return result
