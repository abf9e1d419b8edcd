"""Rolling reboots: marked hosts in batches of ``--batch``; the next batch starts only when every host of this
one answers SSH again (and, where it can tell, has really booted anew).

The reboot itself is the ``reboot_command`` variable, so a lab inventory can make it something harmless.
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from ..errors import AccelstackError, HostUnreachable
from ..inventory import Host
from ..results.records import Record, error_record
from ..transport.connection import SSHTransport, Transport, transport_for
from .state import REBOOT_MARKER

DEFAULT_REBOOT_COMMAND = "systemctl reboot || /sbin/reboot"
BOOT_ID = "cat /proc/sys/kernel/random/boot_id"


@dataclass
class RebootSettings:
    command: str = DEFAULT_REBOOT_COMMAND
    timeout: float = 900.0
    settle: float = 10.0  # let sshd go down before we try to reach it again
    expect_new_boot: bool = True


def _reconnect(host: Host, deadline: float) -> Transport:
    last: Exception | None = None
    while time.monotonic() < deadline:
        transport = transport_for(host, connect_timeout=5.0)
        try:
            if isinstance(transport, SSHTransport):
                transport.open()
            transport.run("true", timeout=10, check=True)
            return transport
        except Exception as exc:
            last = exc
            try:
                transport.close()
            except Exception:
                pass
            time.sleep(1.0)
    raise HostUnreachable(f"did not answer SSH within the reboot timeout ({last})", host=host.name,
                          hint="check the host's console; re-run with --retry-failed when it is back")


def reboot_host(transport: Transport, settings: RebootSettings) -> Record:
    host = transport.host
    began = time.monotonic()
    try:
        before = transport.run(BOOT_ID, timeout=10).stdout.strip()
        # Detached and delayed, so this command returns before the connection drops.
        launch = f"nohup sh -c {shlex.quote('sleep 1; ' + settings.command)} >/dev/null 2>&1 &"
        transport.run(launch, timeout=15)
        transport.close()
        time.sleep(settings.settle)
        deadline = began + settings.timeout
        fresh = _reconnect(host, deadline)
        try:
            after = fresh.run(BOOT_ID, timeout=10).stdout.strip()
            while settings.expect_new_boot and after == before and time.monotonic() < deadline:
                fresh.close()
                time.sleep(2.0)
                fresh = _reconnect(host, deadline)
                after = fresh.run(BOOT_ID, timeout=10).stdout.strip()
            if settings.expect_new_boot and after == before:
                raise HostUnreachable("answered SSH again but never rebooted (same boot id)", host=host.name,
                                      hint="check reboot_command for this host")
            fresh.run(f"rm -f {REBOOT_MARKER}", timeout=10)
        finally:
            fresh.close()
    except AccelstackError as err:
        return error_record(host.name, "provision.reboot", err, time.monotonic() - began)
    return Record(host=host.name, check="provision.reboot", status="pass",
                  summary=f"rebooted and back in {time.monotonic() - began:.1f} s",
                  metrics={"reboot_s": round(time.monotonic() - began, 3)}, duration_s=round(time.monotonic() - began, 3))


def rolling_reboot(transports: list[Transport], settings_for: Callable[[Host], RebootSettings], batch: int,
                   on_record: Callable[[Record], None]) -> list[Record]:
    """Reboot in batches; a host that does not come back stops the rollout (the rest stay up, untouched)."""
    records: list[Record] = []
    size = max(1, batch)
    for start in range(0, len(transports), size):
        group = transports[start:start + size]
        with ThreadPoolExecutor(max_workers=len(group)) as pool:
            batch_records = list(pool.map(lambda t: reboot_host(t, settings_for(t.host)), group))
        for record in batch_records:
            on_record(record)
        records.extend(batch_records)
        if any(r.status != "pass" for r in batch_records):
            for transport in transports[start + size:]:
                skipped = Record(host=transport.host.name, check="provision.reboot", status="skip",
                                 summary="not rebooted: an earlier batch did not come back",
                                 remedy="fix the failed host, then run inv provision --reboot again")
                on_record(skipped)
                records.append(skipped)
            break
    return records
