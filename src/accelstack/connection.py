"""The transport: a small interface (``run``, ``put``, ``get``, ``close``) and its two real implementations.

``SSHTransport`` holds one fabric ``Connection`` per host for the whole run. Commands run on a fresh channel of
that connection's paramiko transport with an explicit timeout on every wait, because fabric's ``run`` opens its
session without one (a dead host then hangs for paramiko's 3600 s channel timeout, fabric #1384). Connecting
is throttled and retried by :mod:`accelstack.fanout`; this module only knows how to connect once.

Host keys are checked against a known_hosts file, loaded once per process and shared by every connection.
Accepting unknown keys is an explicit option and records them in that file.
"""

from __future__ import annotations

import os
import shlex
import signal
import socket
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import paramiko
from fabric import Connection

from .errors import CommandFailed, CommandTimeout, HostUnreachable
from .inventory import Host

DEFAULT_CONNECT_TIMEOUT = 10.0
DEFAULT_COMMAND_TIMEOUT = 120.0


@dataclass
class CommandResult:
    command: str
    stdout: str
    stderr: str
    exit_status: int
    duration_s: float

    @property
    def ok(self) -> bool:
        return self.exit_status == 0


class Transport(Protocol):
    """What every step, probe and validator needs from a host."""

    host: Host

    def run(self, command: str, *, timeout: float | None = None, check: bool = False,
            stdin: bytes | None = None) -> CommandResult: ...

    def put(self, local: str | Path, remote: str, *, mode: int | None = None) -> None: ...

    def get(self, remote: str, local: str | Path) -> None: ...

    def close(self) -> None: ...

    def set_deadline(self, deadline: float | None) -> None: ...


class _Deadline:
    """A per-host deadline: every wait on the host is cut to what is left of it."""

    def __init__(self, host: Host, deadline: float | None) -> None:
        self.host = host
        self.deadline = deadline

    def clip(self, timeout: float | None, command: str) -> float:
        wanted = DEFAULT_COMMAND_TIMEOUT if timeout is None else timeout
        if self.deadline is None:
            return wanted
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise CommandTimeout("the per-host deadline ran out before this command started",
                                 host=self.host.name, command=command)
        return min(wanted, left)


def _checked(result: CommandResult, host: Host, check: bool) -> CommandResult:
    if check and not result.ok:
        tail = (result.stderr or result.stdout).strip().splitlines()[-5:]
        raise CommandFailed(
            f"exited {result.exit_status}" + (": " + " | ".join(tail) if tail else ""),
            host=host.name, command=result.command, exit_status=result.exit_status,
            stdout=result.stdout, stderr=result.stderr,
        )
    return result


class LocalTransport:
    """``connection: local``: this machine, through ``/bin/sh -c``, with the same contract as SSH."""

    def __init__(self, host: Host, *, deadline: float | None = None) -> None:
        self.host = host
        self._deadline = _Deadline(host, deadline)

    def run(self, command: str, *, timeout: float | None = None, check: bool = False,
            stdin: bytes | None = None) -> CommandResult:
        limit = self._deadline.clip(timeout, command)
        started = time.monotonic()
        # A session of its own, so a timeout kills the command's whole process group, not just the shell.
        proc = subprocess.Popen(["/bin/sh", "-c", command], stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        try:
            out, err = proc.communicate(input=stdin, timeout=limit)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            raise CommandTimeout(f"no answer within {limit:.0f} s", host=self.host.name, command=command) from None
        result = CommandResult(command, out.decode(errors="replace"), err.decode(errors="replace"),
                               proc.returncode, time.monotonic() - started)
        return _checked(result, self.host, check)

    def put(self, local: str | Path, remote: str, *, mode: int | None = None) -> None:
        tmp = f"{remote}.accelstack-tmp"
        Path(remote).parent.mkdir(parents=True, exist_ok=True)
        with open(local, "rb") as src, open(tmp, "wb") as dst:
            while chunk := src.read(1 << 20):
                dst.write(chunk)
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, remote)

    def get(self, remote: str, local: str | Path) -> None:
        with open(remote, "rb") as src, open(local, "wb") as dst:
            while chunk := src.read(1 << 20):
                dst.write(chunk)

    def close(self) -> None:
        return None

    def set_deadline(self, deadline: float | None) -> None:
        self._deadline.deadline = deadline


class KnownHosts:
    """One parsed known_hosts file shared by every connection of the process (paramiko #272: loading it per
    connection costs about a second each). With ``accept_new`` an unknown key is added and appended to the file;
    a changed key is always refused."""

    _cache: dict[tuple[str, bool], KnownHosts] = {}
    _cache_lock = threading.Lock()

    def __init__(self, path: Path, accept_new: bool) -> None:
        self.path = path
        self.accept_new = accept_new
        self.keys = paramiko.HostKeys()
        if path.exists():
            self.keys.load(str(path))
        self._lock = threading.Lock()

    @classmethod
    def for_host(cls, host: Host) -> KnownHosts:
        path = Path(host.known_hosts).expanduser() if host.known_hosts else Path("~/.ssh/known_hosts").expanduser()
        key = (str(path), host.accept_new_host_keys)
        with cls._cache_lock:
            if key not in cls._cache:
                cls._cache[key] = cls(path, host.accept_new_host_keys)
            return cls._cache[key]

    def policy(self, host: Host) -> paramiko.MissingHostKeyPolicy:
        known = self

        class _Policy(paramiko.MissingHostKeyPolicy):
            def missing_host_key(self, client: paramiko.SSHClient, hostname: str, key: paramiko.PKey) -> None:
                known.verify(host, hostname, key)

        return _Policy()

    def verify(self, host: Host, hostname: str, key: paramiko.PKey) -> None:
        with self._lock:
            entry = self.keys.lookup(hostname)
            if entry is not None and key.get_name() in entry:
                if entry[key.get_name()] == key:
                    return
                raise HostUnreachable(
                    f"host key for {hostname} does not match {self.path}: possible man-in-the-middle, or the host "
                    "was reinstalled", host=host.name,
                    hint=f"if the host was reinstalled: ssh-keygen -f {self.path} -R {shlex.quote(hostname)}")
            if not self.accept_new:
                raise HostUnreachable(
                    f"host key for {hostname} is not in {self.path}", host=host.name,
                    hint="add it (ssh-keyscan) or set accept_new_host_keys: true for this host in the inventory")
            self.keys.add(hostname, key.get_name(), key)
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as handle:
                handle.write(f"{hostname} {key.get_name()} {key.get_base64()}\n")


def _known_hosts_name(host: Host) -> str:
    return host.address if host.port == 22 else f"[{host.address}]:{host.port}"


class SSHTransport:
    """One fabric ``Connection`` per host, opened once, a fresh channel per command."""

    def __init__(self, host: Host, *, connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
                 deadline: float | None = None) -> None:
        self.host = host
        self._deadline = _Deadline(host, deadline)
        connect_kwargs: dict[str, object] = {
            "banner_timeout": connect_timeout,
            "auth_timeout": connect_timeout,
        }
        if host.key_file:
            # Explicit key: no agent, no probing of ~/.ssh (paramiko #2155: probing made connect take 35 s).
            connect_kwargs.update(key_filename=[host.key_file], allow_agent=False, look_for_keys=False)
        self.connection = Connection(host.address, user=host.user or "root", port=host.port,
                                     connect_timeout=connect_timeout, connect_kwargs=connect_kwargs)
        known = KnownHosts.for_host(host)
        # Fabric's client auto-adds unknown keys; we check them against the shared known_hosts instead.
        self.connection.client.set_missing_host_key_policy(known.policy(host))
        self._connect_timeout = connect_timeout

    def open(self) -> None:
        """Connect and authenticate; raises paramiko/socket errors so the caller can retry."""
        try:
            self.connection.open()
        except paramiko.SSHException as exc:
            if "banner" not in str(exc).lower() and "protocol version" not in str(exc).lower():
                raise
            # One line a person can act on; "banner" stays in it so the pool still retries a MaxStartups drop.
            raise paramiko.SSHException(
                f"port {self.host.port} answers but no SSH banner came: not an sshd, or sshd dropped the "
                f"connection ({str(exc).split('[')[0].strip()})") from None
        transport = self.connection.client.get_transport()
        if transport is not None:
            transport.set_keepalive(15)

    def run(self, command: str, *, timeout: float | None = None, check: bool = False,
            stdin: bytes | None = None) -> CommandResult:
        limit = self._deadline.clip(timeout, command)
        transport = self.connection.client.get_transport()
        if transport is None or not transport.is_active():
            raise HostUnreachable("the SSH connection is closed", host=self.host.name, command=command)
        started = time.monotonic()
        deadline = started + limit
        try:
            channel = transport.open_session(timeout=min(limit, self._connect_timeout))
            channel.exec_command(command)
            if stdin:
                channel.sendall(stdin)
            channel.shutdown_write()
            out, err = self._drain(channel, deadline, command)
            status = channel.recv_exit_status()
            channel.close()
        except (OSError, paramiko.SSHException, EOFError) as exc:
            if isinstance(exc, socket.timeout):
                raise CommandTimeout(f"no answer within {limit:.0f} s", host=self.host.name,
                                     command=command) from None
            raise HostUnreachable(f"connection lost: {exc}", host=self.host.name, command=command) from None
        result = CommandResult(command, out, err, status, time.monotonic() - started)
        return _checked(result, self.host, check)

    def _drain(self, channel: paramiko.Channel, deadline: float, command: str) -> tuple[str, str]:
        out: list[bytes] = []
        err: list[bytes] = []
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                channel.close()
                raise CommandTimeout("no answer before the command's time limit", host=self.host.name,
                                     command=command)
            # Block on stdout for at most a second, then drain stderr: stderr never waits long enough for the
            # shared channel window to stall the remote command.
            channel.settimeout(min(left, 1.0))
            try:
                chunk = channel.recv(1 << 16)
            except TimeoutError:
                chunk = None
            while channel.recv_stderr_ready():
                err.append(channel.recv_stderr(1 << 16))
            if chunk == b"":
                break
            if chunk:
                out.append(chunk)
        channel.settimeout(max(deadline - time.monotonic(), 0.1))
        while True:
            try:
                piece = channel.recv_stderr(1 << 16)
            except TimeoutError:
                raise CommandTimeout("the command closed its output but did not exit in time",
                                     host=self.host.name, command=command) from None
            if not piece:
                break
            err.append(piece)
        return b"".join(out).decode(errors="replace"), b"".join(err).decode(errors="replace")

    def put(self, local: str | Path, remote: str, *, mode: int | None = None) -> None:
        # Write beside the target and rename, so a killed transfer never leaves a half-written file in place.
        tmp = f"{remote}.accelstack-tmp"
        sftp = self.connection.sftp()
        sftp.put(str(local), tmp)
        if mode is not None:
            sftp.chmod(tmp, mode)
        sftp.posix_rename(tmp, remote)

    def get(self, remote: str, local: str | Path) -> None:
        self.connection.sftp().get(remote, str(local))

    def close(self) -> None:
        self.connection.close()

    def set_deadline(self, deadline: float | None) -> None:
        self._deadline.deadline = deadline


def transport_for(host: Host, *, connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
                  deadline: float | None = None) -> LocalTransport | SSHTransport:
    if host.connection == "local":
        return LocalTransport(host, deadline=deadline)
    return SSHTransport(host, connect_timeout=connect_timeout, deadline=deadline)
