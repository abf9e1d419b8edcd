"""The task collection: the same tasks behind ``inv`` in a checkout and the ``accelstack`` console script.

Every task follows one flag contract (:mod:`accelstack.tasks.common`), and the collection carries the
``accelstack:`` configuration namespace that holds the defaults (forks, timeouts).
"""

from __future__ import annotations

from invoke import Collection

from . import bundle as bundle_tasks
from . import diagnose as diagnose_tasks
from . import drift as drift_tasks
from . import facts as facts_tasks
from . import lab as lab_tasks
from . import nodecheck as nodecheck_tasks
from . import provision as provision_tasks
from . import report as report_tasks
from . import stack as stack_tasks
from . import validate as validate_tasks
from .common import CONFIG_DEFAULTS, conform


def build_collection() -> Collection:
    root = Collection()
    root.add_task(facts_tasks.facts)
    root.add_task(diagnose_tasks.diagnose)
    root.add_task(bundle_tasks.collect_bundles, name="collect")
    root.add_task(bundle_tasks.analyze)
    root.add_task(drift_tasks.drift)
    root.add_collection(lab_tasks.ns)
    root.add_task(provision_tasks.provision)
    root.add_task(validate_tasks.validate)
    root.add_task(nodecheck_tasks.node_check)
    root.add_task(nodecheck_tasks.node_collective)
    root.add_collection(provision_tasks.repo_ns)
    for report_task in (report_tasks.report, report_tasks.baseline, report_tasks.history,
                        report_tasks.fleet_check):
        root.add_task(report_task)
    root.add_collection(stack_tasks.ns)
    _conform_all(root)
    root.configure({"accelstack": dict(CONFIG_DEFAULTS)})
    return root


def _conform_all(collection: Collection) -> None:
    """Every task, however it was declared, under the same flag contract (-h is help, numbers typed)."""
    for name, existing in list(collection.tasks.items()):
        collection.tasks[name] = conform(existing)
    for sub in collection.collections.values():
        _conform_all(sub)


ns = build_collection()
