"""Pinned stacks: ``stacks/<name>.yml`` read into a :class:`Stack`, checked for shape with ``file:line`` errors.

Component keys are a fixed vocabulary shared with the facts layer, which reports installed versions under the same
keys; a key outside it is a typo until proven otherwise, so it is refused. Versions must be quoted strings:
YAML reads ``python: 3.10`` as the number 3.1.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from .. import paths as project_paths
from ..errors import StackError
from ..vendors import get_vendor, is_vendor, vendor_names, vendors
from ..yamlfile import MarkedDict, MarkedList, load_marked_file
from .components import COMPONENTS, DEFAULT_MATCH, REQUIRED_COMPONENTS, VENDOR_COMPONENTS
from .versions import MATCH_MODES, MatchMode, VersionError, parse_version

# The vocabulary (which components a vendor may pin and which it must, and how a pin matches by default: python
# and the CUDA toolkit as a series, NCCL without its +cudaX.Y build suffix) lives in one table with how each is
# read from a host: accelstack.stacks.components. A vendor's own stack fields (NVIDIA's driver branch) come from
# the vendor (accelstack.vendors: Vendor.stack_fields).

REQUIRED_FIELDS = ("name", "vendor", "backend", "description", "components", "paths", "devices")
OPTIONAL_FIELDS = ("env",)
REQUIRED_PATHS = ("venv", "python")


def vendor_fields() -> tuple[str, ...]:
    """Every vendor's own stack fields, in the vendors' order."""
    return tuple(name for vendor in vendors() for name in vendor.stack_fields())


@dataclass(frozen=True)
class Pin:
    """One pinned component: ``version`` and how an installed version is matched against it."""

    component: str
    version: str
    match: MatchMode = "exact"


@dataclass
class Stack:
    name: str
    vendor: str  # a vendor's name (accelstack.vendors)
    backend: str  # the vendor's torch.distributed backend
    description: str
    pins: dict[str, Pin]
    paths: dict[str, str]
    devices: list[str]
    env: dict[str, str] = field(default_factory=dict)
    fields: dict[str, str] = field(default_factory=dict)  # the vendor's own stack fields (nvidia_driver_branch)
    source: Path | None = None
    lines: dict[str, int] = field(default_factory=dict)
    # Set only when loaded with check_name=False: `stack.check PATH` reports it, then still gives the verdict.
    naming_error: StackError | None = field(default=None, compare=False, repr=False)

    @property
    def components(self) -> dict[str, str]:
        """Component -> pinned version text, in the vocabulary's order."""
        return {key: self.pins[key].version for key in COMPONENTS if key in self.pins}

    @property
    def check_command(self) -> str:
        """The ``inv stack.check`` line that finds this stack: its name when it is shipped, else its path."""
        shipped = self.source is not None and self.source.resolve() == (stacks_dir() / f"{self.name}.yml").resolve()
        return f"inv stack.check {self.name if shipped or self.source is None else self.source}"

    def where(self, key: str | None = None) -> str:
        """``stacks/name.yml:LINE`` for a field or component key (``components.torch``), for messages."""
        origin = str(self.source) if self.source else f"stack {self.name}"
        line = self.lines.get(key or "", 0)
        return f"{origin}:{line}" if line else origin


def stacks_dir(root: Path | None = None) -> Path:
    return (root or project_paths.project_root()) / "stacks"


def _fail(path: Path, line: int, message: str, hint: str | None = None) -> StackError:
    return StackError(message, where=f"{path}:{line}" if line else str(path), hint=hint)


def _require_str(path: Path, line: int, what: str, value: Any) -> str:
    if isinstance(value, str) and value.strip():
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        raise _fail(path, line, f"{what} must be a quoted string, not the number {value!r}",
                    hint=f'write {what.split()[-1]}: "{value}" (YAML reads 3.10 as 3.1)')
    raise _fail(path, line, f"{what} must be a non-empty string, got {value!r}")


def _parse_pin(path: Path, line: int, key: str, value: Any) -> Pin:
    default = DEFAULT_MATCH.get(key, "exact")
    if isinstance(value, MarkedDict):
        unknown = set(value) - {"version", "match"}
        if unknown:
            raise _fail(path, value.line_of(min(unknown, key=str)),
                        f"components.{key}: unknown field(s) {', '.join(sorted(map(str, unknown)))}",
                        hint="a component is a version string or {version: ..., match: exact|release|prefix}")
        if "version" not in value:
            raise _fail(path, line, f"components.{key}: missing 'version'")
        version = _require_str(path, value.line_of("version"), f"components.{key}.version", value["version"])
        match = value.get("match", default)
        if match not in MATCH_MODES:
            raise _fail(path, value.line_of("match"),
                        f"components.{key}.match: {match!r} is not one of {', '.join(MATCH_MODES)}")
    else:
        version = _require_str(path, line, f"components.{key}", value)
        match = default
    try:
        parse_version(version)
    except VersionError as err:
        raise _fail(path, line, f"components.{key}: {err}") from None
    return Pin(component=key, version=version, match=cast(MatchMode, match))


def _string_map(path: Path, data: MarkedDict, field_name: str, *, numbers_ok: bool) -> dict[str, str]:
    value = data[field_name]
    if not isinstance(value, MarkedDict):
        raise _fail(path, data.line_of(field_name), f"{field_name} must be a mapping")
    out: dict[str, str] = {}
    for key, item in value.items():
        if not isinstance(key, str):
            raise _fail(path, value.line_of(key), f"{field_name}: key {key!r} must be a string")
        if numbers_ok and isinstance(item, int) and not isinstance(item, bool):
            item = str(item)
        out[key] = _require_str(path, value.line_of(key), f"{field_name}.{key}", item)
    return out


def parse_stack(data: Any, path: Path, *, check_name: bool = True) -> Stack:
    """Validate the shape of one parsed stack file; every error names ``path:line``.

    A ``name:`` other than the file name is an error (a stack is found by its file name); with
    ``check_name=False`` it is kept in :attr:`Stack.naming_error` instead, so the rest is still judged.
    """
    if not isinstance(data, MarkedDict):
        raise _fail(path, getattr(data, "line", 1), "a stack file must be a mapping of fields",
                    hint=f"required fields: {', '.join(REQUIRED_FIELDS)}")
    lines: dict[str, int] = {}
    known = REQUIRED_FIELDS + OPTIONAL_FIELDS + vendor_fields()
    unknown = [key for key in data if key not in known]
    if unknown:
        key = unknown[0]
        raise _fail(path, data.line_of(key), f"unknown field {key!r}", hint=f"fields: {', '.join(known)}")
    missing = [key for key in REQUIRED_FIELDS if key not in data]
    if missing:
        raise _fail(path, data.line, f"missing required field(s): {', '.join(missing)}")
    for key in data:
        lines[key] = data.line_of(key)

    name = _require_str(path, data.line_of("name"), "name", data["name"])
    naming_error = None
    if name != path.stem:
        naming_error = _fail(path, data.line_of("name"), f"name {name!r} differs from the file name {path.stem!r}",
                             hint=f"a stack is found by its file name: rename the file to {name}.yml, or set "
                                  f"name: {path.stem}")
        if check_name:
            raise naming_error
    vendor = data["vendor"]
    if not is_vendor(vendor):
        raise _fail(path, data.line_of("vendor"), f"vendor {vendor!r} is not one of {', '.join(vendor_names())}")
    plugin = get_vendor(vendor)
    backend = data["backend"]
    if backend != plugin.backend:
        raise _fail(path, data.line_of("backend"),
                    f"backend {backend!r} does not fit vendor {vendor!r}; it must be {plugin.backend!r}")
    description = _require_str(path, data.line_of("description"), "description", data["description"])

    components = data["components"]
    if not isinstance(components, MarkedDict) or not components:
        raise _fail(path, data.line_of("components"), "components must be a non-empty mapping")
    pins: dict[str, Pin] = {}
    for key, value in components.items():
        line = components.line_of(key)
        if key not in COMPONENTS:
            raise _fail(path, line, f"unknown component key {key!r}", hint=f"known keys: {', '.join(COMPONENTS)}")
        if key not in VENDOR_COMPONENTS[vendor]:
            raise _fail(path, line, f"component {key!r} does not apply to a {vendor} stack",
                        hint=f"{vendor} components: {', '.join(sorted(VENDOR_COMPONENTS[vendor]))}")
        pins[key] = _parse_pin(path, line, key, value)
        lines[f"components.{key}"] = line
    absent = sorted(REQUIRED_COMPONENTS[vendor] - set(pins))
    if absent:
        raise _fail(path, data.line_of("components"),
                    f"a {vendor} stack must pin: {', '.join(absent)}")

    stack_paths = _string_map(path, data, "paths", numbers_ok=False)
    absent_paths = [key for key in REQUIRED_PATHS if key not in stack_paths]
    if absent_paths:
        raise _fail(path, data.line_of("paths"), f"paths: missing {', '.join(absent_paths)}",
                    hint="venv: /opt/accelstack/venv, python: /opt/accelstack/venv/bin/python")
    for key, value in stack_paths.items():
        if not value.startswith("/"):
            raise _fail(path, data["paths"].line_of(key), f"paths.{key} must be absolute, got {value!r}")

    devices = data["devices"]
    if not isinstance(devices, MarkedList) or not devices or not all(isinstance(d, str) for d in devices):
        raise _fail(path, data.line_of("devices"), "devices must be a non-empty list of device types")

    env = _string_map(path, data, "env", numbers_ok=True) if "env" in data else {}

    own = plugin.stack_fields()
    fields: dict[str, str] = {}
    for key in vendor_fields():
        if key not in own:
            if key in data:
                raise _fail(path, data.line_of(key), f"{key} does not apply to {vendor}")
        elif key not in data:
            raise _fail(path, data.line_of("components"), f"a {vendor} stack must name {key}: {own[key]}")
        else:
            fields[key] = _require_str(path, data.line_of(key), key, data[key])

    return Stack(
        name=name, vendor=vendor, backend=backend, description=description.strip(), pins=pins,
        paths=stack_paths, devices=list(devices), env=env, fields=fields, source=path, lines=lines,
        naming_error=naming_error,
    )


def _resolve(name_or_path: str | Path, root: Path | None) -> Path:
    text = str(name_or_path)
    candidate = Path(text)
    if candidate.suffix in (".yml", ".yaml") or "/" in text:
        if not candidate.is_file():
            raise StackError("no such stack file", where=text)
        return candidate
    path = stacks_dir(root) / f"{text}.yml"
    if not path.is_file():
        known = ", ".join(stack_names(root)) or "none"
        raise StackError(f"unknown stack {text!r}", where=str(stacks_dir(root)), hint=f"shipped stacks: {known}")
    return path


def load_stack(name_or_path: str | Path, root: Path | None = None, *, check_name: bool = True) -> Stack:
    """A stack by name (``stacks/<name>.yml`` under the project root) or by path."""
    path = _resolve(name_or_path, root)
    return parse_stack(load_marked_file(path, error=StackError), path, check_name=check_name)


def stack_names(root: Path | None = None) -> list[str]:
    folder = stacks_dir(root)
    return sorted(p.stem for p in folder.glob("*.yml")) if folder.is_dir() else []


def list_stacks(root: Path | None = None) -> list[Stack]:
    """Every shipped stack, by name; one bad file stops the listing with its file:line."""
    return [load_stack(stacks_dir(root) / f"{name}.yml") for name in stack_names(root)]
