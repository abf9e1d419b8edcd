"""Host ranges in names: ``node[01:16]``, ``node[1:4]``, ``rack[a:c]``, ``node[01:16:2]``.

The syntax is Ansible's: ``[begin:end]`` or ``[begin:end:stride]``, both ends included. A numeric begin with a
leading zero fixes the width (``[01:16]`` gives ``01`` .. ``16``) and then the end must have the same width, as
in Ansible, because ``[01:100]`` is ambiguous. An omitted numeric begin is ``0``. Letters range over single
ASCII letters of one case. Several ranges in one name expand left to right (``r[1:2]n[1:2]`` gives ``r1n1,
r1n2, r2n1, r2n2``). A range that expands to nothing is an error: it is always a typo, and silently dropping
hosts from a fleet is worse than stopping.

A range is counted before it is expanded, and one that stands for more than :data:`MAX_HOSTS` names is refused:
``n[00000000:19999999]`` took 50 s and 3 GB before a MemoryError. The limit is twice the largest fleet the
inventory benchmark loads (100,000 hosts in a few seconds), and far past the largest training clusters built.
"""

from __future__ import annotations

import re
import string

_RANGE = re.compile(r"\[([^\[\]:]*):([^\[\]:]*)(?::([^\[\]:]*))?\]")
MAX_HOSTS = 200_000


class RangeError(ValueError):
    """A malformed or empty range; callers add the file and line."""


def has_range(text: str) -> bool:
    """Whether ``text`` holds a ``[begin:end]`` range (as opposed to a glob class such as ``[1-3]``)."""
    return _RANGE.search(text) is not None


def expand_range(pattern: str, limit: int = MAX_HOSTS) -> list[str]:
    """Every name ``pattern`` stands for, in order; ``pattern`` itself when it holds no range. More than
    ``limit`` names is an error, found by counting before anything is expanded."""
    matches = list(_RANGE.finditer(pattern))
    if not matches:
        return [pattern]
    total = 1
    for match in matches:
        total *= _count_one(match.group(1).strip(), match.group(2).strip(), match.group(3), match.group(0))
    if total > limit:
        raise RangeError(f"{pattern} stands for {total:,} hosts; an inventory holds at most {limit:,}")
    return _expand(pattern)


def _expand(pattern: str) -> list[str]:
    match = _RANGE.search(pattern)
    if match is None:
        return [pattern]
    head, tail = pattern[: match.start()], pattern[match.end() :]
    values = _expand_one(match.group(1).strip(), match.group(2).strip(), match.group(3), match.group(0))
    tails = _expand(tail)
    return [head + value + rest for value in values for rest in tails]


def _count_one(begin: str, end: str, stride_text: str | None, text: str) -> int:
    """How many values one range gives, without making them (its errors are :func:`_expand_one`'s)."""
    stride = _stride(stride_text, text)
    begin = begin or "0"
    if begin.isdigit() and end.isdigit():
        span = int(end) - int(begin)
        return span // stride + 1 if span >= 0 else 0
    return 1  # letters: 26 at most; anything else is refused when expanded


def _stride(stride_text: str | None, text: str) -> int:
    if stride_text is not None and stride_text.strip():
        if not stride_text.strip().isdigit() or int(stride_text) < 1:
            raise RangeError(f"range {text}: the stride must be a positive integer")
        return int(stride_text)
    return 1


def _expand_one(begin: str, end: str, stride_text: str | None, text: str) -> list[str]:
    stride = _stride(stride_text, text)
    if not end:
        raise RangeError(f"range {text} has no end")
    if not begin:
        begin = "0"
    if begin.isdigit() and end.isdigit():
        width = len(begin) if len(begin) > 1 and begin.startswith("0") else 0
        if width and len(end) != width:
            raise RangeError(f"range {text}: a zero-padded begin needs an end of the same width")
        values = [str(i).zfill(width) for i in range(int(begin), int(end) + 1, stride)]
    elif _is_letter(begin) and _is_letter(end) and begin.islower() == end.islower():
        letters = string.ascii_lowercase if begin.islower() else string.ascii_uppercase
        values = list(letters[letters.index(begin) : letters.index(end) + 1 : stride])
    else:
        raise RangeError(f"range {text}: begin and end must both be numbers or both single letters")
    if not values:
        raise RangeError(f"range {text} expands to no host (begin is after end)")
    return values


def _is_letter(text: str) -> bool:
    return len(text) == 1 and text in string.ascii_letters



def split_port_suffix(pattern: str) -> tuple[str, int | None]:
    """``node01:2222`` -> (``node01``, 2222), Ansible's inline port; a range's own colons are left alone."""
    outside = _RANGE.sub("", pattern)
    # No colon: no port; more than one: an IPv6 address, whose port must be given as a var.
    if outside.count(":") != 1:
        return pattern, None
    name, _, port = pattern.rpartition(":")
    if not name or not port.isdigit():
        return pattern, None
    return name, int(port)
