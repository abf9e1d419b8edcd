"""Host ranges in names: ``node[01:16]``, ``node[1:4]``, ``rack[a:c]``, ``node[01:16:2]``.

The syntax is Ansible's: ``[begin:end]`` or ``[begin:end:stride]``, both ends included. A numeric begin with a
leading zero fixes the width (``[01:16]`` gives ``01`` .. ``16``) and then the end must have the same width, as
in Ansible, because ``[01:100]`` is ambiguous. An omitted numeric begin is ``0``. Letters range over single
ASCII letters of one case. Several ranges in one name expand left to right (``r[1:2]n[1:2]`` gives ``r1n1,
r1n2, r2n1, r2n2``). A range that expands to nothing is an error: it is always a typo, and silently dropping
hosts from a fleet is worse than stopping.
"""

from __future__ import annotations

import re
import string

_RANGE = re.compile(r"\[([^\[\]:]*):([^\[\]:]*)(?::([^\[\]:]*))?\]")


class RangeError(ValueError):
    """A malformed or empty range; callers add the file and line."""


def has_range(text: str) -> bool:
    """Whether ``text`` holds a ``[begin:end]`` range (as opposed to a glob class such as ``[1-3]``)."""
    return _RANGE.search(text) is not None


def expand_range(pattern: str) -> list[str]:
    """Every name ``pattern`` stands for, in order; ``pattern`` itself when it holds no range."""
    match = _RANGE.search(pattern)
    if match is None:
        return [pattern]
    head, tail = pattern[: match.start()], pattern[match.end() :]
    values = _expand_one(match.group(1).strip(), match.group(2).strip(), match.group(3), match.group(0))
    tails = expand_range(tail)
    return [head + value + rest for value in values for rest in tails]


def _expand_one(begin: str, end: str, stride_text: str | None, text: str) -> list[str]:
    stride = 1
    if stride_text is not None and stride_text.strip():
        if not stride_text.strip().isdigit() or int(stride_text) < 1:
            raise RangeError(f"range {text}: the stride must be a positive integer")
        stride = int(stride_text)
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
