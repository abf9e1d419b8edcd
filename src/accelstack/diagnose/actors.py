"""Who acts on a finding, decided from the whole log rather than from its cause alone.

A cause has a default actor (``causes.yml``; a signature or a table row may name another). Several causes are
reports of something else, though, and whose turn it is depends on what else the logs show. The rules here revise a
finding's actor only on evidence the logs hold, and every revision says why in the finding: ``actor_reason`` in its
``extracted`` fields (``--json`` carries it) and a sentence added to its explanation. Each rule is general (it reads
the kind of evidence, never one log's wording) and has a positive and a counter example in
``tests/test_diagnose_actors.py``.

- NCCL's generic results (``unhandled system error``, ``internal error``, ``unhandled cuda error``) say only that a
  call failed. The WARN NCCL printed before it names what broke; without one, what users found in the threads where
  this was resolved is the launch's network settings or the NCCL version (a maintainer: NCCL 2.18 misreports such
  failures as internal errors, rerun with NCCL_DEBUG=WARN, https://github.com/NVIDIA/nccl-tests/issues/275; an
  IPv6 or proxy setting, https://github.com/NVIDIA/nccl/issues/833), not the node: ``config``.
- A collective that timed out on some ranks while other ranks of the same log report no failure of their own: those
  ranks were elsewhere (a stall in their data loading, a rank-dependent branch), which is the program's: ``job``.
  torch's own watchdog message names incorrect collective usage first
  (https://pytorch.org/docs/stable/distributed.html#debugging-torch-distributed-applications).
- A report that the diagnosis already read as the consequence of an earlier finding (a timeout after a rank's
  error) is acted on by whoever acts on that finding.
- A collective timeout, a peer that exited, NCCL's generic error or an unnamed failure on a host whose kernel
  reported failed hardware (an Xid, an uncorrectable ECC error, a GPU off the bus) is that hardware's: ``node``.
- The same downstream reports beside a rendezvous / store that could not be reached: the rendezvous ``service``.
- A read-only filesystem under a path that is read-only by design (an image's system directories, ``/``) is where
  the job was told to write, not storage that failed: ``config``. Storage that turned read-only under a data mount
  stays the ``service``'s.
- A device the job could not find (``no-device``) where the logs show it ran in a container is one the container
  was not given (https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/docker-specialized.html):
  ``config``; unless the host's own tools (nvidia-smi, the container toolkit) said they could not reach the driver,
  or the error says the devices were reached and the node was not ready (CUDA's 802, the fabric manager's).
- An out-of-memory error whose own accounting (torch >= 2.1's, which counts all this process holds) shows that
  other processes held most of the device is not the program's size but where it was placed: a
  second job or rank on the same device, one left running, a container given every device: ``config``.
- An out-of-memory error whose message names the serving engine's memory share or context length as what to change
  (vLLM's "Decrease GPU memory utilization", "Try increasing `gpu_memory_utilization` or decreasing `max_model_len`",
  vllm/v1/worker/gpu_worker.py and vllm/v1/core/kv_cache_utils.py; SGLang's --mem-fraction-static, TGI's batch
  limits and memory fraction, LMDeploy's cache_max_entry_count) is settled by the engine's launch arguments, not by
  the program: ``config``.
- A disk that filled where the error's own path is the node's scratch directory (/tmp, /var/tmp) is where the launch
  let the job write (TMPDIR, a tool's temporary directory), not the shared storage: ``config``.
- A failure that the node's own daemon reports from the steps it runs around every job (slurmd's prolog and epilog,
  its SPANK plugins such as pyxis, https://slurm.schedmd.com/prolog_epilog.html, https://slurm.schedmd.com/spank.html)
  is the node's set-up, whatever its cause (a directory it cannot create, a disk it fills): Slurm drains such a node
  itself: ``node``.
- A failure no table names (``unclassified``) is the program's, unless its exception class says otherwise: a
  class named for a configuration, an option or an argument is the launch's (``config``); one named for a
  connection, a timeout or a remote service is the ``service``'s.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from .findings import EvidenceLine, Finding

# Causes that report the failure of something else (a peer, a call under a wrapper) rather than name it.
DOWNSTREAM = frozenset({"collective-timeout", "peer-exited", "nccl-internal", "watchdog-stuck", "hccl-api-error",
                        "unclassified"})
# The kernel's and the driver's reports of failed hardware: a failure beside them on that host is theirs.
HARDWARE = frozenset({"xid-fatal", "device-hardware", "node-failure"})

# What a WARN or NCCL's "Last error:" says when the generic result came from the network's set-up: a socket that
# could not connect, an interface NCCL could not use, a bootstrap that failed. NCCL's messages:
# https://github.com/NVIDIA/nccl/blob/master/src/misc/socket.cc (socketStartConnect, socketProgress) and
# src/bootstrap.cc.
_SOCKET = re.compile(r"socket|[Cc]onnect(?:ion)? (?:to|refused|reset|closed|abort)|No route to host|Bootstrap|"
                     r"NCCL_SOCKET_IFNAME|no usable|Network is unreachable|[Ii]nterface", re.IGNORECASE)
# ... and when it came from the device: a CUDA failure, an IB adapter's error.
_DEVICE = re.compile(r"Cuda failure|CUDA error|NET/IB|ibv_|NVML|uncorrectable|fallen off", re.IGNORECASE)

# A connect failure of the rendezvous or its store (torch.distributed's TCPStore, the elastic agent's rendezvous), not
# of a collective's own sockets.
_STORE = re.compile(r"[Rr]endezvous|TCPStore|DistStore|c10d store|store->|client socket|MASTER_ADDR")

# Exception class names (the last dotted part, Ray's wrapped class included) that say whose the failure is.
_CONFIG_CLASS = re.compile(r"Config|Misconfig|Setting|Option|Argument|Usage|Param(?:eter)?(?:Error|Exception)")
_SERVICE_CLASS = re.compile(r"Connection|Connect(?:Error|Timeout)|Timeout|HTTP|Http|Network|Socket|Remote|Download|"
                            r"Hub|Request|Rendezvous|Store|Unavailable|Throttl")

# Where writes are refused by design (an image's or the OS's own directories, the root) rather than because storage
# failed; and the usual data mounts, whose read-only state is the storage's.
_SYSTEM_DIR = re.compile(r"^/(?:opt|usr|etc|bin|sbin|lib\w*|boot|root|\.cache)(?:/|$)")
_DATA_MOUNT = re.compile(r"^/(?:mnt|data|scratch|lustre|gpfs|nfs|home|work|shared|fsx|efs|datasets?|checkpoints?)\b")


@dataclass
class Context:
    """What the rules read besides the findings: the WARN lines no signature matched, NCCL's "Last error:" text,
    the ranks the launcher ended (SIGTERM in torchrun's summary: it stops the other workers once one failed) and the
    ranks that reported a failure of their own."""

    warns: list[EvidenceLine] = field(default_factory=list)
    last_error: str | None = None
    ranks_stopped: set[int] = field(default_factory=set)
    ranks_failed: set[int] = field(default_factory=set)
    contexts: set[str] = field(default_factory=set)  # the contexts of signatures.yml the logs showed (container ...)


Rule = Callable[[Finding, list[Finding], Context], "tuple[str, str] | None"]


def decide_actors(findings: list[Finding], context: Context) -> None:
    """Revise each finding's actor where the logs show whose it is (the first rule that applies wins)."""
    for finding in findings:
        for rule in RULES:
            decided = rule(finding, findings, context)
            if decided is None:
                continue
            actor, reason = decided
            if actor != finding.actor:
                finding.actor = actor
                finding.extracted["actor_reason"] = reason
                finding.explanation += f" Who acts: {actor}, because {reason}."
            break


def _consequence(finding: Finding, findings: list[Finding], _context: Context) -> tuple[str, str] | None:
    if not finding.consequence_of or not finding.symptom:
        return None
    root = next((f for f in findings if f is not finding and f.cause == finding.consequence_of), None)
    if root is None:
        return None
    return root.actor, f"it follows the earlier {root.cause} ({root.first_line.where()}), whose actor acts on both"


def _hardware_on_host(finding: Finding, findings: list[Finding], _context: Context) -> tuple[str, str] | None:
    if finding.cause not in DOWNSTREAM:
        return None
    for other in findings:
        if other is finding or other.cause not in HARDWARE or other.symptom:
            continue
        hosts = set(finding.hosts) & set(other.hosts)
        if finding.hosts and other.hosts and not hosts:
            continue  # both name their host, and the hosts differ
        where = f" on {sorted(hosts)[0]}" if hosts else ""
        return "node", f"the logs also show {other.title} ({other.first_line.where()}){where}"
    return None


def _store_unreachable(finding: Finding, findings: list[Finding], _context: Context) -> tuple[str, str] | None:
    if finding.cause not in DOWNSTREAM or finding.cause == "unclassified":
        return None
    for other in findings:
        if other is finding or other.cause != "connect-timeout" or other.actor != "service":
            continue
        if any(_STORE.search(text) for text in (other.title, *(line.text for line in other.evidence))):
            return "service", f"the rendezvous could not be reached first ({other.first_line.where()})"
    return None


def _nccl_generic(finding: Finding, _findings: list[Finding], context: Context) -> tuple[str, str] | None:
    if finding.cause != "nccl-internal":
        return None
    said = " ".join(filter(None, [str(finding.extracted.get("nccl_warn") or ""),
                                  str(finding.extracted.get("last_error") or context.last_error or ""),
                                  *(line.text for line in context.warns)]))
    if _DEVICE.search(said):
        return None  # NCCL's WARN names the device: the cause's own actor stands
    if _SOCKET.search(said):
        return "config", ("NCCL's warning names its sockets or network interface "
                          f"({_excerpt(said, _SOCKET)}): the interface or address the launch gave NCCL")
    if said.strip():
        return None
    return "config", ("NCCL printed no WARN saying what broke; its generic result most often comes from the launch's "
                      "network settings or NCCL version (rerun with NCCL_DEBUG=WARN to see)")


def _silent_peers(finding: Finding, _findings: list[Finding], context: Context) -> tuple[str, str] | None:
    if finding.cause != "collective-timeout" or finding.actor == "job":
        return None
    timed_out = {rank for rank in finding.extracted.get("ranks", ()) if isinstance(rank, int)}
    if not timed_out:
        timed_out = {line.rank for line in finding.evidence if line.rank is not None}
    quiet = context.ranks_stopped - timed_out - context.ranks_failed
    if not timed_out or not quiet:
        return None
    shown = ", ".join(map(str, sorted(quiet)[:8]))
    waited = ", ".join(map(str, sorted(timed_out)[:8]))
    return "job", (f"rank(s) {shown} reported no failure of their own and were only stopped by the launcher while "
                   f"rank(s) {waited} waited in the collective: the peers were elsewhere in the program")


def _read_only_by_design(finding: Finding, _findings: list[Finding], _context: Context) -> tuple[str, str] | None:
    if finding.cause != "read-only-filesystem" or finding.actor != "service":
        return None
    for path in _paths(line.text for line in finding.evidence):
        if _DATA_MOUNT.match(path):
            return None
        if path.count("/") <= 1 or _SYSTEM_DIR.match(path):
            return "config", (f"the write went to {path}, a place that is read-only by design (an image's or the "
                              "system's own directory), not to storage that failed: point the job's output at a "
                              "writable mount")
    return None


# A node's scratch directory for temporary files (the Filesystem Hierarchy Standard's /tmp and /var/tmp,
# https://refspecs.linuxfoundation.org/FHS_3.0/fhs/ch03s18.html): small and local, often a tmpfs, and where a
# program writes only because the launch did not point TMPDIR (or the tool's own setting: SINGULARITY_TMPDIR,
# TORCHINDUCTOR_CACHE_DIR, Ray's --temp-dir) elsewhere.
_SCRATCH_PATH = re.compile(r"/(?:var/)?tmp(?:/|$)")
_ABSOLUTE_PATH = re.compile(r"(?:^|(?<=[\s'\"(=:]))/[\w.-]+(?:/[^\s'\":),]*)?")
_NO_SPACE = re.compile(r"no space left on device|disk quota exceeded", re.IGNORECASE)


def _written_path(said: str) -> str | None:
    """The path a write that ran out of space went to, as the error names it: after the errno's words where Python
    puts it ("[Errno 28] No space left on device: '/ckpt/x'"), else the last one before them (Go's and the C
    library's "write /tmp/x: no space left on device")."""
    words = _NO_SPACE.search(said)
    if words is None:
        return None
    after = said[words.end():].lstrip(" :'\"")
    if after.startswith("/"):
        found = _ABSOLUTE_PATH.search(after)
        return found.group(0) if found else None
    before = _ABSOLUTE_PATH.findall(said[:words.start()])
    return before[-1] if before else None


def _scratch_full(finding: Finding, _findings: list[Finding], _context: Context) -> tuple[str, str] | None:
    if finding.cause != "disk-full" or finding.actor != "service":
        return None
    # The error's own line only: other lines of the evidence (a launcher's summary naming its error file under
    # /tmp) say nothing of where the write went.
    said = str(finding.extracted.get("error") or (finding.evidence[0].text if finding.evidence else ""))
    path = _written_path(said)
    if path is None or not _SCRATCH_PATH.match(path):
        return None
    return "config", (f"the write that ran out of space went to {path}, the node's local scratch directory (small, "
                      "often memory-backed), not the shared storage: point TMPDIR, or the tool's own temporary "
                      "directory, at a filesystem with room")


def _unclassified_class(finding: Finding, _findings: list[Finding], _context: Context) -> tuple[str, str] | None:
    if finding.cause != "unclassified" or finding.layer != "structure":
        return None
    error = str(finding.extracted.get("error") or "")
    head = error.split(":", 1)[0].strip()
    if not head or " " in head:
        return None
    name = head.rsplit("(", 1)[-1].rstrip(")") if head.endswith(")") else head
    name = name.rsplit(".", 1)[-1]
    if _CONFIG_CLASS.search(name):
        return "config", f"its exception class, {name}, reports a configuration, an option or an argument"
    if _SERVICE_CLASS.search(name):
        return "service", f"its exception class, {name}, reports a connection, a timeout or a remote service"
    return None


def _paths(texts: Iterable[str]) -> Iterable[str]:
    for text in texts:
        for match in re.finditer(r"'(/[^']*)'", text):
            yield match.group(1)


def _excerpt(text: str, pattern: re.Pattern[str]) -> str:
    match = pattern.search(text)
    if match is None:
        return text[:80]
    start = max(0, match.start() - 40)
    return text[start: match.end() + 40].strip()


# The tables whose rows are the host's own tools saying they cannot reach the driver (nvidia-smi, the container
# toolkit, Docker's GPU request): the host failed to give the container its devices, not the launch.
HOST_TOOL_TABLES = ("host-tools:",)
# Errors that say the runtime reached the devices and found the node not ready for them: CUDA's 802 (the fabric
# manager of an NVSwitch system has not brought the fabric up), which a container without its devices never gets
# (it gets "no CUDA-capable device is detected").
NODE_NOT_READY = frozenset({"cudaErrorSystemNotReady"})


def _device_not_passed(finding: Finding, _findings: list[Finding], context: Context) -> tuple[str, str] | None:
    if finding.cause != "no-device" or finding.actor != "node" or "container" not in context.contexts:
        return None
    if finding.id.startswith(HOST_TOOL_TABLES) or finding.extracted.get("key") in NODE_NOT_READY:
        return None
    return "config", ("the job ran in a container, which sees the node's devices only when it is started with them "
                      "(docker --gpus, the NVIDIA container runtime, a pod's resource limits): start it with the devices "
                      "before suspecting the node")


# The device's memory as torch's out-of-memory message accounts for it since torch 2.1 (c10/cuda/
# CUDACachingAllocator.cpp): "GPU 0 has a total capacity of 79.11 GiB of which 1.06 GiB is free. ... Including
# non-PyTorch memory, this process has 38.00 GiB memory in use." The older form ("4.46 GiB reserved in total by
# PyTorch", torch_npu's too) counts only the caching allocator's memory, not what the same process holds besides
# (NCCL's or HCCL's buffers, the runtime's workspaces, graphs), so it cannot tell other processes apart.
_SIZE = r"[\d.]+ (?:[KMGT]i?B|bytes)"
_OOM_ACCOUNT = re.compile(rf"total capacity of (?P<total>{_SIZE}) of which (?P<free>{_SIZE}) is free\..*?this "
                          rf"process has (?P<own>{_SIZE}) memory in use")
_UNITS = {"bytes": 1, "B": 1, "KB": 1e3, "KiB": 1024, "MB": 1e6, "MiB": 1024 ** 2, "GB": 1e9, "GiB": 1024 ** 3,
          "TB": 1e12, "TiB": 1024 ** 4}
HELD_ELSEWHERE = 0.5  # of the device's memory, held by other processes while this one ran out


def _bytes(size: str) -> float:
    number, unit = size.split()
    return float(number) * _UNITS.get(unit, 1)


def _memory_held_elsewhere(finding: Finding, _findings: list[Finding], _context: Context) -> tuple[str, str] | None:
    if finding.cause != "out-of-memory" or finding.actor != "job":
        return None
    for line in finding.evidence:
        found = _OOM_ACCOUNT.search(line.text)
        if found is None:
            continue
        total, free, own = (_bytes(found.group(name)) for name in ("total", "free", "own"))
        others = total - free - own
        if total <= 0 or others <= HELD_ELSEWHERE * total:
            return None
        return "config", (f"the process held only {found.group('own')} of the device's {found.group('total')} when it "
                          f"ran out, with {found.group('free')} free: other processes held the rest (a second job or "
                          "rank placed on the same device, one left running, a container given every device), which "
                          "the launch or the scheduler placed there; check nvidia-smi / npu-smi for them")
    return None


# The launch arguments an inference engine's memory messages name as what to change: vLLM's
# --gpu-memory-utilization and --max-model-len (https://docs.vllm.ai/en/latest/configuration/conserving_memory.html),
# SGLang's --mem-fraction-static ("Not enough memory. Please try to increase --mem-fraction-static",
# https://docs.sglang.io/advanced_features/server_arguments.html), TGI's --cuda-memory-fraction and its batch limits
# ("You need to decrease `--max-batch-prefill-tokens`",
# https://huggingface.co/docs/text-generation-inference/reference/launcher) and LMDeploy's cache_max_entry_count
# (https://lmdeploy.readthedocs.io/en/latest/api/pipeline.html).
_ENGINE_SHARE = re.compile(r"gpu[ _-]memory[ _-]utili[sz]ation|max[_-]model[_-]len|mem[_-]fraction[_-]static|"
                           r"cuda[_-]memory[_-]fraction|max[_-]batch[_-](?:prefill|total)[_-]tokens|"
                           r"cache[_-]max[_-]entry[_-]count", re.IGNORECASE)


def _engine_memory_share(finding: Finding, _findings: list[Finding], _context: Context) -> tuple[str, str] | None:
    if finding.cause != "out-of-memory" or finding.actor != "job":
        return None
    for line in finding.evidence:
        found = _ENGINE_SHARE.search(line.text)
        if found:
            return "config", (f"the engine's message names its launch argument ({found.group(0)}) as what to change: "
                              "the memory share or context length the engine was started with, not the program")
    return None


# slurmd's own lines about the steps it runs around a job: "spank-epilog: error: pyxis: ...", "error: spank: required
# plugin spank_pyxis.so: job_epilog() failed", "prolog failed: rc:230", "Prolog launch failure"; and srun's report that
# a node's slurmd did not start the task ("Task launch for StepId=34.0 failed on node n4: ...").
# Searched anywhere in the line: the daemon's words follow whatever carried the line (syslog's "node slurmd[53634]: ",
# a quote or a paste's indent, a collector's tag).
_NODE_DAEMON_STEP = re.compile(r"(?:^|\s)(?:spank-(?:prolog|epilog|task_\w+):|error: spank:|"
                               r"[Pp]rolog (?:failed|launch failure)|[Ee]pilog failed|Task launch for \S+ failed on node)")


def _node_daemon_step(finding: Finding, _findings: list[Finding], _context: Context) -> tuple[str, str] | None:
    if finding.actor == "node":
        return None
    for line in finding.evidence:
        if _NODE_DAEMON_STEP.search(line.text):
            return "node", ("the node's Slurm daemon reported it from a step it runs around every job (a prolog, an "
                            f"epilog or a SPANK plugin: {line.text[:80].strip()}): the node's set-up, which Slurm "
                            "drains the node for")
    return None


RULES: tuple[Rule, ...] = (_node_daemon_step, _consequence, _hardware_on_host, _store_unreachable, _nccl_generic,
                           _silent_peers, _read_only_by_design, _scratch_full, _device_not_passed,
                           _memory_held_elsewhere, _engine_memory_share, _unclassified_class)
