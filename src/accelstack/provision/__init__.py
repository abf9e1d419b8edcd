"""Provisioning: roles as data, a pure plan, an idempotent apply, artifacts by checksum, rolling reboots.

    prepared = prepare(hosts, ProvisionOptions(repo="/srv/accelstack-repo"))
    with HostPool() as fleet:
        plans = provision(fleet, hosts, ProvisionOptions(check_only=True), reporter.add, prepared=prepared)
"""

from __future__ import annotations

from .apply import ProvisionOptions, failed_hosts_of_last_run, plan_all, prepare, provision, survey
from .artifacts import Artifact, ArtifactError, ArtifactRepository, parse_manifest, write_manifest
from .plan import HostPlan, Planner, cluster_context
from .roles import Role, load_roles, select_roles
from .steps import Change, HostView, PlanProblem

__all__ = [
    "Artifact", "ArtifactError", "ArtifactRepository", "Change", "HostPlan", "HostView", "PlanProblem", "Planner",
    "ProvisionOptions", "Role", "cluster_context", "failed_hosts_of_last_run", "load_roles",
    "parse_manifest", "plan_all", "prepare", "provision", "select_roles", "survey", "write_manifest",
]
