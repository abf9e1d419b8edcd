"""Recognising that a job failed from the structure of its logs, not from their wording.

A Python traceback ends in its exception line (the last ``SomethingError: message`` of each chained block); torchrun
sums its workers' failures up (``ChildFailedError``, the root cause's rank, exit code and signal); the shell, the C++
runtime and the interpreter report a process that died (``Segmentation fault``, ``Killed``, ``terminate called
after throwing``, ``Fatal Python error``); Slurm ends a job with ``*** JOB ... CANCELLED AT ... DUE TO ... ***`` and
srun reports each task's end; an Ascend plog writes ``[ERROR]`` lines; a process ends itself on a failed check
(glibc's assert and heap checks, the stack protector, a sanitizer, ROCclr's ``guarantee``, a Go or Rust panic,
``MPI_ABORT``), Kubernetes reports ``OOMKilled``, a launcher reports a non-zero exit. And a log whose last events are
error-level lines with nothing after them but their own trailer (a stack, an exit status) ended in that error
(:meth:`FailureTracker.tail`, which reads the log's end whole: its final error need not hold an anchor). Each becomes a :class:`FailureEvent`, which the
diagnosis classifies with the tables (or calls ``unclassified``, the error quoted) unless a signature already explains
it. Reports that only repeat another process's failure (torchrun's summary, a launcher's non-zero exit, srun's
"Exited with exit code") are *secondary*: they are a finding only when the logs hold nothing else.

The tracker sees only the lines that passed the literal prefilter (and the line after each), which is why every
pattern here keeps a literal of its own (see :data:`STRUCTURE_PATTERNS`). Parsing is pure; state is per log and per
rank, bounded.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from .reader import timestamp_of
from .tables import TableRow, Tables

# How many lines after an exception line still belong to its message (NCCL's and c10d's messages run over several
# lines: "ncclUnhandledCudaError: ...", "Last error:", the failed call).
CONTINUATION_LINES = 12
TEXT_CAP = 24
EVENTS_CAP = 4096
EVIDENCE_CAP = 5

# A launcher's prefix: torch's `[rank3]:`, torchrun --tee's `[default0]:` (after at most two words: a timestamp, a
# tag), srun -l's `3: `. (The tags of launchers that name a host or a process, Ray's, pdsh's, Open MPI's, are
# carriers, read off before: reader.split_carrier.)
# (srun --label's "3: " stands alone before an empty line, whose trailing blank a paste drops: "3:")
_PREFIX = re.compile(r"^(?:\S+\s+){0,2}?\[(?:rank|default)(?P<rank>\d{1,6})\]:\s?|^(?P<num>\d{1,6}):(?: |$)")
# IPython prints "ValueError   Traceback (most recent call last)", without the colon.
TRACEBACK = re.compile(r"Traceback \(most recent call last\):?")
CHAINED = re.compile(r"During handling of the above exception, another exception occurred:|"
                     r"The above exception was the direct cause of the following exception:")
FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+)(?:, in (?P<func>\S+))?')
# A frame after a logger's prefix ("ERROR 05-07 05:58:46 [core.py:291]   File ..."): where a pasted excerpt starts in
# the middle of a traceback, its header is cut off, and the frames alone say a traceback is being printed.
_FRAME_AFTER = re.compile(r'(?:^|\s)File "[^"]+", line \d+, in \S')
# An exception line: a (dotted) class name, then ": message" or nothing.
# Ray wraps the remote error's class in its own: "ray.exceptions.RayTaskError(RuntimeError): ...".
EXCEPTION = re.compile(r"^(?P<indent>\s*)(?P<type>[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*(?:\([A-Za-z_][\w.]*\))?)"
                       r"(?::(?:\s(?P<msg>.*))?)?\s*$")
# The markup a person pasting a log puts before an exception line: a Markdown quote ("> "), code quotes (`...`),
# list bullets, quotation marks. Stripped before the line is read as an exception.
_QUOTE_MARKUP = re.compile(r"^(?:[>`'\"*]+\s*)+")
# An exception quoted in the middle of a line ("I get the error: `triton.runtime.errors.OutOfResources: out of ...`",
# "... 请问有人遇到 triton.runtime.errors.OutOfResources: ..."): only a module-qualified class (two dots at least,
# the last part capitalised) followed by ": message" counts, never a bare word.
_INLINE_EXCEPTION = re.compile(r"(?:^|[\s`'\"(\[])(?P<type>[a-z_]\w*(?:\.[a-z_]\w*)+\.[A-Z]\w*): (?P<msg>.+?)`?\s*$")
# An OSError as str() prints it, alone at the start of a line: the program caught the exception and printed it.
_ERRNO_LINE = re.compile(r"^\[Errno \d{1,4}\] \S")
# What a class name ends with when it is an exception (PEP 8 names them *Error; the rest are the few builtins and
# library classes that do not, each also a literal of the tables).
_EXCEPTION_NAME = re.compile(r"(?:Error|Exception|Interrupt|Exit)$")
_SHELL_SIGNAL = re.compile(
    r"(?:^|:\s+line\s+\d+:\s+)(?:(?P<pid>\d+)\s+)?(?P<sig>Segmentation fault|Aborted|Bus error|Killed|"
    r"Illegal instruction|Floating point exception|Terminated)(?P<rest>.*)$")
_LINE_PREFIX = re.compile(r":\s+line\s+\d+:\s+")
# zsh's and fish's reports of a child a signal ended, in their own words: zsh's "zsh: killed     python x.py",
# "zsh: segmentation fault (core dumped)  ./x", a job's "[1]    4242 killed     python x.py" (Src/signals.c, the
# signal messages of Src/signames2.awk); fish's "fish: Job 1, 'python x.py' terminated by signal SIGKILL (Forced
# quit)" (src/proc.cpp). zsh's names are the shell's words of _SHELL_SIGNAL, which the tables read.
_ZSH_SIGNALS = {"killed": "Killed", "segmentation fault": "Segmentation fault", "bus error": "Bus error",
                "abort": "Aborted", "illegal hardware instruction": "Illegal instruction",
                "floating point exception": "Floating point exception", "terminated": "Terminated"}
_OTHER_SHELL_SIGNAL = re.compile(
    r"^(?:zsh: |\[\d+\]\s+(?:\+\s+)?\d+ )(?P<zshsig>" + "|".join(_ZSH_SIGNALS) + r")(?: \(core dumped\))?\s+\S|"
    r"^fish: Job \d+, .* terminated by signal (?P<fishsig>SIG[A-Z]+)")
FATAL_PYTHON = re.compile(r"Fatal Python error: (?P<what>.+)")
TERMINATE = re.compile(r"terminate called (?:after throwing an instance of '(?P<type>[^']+)'|"
                       r"without an active exception|recursively)")
WHAT = re.compile(r"^\s*what\(\):\s*(?P<msg>.*)")
OTHER_SIGNAL = re.compile(r"\*\*\* (?P<sig>SIG[A-Z]+) received at time|Caught signal (?P<num>\d+) \((?P<name>[^:)]+)|"
                          r"received signal (?P<sig2>SIG[A-Z]+)|"
                          # Open MPI's handler in every process it launched (opal/util/stacktrace.c): "[host:pid]
                          # *** Process received signal ***", then "[host:pid] Signal: Aborted (6)"
                          r"^(?:\[[^\]\s]+:\d+\] )?Signal: (?P<ompi>[A-Z][a-z]+(?: [a-z]+)*) \(\d+\)\s*$")
# The backtrace header of a C++ exception torch raised (c10::Error's what(), c10/util/Exception.cpp): printed with the
# error that propagates, never for a warning. An excerpt may hold it without the Python traceback around it.
C10_RAISED = re.compile(r"Exception raised from \S+ at \S+:\d+ \(most recent call first\)")
# The line of c10's what() just above its "Exception raised from": the watchdog's timeout, whose symptom signature
# then explains the C++ error. (A CUDA error's what() has four lines, but its row is no symptom: the window reads it.)
C10_MESSAGE_LINES = 1
TORCHRUN_FAILED = re.compile(r"failed \(exitcode: (?P<code>-?\d+)\) local_rank: (?P<local>\d+) \(pid: (?P<pid>\d+)\)")
TORCHRUN_RANK = re.compile(r"^\s*rank\s*: (?P<rank>\d+) \(local_rank: (?P<local>\d+)\)")
TORCHRUN_EXIT = re.compile(r"^\s*exitcode\s*: (?P<code>-?\d+) \(pid: (?P<pid>\d+)\)")
TORCHRUN_SIGNAL = re.compile(r"Signal (?P<num>\d+) \((?P<sig>SIG[A-Z]+)\) received by PID (?P<pid>\d+)")
TORCHRUN_ROOT = re.compile(r"Root Cause \(first observed failure\)")
SLURM = re.compile(r"(?P<who>slurmstepd|srun|sbatch|salloc)(?:-[\w.-]+)?: error: (?P<msg>.*)")
# "STEPD TERMINATED ... DUE TO JOB NOT ENDING WITH SIGNALS": slurmstepd could not end the job's processes.
_SLURM_PRIMARY = re.compile(r"\*\*\* (?:JOB|STEP) .*(?:CANCELLED AT|UNCORRECTABLE MEMORY ERROR|STEPD TERMINATED)|"
                            r"oom[_-]kill event|"
                            r"Exceeded (?:job|step) memory limit|execve\(\)|Node failure on|Prolog launch failure|"
                            r"Unable to (?:create step|allocate resources)|Task launch for \S+ failed on node|"
                            r"Application launch failed")
# A SPANK plugin that failed in slurmstepd stops the step before the job's program runs: SPANK's own report
# ("spank: required plugin pyxis.so: task_init_privileged() failed with rc=-1",
# https://slurm.schedmd.com/spank.html) and pyxis's lines (the container plugin, https://github.com/NVIDIA/pyxis),
# whose log of enroot quotes what failed. slurmstepd's other complaints name its own functions ("_is_a_lwp: ...").
_SLURM_PLUGIN = re.compile(r"^(?:spank: .*\bfailed\b|pyxis: .*(?:\b[Ff]ailed\b|\bFATAL\b|No space left|[Pp]ermission denied))")
_SLURM_REFUSED = re.compile(r"^(?:Batch job submission failed|Job submit/allocate failed): ")
_SLURM_TASK = re.compile(r"^(?P<host>\S+): tasks? (?P<tasks>[\d,\-]+): (?P<what>.+)$")
_SLURM_SECONDARY = re.compile(r"Exited with exit code|Terminated|FAILED \(non-zero exit code")
# slurmctld's record of a batch job's end (src/slurmctld/job_mgr.c, _job_complete): "WTERMSIG 9" for a script that a
# signal ended, "WEXITSTATUS 1" for one that exited; and its own time-limit kill (job_time_limit).
SLURMCTLD_END = re.compile(r"_job_complete: JobId=(?P<job>\d+)\S* (?:WTERMSIG (?P<sig>\d+)|WEXITSTATUS (?P<code>\d+))|"
                           r"Time limit exhausted for JobId=(?P<limit>\d+)")
PLOG_ERROR = re.compile(r"^\[ERROR\] (?P<module>[A-Z][A-Z0-9_]*)\((?P<pid>\d+),(?P<proc>[^)]*)\):"
                        r"(?P<time>\d{4}-\d\d-\d\d-\d\d:\d\d:\d\d\S*) (?P<msg>.*)")
EXIT_SUMMARY = re.compile(r"exits with return code = (?P<code>-?\d+)|returned non-zero exit status (?P<status>\d+)|"
                          r"exited on signal (?P<signum>\d+)|"
                          # launchers and runtimes: accelerate's / a supervisor's "exited with code 1", Go's
                          # "exit status 2", an IDE's "Process finished with exit code 1", mpirun's and
                          # Kubernetes's summaries of a rank or a container that keeps failing
                          # ... and vLLM's of a worker process ("Worker VllmWorkerProcess pid 42 died, exit code: -9")
                          # (Windows' codes are written in hex: "exit status 0xc0000005")
                          r"(?i:exited with (?:exit )?code|exit status|finished with exit code|died, exit code)"
                          r"\s*:?\s*(?P<exited>-?(?:0x[0-9a-fA-F]+|\d+))|"
                          r"(?P<mpi>mpirun detected that one or more processes exited with non-zero status)|"
                          # Open MPI's banner before that block, or alone ("Primary job  terminated normally, but 1
                          # process returned / a non-zero exit code. Per user-direction, the job has been aborted.",
                          # orte/tools/orterun/help-orterun.txt)
                          r"(?P<mpiprimary>Primary job\s+terminated normally, but \d+ process(?:es)? returned)|"
                          # torch.multiprocessing.spawn ending the other processes after one failed
                          # (torch/multiprocessing/spawn.py: "Terminating process %s via signal SIGTERM")
                          r"(?P<spawn>Terminating process \d+ via signal SIGTERM)|"
                          # DeepSpeed's launcher stopping every rank, once one returned non-zero or it was signalled
                          # (deepspeed/launcher/launch.py, sigkill_handler: "Killing subprocess %d"), before its
                          # "... exits with return code = N"
                          r"(?P<dskill>sigkill_handler\] Killing subprocess \d+)|"
                          # Open MPI's block after it names the first process's code: "  Exit code:    3"; and
                          # `kubectl describe pod`'s terminated container: "      Exit Code:    1"
                          r"^\s+Exit [Cc]ode:\s+(?P<ompi>\d+)\s*$|"
                          r"(?P<backoff>CrashLoopBackOff)|"
                          # the controllers that own a training job's pods, when one failed for good: Kubeflow's
                          # training operator ("TFJob myjob has failed because 1 Worker replica(s) failed.",
                          # https://github.com/kubeflow/trainer, its JobFailed condition) and a Kubernetes Job past
                          # its retries ("Job has reached the specified backoff limit", reason BackoffLimitExceeded,
                          # https://kubernetes.io/docs/concepts/workloads/controllers/job/)
                          r"(?P<replicas>(?:has|is) failed because \d+ \w+ replica\(s\) failed)|"
                          r"(?P<joblimit>Job has reached the specified backoff limit)|"
                          # MPICH's and Intel MPI's Hydra (mpiexec): "=   BAD TERMINATION OF ONE OF YOUR APPLICATION
                          # PROCESSES", "=   EXIT CODE: 9", "YOUR APPLICATION TERMINATED WITH THE EXIT STRING:
                          # Killed (signal 9)" (https://github.com/pmodels/mpich, src/pm/hydra)
                          r"^=\s+EXIT CODE: (?P<hydra>\d+)|EXIT STRING: .*\(signal (?P<hydrasig>\d+)\)")
LAUNCHER_REPORTS = {
    "spawn": "torch.multiprocessing.spawn ended the other processes after one of them failed",
    "dskill": "DeepSpeed's launcher stopped every rank: one of them failed (or the launcher was signalled)",
}
# A process that ended itself on a failed check or a corrupt heap, or a runtime's fatal report; each is a failure
# wherever it appears (none is printed by a program that goes on). Sources: glibc's assert
# (https://sourceware.org/git/?p=glibc.git;a=blob;f=assert/assert.c "%s%s%s:%u: %s%sAssertion `%s' failed.") and
# malloc checks (malloc/malloc.c malloc_printerr: "free(): invalid pointer", "double free or corruption");
# the stack protector ("*** stack smashing detected ***", debug/stack_chk_fail.c); the sanitizers' reports
# ("==PID==ERROR: AddressSanitizer: ...", https://github.com/google/sanitizers/wiki/AddressSanitizer); ROCclr's
# guarantee(), which aborts (https://github.com/ROCm/clr/blob/develop/rocclr/utils/debug.hpp); Go's panic and
# runtime's fatal error (https://go.dev/blog/defer-panic-and-recover); Rust's panic message
# (https://doc.rust-lang.org/std/macro.panic.html); Open MPI's MPI_ABORT report; the shell's "command not found";
# Kubernetes's container end reason OOMKilled, as `kubectl describe` ("Reason: OOMKilled") and `kubectl get pods`
# (a column) print it (https://kubernetes.io/docs/concepts/workloads/pods/pod-lifecycle/); nccl-tests' checks of a
# CUDA or NCCL call, which end the test ("Test CUDA failure common.cu:1007 '...'", src/common.h's CUDACHECK and
# NCCLCHECK, https://github.com/NVIDIA/nccl-tests/blob/master/src/common.h); the CUDA samples' checks, which exit
# (vectorAdd's "Failed to allocate device vector A (error code <string>)!", helper_cuda.h's "CUDA error at
# file:line code=N(cudaErrorX)", https://github.com/NVIDIA/cuda-samples), as a cluster's GPU validators run them.
ABORT = re.compile(r"(?P<guarantee>:\d+: guarantee\(.*)|"
                   r"(?P<assert>: Assertion `.*' failed\.?)|"
                   # glibc's heap checks (malloc/malloc.c, malloc_printerr): "free(): corrupted unsorted chunks",
                   # "munmap_chunk(): invalid pointer", "corrupted size vs. prev_size" ... then abort()
                   r"(?P<heap>\*\*\* Error in `|double free or corruption|"
                   r"(?:free|malloc|realloc|munmap_chunk|malloc_consolidate|tcache_thread_shutdown)\(\): "
                   r"(?:invalid|double free|corrupted|unaligned|too many chunks|memory corruption|mismatching|"
                   r"smallbin|unsorted|largebin)|"
                   r"corrupted size vs\. prev_size|corrupted double-linked list|invalid fastbin entry \(free\))|"
                   r"(?P<smash>\*\*\* stack smashing detected \*\*\*)|"
                   r"(?P<sanitizer>==\d+==ERROR: \w*Sanitizer: )|"
                   r"(?P<gopanic>^panic: )|(?P<gofatal>^fatal error: )|"
                   r"(?P<rust>thread '[^']*' panicked at)|"
                   # a C or C++ library's own assertion macro, which aborts: ggml's "GGML_ASSERT: file.cu:48: cond"
                   # (and its later "file.c:1234: GGML_ASSERT(cond) failed"), the same in other libraries
                   r"(?P<macro>\b[A-Z][A-Z0-9]*_ASSERT(?:: \S+:\d+: |\(.*\) failed\s*$))|"
                   r"(?P<mpi>MPI_ABORT was invoked on rank (?P<mpirank>\d+))|"
                   r"(?P<notfound>: command not found$)|"
                   # nccl-tests' check of a call, and its first releases' form ("NCCL failure all_reduce.cu:95
                   # 'unhandled cuda error'", before the "Test " prefix and the host name)
                   r"(?P<nccltests>Test (?:CUDA|NCCL) failure \S+:\d+|^(?:CUDA|NCCL) failure \S+\.cu:\d+ ')|"
                   r"(?P<cudasample>Failed to [^()]{3,120} \(error code [^)]+\)!|CUDA error at \S+:\d+ code=\d+\()|"
                   r"(?P<oomkilled>(?:^|Reason:\s+|\s{2})OOMKilled\b)")
# nccl-tests' own output (its banner, its results table's header): its process's exit code is then its testResult_t
# (src/common.h: 3 an NCCL call failed, 4 a collective timed out, 5 not implemented, 6 invalid usage), which a
# launcher's summary ("Exit code: 3") is all that may be left of.
# (Its literals are NCCL_TESTS_ANCHORS: the pattern's own would be "count", which every other log holds.)
NCCL_TESTS = re.compile(r"^# nccl-tests version|^#\s+size\s+count\s+type\s+redop\s.*\bbusbw\b")
NCCL_TESTS_ANCHORS = ("nccl-tests version", "busbw")
# (1 and 2, its internal and CUDA failures, say only that something failed: the exit code alone names no cause.)
NCCL_TESTS_RESULTS = {3: "testNcclError", 4: "testTimeout", 5: "testNotImplemented", 6: "testInvalidUsage"}
# A traceback printed right after a retry notice was handled: the program goes on.
RETRY = re.compile(r"\b(?i:retry)")
HANDLED_LINES = 2
# CUDA's device-side assertion ("<file>:<line>: <kernel>: block: [18,0,0], thread: [64,0,0] Assertion `...` failed."):
# a kernel of the program failed its own check.
DEVICE_ASSERT = re.compile(r"block: \[\d+,\d+,\d+\], thread: \[\d+,\d+,\d+\] Assertion `")
# A failed status as gRPC and Abseil print it, its canonical code first ("INTERNAL: message", absl::Status::ToString;
# OK is no failure): absl::StatusCode, https://github.com/abseil/abseil-cpp/blob/master/absl/status/status.h, and
# https://grpc.io/docs/guides/status-codes/
STATUS_CODE = (r"(?:CANCELLED|UNKNOWN|INVALID_ARGUMENT|DEADLINE_EXCEEDED|NOT_FOUND|ALREADY_EXISTS|PERMISSION_DENIED|"
               r"RESOURCE_EXHAUSTED|FAILED_PRECONDITION|ABORTED|OUT_OF_RANGE|UNIMPLEMENTED|INTERNAL|UNAVAILABLE|"
               r"DATA_LOSS|UNAUTHENTICATED): \S")
# A line at error level: glog's E and F (torch's C++, TensorFlow), NCCL's WARN (its error reports), logging's ERROR,
# CRITICAL and FATAL. One that a table row names is a failure; one that no row names is left alone (components
# log errors they recover from).
ERROR_LEVEL = re.compile(r"(?:^|[\s\[:])[EF]\d{4} \d\d:\d\d|^[EF] [\w/.-]+:\d+\]|\bNCCL WARN\b|\bERROR\b|"
                         # NCCL before 2.4 wrote its WARN without its name: "host:pid:tid [dev] file:line WARN msg"
                         # (the WARN macro of https://github.com/NVIDIA/nccl/blob/v2.3.7-1/src/include/debug.h)
                         r"^[A-Za-z][\w.-]*:\d+:\d+ \[\d+\] [\w/.-]+\.(?:cu|cc|cpp|c|h):\d+ WARN |"
                         # Ray's C++ components (raylet, GCS): "[2026-11-29 12:00:00,445 E 395 395] (raylet) ..."
                         # (src/ray/util/logging.cc: time, level letter, pid, thread)
                         r"\d\d:\d\d:\d\d,\d{3} [EF] \d+ \d+\]|"
                         # a binding's report of a failed NCCL call (torch's "NCCL error in: <file>:<line>",
                         # TensorRT-LLM's NCCLCHECK "Failed, NCCL error <file>:<line> '<string>'")
                         r"\bNCCL error\b|"
                         r"\[error\]|\bFATAL\b|\bCRITICAL\b|(?:^|:\s)[Ee]rror:\s|"
                         # torch < 1.5's failed CUDA check (THC's THCudaCheck, which raises; its warning is
                         # "THCudaCheckWarn FAIL")
                         r"\bTHCudaCheck FAIL\b|"
                         # a JSON error report, as an API server answers a request that failed (an "error" key
                         # holding an object or a message, never null)
                         r'"error"\s*:\s*(?:\{|"[^"]{3})|'
                         # torch's report of a failed CUDA / HIP call (c10/cuda/CUDAException.cpp), quoted alone
                         # (and as libraries built on CUDA word their own check: FlashInfer's and FasterTransformer's
                         # "CUDA Error: no kernel image is available ... (209) <file>: line 169 at function ...")
                         r"\b(?:CUDA|HIP) [Ee]rror: |"
                         # a failed status (STATUS_CODE) that XLA and JAX, TensorFlow, gRPC and Triton's server
                         # quote after the call or the wrapper that got it ("failed call to cuInit: INTERNAL: ...",
                         # "Original error: INTERNAL: ..."), with no level word of its own
                         r"(?:^|:\s)" + STATUS_CODE)
# Error lines this close on one rank are one failure (an error and the lines that explain it).
ERROR_LINES_GAP = 5
IGNORED = re.compile(r"Exception ignored in")

# How a log ends (FailureTracker.tail): the last lines are read whole, and a log whose last events are at error level,
# with nothing after them but the failure's own trailer (its stack, an exit status, a core dump), ended in that error.
# A logger's level is the first level word of the line's head (python logging's "ERROR:root:" and " - ERROR - ",
# loguru's "| ERROR |", vLLM's "ERROR 05-07 ...", log4j-style "[ERROR]"), glog's letter ("E1126 12:00:00.123"),
# tornado's "[E 241126 ...]", TensorRT's "[E] [TRT]", logfmt's and JSON's level fields.
_LEVEL_WORD = re.compile(r"\b(?P<level>DEBUG|TRACE|INFO|NOTICE|WARN|WARNING|ERROR|ERR|FATAL|CRITICAL|CRIT|SEVERE|"
                         r"PANIC|EMERG|ALERT)\b|"
                         r"(?:^|[\s\[])(?P<glog>[DIWEF])\d{4} \d\d:\d\d|^\[(?P<tornado>[DIWEFC]) \d{6}|"
                         # TensorFlow's C++ logger (and XLA's, JAX's, Horovod's under TensorFlow): its date and time,
                         # then the level's letter and the file ("2020-05-26 14:57:35.273608: E tensorflow/core/
                         # framework/op_kernel.cc:1318] ...", tensorflow/core/platform/default/logging.cc)
                         r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?: (?P<tf>[DIWEF]) [\w/.\-]|"
                         # TensorRT's and Polygraphy's logger: "[E] [TRT] ...", "[W] [TRT] ...", after trtexec's
                         # time ("[11/29/2024-12:00:00] [E] [TRT] ...") or, in TensorRT's Python logger, after its
                         # tag ("[11/29/2024-12:00:00] [TRT] [E] ...")
                         r"^(?:\[\d\d/\d\d/\d{4}-[\d:]+\] )?(?:\[TRT\] )?\[(?P<letter>[VIWEF])\] |"
                         r"\[(?P<lower>debug|info|warn|warning|error|fatal|critical)\]|"
                         r"\blevel\W{1,3}(?P<field>debug|info|warn|warning|error|fatal|critical|panic)\b")
_LEVEL_HEAD = 100
_ERROR_LEVELS = frozenset({"ERROR", "ERR", "FATAL", "CRITICAL", "CRIT", "SEVERE", "PANIC", "EMERG", "ALERT",
                           "E", "F", "C"})
# The levels at which a logger reports what the program went on from.
_HANDLED_LEVELS = frozenset({"WARN", "WARNING", "W", "INFO", "I", "DEBUG", "D", "NOTICE"})
_QUIET_LEVELS = frozenset({"DEBUG", "TRACE", "INFO", "NOTICE", "D", "I", "V"})
# A line that starts with its severity, as command-line tools print their last word: "Error: ..." (Node.js, Go's
# cobra, Rust's anyhow), "error: ..." / "error[E0425]: ..." (compilers, cargo, pip), "fatal: ..." (git),
# "nvcc fatal   : ..." (CUDA's compiler driver), after the program's name at most ("bash: error: ...",
# "make[2]: *** [all] Error 2"), with one word that says which error ("nvidia-container-cli: initialization error:
# ...") or as the Docker daemon answers ("docker: Error response from daemon: ...").
_ERROR_START = re.compile(r"^(?:[\w.\-/\[\]]+: )?(?:[a-z]+ )?(?:[Ee]rror|ERROR|[Ff]atal|FATAL)(?:\[\w+\])?"
                          r"(?: response from daemon)?: \S|"
                          # a command's own report of a failed system call, as perror(3) and err(3) word it
                          # ("touch: cannot touch '/x': Read-only file system", "cp: ...: No space left on device"):
                          # strerror's words for a failure, not "No such file or directory", which scripts probe
                          r"^[\w.+\-]+: \S.*: (?:Read-only file system|No space left on device|Disk quota exceeded|"
                          r"Permission denied|Input/output error|Cannot allocate memory|Too many open files|"
                          r"Stale file handle|File too large|Connection refused|Connection timed out|No route to host|"
                          r"Network is unreachable)$|"
                          r"^[\w.\-]+ (?:error|fatal)\s+: \S|"
                          # a compiler's diagnostic: GCC's and Clang's "file.c:12:10: fatal error: x.h: ...", nvcc's
                          # "file.cu(12): error: ..." (https://gcc.gnu.org/onlinedocs/gcc/Diagnostic-Message-Formatting-Options.html)
                          r"^\S+?(?::\d+){1,2}: (?:fatal )?error: \S|^\S+\(\d+\): (?:catastrophic )?error: \S|"
                          r"^(?:[\w.\-/\[\]]+: )?\*\*\* .*\bError \d+|"
                          # a failed status that opens the line (STATUS_CODE: Triton's "UNAVAILABLE: Internal: ...",
                          # XLA's "RESOURCE_EXHAUSTED: Out of memory ...")
                          r"^" + STATUS_CODE + r"|"
                          # the dynamic loader's own report (dlerror: "<file>.so: undefined symbol: <name>",
                          # "<file>.so.12: cannot open shared object file: ..."), a library that could not be loaded,
                          # quoted bare where an ImportError's head was cut
                          r"^\S+\.so(?:\.\d+)*: (?:undefined symbol: |cannot open shared object file\b)|"
                          # CANN's error messages, each with where it was raised ("rtGetDeviceCount execution failed,
                          # reason=driver error:internal error[FUNC:FuncErrorReason][FILE:error_message_manage.cc]
                          # [LINE:65]"): its error manager prints them only for an error it reports
                          r"\[FUNC:\w+\]\[FILE:[\w.\-]+\]\[LINE:\d+\]\s*$|"
                          # an exception line (a traceback's, or its str() after a head that names no level: a
                          # time, a bracketed tag: "[12:00:01] KeyError: 'x'", "2026-11-26 12:00:01 RuntimeError: ...")
                          r"^(?:(?:\[[^\]]*\]|[\d:.,/T+-]*\d[\d:.,/T+-]*)\s+){0,3}"
                          r"(?:[A-Za-z_]\w*\.)*(?:[A-Z]\w*)?(?:Error|Exception): \S")
# A native stack's frame, as a crashing process or its runtime prints it: glibc's backtrace_symbols
# ("/lib/x86_64-linux-gnu/libc.so.6(+0x42520)[0x7f3b2c242520]"), Open MPI's signal handler ("[host:4242] [ 8]
# /lib/libmpi.so.40(MPI_Bcast+0x121)[0x7fc1ff32d881]"), c10's ("frame #0: c10::Error::Error(...) + 0x57 (0x7f...
# in libc10.so)"), gdb's ("#0  0x00007f... in raise () from /lib/libc.so.6"), a Go crash's registers ("rax    0x0"),
# and gdb's notices while it attaches ("[New LWP 46883]", "[Thread debugging using libthread_db enabled]").
# Each form holds a code address, so that a logger's "[train.py:120] [0] step 100" or "frame #2: decoded" is none.
NATIVE_FRAME = re.compile(r"^\S+\([\w:.<>~$@]*\+0x[0-9a-f]+\)\s*\[0x[0-9a-f]+\]|"
                          r"^\[[\w.-]+:\d+\] \[ ?\d+\] .*\[0x[0-9a-f]+\]\s*$|"
                          r"^frame #\d+: .*\(0x[0-9a-f]+ in |^#\d+\s+0x[0-9a-f]+ in |"
                          r"^(?:r[a-d]x|r[sd]i|r[sb]p|r(?:[89]|1[0-5])|rip|rflags|[cefgs]s)\s+0x[0-9a-f]+$|"
                          r"^\[New (?:LWP \d+|Thread 0x[0-9a-f]+ \(LWP \d+\))\]|"
                          r"^\[Thread debugging using libthread_db enabled\]|^Using host libthread_db library ")
# A Python stack without its header this many frames deep, that the log ends in, is a traceback cut at both ends.
CUT_STACK_FRAMES = 3
# (... and the paste starts inside it: a line above its first frame but a frame's source would be a header,
# "Traceback" or logging's "Stack (most recent call last):", or the message that quotes the stack.)
# A log that ends in this many native frames, with no error line above them in what was read, ended in a crash.
NATIVE_TAIL_FRAMES = 3
NATIVE_TAIL_REPORT = "the log ends in a native stack trace (a crash dump) with no error line above it in what was read"
# What a failure leaves after its error line without the program going on: its stack (indented, "at ...",
# "#3 0x...", "goroutine 1 [running]:", "src/main.rs:2:5", a native frame), a closing brace, a hint ("note: run with
# RUST_BACKTRACE=1"), the runtime's version line (Node.js), the process's end (an exit status, a core dump).
_TRAILER = re.compile(NATIVE_FRAME.pattern + r"|"
                      r"^\s*(?:at \S|#\d+ |File \"|goroutine \d+ |\d+: 0x[0-9a-f]+)|^[\w./\-]+\.\w{1,4}:\d+|^[})\]^~]+,?$|^(?:note|help|hint):|"
                      r"^Require stack:|^- /|^Node\.js v\d|^stack backtrace:|^\*\*\*|^-+$|^=+$|"
                      # a compiler's and a build tool's last words after an error (GCC, ninja, make)
                      r"^compilation terminated\.|^\d+ errors? (?:generated|detected)|^ninja: build stopped|"
                      r"^(?:g?make|ninja)(?:\[\d+\])?: \*\*\*|"
                      r"(?i:exit(?:ed)? (?:status|with (?:exit )?code|code)|core dumped|^Aborted|^Killed|"
                      r"^Segmentation fault|^Command exited|^\S+ terminated)")
# A line saying the program went on: progress, a retry that worked, a service that is up, a run that finished.
_PROGRESS = re.compile(r"(?i)\b(?:steps?|epoch|iter(?:ation)?s?|loss|it/s|s/it|tokens/s|samples/s|retry(?:ing)?|"
                       r"recovered|reconnected|succeeded|success(?:ful(?:ly)?)?|resum\w*|ok|done|finished|"
                       r"complete[d]?|saved|ready|listening|started|running|connected|continu\w*|passed|"
                       r"throughput)\b|\d+%\||"
                       # TensorRT's builder choosing tactics: one it cannot give memory it logs (its [E] "Error Code
                       # 2: OutOfMemory", then "Requested amount of GPU memory ... could not be allocated", "Skipping
                       # tactic ... due to insufficient memory") and skips, and goes on with the next
                       r"\bSkipping tactic\b|\bcould not be allocated\. There may not be enough free memory\b")
# Lines a library logs at error level in healthy runs: TensorFlow's and XLA's (2.14 on) registering the
# CUDA plugins twice ("E ... cuda_dnn.cc:9342] Unable to register cuDNN factory: Attempting to register factory for
# plugin cuDNN when one has already been registered", and cuFFT's and cuBLAS's), which the maintainers call harmless
# (https://github.com/tensorflow/tensorflow/issues/62075): a closing notice at most, never a last word.
_HARMLESS_ERROR = re.compile(r"Unable to register cu(?:DNN|FFT|BLAS) factory: Attempting to register factory for "
                             r"plugin \w+ when one has already been registered|"
                             # Grappler's layout optimizer giving up on one graph, which runs as it is (training
                             # goes on: https://github.com/tensorflow/tensorflow/issues/41949)
                             r"\blayout failed: (?:INVALID_ARGUMENT|Invalid argument): [Ss]ize of values \d+ does not "
                             r"match size of permutation")
# An info line that says the process is ending: uvicorn's "Shutting down" and "Finished server process", TGI's
# "Shutting down shards", Horovod's "Shutting down background thread". Right after an error (TEARDOWN_SECONDS, both
# lines timed) it is that error's teardown, a closing notice; later, or untimed, it is an ordinary end the program
# reached after an error it went on from (a request that failed, then a Ctrl-C): progress.
_TEARDOWN = re.compile(r"(?i)\b(?:shutting down|shut ?down (?:complete|started)|finished server process|"
                       r"waiting for application shutdown)\b")
TEARDOWN_SECONDS = 2.0
# An error line that says the program goes on without what failed.
_GOES_ON = re.compile(r"(?i)\b(?:retry(?:ing)?|continu\w*|fall(?:ing)? back|skipp\w*|ignor\w*|try(?:ing)? again|"
                      r"will be retried)\b")
# Lines after an error that neither continue it nor show the program going on (a closing notice, a blank banner):
# this many at most, or the error is not how the log ended.
TAIL_NEUTRAL = 2
# The same error line this many times over at least TAIL_REPEATED_SECONDS, and nothing else at error level, ends a
# log where a program repeats it as it goes on (TensorFlow's "could not retrieve CUDA device count" each time it
# looks for a GPU, then it runs on the CPU; a poll that keeps failing), which a paste or a cut log stops inside: no
# failure of its own. The lines must be the same but for their time (a process id, a worker's number, a port
# that differs is another process's or another attempt's line). Lines without a time, or all at one moment, are as
# likely the same last word of several processes: still a failure.
TAIL_REPEATED = 3
TAIL_REPEATED_SECONDS = 1.0


def _torn_down_after(error: tuple[int, str], notices: list[tuple[int, str]],
                     evidence: Callable[[int, str], object]) -> bool:
    """Whether the teardown notices came right after the error line: each timed (its own stamp or its carrier's,
    as its evidence reads it) within TEARDOWN_SECONDS."""
    at = getattr(evidence(*error), "ts", None)
    if at is None:
        return False
    times = [getattr(evidence(*notice), "ts", None) for notice in notices]
    return all(time is not None and 0 <= time - at <= TEARDOWN_SECONDS for time in times)


def _said_over_and_over(rests: list[str]) -> bool:
    """Whether a log's closing block (its lines without their launcher prefix) is one error line repeated over
    time rather than a last word."""
    errors = [rest for rest in rests if tail_kind(rest) == "error"]
    if len(errors) < TAIL_REPEATED:
        return False
    times = [timestamp_of(rest) for rest in errors]
    if any(time is None for time in times):
        return False
    said = {rest.replace(time[1], "", 1).strip() for rest, time in zip(errors, times, strict=True) if time}
    seconds = [time[0] for time in times if time is not None]
    return len(said) == 1 and max(seconds) - min(seconds) >= TAIL_REPEATED_SECONDS
# A run that said it was done: its training loop's last words (the HF Trainer's "Training completed.", Ray Train's
# "Training result: Result(", Lightning's "`Trainer.fit` stopped: `max_epochs=4` reached."). Error lines that
# come after it and end the log, with no traceback or signal of their own, are its processes' teardown (a
# compiler's subprocess that lost its parent, a communicator torn down after its peers left), not a failure.
_RUN_DONE = re.compile(r"^Training completed\. |^Training result: Result\(|"
                       r"`Trainer\.fit` stopped: `max_(?:epochs|steps)=\d+` reached\.")
# How far above the errors the run's last words may stand (Ray's Result is printed over a few lines).
RUN_DONE_LINES = 8

# Every pattern the tracker decides on: the prefilter must hold a literal of each (tests hold this).
STRUCTURE_PATTERNS: tuple[re.Pattern[str], ...] = (
    TRACEBACK, CHAINED, FRAME, FATAL_PYTHON, TERMINATE, WHAT, OTHER_SIGNAL, TORCHRUN_FAILED, TORCHRUN_RANK,
    TORCHRUN_EXIT, TORCHRUN_SIGNAL, TORCHRUN_ROOT, C10_RAISED, SLURM, SLURMCTLD_END, PLOG_ERROR, EXIT_SUMMARY, RETRY, IGNORED,
    DEVICE_ASSERT, ABORT, _OTHER_SHELL_SIGNAL,
    re.compile(r"Segmentation fault|Aborted|Bus error|Killed|Illegal instruction|Floating point exception|Terminated"),
)
# Literals of exception lines: a line that may be one holds one of these (or a class name a table lists).
EXCEPTION_ANCHORS = ("Error", "Exception", "Interrupt", "SystemExit")


@dataclass
class Line:
    """A line as the tracker keeps it: where it is and what it says (the diagnosis's EvidenceLine, abstracted)."""

    lineno: int
    text: str


@dataclass
class FailureEvent:
    kind: str  # exception | traceback | signal | fatal | terminate | slurm | plog | torchrun | exit | abort | final
    source: int  # index of the log in reading order
    stream: int | None  # the rank of the lines' prefix (None: no prefix)
    seq: int  # position in reading order, for "which came first"
    first: object  # the diagnosis's EvidenceLine of the line that shows the failure
    primary: bool = True
    exc_type: str | None = None
    message: str = ""
    frame: str | None = None  # "train.py:42 in forward" for a traceback
    chain: list[str] = field(default_factory=list)  # the earlier exceptions of a chained traceback, "Type: msg"
    texts: list[str] = field(default_factory=list)  # the event's own lines, for the tables
    linenos: list[int] = field(default_factory=list)  # where those lines are
    evidence: list[object] = field(default_factory=list)
    first_lineno: int = 0
    last_lineno: int = 0
    exitcode: int | None = None
    signal: str | None = None
    rank: int | None = None  # the failing rank, when a summary names it (torchrun's root cause)
    covered: bool = False  # a signature or an error code already explains it
    # How many lines above the first hold the failure's own message: c10's C++ error prints what() first, then
    # "Exception raised from <function> at <file>:<line> (most recent call first):".
    message_above: int = 0
    cut: bool = False  # a traceback the log ends in, before its exception line (the paste or the log was cut)

    def add(self, evidence: object, lineno: int, text: str) -> None:
        if len(self.evidence) < EVIDENCE_CAP:
            self.evidence.append(evidence)
        if len(self.texts) < TEXT_CAP:
            self.texts.append(text)
            self.linenos.append(lineno)
        self.last_lineno = max(self.last_lineno, lineno)


@dataclass
class _Stream:
    traceback_at: int | None = None  # line number of the open traceback's header
    traceback_first: object = None
    frame: str | None = None
    chained: bool = False
    ignored: bool = False  # "Exception ignored in", or a retry just before: reported, and the program goes on
    # A logger's prefix on every line of the traceback ("ERROR 05-07 05:58:46 core.py:291] "), learned from its
    # header, digits made variable: stripped from the lines that follow so their frames and exception are read.
    log_prefix: re.Pattern[str] | None = None
    handled_at: int = -HANDLED_LINES - 1  # the last retry notice's line
    error_line: FailureEvent | None = None  # the last failure made of error-level lines
    last_event: FailureEvent | None = None  # the exception that closed the last traceback, for continuation lines
    # IPython's header names the exception before its frames ("RayTaskError(PermissionError)   Traceback (most
    # recent call last)"): the class, for a traceback whose own exception line is cut off or not read.
    header_type: str | None = None
    # The open traceback's header was never seen (an excerpt that starts among its frames): it is a failure if its
    # exception line comes, or if the paste both starts and ends in it, CUT_STACK_FRAMES deep or more.
    headless: bool = False
    frames: int = 0  # the open traceback's frames so far
    frame_lineno: int = 0  # where its last frame is
    # The open traceback's last frame's source line when it is a raise of a named exception with a literal message
    # ("raise RuntimeError('...')"): what was raised, where a paste ends before Python's own exception line.
    raised: tuple[str, str, int, object] | None = None

    def open_traceback(self, lineno: int, first: object, *, chained: bool, headless: bool) -> None:
        """A traceback starts at ``lineno`` (its header, or the first frame of one that had none)."""
        self.traceback_at, self.traceback_first, self.frame, self.frames = lineno, first, None, 0
        self.chained, self.headless = chained, headless

    def close_traceback(self) -> None:
        """The open traceback is over (its exception read, or given up as incomplete)."""
        self.traceback_at, self.header_type, self.headless = None, None, False


def split_prefix(line: str) -> tuple[int | None, str]:
    """The rank a launcher prefix names, and the line after the prefix."""
    match = _PREFIX.match(line[:80])
    if match is None:
        return None, line
    rank = match.group("rank") or match.group("num")
    return (int(rank) if rank else None), line[match.end():]


def exception_line(rest: str, tables: Tables, in_traceback: bool) -> tuple[str, str] | None:
    """(type, message) when ``rest`` (a line without its launcher prefix) reads as an exception line.

    Outside a traceback the line must look unmistakably like one: at the line's start, a class name with at least
    two capitals or a module path, and a message (or a class a table knows, such as torchrun's ChildFailedError).
    """
    quoted = _QUOTE_MARKUP.match(rest)
    if quoted:
        rest = rest[quoted.end():].rstrip().rstrip("`'\"")
    if _ERRNO_LINE.match(rest):
        # str() of an OSError, printed by a program that caught it ("[Errno 13] Permission denied: '/.cache'").
        return "OSError", rest.strip()
    match = EXCEPTION.match(rest)
    if match is None:
        inline = _INLINE_EXCEPTION.search(rest)
        if inline is None or in_traceback:
            return None
        exc_type, message = inline.group("type"), inline.group("msg").strip()
        name = exc_type.rsplit(".", 1)[-1]
        if name.endswith("Warning") or (not _EXCEPTION_NAME.search(name) and tables.exception_row(exc_type) is None):
            return None
        return exc_type, message
    exc_type, message = match.group("type"), (match.group("msg") or "").strip()
    name = exc_type.split("(", 1)[0].rsplit(".", 1)[-1]
    if name.endswith("Warning"):
        return None
    if not name.lstrip("_")[:1].isupper() and exc_type not in tables.exceptions:
        # PEP 8 capitalises exception classes (a private one after its underscore: NumPy's _ArrayMemoryError); the
        # few lowercase ones (socket.timeout, socket.gaierror) count where a table names them by their dotted name.
        return None
    if not _EXCEPTION_NAME.search(name) and tables.exception_row(exc_type) is None:
        return None
    if not in_traceback:
        # "RuntimeError: " and nothing after it is how Python prints an exception whose message starts with a
        # newline (its lines follow, indented), a form libraries use for long explanations; a bare class name
        # without the colon is a word in a sentence.
        opened = not message and rest.rstrip().endswith(":") and _EXCEPTION_NAME.search(name) is not None
        if match.group("indent") or (not message and not opened and tables.exception_row(exc_type) is None):
            return None
        if "." not in exc_type and sum(ch.isupper() for ch in name) < 2:
            return None
    return exc_type, message


class FailureTracker:
    """Failure events of a job's logs, fed line by line (only the lines the prefilter let through)."""

    def __init__(self, tables: Tables) -> None:
        self.tables = tables
        self.events: list[FailureEvent] = []
        self._streams: dict[int | None, _Stream] = {}
        self._source = -1
        self._base = 0
        self._torchrun: FailureEvent | None = None
        self._torchrun_root = False
        self._plog: dict[str, FailureEvent] = {}
        self._terminate: FailureEvent | None = None
        self._rows: tuple[TableRow, ...] = ()
        self._nccl_tests = False  # the current log is nccl-tests' output
        # A launcher's report of several lines that later lines join (mpirun's, DeepSpeed's), and which it is.
        self._report: FailureEvent | None = None
        self._report_kind: str | None = None
        # Every rank torchrun's failure summary lists (not only its root cause), with how it ended ("SIGTERM": the
        # agent stopped it after another worker failed), across all logs read.
        self.summary_ranks: dict[int, str | None] = {}
        self._listing: int | None = None

    # ---- sources ----

    def begin(self, source: int, base: int) -> None:
        self._close_open_tracebacks()
        self._source, self._base = source, base
        self._streams = {}
        self._torchrun, self._torchrun_root, self._plog, self._terminate = None, False, {}, None
        self._nccl_tests, self._report, self._report_kind = False, None, None

    def open_tracebacks(self) -> bool:
        """Whether a traceback of the current log is still open (its exception line not read yet)."""
        return any(stream.traceback_at is not None for stream in self._streams.values())

    def end(self, tail: list[tuple[int, str]] | None = None) -> None:
        """The current log is read (``tail``: its last lines, read whole, cleaned)."""
        self._close_open_tracebacks(tail)

    def failed(self) -> bool:
        """Whether the logs show a failure at all (a traceback that was handled does not count)."""
        return any(event.primary or not event.covered for event in self.events)

    def wants_context(self) -> bool:
        """Whether the line after a hit may belong to an event (an exception's message, a what() line)."""
        return self._terminate is not None or any(
            s.traceback_at is not None or s.last_event is not None for s in self._streams.values())

    def tail(self, lines: list[tuple[int, str]], evidence: Callable[[int, str], object]) -> None:
        """How the current log ended (its last lines, read whole, cleaned), where the lines the prefilter passed
        showed no failure of their own: a log whose last events are error-level lines, followed only by their own
        trailer (a stack, a native dump, an exit status) and at most TAIL_NEUTRAL closing notices (a warning, a
        teardown notice timed right after the error), ended in that error (a ``final`` event, quoting its first
        line); one repeated over time is a loop the paste stops in. A later line that shows the program going on
        (progress, a retry that worked, an info line) makes the error one it recovered from. A log that ends in a
        native stack with no error line above it ended in a crash."""
        if any(event.source == self._source and event.primary for event in self.events):
            return  # (a traceback that was handled, then a retry, is no failure: the log's end may still be one)
        # The lines the structure read as failures already: a launcher's or the scheduler's report (secondary), a
        # handled exception's own line (a traceback before a retry, at shutdown). The lines after a handled one are
        # new (the error it ended in after all).
        known = {lineno for event in self.events if event.source == self._source
                 for lineno in (event.linenos[:1] if event.covered else event.linenos)}
        last: int | None = None  # index of the last error line
        stream: int | None = None
        neutral = 0
        frames: list[int] = []  # the native stack's frames the log ends in, from the bottom up
        teardown: list[tuple[int, str]] = []  # the teardown notices after the last error line
        for index in range(len(lines) - 1, -1, -1):
            rank, rest = split_prefix(lines[index][1])
            if not rest.strip():
                continue
            kind = tail_kind(rest)
            if last is None:
                if kind == "error":
                    if lines[index][0] in known:
                        return
                    last, stream = index, rank
                    continue
                if kind == "progress":
                    break
                if kind in ("neutral", "teardown"):
                    neutral += 1
                    if neutral > TAIL_NEUTRAL:
                        break
                    if kind == "teardown":
                        teardown.append(lines[index])
                elif NATIVE_FRAME.search(rest) and lines[index][0] not in known:
                    frames.append(index)
                continue
            # Above the last error line: the block of error lines (and their trailers) it ends.
            if rank != stream or kind not in ("error", "trailer") or lines[index][0] in known:
                break
            if kind == "error":
                last = index
        if last is None:
            if len(frames) >= NATIVE_TAIL_FRAMES:
                # A crashed process's stack with no error line left above it in what was read (a paste that starts
                # in the dump): the process died, and the dump is all that says so.
                top = frames[-1]
                rank, rest = split_prefix(lines[top][1])
                event = self._new("final", rank, lines[top][0], evidence(*lines[top]), NATIVE_TAIL_REPORT)
                if event is not None:
                    for lineno, line in lines[top + 1:]:
                        if split_prefix(line)[0] == rank and line.strip():
                            event.add(evidence(lineno, line), lineno, NATIVE_TAIL_REPORT)
                            break
            return
        if teardown and not _torn_down_after(lines[last], teardown, evidence):
            return  # an ordinary end after an error the program went on from
        if any(_RUN_DONE.search(split_prefix(line)[1]) for _, line in lines[max(0, last - RUN_DONE_LINES):last]):
            return  # the run said it was done before these errors: its teardown
        if _said_over_and_over([split_prefix(line)[1] for _, line in lines[last:]]):
            return  # a probe or a retry in a loop, not a last word: the paste stops in it
        first_lineno, text = lines[last]
        rest = split_prefix(text)[1].strip()
        event = self._new("final", stream, first_lineno, evidence(first_lineno, text), rest)
        if event is None:
            return
        for lineno, line in lines[last + 1:]:
            rank, rest = split_prefix(line)
            if rest.strip() and rank == stream:
                event.add(evidence(lineno, line), lineno, rest.strip())

    def message_rest(self, lines: list[tuple[int, str]]) -> None:
        """The rest of the last exception's message where the log ends (``lines``: its last lines, read whole,
        cleaned). The prefilter passes only the line after an anchor, so a message of several lines (a library's
        explanation after "RuntimeError: ") is read up to its first line; its other lines name the cause as often.
        They run until a line of another rank, a new traceback, a logger's line or a line a failure already holds."""
        events = [event for event in self.events if event.source == self._source and event.kind == "exception"
                  and event.primary and event.linenos]
        if not events or not lines:
            return
        event = events[-1]
        known = {lineno for other in self.events if other.source == self._source for lineno in other.linenos}
        for lineno, text in lines:
            if lineno <= event.last_lineno:
                continue
            if lineno - event.first_lineno > CONTINUATION_LINES or lineno in known:
                break
            rank, rest = split_prefix(text)
            if rank != event.stream or TRACEBACK.search(rest) or level_name(rest) is not None:
                break
            if rest.strip() and len(event.texts) < TEXT_CAP:
                event.texts.append(rest.strip())
                event.linenos.append(lineno)

    # ---- lines ----

    def line(self, lineno: int, text: str, evidence: Callable[[], object], rows: tuple[TableRow, ...] = ()) -> bool:
        """Feed one line (``rows``: the table rows its literals name); True when it belongs to a failure event."""
        self._rows = rows
        stream_rank, rest = split_prefix(text)
        stream = self._streams.get(stream_rank)
        if stream is None:
            if len(self._streams) >= 4096:
                return False
            stream = self._streams[stream_rank] = _Stream()
        prefix = ""
        if stream.log_prefix is not None:
            logged = stream.log_prefix.match(rest)
            if logged:
                prefix, rest = rest[:logged.end()], rest[logged.end():]

        header = TRACEBACK.search(rest)
        if header:
            head = rest[: header.start()]
            ipython = _IPYTHON_HEADER.match(head)
            if stream.log_prefix is None and ipython is None:
                stream.log_prefix = _learned_prefix(head)
            if stream.traceback_at is not None and stream.last_event is None:
                self._incomplete(stream, stream_rank)
            stream.header_type = ipython.group("type") if ipython else None
            if lineno - stream.handled_at <= HANDLED_LINES or level_name(prefix + head) in _HANDLED_LEVELS:
                # A traceback a logger prints at warning level or below (torch's "W1126 ... fx graph unable to
                # write to cache" before its stack) is one the program caught and went on from, as a retry's is.
                stream.ignored = True
            chained = stream.chained and stream.last_event is not None
            stream.open_traceback(lineno, evidence(), chained=chained, headless=False)
            if not chained:
                stream.last_event = None
            return True
        if CHAINED.search(text):
            stream.chained = True
            return True
        if IGNORED.search(text):
            stream.ignored = True
            return True
        if RETRY.search(rest):
            stream.handled_at = lineno
        if stream.traceback_at is None and stream.last_event is None:
            rest = self._headless(stream, lineno, rest, evidence)
        if stream.traceback_at is not None:
            frame = FRAME.match(rest)
            if frame:
                func = f" in {frame.group('func')}" if frame.group("func") else ""
                stream.frame = f"{frame.group('file')}:{frame.group('line')}{func}"
                stream.raised = None
                stream.frames, stream.frame_lineno = stream.frames + 1, lineno
                return True
            found = exception_line(rest, self.tables, in_traceback=True)
            if found:
                self._exception(stream, stream_rank, lineno, text, found, evidence)
                return True
            raised = _RAISE_SOURCE.match(rest) if stream.frame is not None else None
            if raised:
                stream.raised = (raised.group("type"), raised.group("msg"), lineno, evidence())
            return False

        event = stream.last_event
        if event is not None:
            if lineno - event.last_lineno > CONTINUATION_LINES:
                stream.last_event = None
            elif not self._marker(lineno, text, rest, stream_rank, stream, evidence, weak=False):
                if RETRY.search(rest) and event.kind == "exception":
                    # A traceback logged on the way to a retry is not the job failing.
                    event.primary = False
                    event.covered = True
                event.add(evidence(), lineno, rest.strip())
                return True
            else:
                return True
        found = exception_line(rest, self.tables, in_traceback=False)
        if found:
            self._exception(stream, stream_rank, lineno, text, found, evidence, bare=True)
            return True
        if C10_RAISED.search(rest):
            # torch's C++ error without its traceback: the lines before it say what it was (the tables read them).
            event = self._new("exception", stream_rank, lineno, evidence(), rest.strip())
            if event is not None:
                event.message_above = C10_MESSAGE_LINES
            return True
        return self._marker(lineno, text, rest, stream_rank, stream, evidence)

    def _headless(self, stream: _Stream, lineno: int, rest: str, evidence: Callable[[], object]) -> str:
        """Open a traceback at a frame line that no header announced (a pasted excerpt that starts among the
        frames), learning the logger's prefix before the frame as a header would teach it. The line without that
        prefix."""
        frame = _FRAME_AFTER.search(rest)
        if frame is None:
            return rest
        head = rest[: frame.start()]
        if head.strip():
            if stream.log_prefix is not None or level_name(head) not in _ERROR_LEVELS:
                return rest  # a frame quoted inside a message or a warning, not a failing traceback's own line
            stream.log_prefix = _learned_prefix(head)
            logged = stream.log_prefix.match(rest) if stream.log_prefix is not None else None
            rest = rest[logged.end():] if logged else rest[frame.start():]
        stream.open_traceback(lineno, evidence(), chained=False, headless=True)
        return rest

    # ---- events ----

    def _new(self, kind: str, stream: int | None, lineno: int, first: object, text: str,
             primary: bool = True) -> FailureEvent | None:
        if len(self.events) >= EVENTS_CAP:
            return None
        event = FailureEvent(kind=kind, source=self._source, stream=stream, seq=self._base + lineno, first=first,
                             primary=primary, first_lineno=lineno, last_lineno=lineno)
        event.add(first, lineno, text)
        self.events.append(event)
        return event

    def _exception(self, stream: _Stream, stream_rank: int | None, lineno: int, text: str,
                   found: tuple[str, str], evidence: Callable[[], object], bare: bool = False) -> None:
        exc_type, message = found
        line = evidence()
        row = self.tables.exception_row(exc_type)
        secondary = bool(row and row.secondary)
        if bare and level_name(text[: max(text.find(exc_type), 0)]) in _HANDLED_LEVELS:
            # A logger's warning that quotes an exception (torch._dynamo's "[WARNING] ...BackendCompilerFailed"
            # before it falls back to eager) reports one the program handled and went on from.
            stream.ignored = True
        if stream.chained and stream.last_event is not None:
            event = stream.last_event
            event.chain.append(f"{event.exc_type}: {event.message}".rstrip(": "))
            event.exc_type, event.message = exc_type, message
            event.add(line, lineno, f"{exc_type}: {message}")
            event.primary = event.primary or not secondary
        else:
            created = self._new("exception", stream_rank, lineno, line, f"{exc_type}: {message}",
                                primary=not secondary)
            if created is None:
                return
            event = created
            event.exc_type, event.message = exc_type, message
            if not bare and stream.traceback_at is not None:
                event.first_lineno = stream.traceback_at
        event.frame = stream.frame or event.frame
        if stream.ignored:
            # Python printed an exception it could not raise (a destructor at shutdown) and carried on.
            event.primary, event.covered, stream.ignored = False, True, False
        stream.traceback_at, stream.chained, stream.last_event, stream.headless = None, False, event, False
        if exc_type.rsplit(".", 1)[-1] == "ChildFailedError":
            self._torchrun, self._torchrun_root = event, False

    def _incomplete(self, stream: _Stream, stream_rank: int | None, at_end: bool = False,
                    at_start: bool = False) -> None:
        """A traceback whose exception line never came (a class name no pattern knows, or a cut log; ``at_end``:
        the log ends in it; ``at_start``: the log starts in it)."""
        assert stream.traceback_at is not None
        raised, stream.raised = stream.raised, None
        if raised is not None and not stream.ignored:
            # The paste ends at the last frame's "raise SomeError('...')": that is the exception the traceback
            # was about to print, with its message as the source spells it.
            exc_type, message, lineno, line = raised
            event = self._new("exception", stream_rank, lineno, line, f"{exc_type}: {message}")
            if event is not None:
                event.exc_type, event.message, event.frame = exc_type, message, stream.frame
                if not stream.headless:
                    event.first_lineno = stream.traceback_at
            stream.close_traceback()
            return
        cut_at_both_ends = at_end and at_start and stream.frames >= CUT_STACK_FRAMES
        if (stream.headless and not cut_at_both_ends) or stream.ignored:
            # A run of frames with neither header nor exception line may be a stack printed on purpose (logging's
            # stack_info, traceback.print_stack()) or quoted in a message; one the paste starts with and ends in,
            # several frames deep, is a traceback the paste cut at both ends.
            stream.close_traceback()
            stream.ignored = False
            return
        event = self._new("traceback", stream_rank, stream.traceback_at, stream.traceback_first,
                          "Traceback (most recent call last):")
        if event is not None:
            event.frame = stream.frame
            event.exc_type = stream.header_type
            event.cut = at_end
        stream.close_traceback()

    def _close_open_tracebacks(self, tail: list[tuple[int, str]] | None = None) -> None:
        for rank, stream in self._streams.items():
            if stream.traceback_at is not None:
                # The log ends in it: nothing after its last frame but that frame's source (an indented line, a
                # caret line) and the start of a frame the paste cut ('File "/data/v').
                at_end = tail is not None and any(lineno == stream.frame_lineno for lineno, _ in tail) and all(
                    not rest.strip() or rest[:1].isspace() or rest.startswith('File "')
                    for rest in (split_prefix(text)[1] for lineno, text in tail if lineno > stream.frame_lineno))
                # ... and it starts there: nothing above its first frame but a frame's source (an indented line)
                at_start = tail is not None and bool(tail) and tail[0][0] == 1 and all(
                    not rest.strip() or rest[:1].isspace()
                    for rest in (split_prefix(text)[1] for lineno, text in tail if lineno < stream.traceback_at))
                self._incomplete(stream, rank, at_end=at_end, at_start=at_start)

    def _marker(self, lineno: int, text: str, rest: str, stream_rank: int | None, stream: _Stream,
                evidence: Callable[[], object], weak: bool = True) -> bool:
        """The failure reports that are not tracebacks; True when the line was one. ``weak``: error-level lines a
        table names count too (not while the lines of an exception's message are still coming)."""
        slurm = SLURM.search(text)
        if slurm:
            message = slurm.group("msg")
            task = _SLURM_TASK.match(message)
            if task is not None and not _SLURM_SECONDARY.search(task.group("what")):
                primary = True
            elif _SLURM_PRIMARY.search(message):
                primary = True
            elif _SLURM_SECONDARY.search(message):
                primary = False
            elif _SLURM_PLUGIN.match(message):
                primary = True
            elif slurm.group("who") != "slurmstepd" and any(
                    at == 0 and row.table == "slurm"
                    for at, row in self.tables.literal_hits(_SLURM_REFUSED.sub("", message, count=1))):
                # The client's line that is Slurm's refusal of the request (slurm_strerror's string), alone or after
                # sbatch's "Batch job submission failed:" or salloc's "Job submit/allocate failed:" (srun's "Unable to
                # allocate resources:" is primary above): the job never ran. (A string quoted after a function's name,
                # "slurm_receive_msg: Socket timed out ...", is a complaint the client may retry past.)
                primary = True
            else:
                return False  # slurmstepd's other complaints (a /proc read that raced an exit) are no failure
            event = self._new("slurm", stream_rank, lineno, evidence(), message, primary=primary)
            if event is not None and task is not None:
                event.rank = _first_task(task.group("tasks"))
            return True
        ended = SLURMCTLD_END.search(text) if "_job_complete" in text or "Time limit" in text else None
        if ended:
            if ended.group("code") == "0":
                return False
            # A signal or the time limit is the job's end as the controller saw it; an exit code only repeats what
            # the job's own output says (secondary, as srun's "Exited with exit code").
            event = self._new("slurm", stream_rank, lineno, evidence(), rest.strip(),
                              primary=ended.group("code") is None)
            if event is not None and ended.group("code") is not None:
                event.exitcode = int(ended.group("code"))
            return True
        plog = PLOG_ERROR.match(rest)
        if plog:
            pid = plog.group("pid")
            known = self._plog.get(pid)
            if known is None:
                created = self._new("plog", stream_rank, lineno, evidence(), plog.group("msg"))
                if created is not None:
                    created.exc_type = f"{plog.group('module')} ERROR"
                    created.message = plog.group("msg").strip()
                    self._plog[pid] = created
            else:
                known.add(evidence(), lineno, plog.group("msg"))
            return True
        root = TORCHRUN_ROOT.search(text)
        if root and self._torchrun is None:
            # torchrun's summary pasted without the ChildFailedError line above it: the block is that error's
            # message (torch.distributed.elastic.multiprocessing.errors), a report of which rank failed and how.
            summary = self._new("exception", stream_rank, lineno, evidence(), rest.strip(), primary=False)
            if summary is not None:
                summary.exc_type = "ChildFailedError"
                self._torchrun = summary
        if self._torchrun is not None:
            if root:
                # The root cause's entry follows: its rank, exit code and signal replace the other failures'.
                self._torchrun_root = True
                summary = self._torchrun
                summary.rank = summary.exitcode = summary.signal = None
                del summary.texts[1:], summary.linenos[1:], summary.evidence[1:]  # the other ranks' entries
                return True
            for pattern in (TORCHRUN_RANK, TORCHRUN_EXIT, TORCHRUN_SIGNAL):
                found = pattern.search(text)
                if found is None:
                    continue
                self._list_rank(pattern, found)
                summary = self._torchrun
                if pattern is TORCHRUN_RANK and (self._torchrun_root or summary.rank is None):
                    summary.rank = int(found.group("rank"))
                elif pattern is TORCHRUN_EXIT and (self._torchrun_root or summary.exitcode is None):
                    summary.exitcode = int(found.group("code"))
                elif pattern is TORCHRUN_SIGNAL and (self._torchrun_root or summary.signal is None):
                    summary.signal = found.group("sig")
                summary.add(evidence(), lineno, rest.strip())
                return True
        failed = TORCHRUN_FAILED.search(text)
        if failed:
            event = self._new("torchrun", stream_rank, lineno, evidence(), rest.strip(), primary=False)
            if event is not None:
                event.exitcode = int(failed.group("code"))
            return True
        if NCCL_TESTS.search(rest):
            self._nccl_tests = True
            return False
        exit_summary = EXIT_SUMMARY.search(text)
        code = exit_summary and (exit_summary.group("code") or exit_summary.group("status")
                                 or exit_summary.group("exited") or exit_summary.group("hydra")
                                 or exit_summary.group("ompi"))
        signum = exit_summary and (exit_summary.group("signum") or exit_summary.group("hydrasig"))
        number = int(code, 0 if "x" in code else 10) if code else None
        if exit_summary and number != 0:
            # A report of several lines: mpirun's banner, its "mpirun detected ..." and the first process's code;
            # DeepSpeed's launcher killing each rank, then its "exits with return code = N".
            opener = ("mpi" if exit_summary.group("mpi") or exit_summary.group("mpiprimary")
                      else "dskill" if exit_summary.group("dskill") else None)
            joins = {"mpi": ("ompi", "mpi"), "dskill": ("dskill", "code")}.get(self._report_kind or "", ())
            event = self._report if any(exit_summary.group(name) for name in joins) else None
            joined = event is not None and lineno - event.last_lineno <= CONTINUATION_LINES
            if event is not None and joined:
                event.add(evidence(), lineno, rest.strip())
            else:
                event = self._new("exit", stream_rank, lineno, evidence(), rest.strip(), primary=False)
            # (a line that joined a report and opens one is that report's own kind: the report stays the same event)
            self._report, self._report_kind = (event, opener) if opener is not None else (None, None)
            reported = next((LAUNCHER_REPORTS[name] for name in LAUNCHER_REPORTS if exit_summary.group(name)), None)
            if event is not None and reported is not None and not joined:
                # A launcher ending the ranks still running after one failed: its words name no cause (spawn's
                # SIGTERM is its own, not a signal from outside the job), so the line is read for what it reports.
                event.texts[-1] = reported
            if event is not None:
                # a signal as torchrun writes it, negative, so that the signal's row names it (a line of the report
                # that carries neither keeps the code its report has)
                if signum or number is not None:
                    event.exitcode = -int(signum) if signum else number
                result = NCCL_TESTS_RESULTS.get(event.exitcode or 0) if self._nccl_tests else None
                if result is not None:
                    # nccl-tests' exit code is its result: the tables name it (nccl.yml), read on the line that
                    # gave the code (a text of its own would count as one more line of evidence)
                    event.exc_type, event.message = "nccl-tests", f"{result} (exit code {event.exitcode})"
                    event.texts[-1] += f" ({result})"
            return True
        if self._terminate is not None:
            what = WHAT.match(rest)
            event, self._terminate = self._terminate, None
            if what:
                event.message = what.group("msg").strip()
                event.add(evidence(), lineno, event.message)
                return True
        terminate = TERMINATE.search(text)
        if terminate:
            event = self._new("terminate", stream_rank, lineno, evidence(), rest.strip())
            if event is not None:
                event.exc_type = terminate.group("type") or "std::terminate"
                self._terminate = event
            return True
        fatal = FATAL_PYTHON.search(text)
        if fatal:
            event = self._new("fatal", stream_rank, lineno, evidence(), rest.strip())
            if event is not None:
                event.exc_type, event.message = "Fatal Python error", fatal.group("what").strip()
            return True
        other_shell = _OTHER_SHELL_SIGNAL.search(rest)
        if other_shell:
            event = self._new("signal", stream_rank, lineno, evidence(), rest.strip())
            if event is not None:
                event.signal = other_shell.group("fishsig") or _ZSH_SIGNALS[other_shell.group("zshsig")]
            return True
        shell = _SHELL_SIGNAL.search(rest)
        if shell and _is_shell_report(rest, shell):
            event = self._new("signal", stream_rank, lineno, evidence(), rest.strip())
            if event is not None:
                event.signal = shell.group("sig")
            return True
        other = OTHER_SIGNAL.search(text)
        if other:
            event = self._new("signal", stream_rank, lineno, evidence(), rest.strip())
            if event is not None:
                event.signal = other.group("sig") or other.group("sig2") or other.group("name") or other.group("ompi")
            return True
        aborted = ABORT.search(rest) if not DEVICE_ASSERT.search(text) else None
        if aborted:
            event = self._new("abort", stream_rank, lineno, evidence(), rest.strip())
            if event is not None:
                form = next(name for name, value in aborted.groupdict().items() if value is not None)
                event.exc_type = _ABORT_NAMES.get(form, form)
                # Go's "panic: msg" and "fatal error: msg": the message is what follows the word.
                event.message = (rest[aborted.end():] if form in ("gopanic", "gofatal") else rest).strip()
                if aborted.group("mpirank"):
                    event.rank = int(aborted.group("mpirank"))
            return True
        if not weak:
            return False
        if DEVICE_ASSERT.search(text):
            return self._error_lines("device-assert", stream, stream_rank, lineno, rest, evidence,
                                     signal="cudaErrorAssert")
        if any(row.standalone for row in self._rows):
            # The kernel's report of failed hardware or a filesystem is a failure wherever it appears.
            return self._error_lines("kernel", stream, stream_rank, lineno, rest, evidence)
        if (self._rows and (ERROR_LEVEL.search(rest) or self._prints_code(rest)) and not RETRY.search(rest)
                and any(not row.secondary for row in self._rows)):
            return self._error_lines("error-line", stream, stream_rank, lineno, rest, evidence)
        return False

    def _prints_code(self, rest: str) -> bool:
        """A table's code pattern names an error code on the line (\"CUresult error  result=2\", \"error code is
        507015\"): a library's report of a call that failed, whatever its level word."""
        return any(code_pattern.pattern.search(rest) for code_pattern in self.tables.code_patterns)

    def _list_rank(self, pattern: re.Pattern[str], found: re.Match[str]) -> None:
        """Note a rank of torchrun's summary and how it ended (a signal by name, or one an exit code carries)."""
        if pattern is TORCHRUN_RANK:
            rank = int(found.group("rank"))
            if len(self.summary_ranks) < EVENTS_CAP:
                self.summary_ranks.setdefault(rank, None)
                self._listing = rank
            return
        if self._listing is None:
            return
        if pattern is TORCHRUN_SIGNAL:
            self.summary_ranks[self._listing] = found.group("sig")
        elif int(found.group("code")) == -15:
            self.summary_ranks[self._listing] = "SIGTERM"

    def _error_lines(self, kind: str, stream: _Stream, stream_rank: int | None, lineno: int, rest: str,
                     evidence: Callable[[], object], signal: str | None = None) -> bool:
        """Error lines a table names (or CUDA's device assertions): the lines of one failure when they are close."""
        last = stream.error_line
        if last is not None and last.kind == kind and lineno - last.last_lineno <= ERROR_LINES_GAP:
            last.add(evidence(), lineno, rest.strip())
            return True
        event = self._new(kind, stream_rank, lineno, evidence(), rest.strip())
        if event is not None:
            event.signal = signal
            stream.error_line = event
        return True


# What each form of ABORT is called in a finding's quote.
_ABORT_NAMES = {"guarantee": "guarantee() failed", "assert": "assertion failed", "heap": "heap corruption",
                "smash": "stack smashing detected", "sanitizer": "sanitizer report", "gopanic": "Go panic",
                "gofatal": "fatal error", "rust": "Rust panic", "macro": "assertion failed", "mpi": "MPI_ABORT",
                "notfound": "command not found",
                "oomkilled": "OOMKilled", "nccltests": "nccl-tests check failed",
                "cudasample": "CUDA sample check failed"}


def level_name(rest: str) -> str | None:
    """The logger's level a line's head names (``ERROR``, glog's ``E`` ...), upper-case; None when it names none."""
    level = _LEVEL_WORD.search(rest[:_LEVEL_HEAD])
    if level is None:
        return None
    return next(value for value in level.groupdict().values() if value is not None).upper()


# PMIx's complaint about a message it could not unpack, one per rank, when the PMIx of the launcher (Slurm's
# plugin) and of the MPI library differ in version: the program goes on (https://github.com/open-mpi/ompi/issues/8548),
# so it neither fails a log nor ends one.
_PMIX_NOISE = re.compile(r"PMIX ERROR: [A-Z-]+ in file \S*(?:bfrop_base_unpack|dstore_base|gds_ds\d+_lock_pthread)\.c")


def tail_kind(rest: str) -> str:
    """What a line at a log's end says (``rest``: without its launcher prefix): ``error`` (at error level),
    ``trailer`` (a failure's stack or the process's end), ``progress`` (the program went on: progress, an info or
    debug line, a retry that worked), ``teardown`` (an info line that says the process is ending: the tail decides
    by its time whose end it is), or ``neutral``."""
    if SLURM.search(rest) or _PMIX_NOISE.search(rest):
        # srun's and slurmstepd's lines are read by the tracker's own rules (_marker); PMIx's noise says nothing
        return "neutral"
    name = level_name(rest)
    if name is not None:
        if name in _ERROR_LEVELS:
            return "progress" if _GOES_ON.search(rest) else "neutral" if _HARMLESS_ERROR.search(rest) else "error"
        if name in _QUIET_LEVELS:
            return "teardown" if _TEARDOWN.search(rest) else "progress"
        return "progress" if _PROGRESS.search(rest) else "neutral"  # a warning
    if _ERROR_START.search(rest):
        return "progress" if _GOES_ON.search(rest) else "error"
    if _TRAILER.search(rest):
        return "trailer"
    if _PROGRESS.search(rest):
        return "progress"
    # an indented line: the error's own message or data, after its stack frames were told apart above
    return "trailer" if rest[:1].isspace() else "neutral"


def _is_shell_report(rest: str, match: re.Match[str]) -> bool:
    """A shell's report of a dead child ("... line 12: 4321 Killed   python x.py", "Segmentation fault (core
    dumped)"), not a word in a message ("Killed process 42" is the kernel's, "Aborted" inside a sentence)."""
    if _LINE_PREFIX.search(rest[: match.start("sig")]):
        return True
    if match.start() != 0 or (match.group("pid") is None and rest[:1].isspace()):
        return False
    tail = match.group("rest")
    # "(core dumped)" in the shell's own language: "(Speicherabzug geschrieben)", "(image mémoire créée)" ...
    return not tail.strip() or _CORE_NOTE.match(tail) is not None or tail.startswith("  ")


# A frame's source line that raises a named exception with a literal message (the last line of a cut paste).
_RAISE_SOURCE = re.compile(r"^\s*raise (?P<type>[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt))\(\s*[rfbu]?"
                           r"(?P<q>['\"])(?P<msg>[^'\"]+)(?P=q)\s*\)\s*$")
_CORE_NOTE = re.compile(r"^ \([^()]{1,60}\)\s*$")
_SUMMARY_FIELD = re.compile(r"^\s*traceback\s*:\s*$")
# IPython's traceback header: the exception's class, then wide padding, then "Traceback (most recent call last)".
_IPYTHON_HEADER = re.compile(r"^\s*(?:-+\s*)?(?P<type>[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt)"
                             r"(?:\([A-Za-z_][\w.]*\))?)\s{2,}$")


def _learned_prefix(head: str) -> re.Pattern[str] | None:
    """A pattern for a logger's prefix as one line shows it, digits made variable; None for no prefix (or a
    torchrun summary's "traceback : " field, whose lines are only indented)."""
    if not head.strip() or _SUMMARY_FIELD.match(head):
        return None
    if "] " in head:
        head = head[: head.index("] ") + 2]  # glog's and vLLM's "... file.py:291] ": the message may follow it
    return re.compile(re.sub(r"\\ ", " ", re.sub(r"\d+", r"\\d+", re.escape(head))))


def _first_task(tasks: str) -> int | None:
    head = re.match(r"\d+", tasks)
    return int(head.group(0)) if head else None
