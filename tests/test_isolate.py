"""Bisection on simulated fleets (1..64 nodes): one bad node, one bad link, two bad nodes, a fault that shows only
at full scale; the verdicts and the count of extra runs and rounds. Pure: no host is touched."""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest

from accelstack.validate.isolate import Group, Isolation, bisect, concurrent_rounds, pack_rounds, split


def fleet(count: int) -> list[str]:
    return [f"node{i:02d}" for i in range(1, count + 1)]


def search(nodes: list[str], fails: Callable[[Group], bool]) -> Isolation:
    """Runs the search sequentially and checks that no round ever put one node in two runs."""
    rounds: list[list[Group]] = []

    def run_round(groups: list[Group]) -> list[bool]:
        names = [n for g in groups for n in g]
        assert len(names) == len(set(names)), groups
        assert all(len(g) >= 2 for g in groups), groups  # a collective needs two nodes
        rounds.append(list(groups))
        return [not fails(g) for g in groups]

    result = bisect(nodes, run_round=run_round)  # type: ignore[arg-type]
    assert len(rounds) == result.rounds
    assert sum(len(r) for r in rounds) == result.extra_runs
    assert len({frozenset(t.group) for t in result.trials}) == len(result.trials)  # nothing run twice
    return result


@pytest.mark.parametrize("count", range(3, 65))
def test_one_bad_node_is_named_in_log2_rounds(count: int) -> None:
    nodes = fleet(count)
    bound = math.ceil(math.log2(count))
    for bad in nodes:
        result = search(nodes, lambda g, bad=bad: bad in g)
        assert result.nodes == [bad] and result.links == [] and result.unresolved == []
        # The last round pairs the suspects with known-good nodes; a fleet of three is its ring of pairs.
        assert result.rounds <= (bound if count >= 4 else 3), (bad, result.rounds)
        assert result.extra_runs <= 2 * bound  # both halves of a failing group run, at once
        good = result.good
        assert good == set(nodes) - {bad}


def test_one_bad_node_among_16_costs_four_rounds_of_two_runs() -> None:
    nodes = fleet(16)
    result = search(nodes, lambda g: "node11" in g)
    assert result.nodes == ["node11"]
    assert (result.rounds, result.extra_runs) == (4, 8)
    sizes = [sorted(len(t.group) for t in result.trials if t.round == r) for r in range(1, 5)]
    assert sizes == [[8, 8], [4, 4], [2, 2], [2, 2]]


@pytest.mark.parametrize("count", [3, 4, 5, 7, 8, 13, 16, 33])
def test_one_bad_link_is_named_a_link_and_blames_no_node(count: int) -> None:
    nodes = fleet(count)
    bound = math.ceil(math.log2(count))
    for i in range(count):
        for j in range(i + 1, count):
            a, b = nodes[i], nodes[j]
            result = search(nodes, lambda g, a=a, b=b: a in g and b in g)
            assert result.links == [(a, b)] and result.nodes == [] and result.unresolved == [], (a, b)
            # Halves, then crosses between the halves that both passed (two rounds a level).
            assert result.rounds <= 2 * bound + 1


@pytest.mark.parametrize("count", [4, 5, 6, 8, 9, 16, 31])
def test_two_bad_nodes_are_both_named(count: int) -> None:
    nodes = fleet(count)
    for i in range(count):
        for j in range(i + 1, count):
            a, b = nodes[i], nodes[j]
            result = search(nodes, lambda g, a=a, b=b: a in g or b in g)
            assert sorted(result.nodes) == [a, b] and result.links == [], (a, b, result)
            assert result.rounds <= math.ceil(math.log2(count)) + 2


@pytest.mark.parametrize("count", [3, 4, 7, 16, 64])
def test_a_fault_only_at_full_scale_blames_nobody(count: int) -> None:
    nodes = fleet(count)
    result = search(nodes, lambda g: len(g) == count)
    assert result.nodes == [] and result.links == []
    assert result.unresolved == [tuple(nodes)]
    assert all(t.passed for t in result.trials if t.round > 0)
    assert result.rounds <= 3


def test_two_nodes_cannot_be_told_apart_without_a_third() -> None:
    result = search(fleet(2), lambda g: "node02" in g)
    assert result.nodes == [] and result.links == [] and result.unresolved == [("node01", "node02")]
    assert result.extra_runs == 0


def test_three_nodes_use_the_ring_of_pairs() -> None:
    result = search(fleet(3), lambda g: "node03" in g)
    assert result.nodes == ["node03"]
    assert sorted(t.group for t in result.trials if t.round > 0) == [
        ("node01", "node02"), ("node02", "node03"), ("node03", "node01")]


def test_everything_failing_is_a_shared_fault() -> None:
    result = search(fleet(8), lambda g: True)
    assert result.nodes == [] and result.links == [] and result.unresolved
    assert not result.good


def test_a_passing_fleet_or_a_single_node_runs_nothing() -> None:
    assert bisect(fleet(4), lambda g: True, fleet_passed=True).extra_runs == 0
    assert bisect(fleet(1), lambda g: False).extra_runs == 0


def test_evidence_lists_every_run_with_its_round() -> None:
    result = search(fleet(4), lambda g: "node04" in g)
    rows = result.evidence()
    assert rows[0] == {"round": 0, "hosts": fleet(4), "status": "fail"}
    assert {"round": 1, "hosts": ["node01", "node02"], "status": "pass"} in rows
    assert {"round": 1, "hosts": ["node03", "node04"], "status": "fail"} in rows
    assert [r["round"] for r in rows] == sorted(r["round"] for r in rows)


def test_concurrent_rounds_run_every_group_and_keep_the_order() -> None:
    seen: list[Group] = []

    def run(group: Group) -> bool:
        seen.append(group)
        return "b" not in group

    assert concurrent_rounds(run)([("a", "c"), ("b", "d"), ("e", "f")]) == [True, False, True]
    assert sorted(seen) == [("a", "c"), ("b", "d"), ("e", "f")]


def test_pack_rounds_and_split() -> None:
    assert pack_rounds([("a", "b"), ("c", "d"), ("a", "c"), ("b", "d")]) == [[0, 1], [2, 3]]
    assert pack_rounds([("a", "b"), ("a", "c"), ("d", "e")]) == [[0, 2], [1]]
    assert split(("a", "b", "c")) == (("a", "b"), ("c",))
