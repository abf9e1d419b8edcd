"""One truth of what is installed: every component a stack can pin, which copy on a host counts as installed,
how its version is read from the host's facts, and how it is compared with a pin.

Facts (:meth:`Facts.components`), drift, ``validate``'s ``versions`` check, ``inv analyze`` and provisioning (every
step's check, and the verification after an installer ran) read a host's installed versions through
:func:`installed_versions` and compare them with a pin through :func:`installed_matches`, nowhere else. So a host
whose versions all pass has nothing for provisioning to do, and what provisioning installs is what the next
``validate`` judges.

A host often holds more than one copy of a component. The one that counts is the one a training job uses:
``python`` is the stack's interpreter (``paths.python``, the venv torch lives in), not the host's ``python3``; each
vendor says the same of its own components, in its folder (``accelstack.vendors.<vendor>``: NVIDIA's ``nccl`` is
the NCCL torch loads, not the system's; Ascend's CANN numbers compare as their release).

Pure: no I/O. Facts are read by attribute, so this module does not import the facts layer (which imports it).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol, cast

from ..vendors import Component, vendor_names, vendors
from .versions import MatchMode, VersionError, parse_version, versions_match

if TYPE_CHECKING:
    from .compat import Matrix

__all__ = ["COMPONENTS", "CRITICAL", "DEFAULT_MATCH", "REQUIRED_COMPONENTS", "SPECS", "VENDORS", "VENDOR_COMPONENTS",
           "WITH_TORCH", "Component", "InstalledVersions", "installed_matches", "installed_versions", "readme_table"]


class Facts(Protocol):
    """What this module reads of a host's facts (:class:`accelstack.facts.model.Facts`: the facts layer sits above
    stacks and imports it, so the components name the attributes they read, not the class; each vendor's components
    read their own section)."""

    torch: Any
    python_version: str | None
    stack_python: str | None
    stack_python_version: str | None

VENDORS: tuple[str, ...] = vendor_names()
ALL_VENDORS = frozenset(VENDORS)


def _torch_attr(name: str) -> Callable[[Facts], str | None]:
    def read(facts: Facts) -> str | None:
        return getattr(facts.torch, name, None) if facts.torch is not None else None
    return read


_PYTHON_ENV = "python_env (the venv from the artifact wheelhouse)"

# Every stack's components; each vendor adds its own (accelstack.vendors.<name>: Vendor.components).
_TABLE: tuple[Component, ...] = (
    Component("python", ALL_VENDORS, ALL_VENDORS, ALL_VENDORS, "prefix",
              "the stack's python (paths.python, the venv torch lives in), not the host's python3",
              _PYTHON_ENV, lambda facts: facts.stack_python_version),
    Component("torch", ALL_VENDORS, ALL_VENDORS, ALL_VENDORS, "exact",
              "torch.__version__ in the stack's python, with its build tag (2.11.0+cu130)",
              _PYTHON_ENV, _torch_attr("version")),
) + tuple(component for vendor in vendors() for component in vendor.components())

SPECS: dict[str, Component] = {c.key: c for c in _TABLE}
COMPONENTS: tuple[str, ...] = tuple(c.key for c in _TABLE)
VENDOR_COMPONENTS: dict[str, frozenset[str]] = {
    v: frozenset(c.key for c in _TABLE if v in c.vendors) for v in VENDORS}
REQUIRED_COMPONENTS: dict[str, frozenset[str]] = {
    v: frozenset(c.key for c in _TABLE if v in c.required) for v in VENDORS}
CRITICAL: dict[str, frozenset[str]] = {v: frozenset(c.key for c in _TABLE if v in c.critical) for v in VENDORS}
DEFAULT_MATCH: dict[str, MatchMode] = {c.key: cast(MatchMode, c.match) for c in _TABLE if c.match != "exact"}
# What comes with the torch wheel rather than with a package of its own: the pip step that installs torch owns it.
WITH_TORCH: frozenset[str] = frozenset(c.key for c in _TABLE if c.with_torch)


class InstalledVersions(dict[str, "str | None"]):
    """Installed versions under the vocabulary's keys (None: not installed or unknown), plus ``details``: per
    component, which copy was judged and what else is installed beside it (the system libnccl next to the one torch
    loads), for the evidence of a drift or versions record."""

    def __init__(self, versions: Mapping[str, str | None],
                 details: Mapping[str, dict[str, Any]] | None = None) -> None:
        super().__init__(versions)
        self.details: dict[str, dict[str, Any]] = dict(details or {})


def installed_versions(facts: Facts) -> InstalledVersions:
    """Every component's installed version on this host, read as the table above says; with the details."""
    details: dict[str, dict[str, Any]] = {}
    for vendor in vendors():
        details.update(vendor.component_details(facts))
    torch = facts.torch
    if torch is not None and torch.dist_version and torch.version and torch.dist_version != torch.version:
        details["torch"] = {"torch.__version__": torch.version, "package_metadata": torch.dist_version}
    if facts.stack_python_version is None and facts.python_version:
        details["python"] = {"stack_python": facts.stack_python,
                             "note": f"the stack's python is not there; the host's python3 is {facts.python_version}"}
    return InstalledVersions({c.key: c.read(facts) for c in _TABLE}, details)


def installed_matches(component: str, pinned: str, installed: str | None, mode: MatchMode | None = None,
                      matrix: Matrix | None = None) -> bool | None:
    """Whether an installed version meets a pin, the one comparison everything uses: False when nothing is
    installed, None when the installed text is not a version accelstack can read. ``mode`` defaults to the
    component's; CANN's internal numbers are read as their release (``matrix`` is loaded when needed)."""
    if not installed:
        return False
    spec = SPECS.get(component)
    if mode is None:
        mode = cast(MatchMode, spec.match) if spec else "exact"
    if spec is not None and spec.internal_release:
        installed = _cann_release(installed, matrix)
    try:
        return versions_match(pinned, installed, mode)
    except VersionError:
        return None


def _cann_release(text: str, matrix: Matrix | None) -> str:
    try:
        internal = len(parse_version(text).release) >= 4  # releases have at most three numeric parts
    except VersionError:
        return text
    if not internal:
        return text
    if matrix is None:
        from .compat import load_matrix
        matrix = load_matrix()
    return matrix.cann_release(text)


def readme_table() -> str:
    """The README's table of components, from the table above (tests/test_stacks.py holds the README to it)."""
    rows = ["| component | stacks | which copy counts as installed | installed by | a pin matches |",
            "|---|---|---|---|---|"]
    for c in _TABLE:
        vendors = ", ".join(v + ("" if v in c.required else " (optional)") for v in VENDORS if v in c.vendors)
        match = c.match + (" (CANN's internal numbers as their release)" if c.internal_release else "")
        rows.append(f"| `{c.key}` | {vendors} | {c.copy} | {c.installed_by} | {match} |")
    return "\n".join(rows) + "\n"
