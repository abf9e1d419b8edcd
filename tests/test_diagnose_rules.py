"""The general rules that decide a finding's cause and actor from what the logs show (issue 22): each on an excerpt
written from the public source that documents the behaviour (cited beside it), none copied from the corpus."""

from __future__ import annotations

from accelstack.diagnose import diagnose_lines


def first(lines: list[str]):
    diagnosis = diagnose_lines(lines)
    assert diagnosis.first is not None, "a failed job always gets a finding"
    return diagnosis.first


# ---- lowercase exception classes ----

def test_a_lowercase_class_a_table_names_is_an_exception_line():
    # CPython < 3.10 prints socket.timeout by its own (lowercase) name: Lib/socket.py. Format as in
    # https://github.com/huggingface/transformers/issues/30589 (a Hub download that timed out).
    lines = ["Traceback (most recent call last):",
             '  File "/opt/venv/lib/python3.9/ssl.py", line 1099, in read',
             "    return self._sslobj.read(len, buffer)",
             "socket.timeout: The read operation timed out"]
    found = first(lines)
    assert (found.cause, found.actor) == ("unclassified", "service")
    assert "pre-fetch" in found.remedy
    # A lowercase name no table lists is no exception line outside a traceback.
    assert diagnose_lines(["socket.settimeout: value set to 30"]).findings == []


# ---- Python warnings ----

WARNING = ("/opt/venv/lib/python3.9/site-packages/torch/cuda/__init__.py:138: UserWarning: CUDA initialization: The "
           "NVIDIA driver on your system is too old (found version 10020). Please update your GPU driver by "
           "downloading and installing a new version from the URL: http://www.nvidia.com/Download/index.aspx")


def test_a_warning_does_not_explain_the_failure_after_it():
    # torch/cuda/__init__.py warns and goes on (torch.cuda.is_available() is False); the job then died of
    # something else: that failure leads, the warning follows as context.
    lines = [WARNING,
             "  return torch._C._cuda_getDeviceCount() > 0",
             "Traceback (most recent call last):",
             '  File "train.py", line 12, in <module>',
             "    main()",
             "KeyError: 'encoder.layer.0.weight'"]
    diagnosis = diagnose_lines(lines)
    assert [f.cause for f in diagnosis.findings] == ["program-error", "driver-too-old"]
    assert "warning only" in diagnosis.findings[1].explanation


def test_a_warning_alone_is_still_a_finding_where_nothing_else_failed():
    lines = [WARNING, "Traceback (most recent call last):", '  File "train.py", line 3, in <module>',
             "RuntimeError: No CUDA GPUs are available"]
    causes = [f.cause for f in diagnose_lines(lines).findings]
    assert "driver-too-old" in causes
