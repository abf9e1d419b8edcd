"""What a user hands over, as the logs in it: files, whole job folders, and .tar(.gz) archives of them.

Each log becomes a :class:`LogSource` that knows where it came from: its label (the path, or the archive and
member), and the rank and host its name and folder say (``rank3.log``, ``node07/...``), for lines that carry no
prefix of their own. Archives are read as a stream, member after member: nothing is unpacked to disk.
"""

from __future__ import annotations

import errno
import os
import re
import tarfile
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from .reader import LogUnreadable

# The files of a job folder that are logs: *.log and rotated *.log.1, *.out/*.err/*.txt, and any of them
# gzipped; plus launcher outputs named stdout/stderr. Checkpoints and other binaries are not read.
_LOG_NAME = re.compile(r"(?:\.(?:log|out|err|txt)(?:\.\d+)?|^std(?:out|err)|\.plog)(?:\.gz)?$", re.I)
_TAR_NAME = re.compile(r"\.(?:tar|tar\.gz|tgz|tar\.bz2|tar\.xz)$", re.I)
_RANK_IN_NAME = re.compile(r"(?:rank|default)[_-]?(\d{1,6})(?!\d)", re.I)
_HOST_DIR = re.compile(r"^(?:host|node)?[_-]?(?P<host>[A-Za-z][\w.-]*)$")


@dataclass
class LogSource:
    label: str
    path: str | None = None
    rank: int | None = None
    host: str | None = None
    opener: Callable[[], IO[bytes]] | None = None
    # Set where the input could not be read whole: ``skipped`` (a dangling link or a link loop in a job folder:
    # nothing of it was read) or ``truncated`` (an archive cut short: the members before the cut were read).
    skipped: str | None = None
    truncated: str | None = None

    def open(self) -> tuple[IO[bytes], bool]:
        assert self.opener is not None
        return self.opener(), True


def rank_from_name(name: str) -> int | None:
    match = _RANK_IN_NAME.search(os.path.basename(name))
    return int(match.group(1)) if match else None


def host_from_relative(relative: str) -> str | None:
    """The first folder of a log's path inside the job folder names its host (``node07/rank3.log``)."""
    parts = Path(relative).parts[:-1]
    for part in parts:
        if _RANK_IN_NAME.fullmatch(part):
            continue
        match = _HOST_DIR.match(part)
        if match:
            return part
    return None


def _natural(text: str) -> list[object]:
    return [int(piece) if piece.isdigit() else piece for piece in re.split(r"(\d+)", text)]


def is_log_name(name: str) -> bool:
    return bool(_LOG_NAME.search(os.path.basename(name)))


def expand_inputs(paths: Iterable[str | os.PathLike[str]]) -> Iterator[LogSource]:
    """Every log the inputs name, in a stable order (natural sort: rank2 before rank10). A path is a ``str`` or
    any ``os.PathLike`` (a ``pathlib.Path``); ``-`` is standard input."""
    for given in paths:
        path = os.fspath(given)
        if path != "-" and os.path.isdir(path):
            yield from _folder(path)
        elif path != "-" and _TAR_NAME.search(path) and os.path.isfile(path):
            yield from _archive(path)
        else:
            yield LogSource(label=path, path=path, rank=rank_from_name(path) if path != "-" else None)


def _folder(root: str) -> Iterator[LogSource]:
    """The logs of a job folder. Links are followed to files, never to folders (os.walk's default: a link loop
    cannot recurse); a link that leads nowhere (dangling, or a loop of links) is skipped with why, and the other
    logs are read: one bad link must not cost the whole diagnosis."""
    found: list[str] = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        found.extend(os.path.join(folder, name) for name in files if not name.startswith(".") and is_log_name(name))
    if not found:
        raise LogUnreadable("no log files in this folder (looked for *.log, *.log.N, *.out, *.err, *.txt, "
                            "gzipped or not)", where=root)
    for path in sorted(found, key=lambda p: _natural(os.path.relpath(p, root))):
        relative = os.path.relpath(path, root)
        problem = _unreadable_link(path)
        if problem:
            yield LogSource(label=path, path=path, skipped=problem)
            continue
        yield LogSource(label=path, path=path, rank=rank_from_name(relative), host=host_from_relative(relative))


def _unreadable_link(path: str) -> str | None:
    """Why a link in a job folder leads to nothing a log can be read from; None for a file or a good link."""
    if not os.path.islink(path):
        return None
    try:
        os.stat(path)
    except OSError as err:
        if err.errno == errno.ELOOP:
            return f"a loop of symbolic links ({os.readlink(path)!r})"
        return f"a symbolic link to {os.readlink(path)!r}, which does not exist ({err.strerror})"
    return None


def _constant(handle: IO[bytes]) -> Callable[[], IO[bytes]]:
    return lambda: handle


def _archive(path: str) -> Iterator[LogSource]:
    try:
        archive = tarfile.open(path, mode="r|*")
    except (OSError, tarfile.TarError) as err:
        raise LogUnreadable(f"cannot read archive: {err}", where=path) from None
    stem = _TAR_NAME.sub("", os.path.basename(path))
    read = 0
    with archive:
        try:
            for member in archive:
                if not member.isfile() or not is_log_name(member.name):
                    continue
                handle = archive.extractfile(member)
                if handle is None:
                    continue
                top, _, rest = member.name.partition("/")
                relative = rest if rest and top == stem else member.name
                read += 1
                yield LogSource(label=f"{path}/{member.name}", rank=rank_from_name(member.name),
                                host=host_from_relative(relative), opener=_constant(handle))
        except (OSError, tarfile.TarError, EOFError, zlib.error) as err:
            # A job archive cut short (copied off a node that died, a full disk) still holds the logs before the
            # cut, often the very rank that failed: diagnose them and say where the archive ends, as for a cut
            # gzip log. An archive that ends before its first log is bad input (exit 3 when nothing is found).
            yield LogSource(label=path, truncated=f"the archive ends early or is corrupt ({err}) after {read} "
                                                  "log(s); the logs before the cut are read")
