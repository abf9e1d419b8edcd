"""The task collection: the same tasks behind ``inv`` in a checkout and the ``accelstack`` console script.

Every task follows one flag contract (:mod:`accelstack.tasks.common`), and the collection carries the
``accelstack:`` configuration namespace that holds the defaults (forks, timeouts).

Task modules are imported only when their tasks are wanted: :data:`TASK_MODULES` names, without importing
anything, the top-level names each module adds, so the console script builds a collection of just the
modules its command line names (``accelstack facts`` imports neither provisioning, reports nor diagnosis: a third
of its start-up time). ``ns``, the whole collection, is built on first use.

A checkout adds task modules of its own (the lab's, ``accelstack_lab.tasks``: test tooling that no wheel ships):
its ``tasks.py`` names them in the same form, as *extra* modules (full module names, each with an ``add_tasks(root)``),
and both ``inv`` and the console script run from the checkout pass them to :func:`build_collection`.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # invoke is imported where a collection is built: tasks.direct runs without it
    from invoke import Collection

# Module (under accelstack.tasks) -> the top-level task and collection names it adds, in --list order.
# tests/test_cli_contract.py checks this table against what each module really adds.
TASK_MODULES: dict[str, tuple[str, ...]] = {
    "facts": ("facts",),
    "diagnose": ("diagnose",),
    "bundle": ("collect", "analyze"),
    "drift": ("drift",),
    "provision": ("provision",),
    "validate": ("validate",),
    "nodecheck": ("node-check", "node-collective"),
    "report": ("report", "baseline", "history", "fleet-check"),
    "stack": ("stack",),
}


# A checkout's own task modules: full module name -> the top-level names its ``add_tasks(root)`` adds.
ExtraModules = Mapping[str, tuple[str, ...]]


def _add_module(root: Collection, name: str) -> None:
    module: Any = importlib.import_module(f"{__name__}.{name}")
    if name == "facts":
        root.add_task(module.facts)
    elif name == "diagnose":
        root.add_task(module.diagnose)
    elif name == "bundle":
        root.add_task(module.collect_bundles, name="collect")
        root.add_task(module.analyze)
    elif name == "drift":
        root.add_task(module.drift)
    elif name == "provision":
        root.add_task(module.provision)
    elif name == "validate":
        root.add_task(module.validate)
    elif name == "nodecheck":
        root.add_task(module.node_check)
        root.add_task(module.node_collective)
    elif name == "report":
        for report_task in (module.report, module.baseline, module.history):
            root.add_task(report_task)
        root.add_task(module.check_fleet, name="fleet-check")  # fleet_check is the nightly check itself (flows/)
    elif name == "stack":
        root.add_collection(module.ns)
    else:
        raise KeyError(name)


def build_collection(modules: Iterable[str] | None = None, extra: ExtraModules | None = None) -> Collection:
    """The collection of the named task modules (keys of :data:`TASK_MODULES`, and of ``extra``: a checkout's
    own), or of every one."""
    from invoke import Collection

    from .common import CONFIG_DEFAULTS, conform

    extra = extra or {}
    wanted = set([*TASK_MODULES, *extra] if modules is None else modules)
    root = Collection()
    for name in TASK_MODULES:  # the table's order, whatever the caller's
        if name in wanted:
            _add_module(root, name)
    for name in extra:
        if name in wanted:
            importlib.import_module(name).add_tasks(root)
    _conform_all(root, conform)
    root.configure({"accelstack": dict(CONFIG_DEFAULTS)})
    return root


def task_names(extra: ExtraModules | None = None) -> dict[str, str]:
    """Every top-level task or collection name -> the module (of :data:`TASK_MODULES`, or ``extra``) adding it."""
    return {name: module for table in (TASK_MODULES, extra or {}) for module, names in table.items() for name in names}


def modules_for(argv: Sequence[str], extra: ExtraModules | None = None) -> set[str] | None:
    """The task modules a command line needs (``extra``: a checkout's own, as :func:`build_collection` takes
    them), or None for all of them: when it names no task (``--list``, bare help, a misspelled name that invoke
    will report) or asks for the task list or completion."""
    words = list(argv[1:])
    if any(word in ("-l", "--list", "--complete", "--print-completion-script") or word.startswith("--list=")
           for word in words):
        return None
    by_name = task_names(extra)
    # A flag's value that happens to equal a task name only imports one module more.
    wanted = {by_name[top] for word in words if not word.startswith("-")
              if (top := word.split(".", 1)[0].replace("_", "-")) in by_name}
    return wanted or None


def _conform_all(collection: Collection, conform: Any) -> None:
    """Every task, however it was declared, under the same flag contract (-h is help, numbers typed)."""
    for name, existing in list(collection.tasks.items()):
        collection.tasks[name] = conform(existing)
    for sub in collection.collections.values():
        _conform_all(sub, conform)


_whole: Collection | None = None


def __getattr__(name: str) -> Any:
    # ``from accelstack.tasks import ns`` (tests): the product's whole collection, built once, when first asked (a
    # checkout's tasks.py builds its own, with the checkout's task modules added).
    global _whole
    if name == "ns":
        if _whole is None:
            _whole = build_collection()
        return _whole
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
