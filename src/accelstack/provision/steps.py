"""Step kinds: the Python "modules" behind role steps. Each compares, then acts.

``query`` says what remote state the check needs (checksums, users, ...), gathered for all steps of a host in
one batched command; ``check`` is pure (facts + state + variables -> a :class:`Change` or ``None``); ``apply``
carries a change out over a transport. A converged host yields no change, so ``--check`` is the check half.
"""

from __future__ import annotations

import functools
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..errors import CommandFailed, ConfigError, HostError
from ..facts import Facts
from ..stacks import Stack
from ..stacks.components import COMPONENTS, WITH_TORCH, installed_matches
from ..stacks.versions import VersionError, local_tag, versions_match
from ..transport.connection import Transport
from ..vendors import get_vendor
from .artifacts import Artifact, remote_path
from .state import REBOOT_MARKER, RemoteState, StateQuery
from .templating import atomic_write_command, sha256_text

INSTALL_TIMEOUT = 1800.0
PIP_TIMEOUT = 1800.0
COMMAND_TIMEOUT = 600.0


class PlanProblem(ConfigError):
    """Something that stops a host's plan before anything is touched (no artifact for a pin, a bad setting)."""


@dataclass
class Upload:
    artifact: Artifact
    remote: str
    transfer: bool  # False when the host already holds a file with the manifest's sha256

    @property
    def bytes(self) -> int:
        return self.artifact.size if self.transfer else 0


@dataclass
class FileWrite:
    path: str
    content: str
    mode: int
    owner: str | None = None


@dataclass
class Change:
    step: str  # role.step
    kind: str
    summary: str
    component: str | None = None
    installed: str | None = None
    target: str | None = None
    uploads: list[Upload] = field(default_factory=list)
    writes: list[FileWrite] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)
    notify: tuple[str, ...] = ()
    ok_exit_codes: tuple[int, ...] = (0,)
    reboot_exit_codes: tuple[int, ...] = ()
    reboot_output: str | None = None
    timeout: float = COMMAND_TIMEOUT
    reboot: str = "no"  # "yes": a reboot follows; "maybe": if the installer says so

    @property
    def bytes_to_transfer(self) -> int:
        return sum(u.bytes for u in self.uploads) + sum(len(w.content.encode()) for w in self.writes)

    def describe(self) -> dict[str, Any]:
        return {"step": self.step, "kind": self.kind, "summary": self.summary, "component": self.component,
                "installed": self.installed, "target": self.target, "bytes": self.bytes_to_transfer,
                "uploads": [u.artifact.file for u in self.uploads if u.transfer], "reboot": self.reboot}


@dataclass
class HostView:
    """Everything a check may read about one host; no connection."""

    host: str
    facts: Facts
    state: RemoteState
    stack: Stack
    vars: dict[str, Any]
    artifacts: list[Artifact] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)
    repo: str | None = None  # where the artifacts come from; None: no repository is configured for this host

    @functools.cached_property
    def installed(self) -> dict[str, str | None]:
        """The host's installed versions as drift and validate read them (accelstack.stacks.components)."""
        return self.facts.components()

    def at_pin(self, component: str, version: str | None = None) -> bool:
        """Whether the installed ``component`` meets its pin (or ``version``), compared as drift compares it."""
        pin = self.stack.pins.get(component)
        want = version or (pin.version if pin else None)
        if want is None:
            return True
        return installed_matches(component, want, self.installed.get(component), pin.match if pin else None) is True

    @property
    def cache(self) -> str:
        return str(self.vars.get("artifact_cache") or "/opt/accelstack/cache")

    def context(self) -> dict[str, Any]:
        return {**self.vars, "stack": self.stack, "pins": self.stack.components, "paths": self.stack.paths,
                "vendor": self.stack.vendor, "vendor_rank_table": get_vendor(self.stack.vendor).rank_table,
                "facts": self.facts, "installed": self.installed, "at_pin": self.at_pin,
                "inventory_hostname": self.host, **self.extra}


def _matches(pinned: str, installed: str | None, mode: str) -> bool:
    """Whether an artifact's version is the one a pin names (what is installed compares through
    :meth:`HostView.at_pin`)."""
    if installed is None:
        return False
    try:
        return versions_match(pinned, installed, mode)  # type: ignore[arg-type]
    except (VersionError, ValueError):
        return pinned == installed


def missing_artifact(view: HostView, what: list[str]) -> PlanProblem:
    """The problem for a step that needs artifacts it cannot have; says so when no repository is configured."""
    listed = ", ".join(what)
    if view.repo is None:
        return PlanProblem(f"{listed} must be installed from an artifact repository, and none is configured",
                           hint="set artifact_repo in the inventory (vars), or pass --repo FOLDER|URL; "
                                "`inv repo.build` builds the lab's")
    return PlanProblem(f"the artifact repository {view.repo} has no {listed}",
                       hint="add it to the repository's manifest.yml, or fix the stack's pin")


def find_artifact(artifacts: list[Artifact], component: str, version: str, mode: str = "exact") -> Artifact | None:
    exact = [a for a in artifacts if a.component == component and a.version == version]
    if exact:
        return exact[0]
    near = [a for a in artifacts if a.component == component and _matches(version, a.version, mode)]
    return near[0] if near else None


def _upload(view: HostView, artifact: Artifact, folder: str | None = None) -> Upload:
    target = f"{folder.rstrip('/')}/{artifact.name}" if folder else remote_path(view.cache, artifact)
    return Upload(artifact, target, view.state.checksums.get(target) != artifact.sha256)


def _ints(value: Any) -> tuple[int, ...]:
    if value is None:
        return ()
    items = value if isinstance(value, list) else [value]
    return tuple(int(v) for v in items)


def _as_list(value: Any) -> list[str]:
    if value is None or value == "":
        return []
    if isinstance(value, list):
        return [str(v) for v in value]
    return [v for v in str(value).replace(",", " ").split() if v]


class StepKind:
    kind = ""

    def query(self, fields: dict[str, Any], view: HostView) -> StateQuery:
        return StateQuery()

    def check(self, step_id: str, fields: dict[str, Any], view: HostView) -> Change | None:
        raise NotImplementedError

    def apply(self, transport: Transport, change: Change) -> StepResult:
        return run_change(transport, change)


@dataclass
class StepResult:
    exit_status: int = 0
    reboot_needed: bool = False
    output_tail: list[str] = field(default_factory=list)


def run_change(transport: Transport, change: Change) -> StepResult:
    """Write the change's files, then run its commands; exit codes are judged as the step declared."""
    for write in change.writes:
        transport.run(atomic_write_command(write.path, write.mode, write.owner), check=True,
                      stdin=write.content.encode("utf-8"), timeout=60)
    result = StepResult()
    for command in change.commands:
        done = transport.run(command, timeout=change.timeout)
        output = (done.stdout + "\n" + done.stderr).strip()
        result.output_tail = output.splitlines()[-20:]
        if done.exit_status in change.reboot_exit_codes:
            result.reboot_needed = True
        elif done.exit_status not in change.ok_exit_codes:
            tail = " | ".join(result.output_tail[-5:])
            raise CommandFailed(f"step {change.step} exited {done.exit_status}" + (f": {tail}" if tail else ""),
                                host=transport.host.name, command=command, exit_status=done.exit_status,
                                stdout=done.stdout, stderr=done.stderr)
        result.exit_status = done.exit_status
        if change.reboot_output and re.search(change.reboot_output, output):
            result.reboot_needed = True
    if "reboot" in change.notify:
        result.reboot_needed = True
    return result


class InstallerStep(StepKind):
    """A vendor ``.run`` package: uploaded by checksum, verified on the host, run with the vendor's flags."""

    kind = "installer"

    def _target(self, fields: dict[str, Any], view: HostView) -> tuple[str, str, str] | None:
        component = str(fields["component"])
        pin = view.stack.pins.get(component)
        if pin is None and not fields.get("version"):
            return None  # the stack does not pin it (NNAL on an 8.0 stack): nothing to do
        version = str(fields.get("version") or (pin.version if pin else ""))
        mode = pin.match if pin else "exact"
        return component, version, mode

    def query(self, fields: dict[str, Any], view: HostView) -> StateQuery:
        target = self._target(fields, view)
        if target is None:
            return StateQuery()
        artifact = find_artifact(view.artifacts, *target)
        return StateQuery(checksums={remote_path(view.cache, artifact)} if artifact else set())

    def check(self, step_id: str, fields: dict[str, Any], view: HostView) -> Change | None:
        target = self._target(fields, view)
        if target is None:
            return None
        component, version, mode = target
        installed = view.installed.get(component)
        if view.at_pin(component, version):
            return None
        artifact = find_artifact(view.artifacts, component, version, mode)
        if artifact is None:
            raise missing_artifact(view, [f"{component} {version}"])
        upload = _upload(view, artifact)
        file = shlex.quote(upload.remote)
        run = str(fields.get("run") or "{file} {args}").format(file=file, args=fields.get("args") or "")
        source = fields.get("source")
        if source:
            # NNAL and the kernels need the toolkit's environment; `set -u`-unsafe set_env.sh files exist, so plain.
            run = f". {shlex.quote(str(source))} && {run}"
        reboot = "yes" if "reboot" in fields.get("_notify", ()) else (
            "maybe" if fields.get("reboot_exit_codes") or fields.get("reboot_output") else "no")
        return Change(step=step_id, kind=self.kind, summary=f"{component}: {installed or 'absent'} -> {version}",
                      component=component, installed=installed, target=version, uploads=[upload],
                      commands=[f"chmod 0700 {file} && {run}"], ok_exit_codes=(0,) + _ints(fields.get("ok_exit_codes")),
                      reboot_exit_codes=_ints(fields.get("reboot_exit_codes")),
                      reboot_output=fields.get("reboot_output"), timeout=float(fields.get("timeout", INSTALL_TIMEOUT)),
                      reboot=reboot)


class PipStep(StepKind):
    """A venv at the stack's ``paths.venv`` with exact pins from the uploaded wheelhouse; never an index.

    The step owns every component that lives in that venv: ``python`` (the venv's interpreter), its packages
    (``torch``, ``torch_npu``) and what comes with the torch wheel (``torch_cuda``, the build's CUDA; ``nccl``,
    the NCCL torch loads). Each is compared as drift compares it; any that differs installs the pins again."""

    kind = "pip"

    @staticmethod
    def _packages(fields: dict[str, Any]) -> list[str]:
        return _as_list(fields.get("packages") or ["torch", "torch_npu"])

    def _owned(self, fields: dict[str, Any], view: HostView) -> list[str]:
        packages = self._packages(fields)
        owned = {"python", *packages, *(WITH_TORCH if "torch" in packages else ())}
        return [key for key in COMPONENTS if key in owned and key in view.stack.pins]

    @staticmethod
    def _pins(fields: dict[str, Any], view: HostView) -> list[tuple[str, str]]:
        """(package, version) for each pinned package; torch pinned without a build tag names the build of the
        pinned ``torch_cuda`` (``2.6.0`` with CUDA 12.4 is ``2.6.0+cu124``), so the right wheel is chosen."""
        pins = []
        for component in PipStep._packages(fields):
            pin = view.stack.pins.get(component)
            if pin is None:
                continue
            version = pin.version
            cuda = view.stack.pins.get("torch_cuda")
            if component == "torch" and cuda is not None and local_tag(version) is None:
                version = f"{version}+cu{cuda.version.replace('.', '')}"
            pins.append((component, version))
        return pins

    @staticmethod
    def _nccl_wheels(view: HostView) -> list[Artifact]:
        pin = view.stack.pins.get("nccl")
        if pin is None:
            return []
        return [a for a in view.artifacts if a.nccl_wheel and _matches(pin.version, a.version, pin.match)]

    def _wheels(self, fields: dict[str, Any], view: HostView) -> tuple[list[tuple[str, str]], list[Artifact]]:
        pins = self._pins(fields, view)
        wheels: list[Artifact] = []
        missing = []
        for component, version in pins:
            found = [a for a in view.artifacts if a.is_wheel and a.component == component
                     and _matches(version, a.version, "exact")]
            if not found:
                missing.append(f"{component} {version} (wheel)")
            wheels.extend(found)
        if missing:
            raise missing_artifact(view, missing)
        nccl = self._nccl_wheels(view) if "torch" in self._packages(fields) else []
        wheels.extend(nccl)
        known = set(view.stack.pins) | {"torch", "torch_npu", "torch_cuda"}
        # Dependency wheels (sympy, filelock, ...) are listed under their own names; all of them travel, since
        # pip resolves torch's requirements from the wheelhouse alone (an NCCL wheel at another release does not).
        wheels.extend(a for a in view.artifacts if a.is_wheel and a.component not in known and a not in nccl
                      and not (a.nccl_wheel and "nccl" in view.stack.pins))
        return pins, wheels

    def query(self, fields: dict[str, Any], view: HostView) -> StateQuery:
        wheelhouse = str(fields["wheelhouse"])
        try:
            _, wheels = self._wheels(fields, view)
        except PlanProblem:
            return StateQuery()
        return StateQuery(checksums={f"{wheelhouse.rstrip('/')}/{a.name}" for a in wheels})

    def check(self, step_id: str, fields: dict[str, Any], view: HostView) -> Change | None:
        venv = str(fields["venv"])
        python_pin = view.stack.pins.get("python")
        installed = view.installed
        drift = [(key, installed.get(key), view.stack.pins[key].version) for key in self._owned(fields, view)
                 if not view.at_pin(key)]
        if not drift:
            return None  # at its pins: no wheel is needed, so a missing one is no problem
        judged = str(view.vars.get("stack_python") or view.stack.paths.get("python") or "")
        if judged and not judged.startswith(venv.rstrip("/") + "/"):
            # Facts, drift and validate read the python stack_python names; a venv made elsewhere would change
            # nothing they judge, and the next run would plan it again.
            raise PlanProblem(f"the venv would be made at {venv}, but this host's stack python is {judged} "
                              f"(stack_python), which drift and validate judge",
                              hint=f"set stack_python to {venv}/bin/python (or leave it unset), or leave "
                                   f"python_env out of provision_roles and install "
                                   f"{', '.join(c for c, _, _ in drift)} into {judged} yourself")
        pins, wheels = self._wheels(fields, view)
        requirements = [f"{c.replace('_', '-')}=={v}" for c, v in pins]
        nccl = [a for a in wheels if a.nccl_wheel] if "nccl" in view.stack.pins else []
        if nccl:
            # Named, so an NCCL wheel that was changed under torch goes back to the pin (pip keeps an installed
            # dependency that torch's metadata no longer asks for otherwise).
            requirements.append(f"{nccl[0].nccl_wheel}=={nccl[0].version}")
        elif any(key == "nccl" for key, _, _ in drift) and view.at_pin("torch") and view.at_pin("python"):
            # torch is at its pin, so installing it again would not touch the NCCL it loads.
            pin = view.stack.pins["nccl"]
            raise missing_artifact(view, [f"nccl {pin.version} (the nvidia-nccl wheel torch loads)"])
        wheelhouse = str(fields["wheelhouse"]).rstrip("/")
        uploads = [_upload(view, a, wheelhouse) for a in wheels]
        interpreter = shlex.quote(str(fields["python"]))
        qvenv = shlex.quote(venv)
        vpy = shlex.quote(f"{venv}/bin/python")
        # A venv made by another python, or half made by a killed run, is made again rather than patched.
        want = python_pin.version if python_pin else ""
        make_venv = (f"if ! {vpy} -c 'import pip, sys; sys.exit(0 if sys.version.startswith({want!r}) else 1)' "
                     f">/dev/null 2>&1; then rm -rf {qvenv} && {interpreter} -m venv {qvenv}; fi")
        install = (f"PIP_CONFIG_FILE=/dev/null {vpy} -m pip install --no-index --find-links "
                   f"{shlex.quote(wheelhouse)} --disable-pip-version-check --no-input -q "
                   + " ".join(shlex.quote(r) for r in requirements))
        summary = "; ".join(f"{c}: {i or 'absent'} -> {v}" for c, i, v in drift)
        return Change(step=step_id, kind=self.kind, summary=summary, component=",".join(c for c, _ in pins),
                      installed=", ".join(str(i) for _, i, _ in drift), target=", ".join(v for _, v in pins),
                      uploads=uploads, commands=[make_venv, install], timeout=float(fields.get("timeout", PIP_TIMEOUT)))


class TemplateStep(StepKind):
    """A rendered file: written only when its sha256 differs, atomically, with an explicit mode."""

    kind = "template"

    def __init__(self, render: Callable[[str, dict[str, Any]], str] | None = None) -> None:
        self.render = render

    def query(self, fields: dict[str, Any], view: HostView) -> StateQuery:
        return StateQuery(checksums={str(fields["dest"])})

    def check(self, step_id: str, fields: dict[str, Any], view: HostView) -> Change | None:
        dest = str(fields["dest"])
        content = str(fields["_content"])
        have = view.state.checksums.get(dest)
        if have == sha256_text(content):
            return None
        mode = int(str(fields.get("mode", "0644")), 8)
        return Change(step=step_id, kind=self.kind, summary=f"{dest}: {'changed' if have else 'absent'} -> rendered",
                      writes=[FileWrite(dest, content, mode, fields.get("owner"))])


class UserStep(StepKind):
    kind = "user"

    def query(self, fields: dict[str, Any], view: HostView) -> StateQuery:
        return StateQuery(users={str(fields["user"])}, groups={str(fields.get("group") or fields["user"])})

    def check(self, step_id: str, fields: dict[str, Any], view: HostView) -> Change | None:
        user, group = str(fields["user"]), str(fields.get("group") or fields["user"])
        if user in view.state.users and group in view.state.groups:
            return None
        home = shlex.quote(str(fields.get("home") or f"/home/{user}"))
        shell = shlex.quote(str(fields.get("shell") or "/bin/bash"))
        qu, qg = shlex.quote(user), shlex.quote(group)
        command = (f"getent group {qg} >/dev/null || groupadd {qg}; "
                   f"getent passwd {qu} >/dev/null || useradd -g {qg} -d {home} -m -s {shell} {qu}")
        return Change(step=step_id, kind=self.kind, summary=f"user {user}:{group}: absent -> present",
                      commands=[command])


class PackageStep(StepKind):
    """OS packages from the site's mirror (apt or yum, whichever the host has)."""

    kind = "package"

    def query(self, fields: dict[str, Any], view: HostView) -> StateQuery:
        return StateQuery(packages=set(_as_list(fields.get("packages"))))

    def check(self, step_id: str, fields: dict[str, Any], view: HostView) -> Change | None:
        missing = [p for p in _as_list(fields.get("packages")) if p not in view.state.packages]
        if not missing:
            return None
        names = " ".join(shlex.quote(p) for p in missing)
        command = ("if command -v apt-get >/dev/null; then DEBIAN_FRONTEND=noninteractive apt-get install -y "
                   f"-q {names}; elif command -v dnf >/dev/null; then dnf install -y -q {names}; "
                   f"else yum install -y -q {names}; fi")
        return Change(step=step_id, kind=self.kind, summary=f"packages: missing {', '.join(missing)}",
                      commands=[command])


class CommandStep(StepKind):
    """A command guarded by ``creates`` (a path) and/or ``unless`` (a command that succeeds when done)."""

    kind = "command"

    def query(self, fields: dict[str, Any], view: HostView) -> StateQuery:
        query = StateQuery()
        if fields.get("creates"):
            query.exists.add(str(fields["creates"]))
        if fields.get("unless"):
            query.unless[str(fields["_id"])] = str(fields["unless"])
        return query

    def check(self, step_id: str, fields: dict[str, Any], view: HostView) -> Change | None:
        if not fields.get("creates") and not fields.get("unless"):
            raise PlanProblem(f"step {step_id}: a command step needs creates or unless, or it would run every time")
        if fields.get("creates") and str(fields["creates"]) in view.state.exists:
            return None
        if fields.get("unless") and step_id in view.state.unless_ok:
            return None
        return Change(step=step_id, kind=self.kind, summary=f"run: {fields['command']}",
                      commands=[str(fields["command"])], timeout=float(fields.get("timeout", COMMAND_TIMEOUT)))


STEP_KINDS: dict[str, StepKind] = {k.kind: k for k in (InstallerStep(), PipStep(), TemplateStep(), UserStep(),
                                                        PackageStep(), CommandStep())}


def mark_reboot_command(steps: list[str]) -> str:
    """Record on the host that it needs a reboot, so a later ``--reboot`` run knows (atomic like the rest)."""
    return (f"printf '%s\\n' {shlex.quote(', '.join(steps))} | "
            f"{{ {atomic_write_command(REBOOT_MARKER, 0o644)}; }}")


def host_error(host: str, message: str, hint: str | None = None) -> HostError:
    return HostError(message, host=host, hint=hint)
