"""Roles as data: ``roles/<role>/`` with ``meta.yml``, ``defaults.yml``, ``tasks.yml``, ``handlers.yml`` and
``templates/``. Which roles apply, and in what order, is read from the roles, never decided in Python. A vendor may
ship the roles of its components in its own folder (``vendors/<vendor>/roles/``); the project's ``roles/`` wins by
name, so a site edits a copy there.

``meta.yml``::

    vendors: [ascend]          # stacks this role applies to (a vendor's name: accelstack.vendors; "any" for all)
    after: [ascend_driver]     # ordering: run after these roles when they are selected too
    before: [python_env]       # ... and before these: a vendor's roles order themselves around the shared ones
                               # without editing them
    depends: [python_env]      # these roles must be selected too, else the configuration is refused

``tasks.yml`` is a list of steps; every string in a step is a jinja2 template over the host's variables and
facts (``installed`` and ``at_pin('component')`` read and compare versions as drift does:
:mod:`accelstack.stacks.components`), ``when`` is a jinja2 expression, ``notify`` names handlers from
``handlers.yml``::

    - name: driver
      kind: installer
      component: ascend_driver
      args: "--nox11 --full --quiet --install-username={{ ascend_run_user }}"
      when: installed.ascend_driver is none or installed.ascend_firmware is none
      notify: reboot
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigError, StackError
from ..paths import project_root
from ..vendors import ANY, is_vendor, vendor_names, vendors
from ..yamlfile import MarkedDict, MarkedList, load_marked_file
from .steps import STEP_KINDS  # the step kinds that exist are the ones steps.py implements, one list

HANDLER_KINDS = ("reboot", "command")
_COMMON_STEP_KEYS = {"name", "kind", "when", "notify", "component"}


@dataclass(frozen=True)
class StepSpec:
    role: str
    name: str
    kind: str
    spec: dict[str, Any]
    when: str | None = None
    notify: tuple[str, ...] = ()
    where: str = ""

    @property
    def id(self) -> str:
        return f"{self.role}.{self.name}"


@dataclass(frozen=True)
class HandlerSpec:
    role: str
    name: str
    kind: str
    spec: dict[str, Any]
    where: str = ""


@dataclass
class Role:
    name: str
    path: Path
    vendors: tuple[str, ...] = (ANY,)
    after: tuple[str, ...] = ()
    before: tuple[str, ...] = ()
    depends: tuple[str, ...] = ()
    defaults: dict[str, Any] = field(default_factory=dict)
    steps: list[StepSpec] = field(default_factory=list)
    handlers: dict[str, HandlerSpec] = field(default_factory=dict)

    @property
    def templates(self) -> Path:
        return self.path / "templates"

    def applies_to(self, vendor: str) -> bool:
        return ANY in self.vendors or vendor in self.vendors


def roles_dir(root: Path | None = None) -> Path:
    return (root or project_root()) / "roles"


def _names(value: Any, where: str, what: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise ConfigError(f"{what} must be a name or a list of names", where=where)


def _load_optional(path: Path) -> Any:
    return load_marked_file(path, error=StackError) if path.is_file() else None


def load_role(path: Path) -> Role:
    name = path.name
    role = Role(name=name, path=path)
    meta = _load_optional(path / "meta.yml")
    if meta is not None:
        if not isinstance(meta, MarkedDict):
            raise ConfigError("meta.yml must be a mapping", where=str(path / "meta.yml"))
        where = f"{path / 'meta.yml'}:{meta.line}"
        role.vendors = _names(meta.get("vendors", ANY), where, "vendors") or (ANY,)
        unknown = [v for v in role.vendors if v != ANY and not is_vendor(v)]
        if unknown:
            raise ConfigError(f"vendors: {unknown[0]!r} is not one of {', '.join((*vendor_names(), ANY))}",
                              where=where)
        role.after = _names(meta.get("after"), where, "after")
        role.before = _names(meta.get("before"), where, "before")
        role.depends = _names(meta.get("depends"), where, "depends")
    defaults = _load_optional(path / "defaults.yml")
    if defaults is not None:
        if not isinstance(defaults, dict):
            raise ConfigError("defaults.yml must be a mapping of variables", where=str(path / "defaults.yml"))
        role.defaults = _plain(defaults)
    tasks = _load_optional(path / "tasks.yml")
    if tasks is not None:
        role.steps = _parse_steps(name, path / "tasks.yml", tasks)
    handlers = _load_optional(path / "handlers.yml")
    if handlers is not None:
        role.handlers = _parse_handlers(name, path / "handlers.yml", handlers)
    for step in role.steps:
        for handler in step.notify:
            if handler not in role.handlers:
                raise ConfigError(f"step {step.name} notifies {handler!r}, which handlers.yml does not define",
                                  where=step.where)
    return role


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _parse_steps(role: str, path: Path, data: Any) -> list[StepSpec]:
    if not isinstance(data, MarkedList):
        raise ConfigError("tasks.yml must be a list of steps", where=str(path))
    steps: list[StepSpec] = []
    seen: set[str] = set()
    for index, item in enumerate(data):
        where = f"{path}:{data.line_of(index)}"
        if not isinstance(item, MarkedDict):
            raise ConfigError("a step must be a mapping with at least name and kind", where=where)
        name, kind = item.get("name"), item.get("kind")
        if not isinstance(name, str) or not name:
            raise ConfigError("a step needs a name", where=where)
        if name in seen:
            raise ConfigError(f"two steps named {name!r} in one role", where=where)
        seen.add(name)
        if kind not in STEP_KINDS:
            raise ConfigError(f"step {name}: kind {kind!r} is not one of {', '.join(STEP_KINDS)}", where=where)
        when = item.get("when")
        if when is not None and not isinstance(when, (str, bool)):
            raise ConfigError(f"step {name}: when must be an expression", where=where)
        spec = {k: _plain(v) for k, v in item.items() if k not in ("name", "kind", "when", "notify")}
        steps.append(StepSpec(role=role, name=name, kind=kind, spec=spec,
                              when=None if when is None else str(when),
                              notify=_names(item.get("notify"), where, "notify"), where=where))
    return steps


def _parse_handlers(role: str, path: Path, data: Any) -> dict[str, HandlerSpec]:
    if not isinstance(data, MarkedList):
        raise ConfigError("handlers.yml must be a list of handlers", where=str(path))
    handlers: dict[str, HandlerSpec] = {}
    for index, item in enumerate(data):
        where = f"{path}:{data.line_of(index)}"
        if not isinstance(item, MarkedDict) or not isinstance(item.get("name"), str):
            raise ConfigError("a handler is a mapping with a name and a kind", where=where)
        kind = item.get("kind")
        if kind not in HANDLER_KINDS:
            raise ConfigError(f"handler {item['name']}: kind {kind!r} is not one of {', '.join(HANDLER_KINDS)}",
                              where=where)
        handlers[item["name"]] = HandlerSpec(role=role, name=item["name"], kind=kind,
                                             spec={k: _plain(v) for k, v in item.items()
                                                   if k not in ("name", "kind")}, where=where)
    return handlers


def role_folders(root: Path | None = None) -> dict[str, Path]:
    """Every role's folder by name: the project's ``roles/<role>/``, then the roles a vendor ships in its folder
    (``vendors/<vendor>/roles/<role>/``, Vendor.roles_dir) that the project has no role of that name for: a site
    changes a vendor's role by putting its own copy under ``roles/``."""
    folder = roles_dir(root)
    if not folder.is_dir():
        raise ConfigError(f"no roles folder at {folder}")
    found = {p.name: p for p in sorted(folder.iterdir()) if p.is_dir() and not p.name.startswith(".")}
    for vendor in vendors():
        shipped = vendor.roles_dir()
        if shipped is not None:
            for path in sorted(shipped.iterdir()):
                if path.is_dir() and not path.name.startswith("."):
                    found.setdefault(path.name, path)
    return dict(sorted(found.items()))


def load_roles(root: Path | None = None) -> dict[str, Role]:
    return {name: load_role(path) for name, path in role_folders(root).items()}


def select_roles(roles: dict[str, Role], vendor: str, wanted: list[str] | None = None) -> list[Role]:
    """The roles for a stack's vendor (or exactly ``wanted``), ordered by their ``after``/``depends``."""
    if wanted:
        unknown = [w for w in wanted if w not in roles]
        if unknown:
            raise ConfigError(f"unknown role(s): {', '.join(unknown)}; roles: {', '.join(sorted(roles))}")
        chosen = {name: roles[name] for name in wanted}
    else:
        chosen = {name: role for name, role in roles.items() if role.applies_to(vendor)}
    for role in chosen.values():
        missing = [d for d in role.depends if d not in chosen]
        if missing:
            raise ConfigError(f"role {role.name} depends on {', '.join(missing)}, which is not selected",
                              where=str(role.path / "meta.yml"),
                              hint="add the role(s) to provision_roles / --roles, or drop this one")
    return _toposort(chosen)


def _toposort(chosen: dict[str, Role]) -> list[Role]:
    order: list[Role] = []
    state: dict[str, str] = {}
    # A role's `before` is the other role's `after`: a vendor's roles come ahead of the shared ones they name.
    ahead: dict[str, list[str]] = {name: [] for name in chosen}
    for role in chosen.values():
        for later in role.before:
            if later in ahead:
                ahead[later].append(role.name)

    def visit(name: str, trail: list[str]) -> None:
        if state.get(name) == "done":
            return
        if state.get(name) == "visiting":
            raise ConfigError(f"roles order each other in a cycle: {' -> '.join(trail + [name])}",
                              where=str(chosen[name].path / "meta.yml"))
        state[name] = "visiting"
        role = chosen[name]
        for before in (*role.depends, *role.after, *sorted(ahead[name])):
            if before in chosen:
                visit(before, trail + [name])
        state[name] = "done"
        order.append(role)

    for name in sorted(chosen):
        visit(name, [])
    return order


def merged_defaults(roles: list[Role]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for role in roles:
        out.update(role.defaults)
    return out
