"""Versions that sort right, for every component a stack pins.

PEP 440 (``packaging``) already orders most of what we meet: ``2.5.1+cpu``, ``2.1.0.post6``, ``2.6.0rc1``,
``550.54.15``, ``7.3.0.1.231``, and even Huawei's ``8.0.RC2`` and ``24.1.rc2`` (a dotted ``RC`` is a legal PEP 440
pre-release separator). What it cannot read are the Ascend forms that stack a second qualifier on a release
candidate or carry a test/build tag:

==========================  ==============================  ========================================
Ascend text                 meaning                          PEP 440 stand-in
==========================  ==============================  ========================================
``25.0.rc1.1``              patch 1 of driver 25.0.rc1       ``25.0rc1.post1``
``8.1.RC1.alpha002``        alpha build before 8.1.RC1       ``8.1rc1.dev2``
``8.0.RC2.beta1``           beta build before 8.0.RC2        ``8.0rc2.dev1000001``
``7.0.T10``                 test build before 7.0            ``7.0.dev10``
``8.1.RC1.B150``            build 150 of release 8.1.RC1     ``8.1rc1+b150`` (same release)
==========================  ==============================  ========================================

So we translate those into an order-preserving PEP 440 stand-in and let ``packaging`` do every comparison.
The original text is always kept for display.

CANN also has *internal* versions (``7.7.0.1.238`` in ``runtime/version.info`` is release ``8.1.RC1``); those are
mapped to releases by the data in ``compat/ascend.yml`` (see :func:`accelstack.stacks.compat.cann_release`),
because the mapping is a fact about Huawei's releases, not about version syntax.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Literal

from packaging.specifiers import Specifier
from packaging.version import InvalidVersion
from packaging.version import Version as _Pep440

MatchMode = Literal["exact", "release", "prefix"]
MATCH_MODES: tuple[MatchMode, ...] = ("exact", "release", "prefix")

# alpha and beta builds of one RC both become dev releases of it; beta is offset so alpha < beta < RC holds.
_BETA_OFFSET = 1_000_000

_ASCEND = re.compile(
    r"""^v?(?P<release>\d+(?:\.\d+)*)
        (?:\.(?P<stage>rc|t)(?P<stage_n>\d+)(?P<patch>(?:\.\d+)*))?
        (?:\.(?P<qual>alpha|beta)(?P<qual_n>\d*))?
        (?:\.b(?P<build>\d+))?$""",
    re.IGNORECASE | re.VERBOSE,
)


class VersionError(ValueError):
    """A version text that no supported scheme can read."""


def _ascend_to_pep440(text: str) -> str | None:
    match = _ASCEND.match(text.strip())
    if not match:
        return None
    out = match["release"]
    stage = (match["stage"] or "").lower()
    dev: int | None = None
    if stage == "rc":
        out += f"rc{int(match['stage_n'])}"
        patch = [int(p) for p in match["patch"].split(".") if p]
        if len(patch) > 1:
            return None
        if patch:
            out += f".post{patch[0]}"
    elif stage == "t":
        if match["patch"]:
            return None
        dev = int(match["stage_n"])
    qual = (match["qual"] or "").lower()
    if qual:
        if dev is not None:
            return None
        qual_n = int(match["qual_n"] or 0)
        if stage == "rc":
            dev = qual_n + (_BETA_OFFSET if qual == "beta" else 0)
        else:
            out += ("a" if qual == "alpha" else "b") + str(qual_n)
    if dev is not None:
        out += f".dev{dev}"
    if match["build"]:
        out += f"+b{int(match['build'])}"
    return out


@functools.lru_cache(maxsize=4096)
def parse_version(text: str) -> _Pep440:
    """The ``packaging`` Version that orders ``text`` correctly; raises :class:`VersionError` if unreadable."""
    if not isinstance(text, str) or not text.strip():
        raise VersionError(f"not a version: {text!r}")
    try:
        return _Pep440(text.strip())
    except InvalidVersion:
        pass
    stand_in = _ascend_to_pep440(text)
    if stand_in is not None:
        try:
            return _Pep440(stand_in)
        except InvalidVersion:
            pass
    raise VersionError(f"not a version: {text!r} (neither PEP 440 nor an Ascend form like 8.1.RC1.alpha002)")


def is_version(text: str) -> bool:
    try:
        parse_version(text)
    except VersionError:
        return False
    return True


@functools.total_ordering
@dataclass(frozen=True)
class ComponentVersion:
    """A version text with its sort key; orders and compares by the key, prints as the text."""

    text: str

    @property
    def key(self) -> _Pep440:
        return parse_version(self.text)

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, ComponentVersion):
            return NotImplemented
        return self.key < other.key

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ComponentVersion):
            return NotImplemented
        return self.key == other.key

    def __hash__(self) -> int:
        return hash(self.key)

    def __str__(self) -> str:
        return self.text


def version_key(text: str) -> _Pep440:
    """For ``sorted(texts, key=version_key)``."""
    return parse_version(text)


def compare(a: str, b: str) -> int:
    """-1, 0 or 1, like the old ``cmp``."""
    va, vb = parse_version(a), parse_version(b)
    return (va > vb) - (va < vb)


def public(text: str) -> _Pep440:
    """The version without its local build tag: ``2.13.0+cpu`` -> ``2.13.0``, ``8.1.RC1.B150`` -> ``8.1.RC1``."""
    return _Pep440(parse_version(text).public)


def local_tag(text: str) -> str | None:
    """The local build tag (``cpu``, ``cu124``, ``cuda12.4``) or None."""
    return parse_version(text).local


def release_prefix(text: str, prefix: str) -> bool:
    """Whether ``text``'s release starts with ``prefix``'s: ``3.11.9`` is in ``3.11``, ``2.6.0+cu124`` in ``2.6``.

    A pre- or post-release of the prefix's release counts as in it (``2.6.0rc1`` is in ``2.6``); trailing zeros of
    the prefix are significant (``2.6.0`` does not contain ``2.6.1``).
    """
    want = parse_version(prefix).release
    have = parse_version(text).release
    have = have + (0,) * max(0, len(want) - len(have))
    return have[: len(want)] == want


def versions_match(pinned: str, installed: str, mode: MatchMode = "exact") -> bool:
    """Whether an installed version satisfies a pin.

    ``exact``: equal as versions (``8.0.RC2`` == ``8.0.rc2``, ``2.1`` == ``2.1.0``), compared the way pip
    compares ``==`` (PEP 440): a pin with a local build tag names that build, so ``2.6.0+cu124`` is not met by
    ``2.6.0+cpu`` or by a bare ``2.6.0``; a pin without one names the release, so ``2.6.0`` is met by
    ``2.6.0+cu124``, as a user who writes ``torch: 2.6.0`` means. ``release``: the local build tag is
    ignored (the CPU torch wheel is ``2.13.0+cpu`` on x86 and ``2.13.0`` on aarch64). ``prefix``: the pin names a
    release series (python ``3.11`` is met by ``3.11.9``).
    """
    if mode == "exact":
        want = parse_version(pinned)
        have = parse_version(installed)
        # packaging's Specifier holds PEP 440's rule for a local tag in ``==``; the parsed forms keep the Ascend
        # stand-ins (8.1.RC1.B150 -> 8.1rc1+b150) comparable the same way.
        return Specifier(f"=={want}").contains(have, prereleases=True)
    if mode == "release":
        return public(pinned) == public(installed)
    if mode == "prefix":
        return release_prefix(installed, pinned)
    raise ValueError(f"unknown match mode {mode!r}; one of {', '.join(MATCH_MODES)}")


def in_minor_range(text: str, low: str, high: str) -> bool:
    """``low <= text`` and ``text <= high`` at ``high``'s precision: python 3.11.9 is within 3.8 .. 3.11."""
    version = parse_version(text)
    if public(text) < parse_version(low):
        return False
    top = parse_version(high).release
    have = version.release + (0,) * max(0, len(top) - len(version.release))
    return have[: len(top)] <= top
