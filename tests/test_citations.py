"""The project stands on its own: what ships cites public sources, never the maintainers' private notes.

Users have the repository, not the notes it was researched from (``reference/*.md``, ``anchors.md``, the
``../shared`` folder of the development machine). A fact in a doc, a comment, a table's ``source:`` or a floor
names the vendor page, thread, paper or source file behind it, or says plainly that it was measured here or chosen
(captured test data is cited by its ``tests/data/`` path, which ships).
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

# What ships, and what is read as documentation of it. tests/data/ is test input, except the diagnosis corpus,
# whose labels and README are documentation of where its logs come from.
SCANNED = ("src", "accelstack_lab", "README.md", "docs", "compat", "stacks", "roles", "templates", "inventories",
           "bench", "tasks.py", "tests/data/diagnose_corpus")

# The private notes, in the forms they have been cited in. Each form must start a token: a public URL's path
# (".../docs/reference/error_codes.md", ".../environment_variable_reference/X.md", ".../nvidia.md") is preceded
# by a "/", "_", "." or a letter and is not matched.
_START = r"(?<![\w./-])"
_NOTES = r"(?:anchors|ascend|nvidia|perf|slurm-lab)\.md\b"
PRIVATE = [
    ("a private reference note", re.compile(_START + r"(?:\.\./)?(?:shared/)?reference/[\w.-]+\.md\b")),
    ("a private reference note", re.compile(_START + _NOTES)),
    ("the private shared folder", re.compile(_START + r"(?:\.\./shared|/work/shared|shared/(?:reference|captures))\b")),
]
# The design and style notes live beside the repository, not in it (unless one day they ship).
PRIVATE_DOCS = [name for name in ("DESIGN.md", "STYLE.md") if not (REPO / name).exists()]
if PRIVATE_DOCS:
    PRIVATE.append(("a private design note",
                    re.compile(_START + "(?:" + "|".join(re.escape(n) for n in PRIVATE_DOCS) + r")\b")))

# Tables another change owns: a finding there is reported, and the message says whose it is.
OWNED_ELSEWHERE = ("src/accelstack/data/diagnose/", "src/accelstack/vendors/nvidia/diagnose/",
                   "src/accelstack/vendors/ascend/diagnose/", "tests/data/diagnose_corpus/")


def private_citations(text: str) -> list[tuple[int, str, str]]:
    """(line number, what, the matched text) for every private citation in ``text``."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        for what, pattern in PRIVATE:
            for match in pattern.finditer(line):
                found.append((number, what, match.group(0)))
    return found


def shipped_files() -> list[Path]:
    try:
        out = subprocess.run(["git", "ls-files", "-z", "--", *SCANNED], cwd=REPO, capture_output=True,
                             check=True).stdout
        names = [n for n in out.decode().split("\0") if n]
    except (OSError, subprocess.CalledProcessError):  # not a checkout: every file under the scanned paths
        names = [str(p.relative_to(REPO)) for root in SCANNED for p in
                 ([REPO / root] if (REPO / root).is_file() else sorted((REPO / root).rglob("*"))) if p.is_file()]
    return [REPO / n for n in names if (REPO / n).is_file()]


def test_no_shipped_file_cites_a_private_note() -> None:
    files = shipped_files()
    assert any(f.name == "signatures.yml" for f in files) and any(f.name == "README.md" for f in files)
    mine, theirs = [], []
    for path in files:
        data = path.read_bytes()
        if b"\0" in data:
            continue
        rel = path.relative_to(REPO).as_posix()
        for number, what, text in private_citations(data.decode("utf-8", errors="replace")):
            entry = f"{rel}:{number}: cites {what} ({text!r})"
            (theirs if rel.startswith(OWNED_ELSEWHERE) else mine).append(entry)
    message = []
    if mine:
        message += ["cite the public source behind the fact (a vendor page, thread, paper or source file URL), or "
                    "say it was measured here / chosen, instead of:", *mine]
    if theirs:
        message += ["in the diagnose tables and corpus (rewritten by the diagnose-tables change; cite publicly "
                    "there):", *theirs]
    assert not message, "\n".join(message)


@pytest.mark.parametrize("text", [
    "source: \"reference/nvidia.md §5 (Duplicate GPU detected)\"",
    "The recipe and its measurements: `shared/reference/slurm-lab.md`.",
    "# torch's default timeouts (reference/nvidia.md §4.2)",
    "(reference ascend.md 4.1, 4.2)",
    "repeat-until-pass, anchors.md 3).",
    "`strings libnccl.so.2` (nvidia.md 3.3)",
    "see ../shared/DESIGN.md",
    "captured on an H100 host: /work/shared/captures/h100-2026-11-23/logs/ordinal.log",
    "(the second step of the flow in DESIGN.md)",
])
def test_the_private_forms_are_caught(text: str) -> None:
    assert private_citations(text), text


@pytest.mark.parametrize("text", [
    "https://rocm.docs.amd.com/projects/HIP/en/latest/reference/error_codes.html (hipError_t names and codes)",
    "https://gitcode.com/Ascend/pytorch/blob/v2.7.1-7.3.0/docs/zh/environment_variable_reference/HCCL_X.md",
    "https://github.com/example/project/blob/main/docs/reference/api.md",
    "https://github.com/example/gpu-notes/blob/main/nvidia.md",
    "https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md",
    "tests/data/logs/h100/ordinal.log (captured on a lent H100 by this project, 2026-11-23)",
    "Ascend/pytorch COMPATIBILITY.en.md",
    "a shared/ folder of the lab host",
])
def test_public_citations_pass(text: str) -> None:
    assert not private_citations(text), text
