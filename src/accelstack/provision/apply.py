"""Provisioning a fleet: survey (facts + one state command per host), plan (pure), apply, reboot.

Round trips per host on a converged fleet: one, the facts probe with the state command in the same shell line
(as ``inv facts`` has one); a second only when the facts ask for state the first did not cover (a step whose
rendering needs the facts, a device that /etc/hccn.conf does not list). A host with changes
gets its artifacts uploaded (only those whose remote sha256 differs), all of them verified on the host in one
command before any step runs, then its steps in role order. Every host gets a ``provision`` record; every step
that changed something gets a ``provision.<role>.<step>`` record.
"""

from __future__ import annotations

import json
import shlex
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import AccelstackError, ConfigError, HostError
from ..facts import Facts, ProbeOptions, parse_probe_output, probe_command
from ..facts.gather import PROBE_TIMEOUT, probe, probe_options_for, unreadable_probe
from ..inventory import Host
from ..results.records import Record, error_record, read_run, runs_dir
from ..stacks.components import installed_matches
from ..stacks.context import HostContext, resolve_contexts
from ..transport.connection import Transport
from ..transport.fanout import HostPool
from .artifacts import ArtifactError, ArtifactRepository, remote_verify_command
from .plan import ClusterMember, HostPlan, Planner, cluster_context, require_roles
from .reboot import RebootSettings, rolling_reboot
from .roles import Role, load_roles, merged_defaults, select_roles
from .state import REBOOT_MARKER, RemoteState, StateQuery, parse_state, state_command
from .steps import STEP_KINDS, Change, HostView, mark_reboot_command

CHECK = "provision"
STATE_SEPARATOR = "@@ACCELSTACK-STATE@@"
STATE_TIMEOUT = 60.0


@dataclass
class ProvisionOptions:
    check_only: bool = False
    reboot: bool = False
    batch: int = 1
    repo: str | None = None
    roles: list[str] | None = None
    overrides: dict[str, Any] = field(default_factory=dict)
    roles_root: Path | None = None
    templates_dir: Path | None = None


@dataclass
class HostSurvey:
    """What a host is before anything is applied: its facts and the remote state its steps check."""

    facts: Facts
    state: RemoteState
    state_s: float  # seconds in state round trips after the probe's (0 when the state rode with the probe)


@dataclass
class Prepared:
    """Everything decided before any host is touched."""

    contexts: dict[str, HostContext]
    planners: dict[str, Planner]
    repos: dict[str, ArtifactRepository | None]

    def view(self, name: str, facts: Facts, state: RemoteState | None = None,
             extra: dict[str, Any] | None = None) -> HostView:
        ctx = self.contexts[name]
        repo = self.repos[name]
        return HostView(host=name, facts=facts, state=state or RemoteState(), stack=ctx.stack, vars=ctx.vars,
                        artifacts=repo.artifacts if repo else [], extra=extra or {},
                        repo=str(repo.location) if repo else None)


def prepare(hosts: list[Host], options: ProvisionOptions) -> Prepared:
    """Roles, contexts, planners and repositories; every error here is exit 3, and no host was touched."""
    all_roles = load_roles(options.roles_root)
    contexts = resolve_contexts(hosts, overrides=options.overrides, role_defaults=merged_defaults(list(all_roles.values())))
    planners: dict[str, Planner] = {}
    by_roles: dict[tuple[str, ...], Planner] = {}
    repos: dict[str, ArtifactRepository | None] = {}
    opened: dict[str, ArtifactRepository] = {}
    for name, ctx in contexts.items():
        wanted = options.roles or _listed(ctx.vars.get("provision_roles"))
        selected: list[Role] = select_roles(all_roles, ctx.stack.vendor, wanted)
        require_roles(selected)
        key = tuple(r.name for r in selected)
        if key not in by_roles:
            by_roles[key] = Planner(selected, templates_dir=options.templates_dir)
        planners[name] = by_roles[key]
        location = options.repo or ctx.vars.get("artifact_repo")
        if location:
            location = str(location)
            if location not in opened:
                opened[location] = ArtifactRepository.open(location)
            repos[name] = opened[location]
        else:
            repos[name] = None
    return Prepared(contexts, planners, repos)


def _listed(value: Any) -> list[str] | None:
    if not value:
        return None
    return [str(v) for v in value] if isinstance(value, list) else [v.strip() for v in str(value).split(",")]


def probe_and_state_command(options: ProbeOptions, query: StateQuery) -> str:
    """The facts probe and the state command in one shell line, one round trip (``bundle.collect_command``)."""
    return f"{{ {probe_command(options)}; printf '\\n%s\\n' {STATE_SEPARATOR}; {state_command(query)}; }}"


def probe_and_state(transport: Transport, options: ProbeOptions, query: StateQuery) -> tuple[Facts, RemoteState]:
    result = transport.run(probe_and_state_command(options, query), timeout=PROBE_TIMEOUT + STATE_TIMEOUT)
    probe_text, sep, state_text = result.stdout.partition(f"\n{STATE_SEPARATOR}\n")
    try:
        if not sep:
            raise ValueError("no state separator after the probe")
        facts = parse_probe_output(probe_text)
    except ValueError as exc:
        raise unreadable_probe(transport.host.name, "facts probe + state", result, exc) from None
    return facts, parse_state(state_text)


def survey(pool: HostPool, hosts: list[Host], prepared: Prepared) -> dict[str, HostSurvey | AccelstackError]:
    """Facts and state for every host, on one connection: the probe and the state command in one round trip,
    then a top-up state command only for what the facts added to the query."""

    def work(transport: Transport) -> HostSurvey:
        name = transport.host.name
        ctx = prepared.contexts[name]
        options = probe_options_for(transport.host, ctx)
        planner = prepared.planners[name]
        asked = planner.query_before_facts(prepared.view(name, Facts()))
        if asked is None:
            facts, state = probe(transport, options), RemoteState()
            rest: StateQuery | None = planner.query_for_host(prepared.view(name, facts))
        else:
            facts, state = probe_and_state(transport, options, asked)
            rest = planner.query_for_host(prepared.view(name, facts)).missing(asked, state)
        began = time.monotonic()
        if rest is not None:
            result = transport.run(state_command(rest), timeout=STATE_TIMEOUT)
            state.merge(parse_state(result.stdout), rest)
        return HostSurvey(facts, state, time.monotonic() - began)

    out: dict[str, HostSurvey | AccelstackError] = {}
    for outcome in pool.map(hosts, work):
        if outcome.value is not None:
            out[outcome.host.name] = outcome.value
        else:
            out[outcome.host.name] = outcome.error or HostError("no result", host=outcome.host.name)
    return out


def plan_all(hosts: list[Host], prepared: Prepared, surveyed: dict[str, HostSurvey | AccelstackError]
             ) -> dict[str, HostPlan]:
    """Pure: the cluster context from everyone's facts and state, then each host's plan."""
    members = []
    for host in hosts:
        got = surveyed.get(host.name)
        if isinstance(got, HostSurvey):
            ctx = prepared.contexts[host.name]
            members.append(ClusterMember(host.name, host.address, ctx.stack.vendor, got.facts, got.state, ctx.vars))
    cluster = cluster_context(members)
    plans: dict[str, HostPlan] = {}
    for member in members:
        view = prepared.view(member.name, member.facts, member.state, cluster[member.name])
        try:
            plans[member.name] = prepared.planners[member.name].plan_host(view)
        except ConfigError as err:  # a template that does not render for this host's data
            plans[member.name] = HostPlan(member.name, problems=[str(err)])
    return plans


def check_record(plan: HostPlan, surveyed: HostSurvey) -> Record:
    if plan.problems:
        return Record(host=plan.host, check=CHECK, status="error", summary="; ".join(plan.problems),
                      evidence={"plan": plan.to_dict()},
                      remedy="fix the inventory vars or the artifact repository; nothing was touched")
    lines = [c.summary for c in plan.changes]
    summary = (f"{len(lines)} change(s), {plan.bytes_to_transfer} bytes to transfer, reboot: {plan.reboot}"
               if lines else "no change")
    return Record(host=plan.host, check=CHECK, status="pass", summary=summary,
                  metrics={"changes": len(plan.changes), "bytes_to_transfer": plan.bytes_to_transfer,
                           "reboot": plan.reboot},
                  evidence={"plan": plan.to_dict(), "state_s": round(surveyed.state_s, 3)})


# ----- apply ---------------------------------------------------------------------------------------------


@dataclass
class HostOutcome:
    changed: int = 0
    bytes_uploaded: int = 0
    reboot_needed: bool = False
    steps: list[Record] = field(default_factory=list)


def _component_ok(facts: Facts, change: Change, prepared: Prepared, name: str) -> bool:
    """Whether the installer reached its target, read and compared as the plan and drift read it."""
    if change.component is None or change.target is None:
        return True
    pin = prepared.contexts[name].stack.pins.get(change.component)
    installed = facts.components().get(change.component)
    ok = installed_matches(change.component, change.target, installed, pin.match if pin else None)
    return ok if ok is not None else installed == change.target


def apply_host(transport: Transport, plan: HostPlan, prepared: Prepared,
               on_step: Callable[[Record], None]) -> HostOutcome:
    name = transport.host.name
    outcome = HostOutcome()
    repo = prepared.repos[name]
    uploads = [u for c in plan.changes for u in c.uploads]
    # 1. Every artifact checked against the manifest here before anything leaves this machine.
    locals_: dict[str, Path] = {}
    if uploads:
        if repo is None:
            raise ArtifactError("steps need artifacts but no artifact repository is configured",
                                hint="set artifact_repo in the inventory, or pass --repo")
        for upload in uploads:
            locals_[upload.remote] = repo.local_path(upload.artifact)
    # 2. Upload what differs, then verify every artifact on the host in one command before any step runs.
    folders = sorted({str(Path(u.remote).parent) for u in uploads if u.transfer})
    if folders:
        transport.run("umask 077 && mkdir -p " + " ".join(shlex.quote(f) for f in folders), check=True)
    for upload in uploads:
        if upload.transfer:
            transport.put(locals_[upload.remote], upload.remote, mode=0o600)
            outcome.bytes_uploaded += upload.artifact.size
    if uploads:
        expected = {u.remote: u.artifact.sha256 for u in uploads}
        verify = transport.run(remote_verify_command(expected), timeout=600)
        if not verify.ok:
            bad = [line.split(" ", 1)[1] for line in verify.stdout.splitlines() if line.startswith("mismatch ")]
            transport.run("rm -f -- " + " ".join(bad), timeout=30)
            raise HostError(f"artifact checksum mismatch on the host: {', '.join(bad)}; nothing was installed",
                            host=name, command="sha256sum",
                            hint="the transfer or the host's disk corrupted the file; re-run to upload it again")
    # 3. The steps, in role order.
    reboot_steps: list[str] = []
    notified: dict[str, set[str]] = {}
    for change in plan.changes:
        began = time.monotonic()
        result = STEP_KINDS[change.kind].apply(transport, change)
        if result.reboot_needed or any(plan.handlers.get(h) is not None and plan.handlers[h].kind == "reboot"
                                       for h in change.notify):
            # Recorded on the host at once, not after the last step: a later step that fails must not lose the
            # reboot this one needs (a new driver would otherwise run unnoticed without it).
            reboot_steps.append(change.step)
            transport.run(mark_reboot_command(reboot_steps), check=True, timeout=30)
            outcome.reboot_needed = True
        status, summary = "pass", change.summary
        if change.kind == "installer":
            facts = probe(transport, probe_options_for(transport.host, prepared.contexts[name]))
            if not _component_ok(facts, change, prepared, name):
                have = facts.components().get(change.component or "")
                if result.reboot_needed:
                    status, summary = "warn", f"{change.summary} (reads {have} until the reboot)"
                else:
                    outcome.changed += 1
                    record = Record(host=name, check=f"{CHECK}.{change.step}", status="fail",
                                    summary=f"{change.summary}, but the version file reads {have}",
                                    remedy="read the installer's log on the host", evidence={"output": result.output_tail},
                                    duration_s=round(time.monotonic() - began, 3))
                    on_step(record)
                    outcome.steps.append(record)
                    raise HostError(f"{change.component} did not reach {change.target} (reads {have})", host=name,
                                    command=change.step)
        for handler in change.notify:
            notified.setdefault(handler, set()).add(change.step)
        outcome.changed += 1
        record = Record(host=name, check=f"{CHECK}.{change.step}", status=status, summary=summary,  # type: ignore[arg-type]
                        metrics={"bytes_uploaded": sum(u.bytes for u in change.uploads),
                                 "reboot_needed": result.reboot_needed},
                        evidence={"change": change.describe(), "output": result.output_tail},
                        duration_s=round(time.monotonic() - began, 3))
        on_step(record)
        outcome.steps.append(record)
    # 4. Handlers: a reboot was recorded on the host as its step ran (done by --reboot, in rolling batches);
    # commands run once.
    for handler_name in notified:
        spec = plan.handlers.get(handler_name)
        if spec is not None and spec.kind == "command":
            transport.run(str(spec.spec["command"]), check=True, timeout=600)
    return outcome


def host_record(name: str, plan: HostPlan, outcome: HostOutcome, duration: float) -> Record:
    reboot = outcome.reboot_needed or bool(plan.reboot_pending)
    summary = (f"{outcome.changed} step(s) changed, {outcome.bytes_uploaded} bytes uploaded"
               if outcome.changed else "no change")
    if reboot:
        summary += "; reboot required (inv provision --reboot)"
    return Record(host=name, check=CHECK, status="pass", summary=summary,
                  metrics={"changed": outcome.changed, "bytes_uploaded": outcome.bytes_uploaded,
                           "reboot_required": reboot},
                  evidence={"steps": [r.check for r in outcome.steps]}, duration_s=round(duration, 3))


def provision(pool: HostPool, hosts: list[Host], options: ProvisionOptions,
              on_record: Callable[[Record], None], *, prepared: Prepared | None = None) -> dict[str, HostPlan]:
    """The whole run. Records go to ``on_record`` as they happen; returns the plans (for --check output)."""
    prepared = prepared or prepare(hosts, options)
    started = time.monotonic()
    surveyed = survey(pool, hosts, prepared)
    plans = plan_all(hosts, prepared, surveyed)
    by_name = {h.name: h for h in hosts}
    for name, got in surveyed.items():
        if not isinstance(got, HostSurvey):
            on_record(error_record(name, CHECK, got, time.monotonic() - started))
    if options.check_only:
        for name in (h.name for h in hosts):
            if name in plans:
                on_record(check_record(plans[name], surveyed[name]))  # type: ignore[arg-type]
        return plans
    outcomes: dict[str, HostOutcome] = {}
    durations: dict[str, float] = {}
    failed: set[str] = set()
    to_apply = []
    for host in hosts:
        plan = plans.get(host.name)
        if plan is None:
            continue
        if plan.problems:
            on_record(check_record(plan, surveyed[host.name]))  # type: ignore[arg-type]
            failed.add(host.name)
        else:
            outcomes[host.name] = HostOutcome()
            if plan.changes:
                to_apply.append(host)
    _apply_pass(pool, to_apply, plans, prepared, outcomes, durations, failed, on_record)
    # Installers change the facts the cluster files are rendered from (device count, hccn device IPs): once
    # anything was installed, survey again and bring the rendered files up to date, so the next run is a no-op.
    installed = any(c.kind in ("installer", "pip") for h in to_apply if h.name not in failed
                    for c in plans[h.name].changes)
    if installed:
        healthy = [h for h in hosts if h.name in outcomes and h.name not in failed]
        resurveyed = survey(pool, healthy, prepared)
        replans = plan_all(healthy, prepared, resurveyed)
        again = [h for h in healthy if h.name in replans and replans[h.name].changes
                 and not replans[h.name].problems]
        _apply_pass(pool, again, replans, prepared, outcomes, durations, failed, on_record)
        for name, plan in replans.items():
            plans[name].reboot_pending = plans[name].reboot_pending or plan.reboot_pending
    for host in hosts:
        if host.name in outcomes and host.name not in failed:
            on_record(host_record(host.name, plans[host.name], outcomes[host.name], durations.get(host.name, 0.0)))
    if options.reboot:
        # The marker on the host decides: it covers reboots asked for by this run and by earlier ones.
        candidates = [by_name[name] for name, plan in plans.items() if not plan.problems]
        _reboot(pool, candidates, prepared, options, on_record)
    return plans


def _apply_pass(pool: HostPool, hosts: list[Host], plans: dict[str, HostPlan], prepared: Prepared,
                outcomes: dict[str, HostOutcome], durations: dict[str, float], failed: set[str],
                on_record: Callable[[Record], None]) -> None:
    def work(transport: Transport) -> HostOutcome:
        return apply_host(transport, plans[transport.host.name], prepared, on_record)

    for result in pool.map(hosts, work):
        name = result.host.name
        durations[name] = durations.get(name, 0.0) + result.duration_s
        if result.value is not None:
            total = outcomes.setdefault(name, HostOutcome())
            total.changed += result.value.changed
            total.bytes_uploaded += result.value.bytes_uploaded
            total.reboot_needed = total.reboot_needed or result.value.reboot_needed
            total.steps.extend(result.value.steps)
        else:
            assert result.error is not None
            failed.add(name)
            on_record(error_record(name, CHECK, result.error, durations[name]))


def _reboot(pool: HostPool, marked: list[Host], prepared: Prepared, options: ProvisionOptions,
            on_record: Callable[[Record], None]) -> None:
    if not marked:
        return
    check = pool.map(marked, lambda t: t.run(f"test -e {REBOOT_MARKER}", timeout=15).ok)
    order = {h.name: i for i, h in enumerate(marked)}
    confirmed = sorted((o.host for o in check if o.value), key=lambda h: order[h.name])
    transports = [pool.connect(h) for h in confirmed]

    def settings_for(host: Host) -> RebootSettings:
        vars_ = prepared.contexts[host.name].vars
        return RebootSettings(command=str(vars_.get("reboot_command") or RebootSettings.command),
                              timeout=float(vars_.get("reboot_timeout", 900)),
                              settle=float(vars_.get("reboot_settle", 10)),
                              expect_new_boot=bool(vars_.get("reboot_expect_new_boot", True)))

    rolling_reboot(transports, settings_for, options.batch, on_record)


def failed_hosts_of_last_run(base: Path | None = None) -> list[str] | None:
    """Hosts whose ``provision`` record was error or fail in the newest applying provision run; None if none."""
    folder = runs_dir(base)
    if not folder.is_dir():
        return None
    for run in sorted((p for p in folder.iterdir() if p.is_dir()), reverse=True):
        meta_path = run / "meta.json"
        try:
            meta = json.loads(meta_path.read_text())
        except (OSError, ValueError):
            continue
        if meta.get("kind") != CHECK or meta.get("check_only"):
            continue
        finals = [r for r in read_run(run) if r.check == CHECK] if (run / "results.jsonl").exists() else []
        failed = {r.host for r in finals if r.status in ("error", "fail")}
        planned = meta.get("hosts") or []
        if "finished" not in meta:
            # An interrupted run: every host without a final record counts as failed.
            done = {r.host for r in finals if r.status in ("pass", "warn")}
            failed |= {h for h in planned if h not in done}
        return [h for h in planned if h in failed] or sorted(failed)
    return None
