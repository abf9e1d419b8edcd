"""One exception tree for accelstack.

Every error a user can cause or meet derives from :class:`AccelstackError`. Subclasses also inherit the
builtin they resemble (``ValueError``, ``ConnectionError``, ``TimeoutError``), so callers that catch builtins keep
working. ``str(err)`` always says what was wrong, where (``file:line``, or host and command) and, when we know,
what to do about it. ``invoke.Exit`` is raised only at the task boundary, from :attr:`AccelstackError.exit_code`.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_FAIL = 1
EXIT_ERROR = 2
EXIT_BAD_INPUT = 3
EXIT_INTERRUPTED = 130


class AccelstackError(Exception):
    """Base of every accelstack error.

    ``where`` is a location (``inventories/npu8.yml:12``, ``host node03: npu-smi info``); ``hint`` is the next step
    for a person. Both are optional and rendered by ``__str__``.
    """

    exit_code = EXIT_ERROR

    def __init__(self, message: str, *, where: str | None = None, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.where = where
        self.hint = hint

    def __str__(self) -> str:
        text = f"{self.where}: {self.message}" if self.where else self.message
        if self.hint:
            text += f"\n  hint: {self.hint}"
        return text


class ConfigError(AccelstackError, ValueError):
    """Bad input or configuration, found before any host is touched (exit code 3)."""

    exit_code = EXIT_BAD_INPUT


class InventoryError(ConfigError):
    """An inventory that cannot be read or is inconsistent."""


class StackError(ConfigError):
    """A stack file that cannot be read, or a stack that breaks a compatibility rule."""


class TemplateError(ConfigError):
    """A template that does not render (undefined variable, syntax error)."""


class PrivilegeError(ConfigError):
    """An operation that needs root was started without it."""


class HostError(AccelstackError):
    """Something went wrong on one host; the run goes on with the others."""

    def __init__(self, message: str, *, host: str, command: str | None = None, hint: str | None = None) -> None:
        where = f"host {host}" + (f": {command}" if command else "")
        super().__init__(message, where=where, hint=hint)
        self.host = host
        self.command = command


class HostUnreachable(HostError, ConnectionError):
    """The host could not be connected to (refused, no route, handshake or auth failure)."""


class CommandTimeout(HostError, TimeoutError):
    """A command, or the whole per-host deadline, ran out."""


class CommandFailed(HostError):
    """A command that had to succeed exited non-zero."""

    def __init__(
        self,
        message: str,
        *,
        host: str,
        command: str,
        exit_status: int,
        stdout: str = "",
        stderr: str = "",
        hint: str | None = None,
    ) -> None:
        super().__init__(message, host=host, command=command, hint=hint)
        self.exit_status = exit_status
        self.stdout = stdout
        self.stderr = stderr
