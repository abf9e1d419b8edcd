"""Bad-node isolation by bisection: after the fleet's collective failed (or fell below its floor), find the node(s)
or link(s) at fault in about log2(n) rounds of collective runs, and tell a bad node from a bad link. Pure: the
caller passes how a group of nodes is run (``run(group) -> passed``), so the search is tested on simulated fleets.

The search, per failing group:

* four nodes or more: split it in two halves and run both at once (they share no node). Recurse into every half
  that fails, so two bad nodes in different halves are both found. When both halves pass, the fault needs nodes
  from both: cross the halves' quarters (A1+B1, A2+B2, then A1+B2, A2+B1) and recurse into a cross that fails,
  down to a pair (a bad link between the halves). When every cross passes too, the fault shows only at this
  scale: nobody is blamed and the group is reported as not isolated.
* two or three nodes (the last suspects): pair each with a known-good node (one that passed some run). A node is
  named when it failed in two runs whose other members are all known good and share no node: no single bad link
  explains both. A pair of known-good nodes that fails together is a bad link. With no known-good node to pair
  with (a fleet of two, or everything failed), the suspects are reported, not blamed.

Runs that share no node go in one round (run concurrently by the caller); a round's wall time is one collective's,
so the rounds measure the wall time and the runs the load. One bad node among n costs ceil(log2 n) rounds (the
last one pairs the suspects), two runs a round.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

Group = tuple[str, ...]
Run = Callable[[Group], bool]
# A round: groups that share no node, run together; outcomes in the same order.
RunRound = Callable[[Sequence[Group]], list[bool]]
# What a search step asks for: groups to run (they may overlap: the scheduler splits them into rounds).
Search = Generator[list[Group], list[bool], None]


@dataclass(frozen=True)
class Trial:
    group: Group
    passed: bool
    round: int  # 0: the fleet run that started the isolation (not an extra run)


@dataclass
class Isolation:
    nodes: list[str] = field(default_factory=list)
    links: list[tuple[str, str]] = field(default_factory=list)
    unresolved: list[Group] = field(default_factory=list)  # failing groups no node or link explains
    trials: list[Trial] = field(default_factory=list)

    @property
    def extra_runs(self) -> int:
        return sum(1 for t in self.trials if t.round > 0)

    @property
    def rounds(self) -> int:
        return max((t.round for t in self.trials), default=0)

    @property
    def good(self) -> set[str]:
        return {name for t in self.trials if t.passed for name in t.group}

    def evidence(self) -> list[dict[str, Any]]:
        return [{"round": t.round, "hosts": list(t.group), "status": "pass" if t.passed else "fail"}
                for t in self.trials]


def bisect(nodes: Sequence[str], run: Run | None = None, *, run_round: RunRound | None = None,
           fleet_passed: bool | None = False, max_rounds: int = 64) -> Isolation:
    """Isolate the fault among ``nodes`` (all reachable) whose run together failed.

    ``run`` runs one group; ``run_round`` (when given) runs a round of disjoint groups at once. A group already run
    is not run again: its outcome is reused. ``fleet_passed=None``: these nodes have not run together yet (the
    fleet run had others, since found unreachable), so the first round runs them all."""
    if run_round is None:
        if run is None:
            raise ValueError("bisect needs run or run_round")
        one = run
        run_round = lambda groups: [one(g) for g in groups]  # noqa: E731
    state = _State(list(nodes))
    fleet = tuple(nodes)
    if len(fleet) < 2:
        return state.result()
    if fleet_passed is None:
        fleet_passed = state.execute([fleet], run_round, max_rounds)[0]
    else:
        state.trials.append(Trial(fleet, fleet_passed, 0))
        state.outcomes[frozenset(fleet)] = fleet_passed
    if fleet_passed:
        return state.result()
    search = _failing(state, fleet)
    try:
        asked = next(search)
        while True:
            asked = search.send(state.execute(asked, run_round, max_rounds))
    except StopIteration:
        pass
    return state.result()


def concurrent_rounds(run: Run, max_workers: int = 32) -> RunRound:
    """A ``run_round`` that runs a round's groups in threads: they share no node, so they do not disturb each
    other's links."""
    def run_round(groups: Sequence[Group]) -> list[bool]:
        if len(groups) <= 1:
            return [run(g) for g in groups]
        with ThreadPoolExecutor(max_workers=min(max_workers, len(groups)),
                                thread_name_prefix="accelstack-isolate") as pool:
            return list(pool.map(run, groups))
    return run_round


def pack_rounds(groups: Sequence[Group]) -> list[list[int]]:
    """Indices of ``groups`` in rounds where no node is in two groups at once (first fit, in order). Pure."""
    rounds: list[tuple[set[str], list[int]]] = []
    for index, group in enumerate(groups):
        for busy, members in rounds:
            if not busy & set(group):
                busy.update(group)
                members.append(index)
                break
        else:
            rounds.append((set(group), [index]))
    return [members for _busy, members in rounds]


def split(group: Group) -> tuple[Group, Group]:
    middle = (len(group) + 1) // 2
    return group[:middle], group[middle:]


def bad_node(name: str, trials: Iterable[Trial], good: set[str]) -> bool:
    """Two failed runs with ``name`` whose other members are all known good and share no node. Pure."""
    partners = [frozenset(t.group) - {name} for t in trials
                if not t.passed and name in t.group and len(t.group) > 1 and set(t.group) - {name} <= good]
    return any(not (a & b) for i, a in enumerate(partners) for b in partners[i + 1:])


class _State:
    def __init__(self, nodes: list[str]) -> None:
        self.nodes = nodes
        self.trials: list[Trial] = []
        self.outcomes: dict[frozenset[str], bool] = {}
        self.unresolved: list[Group] = []
        self.rotation = 0  # spreads concurrent pairings over different known-good partners

    @property
    def good(self) -> set[str]:
        return {name for t in self.trials if t.passed for name in t.group}

    def execute(self, asked: list[Group], run_round: RunRound, max_rounds: int) -> list[bool]:
        todo: list[Group] = []
        for group in asked:
            if frozenset(group) not in self.outcomes and all(set(group) != set(g) for g in todo):
                todo.append(group)
        for indices in pack_rounds(todo):
            number = max((t.round for t in self.trials), default=0) + 1
            if number > max_rounds:
                raise RuntimeError(f"isolation did not finish within {max_rounds} rounds")
            batch = [todo[i] for i in indices]
            for group, passed in zip(batch, run_round(batch), strict=True):
                self.outcomes[frozenset(group)] = bool(passed)
                self.trials.append(Trial(group, bool(passed), number))
        return [self.outcomes[frozenset(g)] for g in asked]

    def result(self) -> Isolation:
        good = self.good
        nodes = [n for n in self.nodes if bad_node(n, self.trials, good)]
        links = sorted({(min(t.group), max(t.group)) for t in self.trials
                        if not t.passed and len(t.group) == 2 and set(t.group) <= good})
        unresolved = [g for g in self.unresolved if not (set(g) & set(nodes))
                      and not any(set(link) <= set(g) for link in links)]
        return Isolation(nodes, links, unresolved, list(self.trials))


def _together(searches: list[Search]) -> Search:
    """Run sub-searches side by side: each step asks for the union of what each still-running one asks."""
    pending: list[tuple[Search, list[Group]]] = []
    for search in searches:
        try:
            pending.append((search, next(search)))
        except StopIteration:
            pass
    while pending:
        asked = [g for _s, groups in pending for g in groups]
        outcomes = yield asked
        following: list[tuple[Search, list[Group]]] = []
        at = 0
        for search, groups in pending:
            mine = outcomes[at:at + len(groups)]
            at += len(groups)
            try:
                following.append((search, search.send(mine)))
            except StopIteration:
                pass
        pending = following


def _failing(state: _State, group: Group) -> Search:
    """``group`` failed: find what in it is at fault."""
    if len(group) <= 3:
        yield from _suspects(state, group)
        return
    first, second = split(group)
    outcomes = yield [first, second]
    failed = [half for half, passed in zip((first, second), outcomes, strict=True) if not passed]
    if failed:
        yield from _together([_failing(state, half) for half in failed])
    else:
        yield from _across(state, group, first, second)


def _across(state: _State, group: Group, left: Group, right: Group) -> Search:
    """``group`` failed though ``left`` and ``right`` (its two parts) each passed: a link between them, or a
    fault that shows only at this scale."""
    if len(left) == 1 and len(right) == 1:
        return  # the failed pair itself: both ends passed elsewhere, so it is a link (see _State.result)
    l1, l2 = split(left) if len(left) > 1 else (left, left)
    r1, r2 = split(right) if len(right) > 1 else (right, right)
    crosses = list(dict.fromkeys([l1 + r1, l2 + r2, l1 + r2, l2 + r1]))
    crosses = [c for c in crosses if set(c) != set(group)]
    failed: list[tuple[Group, Group, Group]] = []
    # Straight crosses first (disjoint: one round), the diagonal ones only when both of those passed.
    for batch in (crosses[:2], crosses[2:]):
        if not batch:
            continue
        outcomes = yield batch
        for cross, passed in zip(batch, outcomes, strict=True):
            if not passed:
                part_l = tuple(n for n in cross if n in left)
                part_r = tuple(n for n in cross if n in right)
                failed.append((cross, part_l, part_r))
        if failed:
            break
    if not failed:
        state.unresolved.append(group)
        return
    yield from _together([_across(state, cross, a, b) for cross, a, b in failed])


def _suspects(state: _State, group: Group) -> Search:
    """The last suspects (a failed group of two or three): pair each with known-good partners until each is
    named or cleared."""
    members = set(group)
    tried: dict[str, set[str]] = {n: set() for n in group}
    for _attempt in range(3):
        good = state.good
        open_ = [n for n in group if n not in good and not bad_node(n, state.trials, good)]
        if not open_:
            break
        pool = sorted(good - members, key=state.nodes.index)
        if not pool:
            # Nobody is known good yet: partners from outside the group, judged once they pass elsewhere.
            pool = [n for n in state.nodes if n not in members]
        asked: list[Group] = []
        for name in open_:
            choices = [p for p in pool if p not in tried[name]]
            if choices:
                partner = choices[state.rotation % len(choices)]
                state.rotation += 1
                tried[name].add(partner)
                asked.append((name, partner))
        if not asked:
            break
        yield asked
    if not pool_outside(state, members) and len(group) == 3:
        # The whole fleet is three nodes: the ring of pairs inside it (a node fails both of its pairs).
        a, b, c = group
        yield [(a, b), (b, c), (c, a)]
    good = state.good
    if len(group) == 3 and members <= good:
        # Each passed elsewhere: the fault is among the three links inside.
        a, b, c = group
        yield [(a, b), (b, c), (c, a)]
    good = state.good
    named = [n for n in group if bad_node(n, state.trials, good)]
    links = [t for t in state.trials if not t.passed and len(t.group) == 2 and set(t.group) <= members & good]
    if any(n not in good and n not in named for n in group) or not (named or links):
        state.unresolved.append(group)


def pool_outside(state: _State, members: set[str]) -> bool:
    return any(n not in members for n in state.nodes)
