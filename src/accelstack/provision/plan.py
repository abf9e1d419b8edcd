"""The plan: a pure function of (facts, remote state, stack, roles, vars) -> per host, a list of changes.

Nothing here opens a connection. ``query_for_host`` says what remote state the checks need (built from the
same rendered steps, so the state command and the checks never disagree); ``plan_host`` compares. Problems
that must stop a host before it is touched (an interface that is not there, no artifact for a pin) become
``HostPlan.problems``; the rest of the fleet goes on.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..errors import AccelstackError, ConfigError
from ..facts import Facts
from ..paths import project_root
from ..vendors import get_vendor
from .artifacts import Artifact
from .roles import HandlerSpec, Role, StepSpec
from .state import RemoteState, StateQuery
from .steps import STEP_KINDS, Change, HostView, PlanProblem
from .templating import (
    RankTableServer,
    build_rank_table,
    check_collective_settings,
    collective_env,
    evaluate,
    render_string,
    render_template,
    template_environment,
)

_WHOLE_EXPRESSION = re.compile(r"^\{\{\s*(.+?)\s*\}\}$", re.DOTALL)


@dataclass
class HostPlan:
    host: str
    changes: list[Change] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    handlers: dict[str, HandlerSpec] = field(default_factory=dict)
    reboot_pending: str | None = None  # a reboot asked for by an earlier run and not yet done

    @property
    def bytes_to_transfer(self) -> int:
        return sum(c.bytes_to_transfer for c in self.changes)

    @property
    def reboot(self) -> str:
        if self.reboot_pending or any(c.reboot == "yes" for c in self.changes):
            return "yes"
        return "maybe" if any(c.reboot == "maybe" for c in self.changes) else "no"

    def to_dict(self) -> dict[str, Any]:
        return {"host": self.host, "changes": [c.describe() for c in self.changes], "problems": self.problems,
                "bytes_to_transfer": self.bytes_to_transfer, "reboot": self.reboot,
                "reboot_pending": self.reboot_pending}


class Planner:
    """Roles plus the template environment; plans hosts one at a time."""

    def __init__(self, roles: list[Role], *, templates_dir: Path | None = None) -> None:
        self.roles = roles
        shared = templates_dir or project_root() / "templates"
        self.env = template_environment([r.templates for r in roles if r.templates.is_dir()] + [shared])

    # ----- rendering of step fields -----
    def _value(self, value: Any, context: Mapping[str, Any], where: str, depth: int = 0) -> Any:
        if isinstance(value, str):
            whole = _WHOLE_EXPRESSION.match(value)
            if whole and "{{" not in whole.group(1):
                # "{{ packages }}" keeps its list; a string would lose it.
                result = evaluate(self.env, whole.group(1), context, where)
            else:
                result = render_string(self.env, value, context, where)
            # A variable whose value is itself a template (role defaults built from other vars) renders again.
            if isinstance(result, (str, list, dict)) and depth < 5 and "{{" in str(result):
                return self._value(result, context, where, depth + 1)
            return result
        if isinstance(value, list):
            return [self._value(v, context, where) for v in value]
        if isinstance(value, dict):
            return {k: self._value(v, context, where) for k, v in value.items()}
        return value

    def active_steps(self, view: HostView) -> list[tuple[StepSpec, dict[str, Any]]]:
        """The steps whose ``when`` holds on this host, with their fields rendered."""
        context = view.context()
        out = []
        for role in self.roles:
            for step in role.steps:
                if step.when is not None and not evaluate(self.env, step.when, context, step.where):
                    continue
                fields = {k: self._value(v, context, step.where) for k, v in step.spec.items()}
                fields["_id"] = step.id
                fields["_notify"] = step.notify
                out.append((step, fields))
        return out

    def query_for_host(self, view: HostView) -> StateQuery:
        query = StateQuery()
        if get_vendor(view.stack.vendor).device_ips:
            query.npu_count = device_count(view.facts, view.stack.vendor)
        for step, fields in self.active_steps(view):
            query.merge(STEP_KINDS[step.kind].query(fields, view))
        return query

    def query_before_facts(self, view: HostView) -> StateQuery | None:
        """The query as far as it can be known without the host's facts, so the state command can ride in the
        probe's round trip: the steps rendered against empty facts, plus hccn.conf on an Ascend stack (the
        device count comes with the facts). ``StateQuery.missing`` then says what the real query adds; None
        when the steps do not render without facts (the state command then follows the probe)."""
        try:
            query = self.query_for_host(replace(view, facts=Facts()))
        except AccelstackError:
            return None
        query.hccn_conf = get_vendor(view.stack.vendor).device_ips
        return query

    def plan_host(self, view: HostView) -> HostPlan:
        plan = HostPlan(view.host, reboot_pending=view.state.reboot_marker)
        for role in self.roles:
            plan.handlers.update(role.handlers)
        plan.problems.extend(p.message for p in check_collective_settings(view.vars, view.facts,
                                                                             view.stack.vendor))
        if plan.problems:
            return plan
        for step, fields in self.active_steps(view):
            # Every step is checked even after one has a problem, so the plan lists every missing artifact.
            try:
                if step.kind == "template":
                    fields["_content"] = render_template(self.env, str(fields["src"]), view.context())
                change = STEP_KINDS[step.kind].check(step.id, fields, view)
            except PlanProblem as problem:
                plan.problems.append(f"{step.id}: {problem}")
                continue
            if change is not None:
                change.notify = step.notify
                plan.changes.append(change)
        if plan.problems:
            plan.changes.clear()
        return plan


# ----- the cluster-wide part of the template context ------------------------------------------------------


@dataclass
class ClusterMember:
    name: str
    address: str
    vendor: str
    facts: Facts
    state: RemoteState
    vars: dict[str, Any]


def device_count(facts: Facts, vendor: str) -> int:
    return get_vendor(vendor).device_count(facts) or 0


def _slots(member: ClusterMember) -> int:
    visible = member.vars.get("visible_devices")
    if visible not in (None, ""):
        return len(visible if isinstance(visible, list) else str(visible).split(","))
    count = device_count(member.facts, member.vendor)
    return count or int(member.vars.get("nproc_per_node", 1))


def cluster_context(members: list[ClusterMember]) -> dict[str, dict[str, Any]]:
    """Per host: the hostfile's hosts, this host's node rank, the rendezvous address, the rank table, the
    collective environment. Pure: everything comes from the members' facts, state and vars."""
    if not members:
        return {}
    first = members[0]
    hosts = [{"name": m.name, "address": m.address, "slots": _slots(m)} for m in members]
    addressed = [m for m in members if get_vendor(m.vendor).device_ips]
    rank_table = build_rank_table(
        [RankTableServer(m.vars.get("hccl_server_id") or m.address,
                         [m.state.device_ips.get(i) for i in range(device_count(m.facts, m.vendor))])
         for m in addressed],
        device_port=first.vars.get("hccl_device_port"))
    out: dict[str, dict[str, Any]] = {}
    for rank, member in enumerate(members):
        exports = {str(k): str(v) for k, v in (member.vars.get("env") or {}).items()}
        exports.update(collective_env(member.vars, member.vendor))
        out[member.name] = {
            "cluster": {"hosts": hosts, "nnodes": len(members), "master_addr": first.address,
                        "master_port": int(member.vars.get("master_port", 29500))},
            "node_rank": rank,
            "nproc_per_node": _slots(member),
            "rank_table": rank_table,
            "env_exports": dict(sorted(exports.items())),
        }
    return out


def empty_view(host: str, facts: Facts, context_vars: dict[str, Any], stack: Any,
               artifacts: list[Artifact], extra: dict[str, Any] | None = None,
               state: RemoteState | None = None) -> HostView:
    return HostView(host=host, facts=facts, state=state or RemoteState(), stack=stack, vars=context_vars,
                    artifacts=artifacts, extra=extra or {})


def require_roles(roles: list[Role]) -> None:
    if not roles:
        raise ConfigError("no role applies: nothing to provision",
                          hint="check provision_roles / --roles, and each role's meta.yml vendors")
