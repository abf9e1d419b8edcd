"""The error taxonomies (data/diagnose/*.yml): how they load, what a bad one is told, how a row is matched, and one
excerpt per table family with its healthy counterpart (tests/data/logs/tables/, tests/data/logs/healthy/table-*)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from accelstack.diagnose import CAUSES, diagnose_lines, diagnose_paths, load_catalog, load_tables
from accelstack.diagnose.tables import parse_tables, table_files
from accelstack.errors import ConfigError

LOGS = Path(__file__).parent / "data" / "logs"
TABLES = load_tables()
TABLE_IDS = sorted({row.table for row in TABLES.rows})

# The first finding each family's excerpt gives: (row id, cause, actor). ascend-cann's codes are findings of their
# own (ascend-<code>); every other table names the cause of the failure the log's structure shows.
EXPECTED = {
    "amdgpu-kernel": ("amdgpu-kernel:uncorrectable hardware errors detected", "device-hardware", "node"),
    "rccl": ("rccl:HIP failure", "nccl-internal", "node"),
    "ascend-acl": ("ascend-acl:ACL_ERROR_RT_AICORE_EXCEPTION", "device-assert", "job"),
    "ascend-cann": ("ascend-EJ0001", "device-busy", "node"),
    "compilers": ("compilers:BackendCompilerFailed", "compile-error", "job"),
    "containers": ("containers:This container was built for NVIDIA Driver Release", "driver-too-old", "node"),
    "fallbacks": ("fallbacks:CUDA backend failed to initialize", "missing-module", "config"),
    "host-tools": ("host-tools:nvidia-container-cli: initialization error", "no-device", "node"),
    "cuda-driver": ("cuda-driver:CUDA_ERROR_SYSTEM_DRIVER_MISMATCH", "driver-library-mismatch", "node"),
    "cuda-libraries": ("cuda-libraries:CUBLAS_STATUS_NOT_INITIALIZED", "out-of-memory", "job"),
    "cuda-runtime": ("cuda-runtime:cudaErrorECCUncorrectable", "device-hardware", "node"),
    "errno": ("errno:ENOSPC", "disk-full", "service"),
    "gloo": ("gloo:Timed out waiting", "collective-timeout", "config"),
    "hip": ("hip:hipErrorNoBinaryForGpu", "torch-build-mismatch", "config"),
    "horovod": ("horovod:Horovod has been shut down", "collective-mismatch", "job"),
    "kernel": ("kernel:UE memory read error", "device-hardware", "node"),
    "launchers": ("launchers:ssh: connect to host", "connect-timeout", "config"),
    "linux": ("linux:SIGSEGV", "native-crash", "job"),
    "nccl": ("nccl:Failed to initialize any NET plugin", "network-interface", "config"),
    "nccl-net": ("nccl-net:Got completion from peer", "rdma", "node"),
    "python": ("python:No module named", "missing-module", "config"),
    "ray": ("ray:Version mismatch: The cluster was started with", "unclassified", "config"),
    "remote": ("remote:requests.exceptions.ConnectionError", "unclassified", "service"),
    "resolver": ("resolver:EAI_NONAME", "connect-timeout", "config"),
    "configuration": ("configuration:ConfigAttributeError", "unclassified", "config"),
    "kubernetes": ("kubernetes:Pod ephemeral local storage usage exceeds the total limit of containers", "disk-full",
                   "config"),
    "slurm": ("slurm:DUE TO TIME LIMIT", "time-limit", "config"),
    "torch": ("torch:waiting for clients", "connect-timeout", "service"),
    "xla": ("xla:RESOURCE_EXHAUSTED: Out of memory", "out-of-memory", "job"),
}


def test_every_table_has_an_excerpt_and_a_healthy_counterpart():
    assert sorted(EXPECTED) == TABLE_IDS, "add an excerpt and its expectation for each table"
    for table in TABLE_IDS:
        assert (LOGS / "tables" / f"{table}.log").is_file(), table
        assert (LOGS / "healthy" / f"table-{table}.log").is_file(), table


@pytest.mark.parametrize("table", TABLE_IDS)
def test_each_family_names_the_cause_of_its_excerpt(table):
    diagnosis = diagnose_paths([str(LOGS / "tables" / f"{table}.log")])
    first = diagnosis.first
    assert first is not None and diagnosis.exit_code == 1
    assert (first.id, first.cause, first.actor) == EXPECTED[table]
    assert first.layer == "table" and first.cause in CAUSES
    assert table in first.source_ref or first.id.startswith("ascend-")  # the row's source is shown
    document = diagnosis.to_dict()
    assert document["first"]["cause"] == first.cause and document["first"]["actor"] == first.actor


@pytest.mark.parametrize("table", TABLE_IDS)
def test_each_familys_healthy_counterpart_gives_nothing(table):
    # The family's words in a warning, an info line, a retry that works or a harmless report are no failure.
    diagnosis = diagnose_paths([str(LOGS / "healthy" / f"table-{table}.log")])
    assert diagnosis.findings == [] and diagnosis.exit_code == 0


def test_every_table_cites_its_sources_and_maps_to_the_vocabulary():
    for path in table_files():
        data = yaml.safe_load(path.read_text())
        assert data["source"].count("http") >= 1 or "CANN" in data["source"], path.name
    for row in TABLES.rows:
        assert row.cause in CAUSES and row.actor in ("node", "job", "config", "service"), row.id
        assert row.source and row.title and row.remedy, row.id


def test_the_prefilter_lets_every_table_literal_through():
    anchors = load_catalog().anchors
    for literal in TABLES.by_literal:
        if literal.isdigit():
            continue  # numeric codes are read on lines that hold other anchors ("error code is ...")
        assert any(anchor in literal for anchor in anchors), literal
    for name in TABLES.exceptions:
        # A class is found by its own name; a lowercase class (socket.timeout) by its whole dotted name.
        shown = name.rsplit(".", 1)[-1] if name.rsplit(".", 1)[-1][:1].isupper() else name
        assert any(anchor in shown for anchor in anchors), name
    assert "timeout" not in anchors  # a lowercase class name alone is a common word: no anchor


def test_a_literal_stands_as_a_word_and_the_longer_literal_wins():
    hits = lambda text: [row.id for _, row in TABLES.literal_hits(text)]  # noqa: E731
    assert hits("OSError: [Errno 5] Input/output error") == ["errno:EIO"]
    assert hits("EIOS and XEIO are not errno names") == []
    # cuDNN 9's sub-codes are found by their family's name; a longer name is its own row.
    assert hits("cuDNN error: CUDNN_STATUS_BAD_PARAM_NULL_POINTER") == ["cuda-libraries:CUDNN_STATUS_BAD_PARAM"]
    assert hits("CUDA_ERROR_NOT_MAPPED_AS_ARRAY") == ["cuda-driver:CUDA_ERROR_NOT_MAPPED_AS_ARRAY"]
    assert hits("errno ENODEV: No such device or address") == ["errno:ENODEV", "errno:ENXIO"]
    # A code pattern names a row by its number.
    assert hits("HCCL function error: HcclCommInitRootInfo(x), error code is 11") == ["ascend-acl:HCCL_E_TCP_CONNECT"]


def test_a_wrapper_ranks_below_what_broke_under_it():
    lines = ["Traceback (most recent call last):",
             "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled cuda error",
             "ncclUnhandledCudaError: Call to CUDA function failed.",
             "Cuda failure 2 'out of memory'"]
    first = diagnose_lines(lines).first
    assert first is not None and first.cause == "out-of-memory"


def test_exception_classes_match_by_their_dotted_suffix():
    assert TABLES.exception_row("torch.distributed.elastic.rendezvous.api.RendezvousTimeoutError").id == \
        "torch:RendezvousTimeoutError"
    assert TABLES.exception_row("KeyError").cause == "program-error"
    assert TABLES.exception_row("mypkg.CustomThing") is None


@pytest.mark.parametrize(("document", "message"), [
    ({"id": "t", "title": "T", "vendor": "any", "source": "s", "literals": {"x1": {"cause": "no-such-cause"}}},
     "is not in causes.yml"),
    ({"id": "t", "title": "T", "vendor": "any", "source": "s", "literals": {"xyz": {"cause": "program-error",
                                                                                     "actor": "node"}}},
     "says why in a note"),
    ({"id": "t", "title": "T", "vendor": "mars", "source": "s", "literals": {"xyz": {"cause": "program-error"}}},
     "vendor"),
    ({"id": "t", "title": "T", "vendor": "any", "literals": {"xyz": {"cause": "program-error"}}},
     "missing field(s): source"),
    ({"id": "t", "title": "T", "vendor": "any", "source": "s", "literals": {"xyz": {"cause": "program-error",
                                                                                     "colour": "red"}}},
     "unknown field(s): colour"),
    ({"id": "t", "title": "T", "vendor": "any", "source": "s", "literals": {"xyz": {"cause": "program-error"}},
      "code_patterns": [{"pattern": "code (\\d+)", "entries": "x"}]},
     "(?P<code>"),
])
def test_a_bad_table_is_one_clear_error(document, message):
    with pytest.raises(ConfigError) as err:
        parse_tables([("bad.yml", document)])
    assert message in str(err.value) and "bad.yml" in str(err.value)


def test_a_literal_belongs_to_one_row_only():
    twice = [("a.yml", {"id": "a", "title": "A", "vendor": "any", "source": "s",
                        "literals": {"Boom": {"cause": "program-error"}}}),
             ("b.yml", {"id": "b", "title": "B", "vendor": "any", "source": "s",
                        "literals": {"Bang": {"cause": "program-error", "also": ["Boom"]}}})]
    with pytest.raises(ConfigError, match=re.escape("already the row a:Boom")):
        parse_tables(twice)


def test_a_row_may_name_another_actor_with_its_reason():
    tables = parse_tables([("t.yml", {"id": "t", "title": "T", "vendor": "any", "source": "s", "literals": {
        "Quota exceeded for project": {"cause": "disk-full", "actor": "job", "note": "the job's own quota"}}})])
    row = tables.by_literal["Quota exceeded for project"]
    assert row.actor == "job" and row.cause == "disk-full" and row.meaning == "the job's own quota"


def test_a_misspelt_table_field_is_named():
    with pytest.raises(ConfigError, match="unknown field"):
        parse_tables([("t.yml", {"id": "t", "title": "T", "vendor": "any", "source": "s", "standlone": True,
                                 "literals": {"xyz": {"cause": "program-error"}}})])


# ---- the taxonomies are complete: each row carries what a log prints for it ----

def _table_rows(table):
    return [row for row in TABLES.rows if row.table == table]


def test_every_cuda_runtime_error_carries_the_string_torch_prints():
    # torch prints cudaGetErrorString's string ("CUDA error: out of memory"), not the enum's name: a row without it
    # would never name the failures that torch reports.
    # Without a string: cudaErrorInvalidSource prints cudaErrorInvalidKernelImage's ("device kernel image is
    # invalid"), and the newest codes' strings are in no public reference yet (their names are still found).
    no_string = {225, 300, 402, 811, 812, 913, 914, 915}
    for row in _table_rows("cuda-runtime"):
        strings = [literal for literal in row.literals if literal != row.key]
        assert strings or row.code in no_string, row.id
    hits = lambda text: [row.id for _, row in TABLES.literal_hits(text)]  # noqa: E731
    assert hits("RuntimeError: CUDA error: the launch timed out and was terminated") == \
        ["cuda-runtime:cudaErrorLaunchTimeout"]
    assert hits("RuntimeError: Triton Error [CUDA]: out of memory") == ["cuda-runtime:cudaErrorMemoryAllocation"]
    # A string of common words needs the prefix a library prints before it.
    assert hits("the file not found in the cache, downloading") == []


def test_every_errno_row_carries_its_strerror_string():
    for row in _table_rows("errno"):
        assert len(row.literals) >= 2 and isinstance(row.code, int), row.id


def test_an_acl_code_is_read_after_error_code_is_and_never_as_a_bare_number():
    hits = lambda text: {row.id for _, row in TABLES.literal_hits(text)}  # noqa: E731
    assert hits("RuntimeError: aclrtSynchronizeDevice:torch_npu/csrc/core/npu/NPUStream.cpp:123 NPU function "
                "error: UCE ERROR., error code is 507053") == {"ascend-acl:ACL_ERROR_RT_DEVICE_MEM_ERROR"}
    assert hits("call aclnnAdd failed, error code is 100024") == {"ascend-acl:ACL_ERROR_OP_NOT_FOUND"}
    assert hits("step 100024 loss 2.31 lr 1e-4") == set()


@pytest.mark.parametrize(("lines", "expected"), [
    (["Traceback (most recent call last):", '  File "train.py", line 9, in <module>',
      "RuntimeError: CUDA error: the launch timed out and was terminated"],
     # only a GPU with a kernel-run watchdog (a display, Windows' TDR) times a kernel out: its mode, not a fault
     ("cuda-runtime:cudaErrorLaunchTimeout", "unclassified", "config")),
    (["Traceback (most recent call last):", '  File "train.py", line 9, in <module>',
      "RuntimeError: CURAND error: CURAND_STATUS_ALLOCATION_FAILED when calling `curandCreateGenerator`"],
     ("cuda-libraries:CURAND_STATUS_ALLOCATION_FAILED", "out-of-memory", "job")),
    (["Traceback (most recent call last):", '  File "serve.py", line 40, in <module>',
      "cupy_backends.cuda.libs.nccl.NcclError: NCCL_ERROR_INVALID_USAGE: invalid usage"],
     ("nccl:ncclInvalidUsage", "program-error", "job")),
    (["Traceback (most recent call last):", '  File "train.py", line 12, in <module>',
      "RuntimeError: failed to recv, got 0 bytes"],
     ("torch:failed to recv, got 0 bytes", "peer-exited", "job")),
    (["Traceback (most recent call last):", '  File "train.py", line 30, in <module>',
      "OSError: [Errno 133] Memory page has hardware error"],
     ("errno:EHWPOISON", "device-hardware", "node")),
    (["Traceback (most recent call last):", '  File "train.py", line 3, in <module>',
      "RuntimeError: Failed to find C compiler. Please specify via CC environment variable."],
     ("compilers:Failed to find C compiler", "missing-module", "config")),
    (["Traceback (most recent call last):", '  File "train.py", line 7, in <module>',
      "_pickle.UnpicklingError: invalid load key, 'v'."],
     ("python:UnpicklingError", "program-error", "job")),
    (["Fatal Python error: init_fs_encoding: failed to get the Python codec of the filesystem encoding",
      "ModuleNotFoundError: No module named 'encodings'"],
     ("python:Fatal Python error: init_fs_encoding", "missing-module", "config")),
    (["slurmstepd: error: *** JOB 81234 STEPD TERMINATED ON gpu07 AT 2024-05-01T10:00:00 DUE TO JOB NOT ENDING "
      "WITH SIGNALS ***"],
     ("slurm:DUE TO JOB NOT ENDING WITH SIGNALS", "node-failure", "node")),
    (["Traceback (most recent call last):", '  File "train.py", line 88, in <module>',
      "RuntimeError: aclrtSynchronizeDevice:torch_npu/csrc/core/npu/NPUStream.cpp:123 NPU function error: "
      "UCE ERROR., error code is 507053"],
     ("ascend-acl:ACL_ERROR_RT_DEVICE_MEM_ERROR", "device-hardware", "node")),
])
def test_new_rows_name_the_failure(lines, expected):
    first = diagnose_lines(lines).first
    assert first is not None and (first.id, first.cause, first.actor) == expected
