"""What the SSH transport reads once per process: the private key, and known_hosts as an index."""

from __future__ import annotations

import subprocess
from pathlib import Path

import paramiko
import pytest

from accelstack.errors import HostUnreachable
from accelstack.inventory import Host
from accelstack.transport.connection import KnownHosts, SSHTransport, private_key


def keygen(path: Path, *extra: str) -> str:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-f", str(path), *extra], check=True)
    return path.with_suffix(".pub").read_text().split()[1]


def test_a_private_key_is_read_once_and_an_encrypted_one_is_left_to_paramiko(tmp_path: Path) -> None:
    plain, locked = tmp_path / "plain", tmp_path / "locked"
    keygen(plain, "-N", "")
    keygen(locked, "-N", "a passphrase")
    key = private_key(str(plain))
    assert isinstance(key, paramiko.Ed25519Key)
    assert private_key(str(plain)) is key  # the same object: not read again
    # Encrypted (or missing): None, and the connection hands paramiko the file name, whose error says why.
    assert private_key(str(locked)) is None
    assert private_key(str(tmp_path / "absent")) is None


def test_a_key_with_its_certificate_beside_it_still_signs_in_with_the_certificate(tmp_path: Path) -> None:
    # paramiko's key_filename loads KEY-cert.pub with KEY (a host that trusts only the user CA needs it): the
    # key read once must not drop the certificate.
    ca, user = tmp_path / "ca", tmp_path / "user"
    keygen(ca, "-N", "")
    keygen(user, "-N", "")
    subprocess.run(["ssh-keygen", "-q", "-s", str(ca), "-I", "user", "-n", "root", str(user) + ".pub"], check=True)
    assert (tmp_path / "user-cert.pub").is_file()
    kwargs = SSHTransport(Host("h1", "10.99.0.1", key_file=str(user))).connection.connect_kwargs
    key = kwargs.get("pkey")
    if key is None:
        assert kwargs["key_filename"] == [str(user)]  # paramiko reads the key and its certificate
    else:
        assert key.public_blob is not None and key.public_blob.key_type.endswith("-cert-v01@openssh.com")


def test_known_hosts_index_plain_hashed_revoked_and_accepting(tmp_path: Path) -> None:
    blob_a = keygen(tmp_path / "a", "-N", "")
    blob_b = keygen(tmp_path / "b", "-N", "")
    key_a = paramiko.Ed25519Key.from_private_key_file(str(tmp_path / "a"))
    key_b = paramiko.Ed25519Key.from_private_key_file(str(tmp_path / "b"))
    keygen(tmp_path / "c", "-N", "")
    key_c = paramiko.Ed25519Key.from_private_key_file(str(tmp_path / "c"))
    path = tmp_path / "known_hosts"
    path.write_text(f"10.0.0.1,node1 ssh-ed25519 {blob_a}\n")
    subprocess.run(["ssh-keygen", "-q", "-H", "-f", str(path)], check=True, capture_output=True)
    assert "10.0.0.1" not in path.read_text() and "node1" not in path.read_text()
    path.write_text(path.read_text() + f"[10.0.0.2]:2222 ssh-ed25519 {blob_b}\n10.0.0.3 ssh-ed25519 {blob_a}\n"
                    f"@cert-authority * ssh-ed25519 {blob_b}\nbroken line\n# comment\n\n"
                    f"@revoked * ssh-ed25519 {blob_b}\n")
    known = KnownHosts(path, accept_new=False)
    host = Host(name="n", address="10.0.0.1")
    assert known.known_keys("10.0.0.1") == {"ssh-ed25519": {blob_a}}  # found through its hashed name
    assert known.known_keys("node1") == known.known_keys("10.0.0.3") == {"ssh-ed25519": {blob_a}}  # hashed; plain
    assert known.known_keys("[10.0.0.2]:2222") == {"ssh-ed25519": {blob_b}}
    assert known.known_keys("10.0.0.9") == {}
    known.verify(host, "10.0.0.1", key_a)
    with pytest.raises(HostUnreachable, match="does not match"):
        known.verify(host, "10.0.0.3", key_c)
    with pytest.raises(HostUnreachable, match="@revoked"):
        known.verify(host, "[10.0.0.2]:2222", key_b)
    with pytest.raises(HostUnreachable, match="is not in"):
        known.verify(host, "10.0.0.9", key_a)
    accepting = KnownHosts(path, accept_new=True)
    accepting.verify(host, "10.0.0.9", key_a)
    assert path.read_text().endswith(f"10.0.0.9 ssh-ed25519 {blob_a}\n")
    assert KnownHosts(path, accept_new=False).known_keys("10.0.0.9") == {"ssh-ed25519": {blob_a}}


def test_accepting_a_key_after_a_last_line_without_newline_keeps_both_entries(tmp_path: Path) -> None:
    # A hand-edited known_hosts often ends without a newline: the accepted key goes on a line of its own, not
    # onto the end of the last entry (which would turn that host's key into a mismatch on the next run).
    blob_a = keygen(tmp_path / "a", "-N", "")
    blob_b = keygen(tmp_path / "b", "-N", "")
    key_b = paramiko.Ed25519Key.from_private_key_file(str(tmp_path / "b"))
    path = tmp_path / "known_hosts"
    path.write_text(f"10.0.0.1 ssh-ed25519 {blob_a}")
    KnownHosts(path, accept_new=True).verify(Host(name="n", address="10.0.0.2"), "10.0.0.2", key_b)
    again = KnownHosts(path, accept_new=False)
    assert again.known_keys("10.0.0.1") == {"ssh-ed25519": {blob_a}}
    assert again.known_keys("10.0.0.2") == {"ssh-ed25519": {blob_b}}


# --- the files a connection reads here: checked before any host, named when a host refuses them ----------------

def test_a_key_or_known_hosts_that_cannot_be_read_is_exit_3_at_its_inventory_line(tmp_path: Path) -> None:
    from accelstack.errors import EXIT_BAD_INPUT, InventoryError
    from accelstack.inventory import load_inventory
    from accelstack.transport.connection import check_connection_files

    keygen(tmp_path / "good", "-N", "")
    (tmp_path / "keys").mkdir()
    inventory = tmp_path / "inv.yml"
    inventory.write_text("vars: {stack: cpu}\nhosts:\n  ok: {address: 192.0.2.1, key: good}\n"
                         "  gone:\n    address: 192.0.2.2\n    key: missing_key\n"
                         "  dir: {address: 192.0.2.3, key: keys}\n"
                         "  kh: {address: 192.0.2.4, known_hosts: keys}\n"
                         "  here: {connection: local, key: missing_key}\n"
                         "  under:\n    address: 192.0.2.5\n    known_hosts: good/known_hosts\n"
                         "    accept_new_host_keys: true\n")
    inv = load_inventory(str(inventory))

    def refused(limit: str) -> InventoryError:
        with pytest.raises(InventoryError) as info:
            check_connection_files(inv.select(limit))
        assert info.value.exit_code == EXIT_BAD_INPUT
        return info.value

    err = refused("gone")
    assert str(err.where).endswith("inv.yml:6") and f"key file {tmp_path / 'missing_key'} does not exist" in err.message
    assert "is a folder, not a file" in refused("dir").message and str(refused("dir").where).endswith("inv.yml:7")
    assert "known_hosts" in refused("kh").message and str(refused("kh").where).endswith("inv.yml:8")
    under = refused("under")  # accepting a new key would write below a file: it could never be recorded
    assert "cannot be made" in under.message and str(under.where).endswith("inv.yml:12"), under
    check_connection_files(inv.select("ok,here"))  # a readable key; a local host reads no key


@pytest.mark.parametrize("program", ["accelstack", "inv"])
def test_a_missing_key_stops_the_run_before_any_host_naming_the_file(program: str, tmp_path: Path) -> None:
    from .helpers import assert_bad_input, run_program

    inventory = tmp_path / "inv.yml"
    inventory.write_text("vars: {stack: cpu, key: ~/no/such/id_ed25519}\nhosts:\n  n1: {address: 192.0.2.250}\n")
    proc = run_program(program, "facts", "--inventory", str(inventory), runs=tmp_path / "runs")
    assert_bad_input(proc, "inv.yml:1", "host n1: key file", "no/such/id_ed25519 does not exist")
    assert "check the host is up" not in proc.stderr
    assert not (tmp_path / "runs").exists()


def test_a_key_the_host_refuses_or_cannot_use_is_that_hosts_error_naming_the_key(lab: object,
                                                                                tmp_path: Path) -> None:
    """Only connecting tells whether a host takes a key: each host's error names the key and the line that set
    it, and the other hosts' runs go on."""
    import json

    import yaml

    from .helpers import run_program

    keygen(tmp_path / "other", "-N", "")
    keygen(tmp_path / "locked", "-N", "a passphrase")
    (tmp_path / "garbage").write_text("not a key\n")
    doc = yaml.safe_load(Path(lab.inventory).read_text())  # type: ignore[attr-defined]
    names = sorted(doc["hosts"])
    for name, key in zip(names, ("other", "locked", "garbage"), strict=False):
        doc["hosts"][name]["key"] = str(tmp_path / key)
    inventory = tmp_path / "keys.yml"
    inventory.write_text(yaml.safe_dump(doc))
    proc = run_program("accelstack", "facts", "--inventory", str(inventory), "--json", runs=tmp_path / "runs")
    assert proc.returncode == 2, proc.stderr[-800:]
    by_host = {r["host"]: r for r in map(json.loads, proc.stdout.splitlines())}
    assert by_host[names[3]]["status"] == "pass"  # the host with the lab's own key is not stopped by the others
    for name, key in zip(names, ("other", "locked", "garbage"), strict=False):
        record = by_host[name]
        assert record["status"] == "error"
        assert str(tmp_path / key) in record["summary"], record
        assert "check the host is up" not in (record["remedy"] or "")
        assert "keys.yml:" in (record["remedy"] or ""), record
