"""The validator registry: every check's declaration (``accelstack/validate/checks/``, one module per check family),
resolved against the host-side scripts in ``accelstack/hostside/validators/``; ``--tier`` and ``--only`` select from
it.

A declaration module holds a tuple ``CHECKS`` of :class:`~accelstack.validate.checks.Check`; this module loads
every one (a module whose name starts with ``_`` is not a declaration), refuses a declaration that is wrong (an
unknown tier, a script or runner that is not there, a check declared twice: exit 3, naming the module) and sorts them by
tier, then name. Both folders ship inside the package, so a wheel runs as a checkout does.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import pkgutil
from collections.abc import Iterable
from pathlib import Path
from types import ModuleType

from ..errors import ConfigError
from ..paths import hostside
from . import checks as _declarations
from .checks import PYTHONS, SCOPES, TIERS, Check
from .judge import Judge

__all__ = ["PYTHONS", "SCOPES", "TIERS", "Check", "all_checks", "declarations_dir", "judge_for",
           "load_declarations", "load_registry", "select", "validators_dir"]

def validators_dir() -> Path:
    """The host validators, shipped inside the package: a wheel runs them as a checkout does."""
    return hostside("validators")


def declarations_dir() -> Path:
    """The check declarations, one module per check family."""
    return Path(_declarations.__file__).parent


def _shipped_modules() -> list[ModuleType]:
    names = sorted(m.name for m in pkgutil.iter_modules(_declarations.__path__) if not m.name.startswith("_"))
    return [importlib.import_module(f"{_declarations.__name__}.{name}") for name in names]


def _modules_in(folder: Path) -> list[ModuleType]:
    """The declaration modules of another folder (a test's, a site's), loaded by path as members of the package
    (their ``from . import Check`` works) without replacing the shipped ones."""
    modules = []
    for path in sorted(folder.glob("*.py")):
        if path.name.startswith("_"):
            continue
        spec = importlib.util.spec_from_file_location(f"{_declarations.__name__}.{path.stem}", path)
        if spec is None or spec.loader is None:
            raise ConfigError("not a python module", where=str(path))
        module = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(module)
        except Exception as err:
            raise ConfigError(f"the declaration does not load: {type(err).__name__}: {err}", where=str(path)) from err
        modules.append(module)
    return modules


def load_declarations(folder: Path | None = None) -> list[Check]:
    """Every check the declaration modules declare (the shipped ones, or those of ``folder``), in module order,
    each with ``declared_in`` set to its module's file."""
    if folder is not None and not folder.is_dir():
        raise ConfigError(f"no check declarations folder at {folder}")
    modules = _shipped_modules() if folder is None or folder.resolve() == declarations_dir().resolve() \
        else _modules_in(folder)
    found: list[Check] = []
    for module in modules:
        where = str(module.__file__)
        declared = getattr(module, "CHECKS", None)
        if not isinstance(declared, tuple) or not declared or not all(isinstance(c, Check) for c in declared):
            raise ConfigError("a declaration module needs CHECKS = (Check(...), ...)", where=where)
        for check in declared:
            problems = check.problems()
            if problems:
                raise ConfigError(f"check {check.name or '?'}: {'; '.join(problems)}", where=where)
            found.append(dataclasses.replace(check, declared_in=where))
    return found


def load_registry(folder: Path | None = None, declarations: Path | None = None) -> list[Check]:
    """Every declared check, its script found in ``folder`` (default: the shipped validators); sorted by tier,
    then name. ``declarations`` is the folder of declaration modules (default: the shipped ones)."""
    folder = folder or validators_dir()
    if not folder.is_dir():
        raise ConfigError(f"no validators folder at {folder}", hint="reinstall accelstack: the package ships them")
    found: list[Check] = []
    for check in load_declarations(declarations):
        path = None
        if check.script is not None:
            path = folder / check.script
            if not path.is_file():
                raise ConfigError(f"check {check.name} names script {check.script}, which is not in {folder}",
                                  where=check.declared_in)
        if check.runner is not None:
            try:
                check.run_function()
            except ValueError as err:
                raise ConfigError(f"check {check.name}: {err}", where=check.declared_in) from err
        found.append(dataclasses.replace(check, path=path))
    names = [c for v in found for c in v.checks]
    duplicates = sorted({c for c in names if names.count(c) > 1})
    if duplicates:
        raise ConfigError(f"check(s) declared twice: {', '.join(duplicates)}",
                          where=", ".join(sorted({v.declared_in for v in found if set(v.checks) & set(duplicates)})))
    return sorted(found, key=lambda v: (TIERS.index(v.tier), v.name))


def all_checks(registry: Iterable[Check]) -> list[str]:
    return [c for v in registry for c in v.checks]


def judge_for(registry: Iterable[Check], record_check: str) -> Judge | None:
    """The control-side judge of a record (``memory.devices``, ``allreduce``): its check's declared ``judge``."""
    return next((v.judge for v in registry if v.owns(record_check)), None)


def select(registry: Iterable[Check], tier: str = "standard", only: set[str] | None = None) -> list[Check]:
    """The validators a run executes: every one in the tier, or (with ``only``) those producing a named check,
    whatever their tier. An unknown name is a configuration error (exit 3), before any host is touched."""
    if tier not in TIERS:
        raise ConfigError(f"--tier {tier!r} is not one of {', '.join(TIERS)}")
    registry = list(registry)
    if only:
        known = set(all_checks(registry))
        unknown = sorted(only - known)
        if unknown:
            raise ConfigError(f"--only names unknown check(s): {', '.join(unknown)}",
                              hint=f"checks: {', '.join(sorted(known))}")
        return [v for v in registry if set(v.checks) & only]
    return [v for v in registry if v.in_tier(tier)]
