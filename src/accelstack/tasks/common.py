"""What every task shares: the error boundary, the flag contract and the defaults held in invoke's configuration.

Tasks are thin: they parse flags, call the package, and turn its result into an exit code. This is the only
place that raises ``invoke.Exit``.

The flag contract, the same for every task:

- ``-h`` is help. invoke derives a short flag from each parameter's first free letter (``-h`` became
  ``--host-timeout`` in provision, ``--host`` in history); :class:`AccelstackTask` derives none, and a task
  names the few it wants (``short_flags``).
- Numeric flags are declared once, in :data:`NUMBERS`: their type, range and placeholder. invoke 2.2 types a
  flag by its default (``type(default)(value)``: a ``ValueError`` traceback for ``--forks abc``) and knows no
  range; here a numeric flag parses to its type or stops with one line and exit 3, at parse time, before any
  task runs. Their defaults are ``None`` in the signatures and come from the configuration (:func:`setting`).
- Defaults (forks, timeouts) live in invoke's configuration under ``accelstack:`` (:data:`CONFIG_DEFAULTS`),
  so ``invoke.yaml`` (or ``-f FILE``) sets them; an ``ACCELSTACK_FORKS``-style environment variable wins
  over the files, a flag over everything.

Three behaviours of invoke 2.2's parser are adjusted here, once, when this module is imported (by the task
collection, so under ``inv`` and the console script alike): a numeric flag shows its placeholder in --help
(``--forks=INT``, ``--connect-timeout=SECONDS``: invoke shows none for a float), ``-h`` is help even where a
task's positional argument is still missing (invoke fed ``-h`` to the positional), and a parse error (unknown
flag, missing argument) is one line and exit 3 (invoke's is exit 1). Each wraps invoke's own method and
changes nothing else.
"""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import invoke
from invoke.exceptions import Exit, ParseError
from invoke.parser import Argument, ParserContext
from invoke.parser.parser import ParseMachine
from invoke.program import Program
from invoke.tasks import Task

from ..errors import EXIT_BAD_INPUT, ConfigError, StackError
from ..values import SECONDS, Number
from ..values import only_checks as only_checks  # the tasks' --only, parsed where node-check can reach it
from .direct import exit_code_of

if TYPE_CHECKING:
    from ..inventory import Host, Inventory

F = TypeVar("F", bound=Callable[..., Any])



# Every numeric flag of every task, by parameter name: one declaration, one parser, one range.
NUMBERS: dict[str, Number] = {
    "forks": Number(int, 1),
    "batch": Number(int, 1),
    "hosts": Number(int, 1, 256),
    "last": Number(int, 0),
    "expect_devices": Number(int, 0),
    "connect_timeout": SECONDS,
    "host_timeout": SECONDS,
    "deadline": SECONDS,
    "busbw_drop_pct": Number(float, 0, 100, placeholder="PERCENT"),
    "keep": Number(int, 1),
}

ENV_PREFIX = "ACCELSTACK_"


def config_defaults() -> dict[str, Any]:
    """The ``accelstack:`` configuration namespace the collection carries: every default, written once."""
    from ..results.metrics import DEFAULT_BUSBW_DROP_PCT
    from ..transport.connection import DEFAULT_CONNECT_TIMEOUT
    from ..transport.fanout import DEFAULT_FORKS

    return {
        "forks": DEFAULT_FORKS,
        "connect_timeout": DEFAULT_CONNECT_TIMEOUT,
        "host_timeout": 3600.0,  # provisioning: a CANN install on a slow disk takes most of an hour
        "deadline": 120.0,  # the multi-node collective
        "busbw_drop_pct": DEFAULT_BUSBW_DROP_PCT,
        "last": 200,
    }


CONFIG_DEFAULTS = config_defaults()


def setting(c: Any, name: str, value: Any = None) -> Any:
    """A numeric option's value: the flag, else ``ACCELSTACK_NAME``, else ``accelstack.NAME`` in invoke's
    configuration (invoke.yaml, ``-f FILE``, the collection's defaults); typed and range-checked (exit 3)."""
    spec = NUMBERS[name]
    if value is not None:
        return spec.parse(value, "--" + name.replace("_", "-"))
    env = ENV_PREFIX + name.upper()
    if os.environ.get(env, "").strip():
        return spec.parse(os.environ[env], env)
    configured = _configured(c).get(name)
    if configured is not None:
        return spec.parse(configured, f"configuration accelstack.{name}")
    return spec.parse(CONFIG_DEFAULTS[name], f"default {name}")


def explicit_setting(c: Any, name: str, value: Any = None) -> Any:
    """:func:`setting`, but ``None`` where only the built-in default would answer (no flag, no environment, no
    configured value other than the default): a per-host inventory var that the domain reads next (the
    inventory's ``multinode_deadline_s`` under ``--deadline``) then comes before the built-in default."""
    if value is None and not os.environ.get(ENV_PREFIX + name.upper(), "").strip():
        configured = _configured(c).get(name)
        if configured is None:
            return None
        if NUMBERS[name].parse(configured, f"configuration accelstack.{name}") == CONFIG_DEFAULTS[name]:
            return None
    return setting(c, name, value)


def _configured(c: Any) -> Mapping[str, Any]:
    config = getattr(c, "config", None)
    if config is None:
        return {}
    try:
        section = config["accelstack"]
    except (KeyError, TypeError, AttributeError):
        return {}
    return section if hasattr(section, "get") else {}


class NumberArgument(Argument):
    """An invoke argument that parses through :class:`Number`: a bad value is one line and exit 3."""

    def __init__(self, spec: Number, **kwargs: Any) -> None:
        # kind int shows INT in --help; float flags get their own placeholder through _help_for below.
        super().__init__(kind=int if spec.kind is int else str, **kwargs)
        self.spec = spec
        self.placeholder = spec.placeholder

    def set_value(self, value: Any, cast: bool = True) -> None:
        self.raw_value = value
        try:
            self._value = self.spec.parse(value, "--" + sorted(self.names, key=len)[-1].replace("_", "-"))
        except ConfigError as err:
            raise Exit(f"accelstack: {err}", code=err.exit_code) from None


class AccelstackTask(Task):
    """A task under the accelstack flag contract: no derived short flags, numeric flags typed and ranged."""

    def __init__(self, body: Callable[..., Any], *, short_flags: Mapping[str, str] | None = None,
                 **kwargs: Any) -> None:
        kwargs["auto_shortflags"] = False
        super().__init__(body, **kwargs)
        self.short_flags = dict(short_flags or {})

    def arg_opts(self, name: str, default: Any, taken_names: set[str]) -> dict[str, Any]:
        opts: dict[str, Any] = super().arg_opts(name, default, taken_names)
        short = self.short_flags.get(name)
        if short and short != "h" and short not in taken_names:
            opts["names"] = [*opts["names"], short]
        return opts

    def get_arguments(self, ignore_unknown_help: bool | None = None) -> list[Argument]:
        # invoke pops each flag's help from ``self.help`` as it builds the arguments: a second parser built in the
        # same process (the collection is built per command line, tests run many) showed flags with no help.
        kept = dict(self.help)
        try:
            arguments: list[Argument] = super().get_arguments(ignore_unknown_help)
        finally:
            self.help = kept
        out = []
        for arg in arguments:
            spec = NUMBERS.get(arg.attr_name or arg.name or "")
            if spec is None and arg.kind in (int, float):
                spec = Number(arg.kind)  # a number flag nobody declared: still one line, never a traceback
            if spec is not None and arg.kind is not list:
                # The signature's default stays (None for the configured settings, which setting() resolves).
                arg = NumberArgument(spec, names=arg.names, default=arg.default, help=arg.help,
                                     positional=arg.positional, optional=arg.optional, attr_name=arg.attr_name)
            out.append(arg)
        return out


def conform(existing: Task) -> AccelstackTask:
    """A task written with plain ``invoke.task``, under the same contract (used for the whole collection)."""
    if isinstance(existing, AccelstackTask):
        return existing
    return AccelstackTask(existing.body, name=existing._name, aliases=existing.aliases,
                          positional=existing.positional, optional=existing.optional,
                          default=existing.is_default, help=existing.help, pre=existing.pre,
                          post=existing.post, autoprint=existing.autoprint, iterable=existing.iterable,
                          incrementable=existing.incrementable,
                          short_flags={"log": "l"} if "log" in existing.iterable else None)


def task(*args: Any, **kwargs: Any) -> Any:
    """``invoke.task`` with the accelstack flag contract (:class:`AccelstackTask`)."""
    kwargs.setdefault("klass", AccelstackTask)
    return invoke.task(*args, **kwargs)


_invoke_help_for = ParserContext.help_for


def _help_for(self: ParserContext, flag: str) -> tuple[str, str]:
    # invoke 2.2 names a value only for str and int kinds (a float flag read like a switch): numeric flags
    # carry their own placeholder. Arguments without one render exactly as invoke renders them.
    names, text = _invoke_help_for(self, flag)
    placeholder = getattr(self.flags.get(flag), "placeholder", None)
    if placeholder:
        names = names.replace("=STRING", "=" + placeholder).replace("=INT", "=" + placeholder)
    return names, text


ParserContext.help_for = _help_for  # type: ignore[method-assign]

_invoke_handle = ParseMachine.handle


def _handle(self: ParseMachine, token: str) -> None:
    # invoke lets a task's missing positional argument eat any token, so `stack.check -h` looked for a stack
    # named "-h". Help comes first, as it does for every task without a positional.
    context = self.context
    if (token in ("-h", "--help") and context is not None and context.missing_positional_args
            and self.initial is not None and token in self.initial.flags):
        self.initial.flags[token].value = context.name
        for arg in context.missing_positional_args:
            arg.set_value("", cast=False)  # not run: help ends the program before any task
        return
    _invoke_handle(self, token)


ParseMachine.handle = _handle  # type: ignore[method-assign]


def _parse_error(self: ParseMachine, msg: str) -> None:
    # An unknown flag or a missing argument is bad input like any other: one line and exit 3 (invoke's
    # ParseError exits 1, the code that means a host failed a check).
    where = f"{self.context.name}: " if self.context is not None and self.context.name else ""
    raise Exit(f"accelstack: {where}{msg}", code=EXIT_BAD_INPUT)


ParseMachine.error = _parse_error  # type: ignore[method-assign]

_invoke_set_value = Argument.set_value


def _set_value(self: Argument, value: Any, cast: bool = True) -> None:
    # invoke's own numeric flags (--command-timeout/-T) are typed by int(): "abc" was a ValueError traceback. (Under
    # `inv` its core flags are parsed before this module is imported; the console script parses them after.)
    try:
        _invoke_set_value(self, value, cast)
    except (ValueError, TypeError):
        name = sorted(self.names, key=len)[-1]
        flag = ("--" if len(name) > 1 else "-") + name
        raise Exit(f"accelstack: {flag}: {value!r} is not {Number(int).noun if self.kind is int else 'valid'}",
                   code=EXIT_BAD_INPUT) from None


Argument.set_value = _set_value  # type: ignore[method-assign]

_invoke_parse_cleanup = Program.parse_cleanup


def _parse_cleanup(self: Program) -> None:
    # `--help nope` (a ParseError) and `--list nope` (an Exit with code 1) name something that is not there: bad
    # input, exit 3, not the code that means a host failed a check.
    try:
        _invoke_parse_cleanup(self)
    except ParseError as err:
        raise Exit(f"accelstack: {err}", code=EXIT_BAD_INPUT) from None
    except Exit as err:
        if err.code == 1 and err.message:
            raise Exit(f"accelstack: {err.message}", code=EXIT_BAD_INPUT) from None
        raise


Program.parse_cleanup = _parse_cleanup  # type: ignore[method-assign]

# invoke's configuration files and INVOKE_ACCELSTACK_* variables are input like a flag: one line and exit 3.
from . import invoke_config  # noqa: E402,F401  (wraps invoke's Config when imported)


def default_text(name: str) -> str:
    return f"(default {CONFIG_DEFAULTS[name]:g}; accelstack.{name} in invoke.yaml, or {ENV_PREFIX}{name.upper()})"


HELP_COMMON = {
    "inventory": "inventory name (inventories/NAME.yml) or path; Ansible INI/YAML read as they are "
                 "(default: local, this machine)",
    "limit": "host pattern: names, groups, globs, '!exclude', '&intersect', comma-separated",
    "json": "print JSON Lines records on stdout instead of tables",
    "forks": "hosts worked on at once " + default_text("forks"),
    "connect_timeout": "seconds to wait for an SSH connection " + default_text("connect_timeout"),
    "set": "NAME=VALUE variable on the command line (highest precedence); repeatable",
}


def extra_vars(pairs: Iterable[str]) -> dict[str, object]:
    """``--set NAME=VALUE`` pairs as vars (values read as YAML: 8 is an int, true a bool, [1, 2] a list), each
    checked as the inventory's own vars are (``--set expect_devices=abc`` is exit 3, naming the flag)."""
    from ..inventory.vartypes import check_var
    from ..yamlfile import load_marked

    out: dict[str, object] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        name = key.strip()
        if not sep or not name:
            raise ConfigError(f"--set {pair!r}: expected NAME=VALUE")
        try:
            parsed = load_marked(value, f"--set {name}") if value.strip() else ""
        except ConfigError:
            parsed = value  # not YAML (a stray quote): the text as typed
        out[name] = check_var(name, parsed, None, what=f"--set {name}")
    return out


def inventory_hosts(inventory: str | None, limit: str | None, overrides: Mapping[str, Any] | None = None, *,
                    connecting: bool = True) -> tuple[Inventory, list[Host]]:
    """The inventory a task names, loaded once, and the hosts ``--limit`` selects, their stacks checked: what
    the task hands the package. A bad file, pattern or stack is exit 3, before any host is touched; so is a
    ``key:`` or ``known_hosts:`` file that cannot be read, for the hosts a task connects to over SSH
    (``connecting``: not the Slurm engine, which only reads the inventory's vars)."""
    from ..inventory import load_inventory

    inv = load_inventory(inventory)
    hosts = inv.select(limit)
    check_stacks(hosts, overrides)
    if connecting:
        from ..transport.connection import check_connection_files

        check_connection_files(hosts)
    return inv, hosts


def check_stacks(hosts: Iterable[Any], overrides: Mapping[str, Any] | None = None) -> None:
    """Every stack the hosts name exists; an unknown one is refused at the inventory line that names it."""
    from ..stacks import load_stack

    seen: set[str] = set()
    for host in hosts:
        from_cli = bool(overrides and overrides.get("stack"))
        name = (overrides or {}).get("stack") or host.vars.get("stack")
        if not name or str(name) in seen:
            continue
        try:
            load_stack(str(name))
        except StackError as err:
            where = "--set stack" if from_cli else host.where_of("stack")
            raise StackError(f"host {host.name}: {err.message}" + (f" ({err.where})" if err.where else ""),
                             where=where, hint=err.hint) from None
        seen.add(str(name))


def writable_dir(path: Path, what: str) -> Path:
    """``path`` is a folder we can create files in (made if missing); a file there or no permission: exit 3."""
    if path.exists() and not path.is_dir():
        raise ConfigError(f"{what} {path} is a file, not a folder", hint="name a folder (it is made if missing)")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise ConfigError(f"{what} {path} cannot be created: {err.strerror or err}") from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise ConfigError(f"{what} {path} is not writable")
    return path


def writable_file(path: Path, what: str) -> Path:
    """``path`` can be written as a file: not a folder, and its folder exists or can be made (exit 3)."""
    if path.is_dir():
        raise ConfigError(f"{what} {path} is a folder, not a file", hint="name a file, e.g. report.html")
    writable_dir(path.parent if str(path.parent) else Path("."), f"{what}'s folder")
    return path


def check_runs_folder() -> Path:
    """The runs folder (``ACCELSTACK_RUNS``) is a folder we can write, before any host is touched."""
    from ..results.records import runs_dir

    return writable_dir(runs_dir(), "ACCELSTACK_RUNS" if os.environ.get("ACCELSTACK_RUNS", "").strip()
                        else "runs folder")


def quiet_paramiko() -> None:
    """paramiko logs a traceback for each failed handshake (a port that answers but speaks no SSH: five
    tries, five tracebacks per host); the error is already the host's record, so its logger stays quiet."""
    logging.getLogger("paramiko").setLevel(logging.CRITICAL + 1)


def boundary(func: F) -> F:
    """Run a task body; map its integer result or an AccelstackError to the process exit code
    (:func:`accelstack.tasks.direct.exit_code_of`, which the console script's invoke-free node-check shares)."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        quiet_paramiko()
        code = exit_code_of(func, *args, **kwargs)
        if code != 0:
            raise Exit(code=code)
        return None

    return wrapper  # type: ignore[return-value]


def fanout_options(c: Any, forks: Any, connect_timeout: Any, host_timeout: Any = None, *,
                   read_only: bool = False) -> Any:
    """The fan-out settings of a run from its flags and the configuration. ``read_only``: the run only reads
    its hosts (facts, drift, a bundle) and changes nothing on them, not even a stale tmp file."""
    from ..transport.fanout import FanoutOptions

    options = FanoutOptions(forks=setting(c, "forks", forks), connect_timeout=setting(c, "connect_timeout",
                                                                                      connect_timeout),
                            read_only=read_only)
    if host_timeout is not None:  # provisioning's: other tasks keep the fan-out's own per-host deadline
        options.host_deadline = setting(c, "host_timeout", host_timeout)
    return options


def with_vars(hosts: list[Any], overrides: Mapping[str, Any]) -> list[Any]:
    """The hosts with ``--set`` vars on top of their own (for tasks that read host vars directly)."""
    if not overrides:
        return hosts
    import dataclasses

    from ..inventory import merge_layers

    return [dataclasses.replace(host, vars=merge_layers(host.vars, overrides)) for host in hosts]
