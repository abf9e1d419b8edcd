"""invoke's configuration files and environment, read under the accelstack contract: bad input is one line, exit 3.

The defaults live in invoke's configuration under ``accelstack:`` (:mod:`accelstack.tasks.common`), so what
invoke reads is input like a flag: the project's ``invoke.yaml``, ``-f FILE``, ``INVOKE_RUNTIME_CONFIG``, and
``INVOKE_ACCELSTACK_*`` variables. invoke 2.2 lets each mistake out as a traceback (a file that is not YAML, an
``accelstack:`` that is a list, ``deadline: "120s"`` read by the first task that asks, ``INVOKE_ACCELSTACK_FORKS=abc``
cast by ``int()``), and skips a ``-f`` file that does not exist without a word. Here each file is read with the
YAML loader every other accelstack file is read with (``safe_load`` semantics, duplicate keys refused, alias bombs
and runaway nesting refused), its ``accelstack:`` section is checked key by key as the flags are, and the
environment is checked before invoke casts it.

Wrapped once, when this module is imported (by :mod:`accelstack.tasks.common`, so under ``inv`` and the console
script alike), and only for invoke's own ``Config`` (fabric's subclass, built per connection, is left as it is).
Under ``inv``, ``/etc/invoke.yaml`` and ``~/.invoke.yaml`` are read before the task collection is imported, so
those two stay invoke's to report; the console script reads them under these rules too.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from invoke.config import AmbiguousMergeError, Config
from invoke.exceptions import Exit, UncastableEnvVar, UnknownFileType

from ..errors import EXIT_BAD_INPUT, ConfigError
from ..yamlfile import MarkedDict, kind_name, load_marked_file

SECTION = "accelstack"


def _exit(err: ConfigError) -> Exit:
    return Exit(f"accelstack: {err}", code=EXIT_BAD_INPUT)


def _numbers() -> tuple[dict[str, Any], dict[str, Any]]:
    from .common import CONFIG_DEFAULTS, NUMBERS  # the table of settings, declared once there

    return NUMBERS, CONFIG_DEFAULTS


def check_section(data: Any, display: str, sections: Any = None) -> Any:
    """A configuration file's data, checked: a mapping at the top, and its ``accelstack:`` section a mapping of
    known settings with values each setting accepts. ``None`` (an empty file or section) reads as empty. Any
    other key that is a mapping in ``sections`` (invoke's own: ``run``, ``tasks``, ...) must be one here too, or
    invoke's merge fails later with both whole mappings in its message."""
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"a configuration file holds a mapping at the top, not {kind_name(data)}",
                          where=display)
    for key, value in data.items():
        if key != SECTION and isinstance((sections or {}).get(key), dict) and not isinstance(value, (dict,
                                                                                                       type(None))):
            line = f"{display}:{data.line_of(key)}" if isinstance(data, MarkedDict) else display
            raise ConfigError(f"{key}: holds invoke's {key} settings (a mapping), not {kind_name(value)}", where=line)
    section = data.get(SECTION)
    if SECTION not in data:
        return data
    line = f"{display}:{data.line_of(SECTION)}" if isinstance(data, MarkedDict) else display
    if section is None:
        data[SECTION] = {}
        return data
    if not isinstance(section, dict):
        raise ConfigError(f"{SECTION}: holds settings (forks: 64, connect_timeout: 10, ...), not "
                          f"{kind_name(section)}", where=line)
    numbers, defaults = _numbers()
    for key, value in section.items():
        where = f"{display}:{section.line_of(key)}" if isinstance(section, MarkedDict) else display
        if key not in defaults:
            raise ConfigError(f"{SECTION}.{key} is not a setting; known: {', '.join(sorted(defaults))}",
                              where=where)
        # Stored as parsed, so "20" in a file is 20 wherever it is read.
        section[key] = numbers[key].parse(value, f"{SECTION}.{key}", where=where)
    return data


def check_environment(prefix: str, environ: Any = None) -> None:
    """``INVOKE_ACCELSTACK_FORKS`` and its kin hold what their setting accepts (checked before invoke's cast)."""
    numbers, defaults = _numbers()
    environ = os.environ if environ is None else environ
    head = f"{prefix}{SECTION.upper()}_"
    for name, value in environ.items():
        key = name[len(head):].lower() if name.startswith(head) else None
        if key in defaults:
            numbers[key].parse(value, name)


def _is_invokes(config: Any) -> bool:
    return type(config) is Config


def _loader(original: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    def load_yaml(self: Any, path: Any) -> Any:
        if not _is_invokes(self):
            return original(self, path)
        if not os.path.lexists(os.path.expanduser(str(path))) or not os.path.isdir(os.path.dirname(
                os.path.expanduser(str(path))) or "."):
            raise FileNotFoundError(errno.ENOENT, "no such file", str(path))  # invoke's "not here, next suffix"
        try:
            return load_marked_file(Path(os.path.expanduser(str(path))), str(path))
        except ConfigError as err:
            raise _exit(err) from None

    return load_yaml


def _other_loader(original: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    def load(self: Any, path: Any) -> Any:
        if not _is_invokes(self):
            return original(self, path)
        try:
            return original(self, path)
        except OSError as err:
            if err.errno in (errno.ENOENT, errno.ENOTDIR):
                # Not there (a project folder that is really a file has no invoke.json either): the next suffix.
                raise FileNotFoundError(errno.ENOENT, "no such file", str(path)) from None
            raise _exit(ConfigError(f"cannot read: {err.strerror or err}", where=str(path))) from None
        except Exception as err:  # a JSON syntax error, a .py file that raises: the file is wrong, not us
            raise _exit(ConfigError(f"not a configuration file: {type(err).__name__}: {err}",
                                    where=str(path))) from None

    return load


_invoke_load_file = Config._load_file


def _load_file(self: Any, prefix: str, absolute: bool = False, merge: bool = True) -> None:
    if not _is_invokes(self):
        _invoke_load_file(self, prefix, absolute, merge)
        return
    try:
        _invoke_load_file(self, prefix, absolute, False)
    except UnknownFileType:
        path = getattr(self, f"_{prefix}_path", None) or getattr(self, "_runtime_path", None)
        raise _exit(ConfigError("a configuration file ends in .yaml, .yml, .json or .py",
                                where=str(path))) from None
    except IsADirectoryError as err:
        raise _exit(ConfigError("is a folder, not a configuration file", where=err.filename)) from None
    path = getattr(self, f"_{prefix}_path", None)
    if absolute and path is not None and not getattr(self, f"_{prefix}_found", None):
        # invoke skips a -f file that is not there; the person named it, so it is a mistake.
        raise _exit(ConfigError("no such configuration file (named by -f or INVOKE_RUNTIME_CONFIG)", where=str(path)))
    if getattr(self, f"_{prefix}_found", None):
        try:
            self._set(f"_{prefix}", check_section(getattr(self, f"_{prefix}"), str(path), self._defaults))
        except ConfigError as err:
            raise _exit(err) from None
        if merge:
            self.merge()


_invoke_merge = Config.merge


def _merge(self: Any) -> None:
    try:
        _invoke_merge(self)
    except AmbiguousMergeError as err:
        if not _is_invokes(self):
            raise
        raise _exit(ConfigError(f"the configuration files disagree on a setting's shape: {str(err)[:160]}")) from None


_invoke_load_shell_env = Config.load_shell_env


def _load_shell_env(self: Any) -> None:
    if not _is_invokes(self):
        _invoke_load_shell_env(self)
        return
    try:
        check_environment(self._env_prefix)
        _invoke_load_shell_env(self)
    except ConfigError as err:
        raise _exit(err) from None
    except (UncastableEnvVar, ValueError) as err:
        raise _exit(ConfigError(f"an {self._env_prefix}* environment variable: {err}")) from None


def install() -> None:
    """Wrap invoke's configuration loading (idempotent)."""
    if getattr(Config, "_accelstack_checked", False):
        return
    Config._load_yaml = _loader(Config._load_yaml)  # type: ignore[method-assign,assignment]
    Config._load_yml = Config._load_yaml
    Config._load_json = _other_loader(Config._load_json)  # type: ignore[method-assign,assignment]
    Config._load_py = _other_loader(Config._load_py)  # type: ignore[method-assign,assignment]
    Config._load_file = _load_file  # type: ignore[method-assign]
    Config.merge = _merge  # type: ignore[method-assign]
    Config.load_shell_env = _load_shell_env  # type: ignore[method-assign]
    Config._accelstack_checked = True  # type: ignore[attr-defined]


install()
