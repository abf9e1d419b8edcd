"""Version ordering for every form a stack or a host reports."""

from __future__ import annotations

import itertools
import random

import pytest

from accelstack.stacks.compat import load_matrix
from accelstack.stacks.versions import (
    ComponentVersion,
    VersionError,
    compare,
    in_minor_range,
    local_tag,
    parse_version,
    release_prefix,
    version_key,
    versions_match,
)

# Each list is in ascending order; each pair inside is strictly increasing.
ORDERED = [
    # CANN marketing versions, including alpha/beta builds of an RC and test builds
    ["7.0.T10", "7.0.RC1", "7.0.0", "8.0.RC1", "8.0.RC2.beta1", "8.0.RC2", "8.0.RC3", "8.0.0",
     "8.1.RC1.alpha001", "8.1.RC1.alpha002", "8.1.RC1.beta1", "8.1.RC1", "8.2.RC1", "8.5.0", "9.0.0"],
    # Ascend HDK driver versions: RC patches sit between RCs
    ["23.0.rc3", "23.0.3", "23.0.7", "24.1.rc1", "24.1.rc2", "24.1.0", "25.0.rc1", "25.0.rc1.1", "25.0.rc2",
     "25.0.0", "25.2.0", "25.5.T2.B001", "25.5.0"],
    # firmware: five numeric parts
    ["6.4.0.4.220", "7.1.0.5.220", "7.1.0.6.220", "7.1.0.11.220", "7.3.0.1.231", "7.7.0.1.231", "7.8.0.5.208"],
    # NVIDIA drivers
    ["450.80.02", "525.60.13", "535.54.03", "550.54.14", "550.54.15", "570.26", "570.86.10", "580.65.06"],
    # torch and torch_npu
    ["2.1.0rc1", "2.1.0", "2.1.0.post3", "2.1.0.post6", "2.1.0.post12", "2.5.1", "2.5.1.post1", "2.6.0rc1",
     "2.6.0", "2.6.0.post3", "2.10.0", "2.13.0"],
]


@pytest.mark.parametrize("chain", ORDERED, ids=lambda chain: chain[0])
def test_chain_sorts(chain: list[str]) -> None:
    shuffled = chain[:]
    random.Random(7).shuffle(shuffled)
    assert sorted(shuffled, key=version_key) == chain
    for low, high in itertools.pairwise(chain):
        assert compare(low, high) == -1, (low, high)
        assert compare(high, low) == 1
        assert ComponentVersion(low) < ComponentVersion(high)


@pytest.mark.parametrize("a,b", [
    ("8.0.RC2", "8.0.rc2"), ("24.1.RC2", "24.1.rc2"), ("8.0", "8.0.0"), ("2.1", "2.1.0"), ("v2.1.0", "2.1.0"),
])
def test_equal_spellings(a: str, b: str) -> None:
    assert compare(a, b) == 0
    assert ComponentVersion(a) == ComponentVersion(b)
    assert hash(ComponentVersion(a)) == hash(ComponentVersion(b))


@pytest.mark.parametrize("text", [
    "8.0.RC2", "8.1.RC1.alpha002", "24.1.rc2", "25.0.rc1.1", "7.3.0.1.231", "7.7.0.1.238", "550.54.15",
    "2.5.1+cpu", "2.1.0.post6", "2.6.0rc1", "8.1.RC1.B150", "2.21.5+cuda12.4", "2.7.1+cu128",
])
def test_every_listed_form_parses(text: str) -> None:
    assert parse_version(text) is not None
    assert str(ComponentVersion(text)) == text


@pytest.mark.parametrize("text", ["", "latest", "abc.def", "1..2", "8.1.RC1.rc2"])
def test_garbage_is_refused(text: str) -> None:
    with pytest.raises(VersionError):
        parse_version(text)


def test_local_tags_and_builds() -> None:
    assert local_tag("2.5.1+cpu") == "cpu"
    assert local_tag("2.7.1+cu128") == "cu128"
    assert local_tag("2.5.1") is None
    # a build number of a release is the same release, ordered after it
    assert versions_match("8.1.RC1", "8.1.RC1.B150", "release")
    # ... and a pin without a build names the release, as pip's == does; a pin with one names that build
    assert versions_match("8.1.RC1", "8.1.RC1.B150", "exact")
    assert not versions_match("8.1.RC1.B150", "8.1.RC1.B151", "exact")
    assert compare("8.1.RC1", "8.1.RC1.B150") == -1


def test_match_modes() -> None:
    assert versions_match("2.13.0+cpu", "2.13.0", "release")
    assert versions_match("2.13.0", "2.13.0+cpu", "release")
    assert not versions_match("2.13.0+cpu", "2.13.0", "exact")
    assert not versions_match("2.6.0+cu124", "2.6.0+cpu", "exact")


def test_h100_versions_torch_pin_with_and_without_a_local_build_as_users_mean_them() -> None:
    # The H100 host's torch.__version__ is 2.11.0+cu130 (pip's metadata says 2.11.0).
    assert versions_match("2.11.0", "2.11.0+cu130", "exact")  # a bare pin names the release
    assert versions_match("2.11.0+cu130", "2.11.0+cu130", "exact")
    assert not versions_match("2.11.0+cu130", "2.11.0+cu128", "exact")  # a pin with a build names that build
    assert not versions_match("2.11.0+cu130", "2.11.0+cpu", "exact")
    assert not versions_match("2.11.0+cu130", "2.11.0", "exact")  # metadata alone cannot show the build
    assert not versions_match("2.11.0", "2.10.0+cu130", "exact")
    assert not versions_match("2.11.0", "2.11.0rc1+cu130", "exact")
    assert versions_match("3.11", "3.11.9", "prefix")
    assert not versions_match("3.11", "3.12.1", "prefix")
    assert not versions_match("3.1", "3.11.0", "prefix")
    assert versions_match("2.21.5", "2.21.5+cuda12.4", "release")


def test_release_prefix_and_ranges() -> None:
    assert release_prefix("2.6.0+cu124", "2.6")
    assert release_prefix("2.6.0rc1", "2.6")
    assert not release_prefix("2.60.0", "2.6")
    assert in_minor_range("3.11.9", "3.8", "3.11")
    assert not in_minor_range("3.12.0", "3.8", "3.11")
    assert not in_minor_range("3.7.4", "3.7.5", "3.10")
    assert in_minor_range("3.7.5", "3.7.5", "3.10")


def test_cann_internal_version_is_its_release() -> None:
    matrix = load_matrix()
    assert matrix.cann_release("7.7.0.1.238") == "8.1.RC1"
    assert matrix.same_cann("7.7.0.1.238", "8.1.RC1")
    assert not matrix.same_cann("7.7.0.1.238", "8.2.RC1")
    # releases and unknown internal versions pass through unchanged
    assert matrix.cann_release("8.0.RC2") == "8.0.RC2"
    assert matrix.cann_release("7.3.0.1.100") == "7.3.0.1.100"
    assert matrix.cann_release("7.0.0") == "7.0.0"
