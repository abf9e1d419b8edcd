"""Fan-out: one connection per host per run, a bounded pool, throttled handshakes, one outcome per host.

Fabric's ``ThreadingGroup`` starts a thread per host at once and joins without a timeout; with hundreds of hosts
that is a thundering herd of handshakes that sshd's ``MaxStartups`` (10:30:100 by default) answers by dropping
connections, which paramiko reports as "Error reading SSH protocol banner". Here a pool of ``forks`` workers does
the work, at most ``handshakes`` connections are being set up at any moment to any one sshd (``MaxStartups`` is
per server: a bastion, or many inventory names for one address), at most ``handshakes_total`` in all (the
control side's CPU), and a banner or reset error is retried with backoff. Every host gets an :class:`Outcome`, value or error, and a bad host never stops the others.
"""

from __future__ import annotations

import queue
import random
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Generic, TypeVar

from ..errors import AccelstackError, CommandTimeout, HostError, HostUnreachable
from ..inventory import Host
from .connection import DEFAULT_CONNECT_TIMEOUT, CommandInterrupted, SSHTransport, Transport, transport_for

T = TypeVar("T")

DEFAULT_FORKS = 64
DEFAULT_HANDSHAKES = 8
DEFAULT_HANDSHAKES_TOTAL = 32
DEFAULT_HOST_DEADLINE = 900.0


@dataclass
class FanoutOptions:
    forks: int = DEFAULT_FORKS
    handshakes: int = DEFAULT_HANDSHAKES  # in flight to one sshd (address and port)
    handshakes_total: int = DEFAULT_HANDSHAKES_TOTAL  # in flight in all
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT
    host_deadline: float = DEFAULT_HOST_DEADLINE
    connect_attempts: int = 5
    # A run that writes to its hosts sweeps a killed upload's tmp files first; a read-only run touches nothing.
    read_only: bool = False


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C: the remote work was stopped and the finished records kept; exit 130, as a shell expects. A
    KeyboardInterrupt, so code that catches ``Exception`` to go on past one bad inventory does not go on."""


@dataclass
class Outcome(Generic[T]):
    """What happened on one host: a value, or the error that stopped it (never both)."""

    host: Host
    value: T | None = None
    error: AccelstackError | None = None
    duration_s: float = 0.0

    @property
    def ok(self) -> bool:
        return self.error is None


def _is_transient(exc: BaseException) -> bool:
    """Errors that sshd's MaxStartups throttling or a busy accept queue produce, worth another try."""
    if isinstance(exc, (ConnectionResetError, EOFError, ConnectionAbortedError)):
        return True
    paramiko = sys.modules.get("paramiko")  # not loaded: no SSH connection was made, so this is not its error
    if paramiko is not None and isinstance(exc, paramiko.SSHException) and not isinstance(
        exc, (paramiko.AuthenticationException, paramiko.BadHostKeyException)
    ):
        text = str(exc).lower()
        return "banner" in text or "reset" in text or "eof" in text or "no existing session" in text
    return False


def _describe_connect_error(exc: BaseException) -> str:
    paramiko = sys.modules.get("paramiko")  # as in _is_transient
    if paramiko is not None and isinstance(exc, paramiko.AuthenticationException):
        return f"authentication failed: {exc}"
    if paramiko is not None and isinstance(exc, paramiko.ssh_exception.NoValidConnectionsError):
        return "connection refused (is sshd running?)"
    if isinstance(exc, (socket.timeout, TimeoutError)):
        return "connect timed out (host down, or the link to it?)"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror.lower()
    return str(exc) or type(exc).__name__


class HostPool:
    """The connections of one run: opened on first use, reused by every phase, closed at the end.

    ``pool.map(hosts, work)`` calls ``work(transport)`` for each host in the pool and yields outcomes as they
    finish (so records can be written as they arrive).
    """

    def __init__(self, options: FanoutOptions | None = None) -> None:
        self.options = options or FanoutOptions()
        self._transports: dict[str, Transport] = {}
        self._lock = threading.Lock()
        self._handshakes_total = threading.BoundedSemaphore(max(1, self.options.handshakes_total))
        self._per_server: dict[tuple[str, int], threading.BoundedSemaphore] = {}
        self._began: dict[str, float] = {}
        self.cancelled = threading.Event()

    def connect(self, host: Host, deadline: float | None = None) -> Transport:
        """The host's transport, connecting (throttled, retried) on first use."""
        with self._lock:
            existing = self._transports.get(host.name)
        if existing is not None:
            return existing
        if self.cancelled.is_set():
            raise CommandInterrupted("not connected: the run was interrupted", host=host.name)
        transport = transport_for(host, connect_timeout=self.options.connect_timeout, deadline=deadline,
                                  sweep_stale_tmp=not self.options.read_only)
        if isinstance(transport, SSHTransport):
            self._open_with_retry(transport, host)
        with self._lock:
            self._transports[host.name] = transport
        if self.cancelled.is_set():  # interrupted while this host was connecting
            transport.cancel()
        return transport

    def cancel(self) -> None:
        """Ctrl-C: kill what every host is running for this run (in parallel, each bounded) and refuse new
        work. Workers then end quickly: their commands raise CommandInterrupted."""
        self.cancelled.set()
        with self._lock:
            transports = list(self._transports.values())
        if not transports:
            return
        with ThreadPoolExecutor(max_workers=min(32, len(transports)),
                                thread_name_prefix="accelstack-cancel") as pool:
            list(pool.map(_cancel_quietly, transports))

    def _server_slot(self, host: Host) -> threading.BoundedSemaphore:
        key = (host.address, host.port)
        with self._lock:
            if key not in self._per_server:
                self._per_server[key] = threading.BoundedSemaphore(max(1, self.options.handshakes))
            return self._per_server[key]

    def _open_with_retry(self, transport: SSHTransport, host: Host) -> None:
        attempts = max(1, self.options.connect_attempts)
        delay = 0.2
        for attempt in range(1, attempts + 1):
            with self._server_slot(host), self._handshakes_total:
                try:
                    transport.open()
                    return
                except HostError:
                    raise
                except Exception as exc:
                    if attempt < attempts and _is_transient(exc):
                        last = exc
                    else:
                        raise HostUnreachable(_describe_connect_error(exc), host=host.name,
                                              command=f"ssh {host.user or 'root'}@{host.address}:{host.port}",
                                              hint="check the host is up and sshd runs; `inv facts --limit "
                                                   f"{host.name}` retries just this host") from None
            # Jitter so retries do not arrive at sshd in lockstep.
            time.sleep(delay + random.uniform(0, delay))
            delay = min(delay * 2, 3.0)
        raise HostUnreachable(f"gave up after {attempts} tries: {last}", host=host.name)

    def map(self, hosts: Iterable[Host], work: Callable[[Transport], T], *,
            release: bool = False) -> Iterator[Outcome[T]]:
        """``work(transport)`` on every host, in the pool; each outcome is yielded as it finishes.

        ``release``: this is the run's last use of these hosts (facts, drift, a bundle), so each host's
        connection is closed the moment its work ends: a large fleet then never holds hundreds of idle SSH
        connections, and their reader threads, while the last hosts finish.
        """
        hosts = list(hosts)
        if not hosts:
            return
        forks = max(1, min(self.options.forks, len(hosts)))
        grace = self.options.connect_timeout + 5
        pool = ThreadPoolExecutor(max_workers=forks, thread_name_prefix="accelstack-host")
        # Finished futures arrive on a queue: one put per host. (``wait(FIRST_COMPLETED)`` arms a waiter on
        # every pending future each time one finishes: quadratic in the fleet.)
        finished: queue.SimpleQueue[Future[Outcome[T]]] = queue.SimpleQueue()
        try:
            started: dict[Future[Outcome[T]], Host] = {}
            for host in hosts:
                future = pool.submit(self._work_one, host, work, release)
                started[future] = host
                future.add_done_callback(finished.put)
            pending = set(started)
            next_check = time.monotonic() + 1.0
            while pending:
                try:
                    future = finished.get(timeout=max(0.0, next_check - time.monotonic()))
                    if future in pending:
                        pending.discard(future)
                        yield future.result()
                except queue.Empty:
                    pass
                if time.monotonic() < next_check:
                    continue
                next_check = time.monotonic() + 1.0
                stragglers = [f for f in pending if self._overdue(started[f], grace)]
                for future in stragglers:
                    # A worker stuck past its deadline (a connect that ignores its timeout): report it, move on.
                    pending.discard(future)
                    host = started[future]
                    yield Outcome(host, error=CommandTimeout(
                        f"no result within the per-host deadline of {self.options.host_deadline:.0f} s",
                        host=host.name), duration_s=self.options.host_deadline)
        finally:
            # Never wait here for a stuck worker: the run reports it and goes on; its own timeouts end it.
            pool.shutdown(wait=False, cancel_futures=True)

    def _overdue(self, host: Host, grace: float) -> bool:
        begun = self._began.get(host.name)
        return begun is not None and time.monotonic() - begun > self.options.host_deadline + grace

    def _work_one(self, host: Host, work: Callable[[Transport], T], release: bool = False) -> Outcome[T]:
        began = time.monotonic()
        self._began[host.name] = began
        deadline = began + self.options.host_deadline
        try:
            transport = self.connect(host, deadline)
            transport.set_deadline(deadline)  # each phase of a run gets its own per-host deadline
            value = work(transport)
            return Outcome(host, value=value, duration_s=time.monotonic() - began)
        except AccelstackError as err:
            return Outcome(host, error=err, duration_s=time.monotonic() - began)
        except Exception as exc:  # a bug on one host must not lose the others' results
            wrapped = HostError(f"{type(exc).__name__}: {exc}", host=host.name)
            return Outcome(host, error=wrapped, duration_s=time.monotonic() - began)
        finally:
            if release:
                self.release(host)

    def release(self, host: Host) -> None:
        """Close ``host``'s connection: the run needs it no more. A later use connects again."""
        with self._lock:
            transport = self._transports.pop(host.name, None)
        if transport is not None:
            _close_quietly(transport)

    def wait_idle(self, timeout: float) -> bool:
        """After a cancel: wait (bounded) for the workers still running to end; whether they all did."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if not any(t.name.startswith(("accelstack-host", "accelstack-torchrun")) and t.is_alive()
                       for t in threading.enumerate()):
                return True
            time.sleep(0.05)
        return False

    def close(self) -> None:
        with self._lock:
            transports = list(self._transports.values())
            self._transports.clear()
        for transport in transports:
            _close_quietly(transport)

    def __enter__(self) -> HostPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _close_quietly(transport: Transport) -> None:
    try:
        transport.close()
    except Exception:
        pass  # a connection that is already gone is closed enough


def _cancel_quietly(transport: Transport) -> None:
    try:
        transport.cancel()
    except Exception:
        pass  # one host that cannot be reached must not keep the others' work alive
