"""What keeps the control side cheap per host (issue 14): the lazy task collection, one fabric configuration per
process that no connection writes to, records encoded once, and command output waited for without polling."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from paramiko.buffered_pipe import BufferedPipe

from accelstack.cli import checkout_task_modules
from accelstack.inventory import Host
from accelstack.results.output import Reporter
from accelstack.results.records import Record, RunWriter
from accelstack.tasks import TASK_MODULES, build_collection, modules_for
from accelstack.transport.connection import SSHTransport, _Wakeup, shared_fabric_config

REPO = Path(__file__).resolve().parent.parent


def _top_names(collection) -> set[str]:
    return set(collection.tasks) | set(collection.collections)


def test_the_module_table_names_exactly_what_each_task_module_adds() -> None:
    from accelstack.tasks import ns

    for module, names in TASK_MODULES.items():
        assert _top_names(build_collection([module])) == set(names), module
    assert _top_names(ns) == {name for names in TASK_MODULES.values() for name in names}
    # The checkout's own (the lab's), named by its tasks.py: what each adds, and never part of the product's.
    extra = checkout_task_modules()
    assert extra == {"accelstack_lab.tasks": ("lab", "repo")}
    for module, names in extra.items():
        assert _top_names(build_collection([module], extra)) == set(names), module
    assert not _top_names(ns) & {name for names in extra.values() for name in names}


@pytest.mark.parametrize(("argv", "wanted"), [
    (["accelstack", "facts", "--json"], {"facts"}),
    (["accelstack", "lab.up", "--hosts", "2"], {"accelstack_lab.tasks"}),
    (["accelstack", "repo.build"], {"accelstack_lab.tasks"}),
    (["accelstack", "node_check", "--tier", "quick"], {"nodecheck"}),
    (["accelstack", "fleet-check", "--inventory", "npu8"], {"report"}),
    (["accelstack", "facts", "--inventory", "lab"], {"facts", "accelstack_lab.tasks"}),  # a value naming a task
    (["accelstack", "facts", "--limit", "lab1", "validate"], {"facts", "validate"}),
    (["accelstack", "--list"], None),
    (["accelstack", "facts", "-l"], None),
    (["accelstack"], None),
    (["accelstack", "-h"], None),
    (["accelstack", "factz"], None),  # invoke names the unknown task from the whole collection
])
def test_the_command_line_picks_the_task_modules_to_import(argv: list[str], wanted: set[str] | None) -> None:
    assert modules_for(argv, checkout_task_modules()) == wanted


def test_without_a_checkout_the_lab_is_no_task() -> None:
    # An installed wheel has no checkout's modules: a lab word is an unknown name, which invoke reports.
    assert modules_for(["accelstack", "lab.up"]) is None
    assert modules_for(["accelstack", "facts", "--inventory", "lab"]) == {"facts"}


def test_facts_imports_no_provisioning_report_diagnosis_or_lab_code() -> None:
    probe = ("import sys\nfrom accelstack.cli import main\n"
             "try:\n    main(['accelstack', 'facts', '--help'])\nexcept SystemExit:\n    pass\n"
             "print(' '.join(sorted(m for m in sys.modules if m.startswith('accelstack'))))\n")
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO,
                          env={"PYTHONPATH": str(REPO / "src"), "PATH": "/usr/bin:/bin"}, timeout=120)
    assert proc.returncode == 0, proc.stderr
    modules = proc.stdout.strip().splitlines()[-1].split()
    assert "accelstack.tasks.facts" in modules and "accelstack.transport.connection" in modules
    heavy = ("accelstack.provision", "accelstack.report", "accelstack.diagnose", "accelstack_lab",
             "accelstack.flows.bundle.run", "accelstack.validate", "accelstack.flows.fleetcheck.run", "accelstack.tasks.report")
    assert not [m for m in modules if m.startswith(heavy)], modules


def test_facts_json_and_plain_reporting_import_no_rich_nor_jinja2(tmp_path: Path) -> None:
    # A real `facts --json` on this machine (the local inventory: no SSH), then a plain-text Reporter on a stream
    # that is no terminal: neither draws anything, so neither may pay for rich's (or jinja2's) import.
    probe = ("import io, sys\nfrom accelstack.cli import main\ncode = 0\n"
             "try:\n    main(['accelstack', 'facts', '--json', '--inventory', 'inventories/local.yml'])\n"
             "except SystemExit as exc:\n    code = exc.code\n"
             "from accelstack.results.output import Reporter\nfrom accelstack.results.records import Record, RunWriter\n"
             "from pathlib import Path\nplain = Reporter(RunWriter('validate', base=Path(sys.argv[1])), stdout=io.StringIO())\n"
             "plain.add(Record('h1', 'env', 'pass', 'ok'))\nplain.finish()\n"
             "print('exit', code, plain.terminal, ' '.join(sorted(m for m in sys.modules "
             "if m.split('.')[0] in ('rich', 'jinja2'))))\n")
    proc = subprocess.run([sys.executable, "-c", probe, str(tmp_path)], capture_output=True, text=True, cwd=REPO,
                          env={"PYTHONPATH": str(REPO / "src"), "PATH": "/usr/bin:/bin",
                               "ACCELSTACK_RUNS": str(tmp_path / "runs")}, timeout=120)
    assert proc.returncode == 0, proc.stderr
    records = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert [(r["host"], r["check"]) for r in records] == [("localhost", "facts")]
    last = proc.stdout.splitlines()[-1].split()
    assert last[0] == "exit" and last[2:] == ["False"], last  # no rich or jinja2 module after the word False


def test_a_terminal_reporter_still_draws_with_rich(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    for name in ("FORCE_COLOR", "TTY_COMPATIBLE"):
        monkeypatch.delenv(name, raising=False)
    out = io.StringIO()
    reporter = Reporter(RunWriter("validate", base=tmp_path), stdout=out, terminal=True)
    assert reporter.interactive and reporter.console.is_terminal
    reporter.add(Record("h1", "env", "fail", "bad"))
    assert "FAIL" in out.getvalue() and "\x1b[" in out.getvalue()  # drawn by rich, in colour
    plain = Reporter(RunWriter("validate", base=tmp_path), stdout=io.StringIO())
    assert not plain.terminal  # a StringIO is no tty, and no variable says otherwise
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert Reporter(RunWriter("validate", base=tmp_path), stdout=io.StringIO()).terminal  # as rich decides it


def test_connections_share_one_fabric_configuration_and_never_write_to_it() -> None:
    config = shared_fabric_config()
    before = json.dumps(config._modifications, sort_keys=True, default=str)
    hosts = [Host(f"h{i}", f"10.99.0.{i}", key_file="/nonexistent/key") for i in range(1, 4)]
    transports = [SSHTransport(host) for host in hosts]  # constructing connects nothing
    assert all(t.connection.config is config for t in transports)
    assert json.dumps(config._modifications, sort_keys=True, default=str) == before
    assert [t.connection.host for t in transports] == ["10.99.0.1", "10.99.0.2", "10.99.0.3"]
    assert all(t.connection.inline_ssh_env == config.inline_ssh_env for t in transports)
    assert transports[0].connection.connect_kwargs["key_filename"] == ["/nonexistent/key"]


def test_connections_prefer_aes_gcm_and_keep_every_other_cipher_paramiko_offers() -> None:
    import socket

    import paramiko

    transport = SSHTransport(Host("h1", "10.99.0.1", key_file="/nonexistent/key"))
    factory = transport.connection.connect_kwargs["transport_factory"]
    ours, theirs = socket.socketpair()
    try:
        made = factory(ours)
        assert isinstance(made, paramiko.Transport)
        offered = list(made.preferred_ciphers)
        assert offered[:2] == ["aes128-gcm@openssh.com", "aes256-gcm@openssh.com"]
        assert sorted(offered) == sorted(paramiko.Transport._preferred_ciphers)  # a server without GCM gets ctr
        made.close()
    finally:
        ours.close()
        theirs.close()


def test_sshds_debug_message_is_made_printable_only_when_someone_logs_it(monkeypatch: pytest.MonkeyPatch,
                                                                       caplog: pytest.LogCaptureFixture) -> None:
    import logging
    import socket

    import paramiko

    from accelstack.transport.connection import _FleetTransport

    def message() -> paramiko.Message:
        m = paramiko.Message()
        m.add_boolean(False)
        m.add_string("key options: agent-forwarding port-forwarding pty user-rc x11-forwarding")
        m.add_string("")
        m.rewind()
        return m

    made: list[str] = []
    real = paramiko.util.safe_string
    monkeypatch.setattr(paramiko.util, "safe_string", lambda s: made.append("made") or real(s))
    ours, theirs = socket.socketpair()
    try:
        transport = _FleetTransport(ours)
        transport._parse_debug(message())
        assert made == []  # nobody logs paramiko at DEBUG: nothing made printable, a byte at a time
        with caplog.at_level(logging.DEBUG, logger=transport.logger.name):
            transport._parse_debug(message())
        assert made == ["made"] and "key options: agent-forwarding" in caplog.text
        transport.close()
    finally:
        ours.close()
        theirs.close()


def test_a_record_is_encoded_once_and_the_same_line_goes_to_the_file_and_stdout(tmp_path: Path) -> None:
    import io

    out = io.StringIO()
    writer = RunWriter("facts", base=tmp_path)
    reporter = Reporter(writer, json_lines=True, stdout=out)
    record = Record("h1", "facts", "pass", "ok", evidence={"facts": {"nics": [{"name": "eth0"}]}})
    reporter.add(record)
    reporter.finish()
    written = (writer.path / "results.jsonl").read_text().splitlines()
    assert out.getvalue().splitlines() == written
    assert json.loads(written[0]) == record.to_dict()
    # to_dict still hands out a copy: changing it leaves the record as it was.
    record.to_dict()["evidence"]["facts"]["nics"].append("x")
    assert record.evidence == {"facts": {"nics": [{"name": "eth0"}]}}


def test_records_arriving_together_share_an_fsync_and_none_waits_past_the_interval(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    from accelstack.results import records as records_module

    synced: list[float] = []
    real_fsync = records_module.os.fsync
    monkeypatch.setattr(records_module.os, "fsync", lambda fd: (synced.append(time.monotonic()), real_fsync(fd)))
    monkeypatch.setattr(RunWriter, "SYNC_INTERVAL_S", 0.2)
    writer = RunWriter("facts", base=tmp_path)
    written = time.monotonic()
    for index in range(50):
        writer.write(Record(f"h{index}", "facts", "pass", "ok"))
    assert len(synced) == 1  # the first record at once; the other 49 wait for the burst's tail
    assert len((writer.path / "results.jsonl").read_text().splitlines()) == 50  # flushed, each as it came
    deadline = time.monotonic() + 5
    while len(synced) < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert len(synced) == 2 and synced[1] - written < 2.0  # the timer synced the tail, nothing else wrote
    writer.write(Record("late", "facts", "pass", "ok"))
    writer.close()  # syncs what the timer has not
    assert len(synced) >= 3 and len(writer.records) == 51


def test_the_wakeup_is_set_while_stdout_or_stderr_holds_data_or_has_ended() -> None:
    class Channel:
        in_buffer = BufferedPipe()
        in_stderr_buffer = BufferedPipe()

    channel = Channel()
    wakeup = _Wakeup(channel)  # type: ignore[arg-type]
    assert not wakeup.wait(0)
    channel.in_stderr_buffer.feed(b"@accelstack-sid 42\n")
    assert wakeup.wait(0)
    channel.in_buffer.feed(b"out")
    channel.in_stderr_buffer.read(100)
    assert wakeup.wait(0)  # stdout still holds data
    channel.in_buffer.read(100)
    assert not wakeup.wait(0)  # both read empty
    channel.in_buffer.close()  # end of output (or the channel closed under the reader)
    assert wakeup.wait(0)
