"""One truth of what is installed: every component a stack can pin, which copy on a host counts as installed,
how its version is read from the host's facts, and how it is compared with a pin.

Facts (:meth:`Facts.components`), drift, ``validate``'s ``versions`` check, ``inv analyze`` and provisioning (every
step's check, and the verification after an installer ran) read a host's installed versions through
:func:`installed_versions` and compare them with a pin through :func:`installed_matches`, nowhere else. So a host
whose versions all pass has nothing for provisioning to do, and what provisioning installs is what the next
``validate`` judges.

A host often holds more than one copy of a component. The one that counts is the one a training job uses:

- ``nccl`` is the NCCL **torch loads**: the ``nvidia-nccl-cuXX`` wheel beside torch (``torch.cuda.nccl.version()``
  reports it), or a ``libnccl`` bundled in ``torch/lib``; a CUDA build of torch with neither links the system
  ``libnccl`` and then loads that one. A CPU build of torch loads none. It comes with the torch wheel, so the
  ``python_env`` role installs it (its pip step), never the installer of a system package.
- ``system_nccl`` is the **system** NCCL (``nccl.h``, else the versioned ``libnccl.so.X.Y.Z`` in the system library
  folders): what nccl-tests and other programs built outside torch link. A stack that wants one pins it; the
  ``system_nccl`` role installs it. torch wheels never load it.
- ``python`` is the stack's interpreter (``paths.python``, the venv torch lives in), not the host's ``python3``.
- ``nvidia_driver`` is the kernel module that is loaded (``/proc/driver/nvidia/version``, else what ``nvidia-smi``
  reports): a driver installed on disk but not yet loaded (a reboot pending) is not the one CUDA uses.
- ``cuda`` is the toolkit at ``/usr/local/cuda`` (``version.json``, ``version.txt``, else ``nvcc``), which the env
  file exports as ``CUDA_HOME``; ``torch_cuda`` is the CUDA torch was built with (its wheel's own runtime).
- CANN's ``cann_toolkit``, ``cann_kernels`` and ``nnal`` may read as CANN's internal numbers (``7.7.0.1.238``);
  they are compared as the release they are (``8.1.RC1``), through ``compat/ascend.yml``'s ``cann_internal``.

Pure: no I/O. Facts are read by attribute, so this module does not import the facts layer (which imports it).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from .versions import MatchMode, VersionError, parse_version, versions_match

if TYPE_CHECKING:
    from .compat import Matrix


class Facts(Protocol):
    """What this module reads of a host's facts (:class:`accelstack.facts.model.Facts`: the facts layer sits above
    stacks and imports it, so the components name the attributes they read, not the class)."""

    torch: Any
    nvidia: Any
    ascend: Any
    python_version: str | None
    stack_python: str | None
    stack_python_version: str | None

ALL_VENDORS = frozenset({"ascend", "nvidia", "cpu"})


@dataclass(frozen=True)
class Component:
    """One key of the vocabulary that stacks pin and facts report."""

    key: str
    vendors: frozenset[str]  # stacks of these vendors may pin it
    required: frozenset[str]  # ... and these must
    critical: frozenset[str]  # on these a host without it cannot train: missing is a drift `fail`, else `warn`
    match: MatchMode  # how a pin is matched unless the stack says otherwise
    copy: str  # which copy counts as installed, for a person (drift evidence, README)
    installed_by: str  # the role that installs it, and how
    read: Callable[[Facts], str | None]
    cann_release: bool = False  # an internal CANN number is compared as the release it belongs to


def _torch_attr(name: str) -> Callable[[Facts], str | None]:
    def read(facts: Facts) -> str | None:
        return getattr(facts.torch, name, None) if facts.torch is not None else None
    return read


def _nvidia_attr(name: str) -> Callable[[Facts], str | None]:
    def read(facts: Facts) -> str | None:
        return getattr(facts.nvidia, name, None) if facts.nvidia is not None else None
    return read


def _ascend_attr(name: str) -> Callable[[Facts], str | None]:
    def read(facts: Facts) -> str | None:
        return getattr(facts.ascend, name, None) if facts.ascend is not None else None
    return read


def torch_nccl(facts: Facts) -> tuple[str | None, str]:
    """The NCCL torch loads and where it is: ``("2.28.9", "torch")`` for its own (wheel or ``torch/lib``),
    ``("2.28.3", "system")`` for a CUDA build of torch without one (it links the system libnccl), ``(None,
    "none")`` when torch is not installed or is not a CUDA build (it loads no NCCL)."""
    torch = facts.torch
    if torch is None:
        return None, "none"
    if torch.nccl:
        return torch.nccl, "torch"
    system = facts.nvidia.nccl if facts.nvidia is not None else None
    if torch.cuda and system:
        return system, "system"
    return None, "none"


def _nccl(facts: Facts) -> str | None:
    return torch_nccl(facts)[0]


_PYTHON_ENV = "python_env (the venv from the artifact wheelhouse)"

_TABLE: tuple[Component, ...] = (
    Component("python", ALL_VENDORS, ALL_VENDORS, ALL_VENDORS, "prefix",
              "the stack's python (paths.python, the venv torch lives in), not the host's python3",
              _PYTHON_ENV, lambda facts: facts.stack_python_version),
    Component("torch", ALL_VENDORS, ALL_VENDORS, ALL_VENDORS, "exact",
              "torch.__version__ in the stack's python, with its build tag (2.11.0+cu130)",
              _PYTHON_ENV, _torch_attr("version")),
    Component("torch_npu", frozenset({"ascend"}), frozenset({"ascend"}), frozenset({"ascend"}), "exact",
              "torch_npu in the stack's python (its package metadata)", _PYTHON_ENV, _torch_attr("torch_npu")),
    Component("torch_cuda", frozenset({"nvidia"}), frozenset({"nvidia"}), frozenset({"nvidia"}), "exact",
              "the CUDA torch was built with (torch.version.cuda): the runtime its wheel carries",
              "python_env (it comes with the torch wheel)", _torch_attr("cuda")),
    Component("ascend_driver", frozenset({"ascend"}), frozenset({"ascend"}), frozenset({"ascend"}), "exact",
              "driver/version.info under the Ascend root", "ascend_driver", _ascend_attr("driver")),
    Component("ascend_firmware", frozenset({"ascend"}), frozenset({"ascend"}), frozenset({"ascend"}), "exact",
              "firmware/version.info under the Ascend root", "ascend_driver", _ascend_attr("firmware")),
    Component("cann_toolkit", frozenset({"ascend"}), frozenset({"ascend"}), frozenset({"ascend"}), "exact",
              "the toolkit set_env.sh activates (ascend-toolkit/latest, else cann/): its install.info or version.cfg",
              "cann", _ascend_attr("cann_toolkit"), cann_release=True),
    Component("cann_kernels", frozenset({"ascend"}), frozenset({"ascend"}), frozenset({"ascend"}), "exact",
              "the kernels (opp_kernel / ops) inside that toolkit", "cann", _ascend_attr("cann_kernels"),
              cann_release=True),
    Component("nnal", frozenset({"ascend"}), frozenset(), frozenset(), "exact",
              "nnal/atb/latest (what its set_env.sh activates), else the newest nnal/atb/<version>", "cann",
              _ascend_attr("nnal"), cann_release=True),
    Component("nvidia_driver", frozenset({"nvidia"}), frozenset({"nvidia"}), frozenset({"nvidia"}), "exact",
              "the loaded kernel module (/proc/driver/nvidia/version), else what nvidia-smi reports",
              "nvidia_driver", _nvidia_attr("driver_version")),
    Component("cuda", frozenset({"nvidia"}), frozenset({"nvidia"}), frozenset(), "prefix",
              "the toolkit at /usr/local/cuda, the env file's CUDA_HOME (version.json, version.txt, else nvcc)",
              "cuda_toolkit", _nvidia_attr("cuda")),
    Component("nccl", frozenset({"nvidia"}), frozenset({"nvidia"}), frozenset({"nvidia"}), "release",
              "the NCCL torch loads: its nvidia-nccl wheel or torch/lib, else (a CUDA torch without one) the "
              "system libnccl", "python_env (torch's nvidia-nccl wheel)", _nccl),
    Component("system_nccl", frozenset({"nvidia"}), frozenset(), frozenset(), "release",
              "the system NCCL, which nccl-tests and programs built outside torch load: the libnccl.so.2 the dynamic "
              "loader gives (ldconfig's cache), by the file it leads to, else its nccl.h", "system_nccl (an NCCL "
              "package from the artifact repository)", _nvidia_attr("nccl")),
)

SPECS: dict[str, Component] = {c.key: c for c in _TABLE}
COMPONENTS: tuple[str, ...] = tuple(c.key for c in _TABLE)
VENDORS: tuple[str, ...] = ("ascend", "nvidia", "cpu")
VENDOR_COMPONENTS: dict[str, frozenset[str]] = {
    v: frozenset(c.key for c in _TABLE if v in c.vendors) for v in VENDORS}
REQUIRED_COMPONENTS: dict[str, frozenset[str]] = {
    v: frozenset(c.key for c in _TABLE if v in c.required) for v in VENDORS}
CRITICAL: dict[str, frozenset[str]] = {v: frozenset(c.key for c in _TABLE if v in c.critical) for v in VENDORS}
DEFAULT_MATCH: dict[str, MatchMode] = {c.key: c.match for c in _TABLE if c.match != "exact"}
# What comes with the torch wheel rather than with a package of its own: the pip step that installs torch owns it.
WITH_TORCH: frozenset[str] = frozenset({"torch_cuda", "nccl"})


class InstalledVersions(dict[str, "str | None"]):
    """Installed versions under the vocabulary's keys (None: not installed or unknown), plus ``details``: per
    component, which copy was judged and what else is installed beside it (the system libnccl next to the one torch
    loads), for the evidence of a drift or versions record."""

    def __init__(self, versions: Mapping[str, str | None],
                 details: Mapping[str, dict[str, Any]] | None = None) -> None:
        super().__init__(versions)
        self.details: dict[str, dict[str, Any]] = dict(details or {})


def _nccl_details(facts: Facts) -> dict[str, dict[str, Any]]:
    torch = facts.torch
    nvidia = facts.nvidia
    loaded, where = torch_nccl(facts)
    system = nvidia.nccl if nvidia is not None else None
    if loaded is None and system is None:
        return {}
    common: dict[str, Any] = {
        "torch_nccl": torch.nccl if torch else None, "torch_nccl_library": torch.nccl_library if torch else None,
        "torch_nccl_from": torch.nccl_from if torch else None, "system_nccl": system,
        "system_nccl_libraries": list(nvidia.nccl_libraries) if nvidia is not None else []}
    if where == "torch":
        judged = "the NCCL torch loads"
    elif where == "system":
        judged = "the system NCCL (torch is a CUDA build with no NCCL of its own beside it, so it links this one)"
    elif torch is None:
        judged = "the NCCL torch loads: torch is not installed in the stack's python"
    else:
        judged = "the NCCL torch loads: this torch is not a CUDA build and loads none"
    nccl: dict[str, Any] = {"judged": judged, **common}
    if where == "torch" and system and system != loaded:
        nccl["note"] = f"the system NCCL {system} is installed too; torch does not load it"
    details = {"nccl": nccl}
    if system is not None:
        system_detail: dict[str, Any] = {"judged": SPECS["system_nccl"].copy, **common,
                                         "loader_library": nvidia.nccl_loader_library if nvidia else None}
        if where == "torch" and loaded != system:
            system_detail["note"] = f"torch loads its own NCCL {loaded}, not this one"
        details["system_nccl"] = system_detail
    return details


def installed_versions(facts: Facts) -> InstalledVersions:
    """Every component's installed version on this host, read as the table above says; with the details."""
    details = _nccl_details(facts)
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
        mode = spec.match if spec else "exact"
    if spec is not None and spec.cann_release:
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
        match = c.match + (" (CANN's internal numbers as their release)" if c.cann_release else "")
        rows.append(f"| `{c.key}` | {vendors} | {c.copy} | {c.installed_by} | {match} |")
    return "\n".join(rows) + "\n"
