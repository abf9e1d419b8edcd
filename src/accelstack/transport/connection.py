"""The transport: a small interface (``run``, ``put``, ``get``, ``close``) and its two real implementations.

``SSHTransport`` holds one fabric ``Connection`` per host for the whole run. Commands run on a fresh channel of
that connection's paramiko transport with an explicit timeout on every wait, because fabric's ``run`` opens its
session without one (a dead host then hangs for paramiko's 3600 s channel timeout, fabric #1384). Connecting
is throttled and retried by :mod:`accelstack.transport.fanout`; this module only knows how to connect once.

Host keys are checked against a known_hosts file, loaded once per process and shared by every connection.
Accepting unknown keys is an explicit option and records them in that file. The files a connection reads on this
machine (the ``key:`` and ``known_hosts:`` an inventory names) are checked before any host is touched
(:func:`check_connection_files`): a missing, unreadable or folder path is the inventory's mistake, the same on
every host and every run, so it is exit 3 naming the file and the inventory line, not a per-host "check the host
is up". A key that exists but the host refuses can only be known by connecting: that host's error names the key.

Nothing a run starts may outlive it. Every command runs in a session of its own (sshd gives each exec channel
one; locally we ask for one), and :meth:`cancel` kills that session and every descendant of it (torchrun's ranks
start sessions of their own), on every command still running: Ctrl-C stops the remote work, it does not just
stop waiting for it. A dead link is noticed by keepalives that expect an answer (``ssh_keepalive_s``, default
30 s without one), not by the command's own time limit. In a run that writes to its hosts, the first command on
a host also removes the ``*.accelstack-tmp`` files a killed upload or atomic write left in the folders we write
to; a read-only run (facts, drift, a bundle) leaves the host as it found it.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import itertools
import os
import re
import shlex
import signal
import socket
import subprocess
import threading
import time
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import CommandFailed, CommandTimeout, HostError, HostUnreachable, InventoryError
from ..inventory import Host

if TYPE_CHECKING:
    import paramiko

# paramiko and fabric are imported by the SSH transport alone (.sshlib, when the first SSH connection is made):
# node-check and anything else that runs commands here (LocalTransport) never pays for them, a tenth of a CPU-second
# at every start. The names that lived here are still found here.
_SSHLIB_NAMES = ("private_key", "shared_fabric_config", "_Connection", "_FleetTransport", "_AEAD_FIRST")


def __getattr__(name: str) -> Any:
    if name in _SSHLIB_NAMES:
        from . import sshlib

        return getattr(sshlib, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

DEFAULT_CONNECT_TIMEOUT = 10.0
DEFAULT_COMMAND_TIMEOUT = 120.0
DEFAULT_KEEPALIVE_DEADLINE = 30.0  # seconds without an answer to a keepalive before the peer is declared dead
KILL_TIMEOUT = 10.0
READER_POLL_S = 1.0  # how often paramiko's reader thread wakes up when nothing arrives, once connected
SID_WAIT = 3.0
SID_MARK = "@accelstack-sid"
_SID_LINE = re.compile(rf"^{SID_MARK} (\d+)\n", re.MULTILINE)
# Where we upload or write atomically: a killed transfer's tmp file is removed by the next run's first command.
UPLOAD_DIRS = ("/var/tmp/accelstack", "/opt/accelstack", "/etc/profile.d", "/etc/ld.so.conf.d")
UPLOAD_DIR_VARS = ("artifact_cache", "env_file", "hostfile_path", "launcher_path", "rank_table_path")


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


class CommandInterrupted(HostError):
    """The run was interrupted (Ctrl-C) while this command ran, or before it started: it did not finish."""


KILL_ROUNDS = 20  # kill_tree_command lists and kills until nothing is left, at most this many times


def kill_tree_command(sid: int) -> str:
    """A shell line that SIGKILLs session ``sid`` (or the process ``sid`` if it leads none) and every
    descendant: torchrun's ranks run in sessions of their own, so killing the session alone would miss them.

    One listing is not enough: a process that forks between ``ps`` and ``kill`` (the shell starting
    ``timeout``, ``timeout`` starting the validator) leaves a child that no listing named, and it runs on to
    its own time limit. So the line lists and kills again until a listing finds nothing alive, at most
    KILL_ROUNDS times. A killed process cannot fork, so each round ends what the last one missed; the sessions
    of everything killed are remembered, so an orphan (its parent killed, it now hangs from init) is still
    found by its session. Zombies are dead already and never count."""
    awk = ("BEGIN {n = split(sids, a, \" \"); for (i = 1; i <= n; i++) want[a[i]] = 1} "
           "$4 !~ /^Z/ {pid[++k] = $1; ppid[k] = $2; sid[k] = $3} "
           "END {for (i = 1; i <= k; i++) if ((sid[i] in want) || (pid[i] in want)) mark[pid[i]] = sid[i]; "
           "more = 1; while (more) {more = 0; for (i = 1; i <= k; i++) "
           "if (!(pid[i] in mark) && (ppid[i] in mark)) {mark[pid[i]] = sid[i]; more = 1}} "
           "p = \"\"; q = \"\"; for (x in mark) {p = p \" \" x; q = q \" \" mark[x]} print p \"|\" q}")
    return (f"sids={int(sid)}; n=0; while [ $n -lt {KILL_ROUNDS} ]; do "
            f"out=$(ps -eo pid=,ppid=,sid=,stat= | awk -v sids=\"$sids\" {shlex.quote(awk)}); "
            "pids=${out%%|*}; [ -z \"${pids# }\" ] && break; sids=\"$sids ${out#*|}\"; "
            "kill -KILL $pids 2>/dev/null; n=$((n + 1)); done; true")


def stale_tmp_command(host_vars: Mapping[str, Any] | None = None) -> str:
    """Removes the ``*.accelstack-tmp`` files that a killed upload or atomic write left behind; silent, never
    fails. The names are ours alone, so nothing else is touched."""
    folders = list(UPLOAD_DIRS)
    for key in UPLOAD_DIR_VARS:
        value = (host_vars or {}).get(key)
        if isinstance(value, str) and value.startswith("/"):
            folders.append(value if key == "artifact_cache" else str(Path(value).parent))
    quoted = " ".join(shlex.quote(f) for f in dict.fromkeys(folders))
    return (f"{{ find {quoted} -maxdepth 3 -type f -name '*.accelstack-tmp' -delete; }} "
            ">/dev/null 2>&1 </dev/null;")


def _strip_sid(stderr: str) -> tuple[int | None, str]:
    match = _SID_LINE.search(stderr)
    if match is None:
        return None, stderr
    return int(match.group(1)), stderr[:match.start()] + stderr[match.end():]


class Transport(Protocol):
    """What every step, probe and validator needs from a host."""

    host: Host

    def run(self, command: str, *, timeout: float | None = None, check: bool = False,
            stdin: bytes | None = None) -> CommandResult: ...

    def put(self, local: str | Path, remote: str, *, mode: int | None = None) -> None: ...

    def get(self, remote: str, local: str | Path) -> None: ...

    def close(self) -> None: ...

    def set_deadline(self, deadline: float | None) -> None: ...

    def cancel(self) -> None: ...


class _Running:
    """The commands running on one transport, so :meth:`cancel` can kill them; thread-safe."""

    def __init__(self, sweep_first: bool = True) -> None:
        self.cancelled = threading.Event()
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self.sids: dict[int, int | None] = {}
        self.killed: set[int] = set()
        self.first = sweep_first

    def start(self, host: Host, command: str) -> int:
        with self._lock:
            if self.cancelled.is_set():
                raise CommandInterrupted("not run: the run was interrupted", host=host.name, command=command)
            token = next(self._ids)
            self.sids[token] = None
            return token

    def take_first(self) -> bool:
        with self._lock:
            first, self.first = self.first, False
            return first

    def cancel(self) -> dict[int, int | None]:
        """Mark the run cancelled; the running commands (token -> session id) are now killed ones."""
        with self._lock:
            self.cancelled.set()
            running = dict(self.sids)
            self.killed.update(running)
            return running

    def end(self, token: int, host: Host, command: str) -> None:
        with self._lock:
            self.sids.pop(token, None)
            killed = token in self.killed
        if killed:
            raise CommandInterrupted("interrupted (Ctrl-C) before it finished", host=host.name, command=command)


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

    def __init__(self, host: Host, *, deadline: float | None = None, sweep_stale_tmp: bool = True) -> None:
        self.host = host
        self._deadline = _Deadline(host, deadline)
        self._running = _Running(sweep_stale_tmp)

    def run(self, command: str, *, timeout: float | None = None, check: bool = False,
            stdin: bytes | None = None) -> CommandResult:
        limit = self._deadline.clip(timeout, command)
        token = self._running.start(self.host, command)
        prefix = stale_tmp_command(self.host.vars) + " " if self._running.take_first() else ""
        started = time.monotonic()
        try:
            # A session of its own: a timeout or Ctrl-C kills the command's whole tree, not just the shell.
            proc = subprocess.Popen(["/bin/sh", "-c", prefix + command],
                                    stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
            self._running.sids[token] = proc.pid
            if self._running.cancelled.is_set():
                _kill_local_tree(proc.pid)
            try:
                out, err = proc.communicate(input=stdin, timeout=limit)
            except subprocess.TimeoutExpired:
                _kill_local_tree(proc.pid)
                proc.communicate()
                raise CommandTimeout(f"no answer within {limit:.0f} s", host=self.host.name,
                                     command=command) from None
        finally:
            self._running.end(token, self.host, command)
        result = CommandResult(command, out.decode(errors="replace"), err.decode(errors="replace"),
                               proc.returncode, time.monotonic() - started)
        return _checked(result, self.host, check)

    def cancel(self) -> None:
        """Kill every command running here, and refuse new ones: the run was interrupted."""
        for sid in self._running.cancel().values():
            if sid is not None:
                _kill_local_tree(sid)

    def put(self, local: str | Path, remote: str, *, mode: int | None = None) -> None:
        if self._running.cancelled.is_set():
            raise CommandInterrupted("not copied: the run was interrupted", host=self.host.name,
                                     command=f"put {remote}")
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


def _kill_local_tree(sid: int) -> None:
    try:
        subprocess.run(["/bin/sh", "-c", kill_tree_command(sid)], timeout=KILL_TIMEOUT,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        pass
    try:
        os.killpg(sid, signal.SIGKILL)  # without ps/awk: at least the command's own process group
    except OSError:
        pass


class KnownHosts:
    """One known_hosts file, read once per process and shared by every connection, indexed by host name.

    paramiko's ``HostKeys`` builds a key object for every line when it loads and compares a host against every
    entry when it looks one up: with a fleet's file that is a scan of the whole file per host (98k name matches
    for 256 hosts). Here a plain name is one dict lookup and keys are compared as their base64 text; hashed
    names (``|1|salt|hmac``, HashKnownHosts) are checked one HMAC per hashed entry, as ssh does. Exact names
    only, as paramiko: no wildcard patterns. A key marked ``@revoked`` is refused; ``@cert-authority`` lines
    are not used (no certificates). With ``accept_new`` an unknown key is added and appended to the file; a
    changed key is always refused."""

    _cache: dict[tuple[str, bool], KnownHosts] = {}
    _cache_lock = threading.Lock()

    def __init__(self, path: Path, accept_new: bool) -> None:
        self.path = path
        self.accept_new = accept_new
        self._plain: dict[str, dict[str, set[str]]] = {}  # host -> key type -> base64 keys
        self._hashed: list[tuple[bytes, bytes, str, str]] = []  # salt, hmac-sha1 of the name, key type, base64
        self._revoked: set[str] = set()
        self._lock = threading.Lock()
        if path.exists():
            for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
                self._add_line(line)

    def _add_line(self, line: str) -> None:
        fields = line.split()
        if not fields or fields[0].startswith("#"):
            return
        marker = fields.pop(0) if fields[0].startswith("@") else None
        if len(fields) < 3:
            return
        names, kind, blob = fields[:3]
        if marker == "@revoked":
            self._revoked.add(blob)
            return
        if marker is not None:
            return
        for name in names.split(","):
            if name.startswith("|1|"):
                try:
                    _, _, salt, digest = name.split("|")
                    self._hashed.append((base64.b64decode(salt), base64.b64decode(digest), kind, blob))
                except (ValueError, binascii.Error):
                    continue
            elif name:
                self._plain.setdefault(name, {}).setdefault(kind, set()).add(blob)

    def known_keys(self, hostname: str) -> dict[str, set[str]]:
        """The keys on file for ``hostname``: key type -> base64 keys."""
        found = {kind: set(blobs) for kind, blobs in self._plain.get(hostname, {}).items()}
        encoded = hostname.encode()
        for salt, digest, kind, blob in self._hashed:
            if hmac.compare_digest(hmac.new(salt, encoded, hashlib.sha1).digest(), digest):
                found.setdefault(kind, set()).add(blob)
        return found

    @classmethod
    def for_host(cls, host: Host) -> KnownHosts:
        path = known_hosts_path(host)
        problem = _file_problem(path, "known_hosts", missing_ok=True)
        if problem:
            raise HostUnreachable(problem, host=host.name, hint=f"fix known_hosts at {host.where_of('known_hosts')}")
        key = (str(path), host.accept_new_host_keys)
        with cls._cache_lock:
            if key not in cls._cache:
                cls._cache[key] = cls(path, host.accept_new_host_keys)
            return cls._cache[key]

    def policy(self, host: Host) -> paramiko.MissingHostKeyPolicy:
        import paramiko  # loaded with the SSH transport (see _SSHLIB_NAMES)

        known = self

        class _Policy(paramiko.MissingHostKeyPolicy):
            def missing_host_key(self, client: paramiko.SSHClient, hostname: str, key: paramiko.PKey) -> None:
                known.verify(host, hostname, key)

        return _Policy()

    def verify(self, host: Host, hostname: str, key: paramiko.PKey) -> None:
        kind, blob = key.get_name(), key.get_base64()
        with self._lock:
            if blob in self._revoked:
                raise HostUnreachable(f"host key for {hostname} is marked @revoked in {self.path}", host=host.name,
                                      hint="the host presents a key its owner revoked: find out why before "
                                           "connecting to it")
            known = self.known_keys(hostname)
            if kind in known:
                if blob in known[kind]:
                    return
                raise HostUnreachable(
                    f"host key for {hostname} does not match {self.path}: possible man-in-the-middle, or the host "
                    "was reinstalled", host=host.name,
                    hint=f"if the host was reinstalled: ssh-keygen -f {self.path} -R {shlex.quote(hostname)}")
            if not self.accept_new:
                raise HostUnreachable(
                    f"host key for {hostname} is not in {self.path}", host=host.name,
                    hint="add it (ssh-keyscan) or set accept_new_host_keys: true for this host in the inventory")
            line = f"{hostname} {kind} {blob}"
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                with self.path.open("a+b") as handle:
                    # A file whose last line has no newline (edited by hand): the new entry starts a line of its own.
                    end = handle.seek(0, os.SEEK_END)
                    handle.seek(max(0, end - 1))
                    start = b"\n" if end and handle.read(1) != b"\n" else b""
                    handle.write(start + (line + "\n").encode("utf-8"))
            except OSError as err:
                raise HostUnreachable(f"cannot record the host key of {hostname} in {self.path}: "
                                      f"{err.strerror or err}", host=host.name,
                                      hint=f"fix known_hosts at {host.where_of('known_hosts')}") from None
            self._add_line(line)


def known_hosts_path(host: Host) -> Path:
    return Path(host.known_hosts).expanduser() if host.known_hosts else Path("~/.ssh/known_hosts").expanduser()


def _file_problem(path: Path, what: str, *, missing_ok: bool = False) -> str | None:
    """Why ``path`` cannot be read as the ``what`` file, or None when it can (or is absent and may be, and could
    be made: the nearest folder above it that exists is a folder)."""
    if not path.exists():
        if not missing_ok:
            return f"{what} file {path} does not exist"
        above = next((parent for parent in path.parents if parent.exists()), None)
        if above is not None and not above.is_dir():
            return f"{what} file {path} cannot be made: {above} is a file, not a folder"
        return None
    if path.is_dir():
        return f"{what} {path} is a folder, not a file"
    try:
        with path.open("rb") as handle:
            handle.read(1)
    except OSError as err:
        return f"{what} file {path} cannot be read: {err.strerror or err}"
    return None


def check_connection_files(hosts: Any) -> None:
    """Every SSH host's ``key:`` file is there and readable and its ``known_hosts`` is not a folder: an
    InventoryError (exit 3) at the inventory line that names the file, before any host is touched. Each file is
    looked at once, however many hosts share it."""
    seen: set[tuple[str, str]] = set()
    for host in hosts:
        if host.is_local:
            continue
        checks = [("known_hosts", known_hosts_path(host), True)]
        if host.key_file:
            checks.append(("key", Path(host.key_file), False))
        for what, path, missing_ok in checks:
            if (what, str(path)) in seen:
                continue
            seen.add((what, str(path)))
            problem = _file_problem(path, what, missing_ok=missing_ok)
            if problem:
                hint = ("set key: to the private key (a relative path is relative to the inventory's folder)"
                        if what == "key" else "set known_hosts: to a file (it is made when accept_new_host_keys "
                                              "is true), or leave it out for ~/.ssh/known_hosts")
                raise InventoryError(f"host {host.name}: {problem}", where=host.where_of(what), hint=hint)


def _known_hosts_name(host: Host) -> str:
    return host.address if host.port == 22 else f"[{host.address}]:{host.port}"


class _Wakeup:
    """Set while a channel's stdout or stderr holds data or has ended: paramiko's buffers set and clear the
    event they are given; this joins the two into one ``threading.Event`` (paramiko's own ``fileno`` does the
    same with an OS pipe, two descriptors per command, and a channel closed under a waiter never wakes it)."""

    def __init__(self, channel: paramiko.Channel) -> None:
        self.event = threading.Event()
        self._lock = threading.Lock()
        self._ready = [False, False]
        channel.in_buffer.set_event(_WakeupSide(self, 0))
        channel.in_stderr_buffer.set_event(_WakeupSide(self, 1))

    def mark(self, side: int, ready: bool) -> None:
        with self._lock:
            self._ready[side] = ready
            if any(self._ready):
                self.event.set()
            else:
                self.event.clear()

    def wait(self, timeout: float) -> bool:
        return self.event.wait(timeout)


class _WakeupSide:
    """What a paramiko ``BufferedPipe`` calls: ``set`` when data comes or the buffer closes, ``clear`` when
    it has been read empty."""

    def __init__(self, wakeup: _Wakeup, side: int) -> None:
        self.wakeup = wakeup
        self.side = side

    def set(self) -> None:
        self.wakeup.mark(self.side, True)

    def clear(self) -> None:
        self.wakeup.mark(self.side, False)


class SSHTransport:
    """One fabric ``Connection`` per host, opened once, a fresh channel per command."""

    def __init__(self, host: Host, *, connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
                 deadline: float | None = None, sweep_stale_tmp: bool = True) -> None:
        from .sshlib import _Connection, _FleetTransport, private_key, shared_fabric_config

        self.host = host
        self._deadline = _Deadline(host, deadline)
        self._running = _Running(sweep_stale_tmp)
        self._channels: dict[int, paramiko.Channel] = {}
        self._closed = threading.Event()
        self._lost: str | None = None
        self._last_answer = time.monotonic()
        self._cancel_time = 0.0
        self._watched: paramiko.Transport | None = None
        self._asker: threading.Thread | None = None
        self._opened = 0.0
        self.keepalive_deadline = keepalive_deadline_for(host)
        connect_kwargs: dict[str, object] = {
            "banner_timeout": connect_timeout,
            "auth_timeout": connect_timeout,
            "transport_factory": _FleetTransport,  # SSHClient.connect builds it
        }
        if host.key_file:
            # Explicit key: no agent, no probing of ~/.ssh (paramiko #2155: probing made connect take 35 s).
            key = private_key(host.key_file)
            connect_kwargs.update({"pkey": key} if key is not None else {"key_filename": [host.key_file]},
                                  allow_agent=False, look_for_keys=False)
        self.connection = _Connection(host.address, user=host.user or "root", port=host.port,
                                     connect_timeout=connect_timeout, connect_kwargs=connect_kwargs,
                                     config=shared_fabric_config())
        known = KnownHosts.for_host(host)
        # Fabric's client auto-adds unknown keys; we check them against the shared known_hosts instead.
        self.connection.client.set_missing_host_key_policy(known.policy(host))
        self._connect_timeout = connect_timeout

    def open(self) -> None:
        """Connect and authenticate; raises paramiko/socket errors so the caller can retry."""
        import paramiko  # already loaded by __init__ (.sshlib)

        problem = _file_problem(Path(self.host.key_file), "key") if self.host.key_file else None
        if problem:  # found up front by check_connection_files; here for a caller that did not ask
            raise HostUnreachable(problem, host=self.host.name, hint=f"fix key: at {self.host.where_of('key')}")
        try:
            self.connection.open()
        except paramiko.AuthenticationException as exc:
            if not self.host.key_file:
                raise
            # The key is named: which file was refused (or could not be used) is what a person needs to know.
            raise HostUnreachable(f"authentication with key {self.host.key_file} failed: {exc}",
                                  host=self.host.name, command=f"ssh {self.host.user or 'root'}@{self.host.address}",
                                  hint=f"check that its public key is in {self.host.user or 'root'}'s "
                                       f"authorized_keys on {self.host.address} (ssh-copy-id -i "
                                       f"{self.host.key_file}), and that key: at {self.host.where_of('key')} "
                                       "names the right file") from None
        except paramiko.SSHException as exc:
            text = str(exc).lower()
            if self.host.key_file and "key" in text and "banner" not in text:
                # paramiko could not use the key file itself ("not a valid OPENSSH private key file").
                raise HostUnreachable(f"key {self.host.key_file} cannot be used: {exc}", host=self.host.name,
                                      hint=f"key: at {self.host.where_of('key')} must name an OpenSSH private "
                                           "key without a passphrase (ssh-keygen -y -f KEY shows whether it is one)"
                                      ) from None
            if "banner" not in text and "protocol version" not in text:
                raise
            # One line a person can act on; "banner" stays in it so the pool still retries a MaxStartups drop.
            raise paramiko.SSHException(
                f"port {self.host.port} answers but no SSH banner came: not an sshd, or sshd dropped the "
                f"connection ({str(exc).split('[')[0].strip()})") from None
        transport = self.connection.client.get_transport()
        if transport is not None and hasattr(transport.sock, "settimeout"):
            # paramiko's reader thread wakes at every socket timeout (0.1 s) to look for a stop or a rekey: ten
            # wake-ups a second per idle host, about a third of a millisecond of CPU each second per host. The
            # handshake is done; a second is soon enough, and close() never waits for the thread.
            transport.sock.settimeout(READER_POLL_S)
        if transport is not None and self.keepalive_deadline > 0:
            self._opened = self._last_answer = time.monotonic()
            self._watched = transport
            _KeepaliveWatch.add(self)  # the watch starts the asking thread once a first interval has passed

    @property
    def keepalive_interval(self) -> float:
        return max(0.5, self.keepalive_deadline / 3)

    # paramiko's own set_keepalive only sends (want_reply false): a dead peer is never noticed, and a command
    # on a host whose link died waits for its whole time limit. These keepalives want an answer (as OpenSSH's
    # ServerAliveInterval/CountMax do); a peer silent past the deadline is dead and the connection is closed,
    # which ends every command on it at once.
    def _ask_keepalives(self, transport: paramiko.Transport) -> None:
        interval = self.keepalive_interval
        while not self._closed.is_set() and transport.is_active():
            try:
                # Blocks until the answer (sshd replies "failure" to a request it does not know: any reply
                # will do) or until the transport is closed.
                transport.global_request("keepalive@openssh.com", wait=True)
            except Exception:
                return
            if transport.is_active():
                self._last_answer = time.monotonic()
            self._closed.wait(interval)

    def check_keepalive(self) -> None:
        """Called every half second by the process's one watch thread: silent past the deadline is dead.

        The asking thread starts one interval after the connection opened, not at once: a short run (facts on
        a fleet, a second or two) then costs no thread and no round trip per host, and a dead link is still
        declared so at the same moment, the deadline after the last answer (or after the open)."""
        transport = self._watched
        if transport is None or self._closed.is_set() or not transport.is_active():
            return
        now = time.monotonic()
        if self._asker is None and now - self._opened >= self.keepalive_interval:
            self._asker = threading.Thread(target=self._ask_keepalives, args=(transport,), daemon=True,
                                           name=f"accelstack-keepalive-{self.host.name}")
            self._asker.start()
        silent = now - self._last_answer
        if silent > self.keepalive_deadline:
            self._lost = (f"lost the SSH connection: no answer to keepalives for {silent:.0f} s "
                          f"(ssh_keepalive_s {self.keepalive_deadline:g}); the link to {self.host.address} "
                          "or the host went down")
            transport.close()

    def _unreachable(self, message: str, command: str) -> HostUnreachable:
        return HostUnreachable(self._lost or message, host=self.host.name, command=command,
                               hint=f"check {self.host.name}'s link and that it is up, then re-run on it "
                                    f"(--limit {self.host.name})" if self._lost else None)

    def run(self, command: str, *, timeout: float | None = None, check: bool = False,
            stdin: bytes | None = None) -> CommandResult:
        import paramiko  # already loaded by __init__ (.sshlib)

        limit = self._deadline.clip(timeout, command)
        transport = self.connection.client.get_transport()
        if transport is None or not transport.is_active():
            raise self._unreachable("the SSH connection is closed", command)
        token = self._running.start(self.host, command)
        prefix = stale_tmp_command(self.host.vars) + " " if self._running.take_first() else ""
        started = time.monotonic()
        deadline = started + limit
        try:
            try:
                channel = transport.open_session(timeout=min(limit, self._connect_timeout))
                self._channels[token] = channel
                if token in self._running.killed:
                    raise EOFError("cancelled before it started")
                # sshd runs each exec channel in a session of its own; its id goes first on stderr so that
                # cancel() can kill the command's whole tree on the host.
                channel.exec_command(f"echo {SID_MARK} $$ >&2; {prefix}{command}")
                if stdin:
                    channel.sendall(stdin)
                channel.shutdown_write()
                out, err = self._drain(channel, deadline, command, token)
                if self._lost or token in self._running.killed:
                    raise EOFError("closed")
                if not channel.status_event.wait(max(deadline - time.monotonic(), 0.1)):
                    raise CommandTimeout("the command closed its output but did not exit in time",
                                         host=self.host.name, command=command)
                status = channel.exit_status
                channel.close()
            except (OSError, paramiko.SSHException, EOFError) as exc:
                if isinstance(exc, socket.timeout) and not self._lost:
                    raise CommandTimeout(f"no answer within {limit:.0f} s", host=self.host.name,
                                         command=command) from None
                if token in self._running.killed:
                    raise CommandInterrupted("interrupted (Ctrl-C) before it finished", host=self.host.name,
                                             command=command) from None
                raise self._unreachable(f"connection lost: {exc}", command) from None
            if self._lost and token not in self._running.killed:
                raise self._unreachable("connection lost", command)
        finally:
            self._channels.pop(token, None)
            self._running.end(token, self.host, command)
        result = CommandResult(command, out, err, status, time.monotonic() - started)
        return _checked(result, self.host, check)

    def _drain(self, channel: paramiko.Channel, deadline: float, command: str,
               token: int) -> tuple[str, str]:
        out: list[bytes] = []
        err: list[bytes] = []
        # Sleep until stdout or stderr has data or the channel ends, at most a second, then read both without
        # blocking: stderr never waits long enough for the shared channel window to stall the remote command,
        # and the session id is read the moment it comes. The 0.05 s recv timeout this replaces, until the id
        # came, woke every command twenty times a second while a busy host started it: in a profile of facts on
        # a loaded machine, more CPU than any other part of running the command.
        wakeup = _Wakeup(channel)
        channel.settimeout(0.0)
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                channel.close()
                raise CommandTimeout("no answer before the command's time limit", host=self.host.name,
                                     command=command)
            wakeup.wait(min(left, 1.0))
            try:
                chunk = channel.recv(1 << 16)
            except TimeoutError:
                chunk = None
            while channel.recv_stderr_ready():
                err.append(channel.recv_stderr(1 << 16))
            if self._running.sids.get(token) is None and err:
                sid, _rest = _strip_sid(b"".join(err).decode(errors="replace"))
                if sid is not None:
                    self._running.sids[token] = sid
            if token in self._running.killed:
                # Cancelled before cancel() knew this command's session: kill it here, once its id is in.
                sid = self._running.sids.get(token)
                if sid is not None or time.monotonic() > self._cancel_time + SID_WAIT:
                    if sid is not None and not channel.closed:
                        self._kill_remote([sid])
                    channel.close()
                    break
            if chunk == b"":  # end of output; a closed channel (killed, link lost) reads as that too
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
        _sid, stderr = _strip_sid(b"".join(err).decode(errors="replace"))
        return b"".join(out).decode(errors="replace"), stderr

    def cancel(self) -> None:
        """Kill every command running on the host (its whole session tree) and refuse new ones. A command whose
        session id has not come yet is killed by its own reader the moment it comes (see _drain)."""
        self._cancel_time = time.monotonic()
        running = self._running.cancel()
        known = {t: sid for t, sid in running.items() if sid is not None}
        self._kill_remote(list(known.values()))
        for token in known:
            channel = self._channels.get(token)
            if channel is not None:
                channel.close()

    def _kill_remote(self, sids: list[int]) -> None:
        import paramiko  # already loaded by __init__ (.sshlib)

        transport = self.connection.client.get_transport()
        if not sids or transport is None or not transport.is_active():
            return  # the host is gone: its commands' own `timeout` limits end them there
        try:
            channel = transport.open_session(timeout=KILL_TIMEOUT)
            channel.exec_command("; ".join(kill_tree_command(sid) for sid in sids))
            channel.shutdown_write()
            channel.status_event.wait(KILL_TIMEOUT)
            channel.close()
        except (OSError, paramiko.SSHException, EOFError):
            pass

    def put(self, local: str | Path, remote: str, *, mode: int | None = None) -> None:
        # Write beside the target and rename, so a killed transfer never leaves a half-written file in place
        # (and the next run's first command removes the tmp file it left).
        if self._running.cancelled.is_set():
            raise CommandInterrupted("not uploaded: the run was interrupted", host=self.host.name,
                                     command=f"put {remote}")
        tmp = f"{remote}.accelstack-tmp"
        sftp = self.connection.sftp()
        sftp.put(str(local), tmp)
        if mode is not None:
            sftp.chmod(tmp, mode)
        sftp.posix_rename(tmp, remote)

    def get(self, remote: str, local: str | Path) -> None:
        self.connection.sftp().get(remote, str(local))

    def close(self) -> None:
        self._closed.set()
        self.connection.close()

    def set_deadline(self, deadline: float | None) -> None:
        self._deadline.deadline = deadline


class _KeepaliveWatch:
    """One thread for every SSH connection of the process (not one per host) that checks their keepalives."""

    _lock = threading.Lock()
    _members: weakref.WeakSet[SSHTransport] = weakref.WeakSet()
    _thread: threading.Thread | None = None

    @classmethod
    def add(cls, transport: SSHTransport) -> None:
        with cls._lock:
            cls._members.add(transport)
            if cls._thread is None or not cls._thread.is_alive():
                cls._thread = threading.Thread(target=cls._loop, name="accelstack-keepalive-watch", daemon=True)
                cls._thread.start()

    @classmethod
    def _loop(cls) -> None:
        while True:
            time.sleep(0.5)
            with cls._lock:
                members = list(cls._members)
            for member in members:
                try:
                    member.check_keepalive()
                except Exception:
                    pass  # one connection's trouble never stops the watch over the others


def keepalive_deadline_for(host: Host) -> float:
    """``ssh_keepalive_s`` from the inventory (0 turns keepalives off), else 30 s."""
    value = host.vars.get("ssh_keepalive_s")
    try:
        return DEFAULT_KEEPALIVE_DEADLINE if value is None else max(0.0, float(value))
    except (TypeError, ValueError):
        return DEFAULT_KEEPALIVE_DEADLINE


def transport_for(host: Host, *, connect_timeout: float = DEFAULT_CONNECT_TIMEOUT, deadline: float | None = None,
                  sweep_stale_tmp: bool = True) -> LocalTransport | SSHTransport:
    """``sweep_stale_tmp``: the first command removes what a killed upload or atomic write left; False for a
    read-only run (facts, drift, a bundle), which leaves the host exactly as it found it."""
    if host.connection == "local":
        return LocalTransport(host, deadline=deadline, sweep_stale_tmp=sweep_stale_tmp)
    return SSHTransport(host, connect_timeout=connect_timeout, deadline=deadline, sweep_stale_tmp=sweep_stale_tmp)
