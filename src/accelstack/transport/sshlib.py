"""paramiko and fabric as :class:`~accelstack.transport.connection.SSHTransport` connects with them: the private
keys read once per process, fabric's one shared configuration, and the subclasses that make a connection cheap.

A module of its own so that importing the transport layer does not import paramiko and fabric (a tenth of a
CPU-second): only a run that opens an SSH connection loads this. ``accelstack node-check``, which runs its checks on
its own node through :class:`~accelstack.transport.connection.LocalTransport`, never does.
"""

from __future__ import annotations

import logging
import os
import threading

import paramiko
from fabric import Config as FabricConfig
from fabric import Connection

_private_keys: dict[str, paramiko.PKey | None] = {}
_private_keys_lock = threading.Lock()


def private_key(path: str) -> paramiko.PKey | None:
    """The private key at ``path``, read once per process (paramiko reads a ``key_filename`` for every
    connection, trying each key type in turn: three parses per host for an Ed25519 key). None when it cannot
    be read without help (encrypted, unreadable, an unknown type): the caller then hands paramiko the file
    name, whose own attempt says what is wrong."""
    with _private_keys_lock:
        if path in _private_keys:
            return _private_keys[path]
        key: paramiko.PKey | None = None
        # A certificate beside the key (KEY-cert.pub): paramiko's key_filename loads it with the key, and a host
        # that trusts only the user CA needs it, so such a key is left to paramiko.
        kinds = () if os.path.isfile(path + "-cert.pub") else (paramiko.Ed25519Key, paramiko.ECDSAKey,
                                                                paramiko.RSAKey)
        for kind in kinds:
            try:
                key = kind.from_private_key_file(path)
                break
            except (paramiko.SSHException, OSError, ValueError):
                continue
        _private_keys[path] = key
        return key


class _Connection(Connection):
    """fabric's Connection, with ``inline_ssh_env`` a real attribute. fabric 3.2 sets it in ``__init__``, and
    invoke turns a set of a name the class lacks into a write to the connection's configuration, which re-merges
    the whole configuration (``merge_dicts`` and ``deepcopy`` of every level) once per host; on a configuration
    shared by every connection it was also a write racing other hosts' reads."""

    inline_ssh_env: bool | None = None


_fabric_config: FabricConfig | None = None
_fabric_config_lock = threading.Lock()


def shared_fabric_config() -> FabricConfig:
    """fabric's configuration (its defaults and the ssh_config files it reads), built once per process and
    shared by every Connection: a Connection given none builds two (invoke's and fabric's), each a round of
    ``merge_dicts`` and ``deepcopy`` plus a read of the ssh_config files, for every host. A Connection only
    reads its config (see :class:`_Connection`), and each keeps its own connect arguments, so sharing changes
    nothing but the cost."""
    global _fabric_config
    with _fabric_config_lock:
        if _fabric_config is None:
            _fabric_config = FabricConfig()
        return _fabric_config


# AES-GCM first: an AEAD cipher is checked inside cryptography's C code, where paramiko checks a ctr cipher's
# HMAC with a byte-by-byte Python loop on every packet it reads (util.constant_time_bytes_eq). Only the order
# changes: a server without GCM (OpenSSH before 6.2) still agrees on aes-ctr as before.
_AEAD_FIRST = tuple(sorted(paramiko.Transport._preferred_ciphers, key=lambda name: "-gcm@" not in name))


class _FleetTransport(paramiko.Transport):
    """paramiko's Transport, preferring AES-GCM, and quiet about what nobody logs: sshd sends a debug message
    after authentication (the key's options), which paramiko turns into printable text a byte at a time in
    Python for a DEBUG log line, on every connection, whether or not anything logs at DEBUG."""

    _preferred_ciphers = _AEAD_FIRST

    def _parse_debug(self, m: paramiko.Message) -> None:
        if self.logger.isEnabledFor(logging.DEBUG):
            super()._parse_debug(m)
