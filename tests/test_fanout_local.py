"""Fan-out over `connection: local` hosts: the pool, outcomes per host, and failures that stay on their host."""

from __future__ import annotations

import threading
import time

import pytest

from accelstack.errors import CommandFailed, CommandTimeout
from accelstack.inventory import Host
from accelstack.transport import fanout
from accelstack.transport.connection import LocalTransport, Transport
from accelstack.transport.fanout import FanoutOptions, HostPool


def local_hosts(n: int) -> list[Host]:
    return [Host(name=f"h{i}", address="localhost", connection="local") for i in range(n)]


def test_every_host_gets_an_outcome_and_a_bug_on_one_does_not_stop_the_others() -> None:
    def work(transport: Transport) -> str:
        if transport.host.name == "h3":
            raise RuntimeError("boom")
        return transport.run("echo $((6*7))", check=True).stdout.strip()

    with HostPool(FanoutOptions(forks=4)) as pool:
        outcomes = {o.host.name: o for o in pool.map(local_hosts(10), work)}
    assert set(outcomes) == {f"h{i}" for i in range(10)}
    assert outcomes["h3"].error is not None and "boom" in str(outcomes["h3"].error)
    assert all(outcomes[f"h{i}"].value == "42" for i in range(10) if i != 3)


def test_pool_is_bounded_by_forks() -> None:
    running = 0
    peak = 0
    lock = threading.Lock()

    def work(transport: Transport) -> None:
        nonlocal running, peak
        with lock:
            running += 1
            peak = max(peak, running)
        time.sleep(0.05)
        with lock:
            running -= 1

    with HostPool(FanoutOptions(forks=3)) as pool:
        list(pool.map(local_hosts(12), work))
    assert peak == 3


def test_connection_is_opened_once_per_host_and_reused() -> None:
    pool = HostPool()
    host = local_hosts(1)[0]
    assert pool.connect(host) is pool.connect(host)
    pool.close()


def test_command_timeout_kills_the_process_group() -> None:
    transport = LocalTransport(local_hosts(1)[0])
    started = time.monotonic()
    try:
        transport.run("sleep 30 & sleep 30", timeout=0.5)
    except CommandTimeout as err:
        assert "h0" in str(err)
    else:
        raise AssertionError("expected a timeout")
    assert time.monotonic() - started < 10


def test_per_host_deadline_cuts_later_commands() -> None:
    with HostPool(FanoutOptions(host_deadline=0.6)) as pool:
        outcome = next(iter(pool.map(local_hosts(1), lambda t: [t.run("sleep 0.4"), t.run("sleep 5")])))
    assert isinstance(outcome.error, CommandTimeout)


def test_check_raises_with_exit_status_and_output_tail() -> None:
    transport = LocalTransport(local_hosts(1)[0])
    try:
        transport.run("echo out; echo oops >&2; exit 7", check=True)
    except CommandFailed as err:
        assert err.exit_status == 7 and "oops" in str(err)
    else:
        raise AssertionError("expected CommandFailed")


def test_a_last_phase_releases_each_host_as_it_finishes_and_every_outcome_still_comes(
        monkeypatch: pytest.MonkeyPatch) -> None:
    closed: list[str] = []

    class Counting(LocalTransport):
        def close(self) -> None:
            closed.append(self.host.name)

    monkeypatch.setattr(fanout, "transport_for",
                        lambda host, **kwargs: Counting(host, deadline=kwargs["deadline"]))
    hosts = local_hosts(40)
    with HostPool(FanoutOptions(forks=8)) as pool:
        seen = []
        for outcome in pool.map(hosts, lambda t: t.run("echo ok", check=True).stdout.strip(), release=True):
            seen.append(outcome.host.name)
            # Released as it finished: by the time its outcome is read, its connection is gone.
            assert outcome.host.name in closed and outcome.value == "ok"
        assert sorted(seen) == sorted(h.name for h in hosts) and sorted(closed) == sorted(seen)
        assert pool._transports == {}
        # A later phase on the same hosts connects again.
        again = list(pool.map(hosts[:3], lambda t: t.run("true").ok))
        assert [o.value for o in again] == [True] * 3 and len(pool._transports) == 3
