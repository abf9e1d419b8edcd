"""``inv diagnose``: name the cause of a failed training job from its logs.

invoke 2.2 has no variadic positional arguments (pyinvoke/invoke#378, #760). ``log`` is one positional that is
also a repeatable flag: ``inv diagnose job/`` and ``inv diagnose rank0.log -l rank1.log.gz`` both work under
``inv``; the ``accelstack`` console script also takes several bare logs, which :func:`spread_positional_logs`
turns into repeated flags before invoke parses them.
"""

from __future__ import annotations

import json as jsonlib
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from invoke import task
from invoke.parser import Argument
from rich.console import Console

from ..errors import ConfigError
from ..results.output import records_table
from .common import AccelstackTask, boundary, inventory_hosts

if TYPE_CHECKING:
    from ..diagnose import Diagnosis
    from ..diagnose.confirm import Confirmation
    from ..inventory import Host, Inventory

HELP = {
    "log": "a log file, a job folder or a .tar(.gz) of one (one bare LOG, more with repeated -l/--log; plain or "
           "gzip by content; '-' reads standard input)",
    "host": "the host the job ran on: its logs are read knowing its vendor (from its stack: CUDA calls on an Ascend "
            "host are the program's), then the checks that confirm each finding run there and say, per finding, "
            "whether the host confirms it (only a node finding a check confirms is a reason to drain)",
    "inventory": "inventory the --host is in (default: local)",
    "json": 'print {"first": ..., "findings": [...]} as JSON on stdout, root cause first; each finding has its cause '
            "and actor (node, job, config, service)",
    "help": "show this help (-h too: a task flag here, or invoke would read it as the positional LOG)",
}

def diagnosis_document(diagnosis: Diagnosis, confirmation: Confirmation | None = None,
                       contexts: set[str] | None = None) -> dict[str, Any]:
    """The JSON document the task prints: findings, plus what was confirmed on which host and what its inventory
    told the reading (``host_contexts``: the host's vendor)."""
    document = diagnosis.to_dict()
    if contexts:
        document["host_contexts"] = sorted(contexts)
    if confirmation is not None:
        document["confirm"] = {"validators": diagnosis.confirm_validators(), **confirmation.to_dict()}
    return document


class _LogsArgument(Argument):
    """A list argument that is also positional. invoke fills a positional while its value is None and a list
    starts as [], so an empty list must read as None: then one bare word is taken as a log, and -l/--log add
    more."""

    help_seen = False

    @property
    def value(self) -> Any:
        value = self._value if self._value is not None else self.default
        # With --help given, no log is needed: an empty list then reads as given.
        return value if value or self.help_seen else None

    @value.setter
    def value(self, arg: str) -> None:
        self.set_value(arg, cast=True)

    def set_value(self, value: Any, cast: bool = True) -> None:
        self.raw_value = value
        self._value = [*(self._value or []), value]


class _HelpArgument(Argument):
    """-h/--help of this task; tells the LOG argument that it need not be filled."""

    partner: _LogsArgument | None = None

    def set_value(self, value: Any, cast: bool = True) -> None:
        super().set_value(value, cast)
        if self.partner is not None:
            self.partner.help_seen = True


class _DiagnoseTask(AccelstackTask):
    """``-h`` stays help (invoke would give it to --host) and ``log`` becomes a :class:`_LogsArgument`."""

    def arg_opts(self, name: str, default: str, taken_names: set[str]) -> dict[str, Any]:
        opts = super().arg_opts(name, default, taken_names | {"h"})
        if name == "help":
            # While the positional LOG is unfilled invoke eats any word, core flags too: `diagnose -h` would
            # read a log named "-h". A task flag is matched before that, so help is one of ours.
            opts["names"] = ["help", "h"]
        return opts

    def get_arguments(self, ignore_unknown_help: bool | None = None) -> list[Argument]:
        arguments = super().get_arguments(ignore_unknown_help)
        by_name = {argument.name: argument for argument in arguments}
        by_name["log"].__class__ = _LogsArgument
        by_name["help"].__class__ = _HelpArgument
        by_name["help"].partner = by_name["log"]  # type: ignore[attr-defined]
        return arguments


@task(klass=_DiagnoseTask, positional=["log"], iterable=["log"], help=HELP, short_flags={"log": "l"})
@boundary
def diagnose(c: Any, log: list[str] | None = None, host: str | None = None, inventory: str | None = None,
             json: bool = False, help: bool = False) -> int:
    """Name the root cause of a failed job from its logs, and who acts on it; exit 1 when something was found.

    Reads every log as one job (ranks interleaved, one file per rank, a job folder or a .tar.gz of it). A job that
    failed always gets a finding (its error quoted, at worst); each says who acts (node: drain or repair once a host
    check confirms; job: the program's owner; config: the launch; service: storage, network, rendezvous, the
    scheduler), shows the lines that prove it with their file, rank, host and time, and what to do. Exit 0: nothing
    failed; 1: findings; 3: a log could not be read (or was cut short and nothing was found before the cut). A
    dangling link in a job folder is skipped with a warning; a cut archive is read up to the cut.
    """
    from ..diagnose import diagnose_paths, render_diagnosis  # loaded when this task runs
    from ..diagnose.render import render_confirmation

    if help:
        _print_help()
        return 0
    paths = [path for path in ([log] if isinstance(log, str) else list(log or [])) if path]
    if not paths:
        raise ConfigError("no log given", hint="inv diagnose LOG [-l LOG ...]; a job folder or .tar.gz works too")
    selected = None
    contexts: set[str] = set()
    if host:  # a bad inventory or a host it does not have is exit 3 before any log is read or host touched
        selected = inventory_hosts(inventory, host)
        contexts = host_contexts(selected[1])
    diagnosis = diagnose_paths(paths, contexts=contexts)
    for note in (*diagnosis.truncated, *diagnosis.skipped):
        print(f"warning: {note}", file=sys.stderr)
    confirmation = None
    if host and selected is not None:
        from ..diagnose.confirm import Confirmation  # the checks' declarations are only needed with --host

        confirmation = (confirm_on_host(diagnosis, *selected) if diagnosis.findings
                        else Confirmation(host, []))
    if json:
        print(jsonlib.dumps(diagnosis_document(diagnosis, confirmation, contexts), indent=2))
    else:
        console = Console()
        if contexts:
            console.print(f"read as a job on {host}: {', '.join(sorted(contexts))} (from its stack in the inventory)")
        console.print(render_diagnosis(diagnosis))
        if confirmation is not None:
            if confirmation.records:
                console.print(records_table(confirmation.records, title=f"confirmed on {host}"))
            console.print(render_confirmation(confirmation))
    return diagnosis.exit_code


def host_contexts(hosts: Sequence[Host]) -> set[str]:
    """What the inventory knows of the job's hosts and a log may not say: their vendor, from their stacks, as the
    diagnosis context of that name (``ascend``: "Torch not compiled with CUDA enabled" there is a program's
    hard-coded CUDA call, not a wrong torch build). Only when every host agrees: a mixed selection says nothing."""
    from ..diagnose.catalog import load_catalog
    from ..stacks import load_stack

    names = [host.vars.get("stack") for host in hosts]
    if not names or not all(names):
        return set()
    vendors = {load_stack(str(name)).vendor for name in set(names)}
    return vendors & set(load_catalog().contexts) if len(vendors) == 1 else set()


def confirm_on_host(diagnosis: Diagnosis, inventory: Inventory, hosts: Sequence[Host]) -> Confirmation:
    """Run, on ``hosts`` of the loaded ``inventory`` (selected from ``--host``), every check declared to confirm one
    of the diagnosis's causes, root cause's first, with the full tier's settings; each finding is then confirmed,
    not confirmed, or undecided by the records of its own checks."""
    # Validation is only needed with --host: a log is read without it.
    from ..diagnose.confirm import Confirmation, confirming_checks, judge_findings
    from ..engines.ssh.run import validate_inventory
    from ..validate.registry import load_registry

    registry = load_registry()
    checks = confirming_checks((finding.cause for finding in diagnosis.findings), registry)
    records = validate_inventory(inventory, hosts, only=set(checks), tier="full") if checks else []
    return Confirmation(",".join(host.name for host in hosts), checks, records,
                        judge_findings(diagnosis.findings, records, registry))


def _print_help() -> None:
    from invoke import Collection, Program

    binary = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else "inv"
    if binary.endswith(".py") or binary == "-c":
        binary = "accelstack"
    program = Program(namespace=Collection(diagnose), binary=binary)
    program.run([binary, "--help", "diagnose"], exit=False)


def spread_positional_logs(argv: Sequence[str], task_name: str = "diagnose") -> list[str]:
    """Rewrite ``... diagnose a.log b.log --json`` as ``... diagnose --log a.log --log b.log --json``.

    Bare words after the task name become logs; the value of a flag that takes one (``--host``/``-o``,
    ``--inventory``/``-i``) is kept as it is. A word that is another task's name cannot be told from a file name,
    so this is for a Program whose command line holds only ``diagnose``.
    """
    args = list(argv)
    if task_name not in args:
        return args
    start = args.index(task_name) + 1
    out = args[:start]
    takes_value = {"--host", "-o", "--log", "-l", "--inventory", "-i"}
    index = start
    logs = 0
    while index < len(args):
        word = args[index]
        if word in takes_value and index + 1 < len(args):
            out.extend((word, args[index + 1]))
            logs += word in ("--log", "-l")
            index += 2
            continue
        if word.startswith("-") and word != "-":
            out.append(word)
        else:
            out.extend(("--log", word))
            logs += 1
        index += 1
    if not logs and not {"-h", "--help"} & set(args[start:]):
        # No log at all: let the task say so (exit 3, one line) instead of invoke's parser (exit 1).
        out.extend(("--log", ""))
    return out

