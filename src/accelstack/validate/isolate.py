"""Bad-node isolation by bisection: after the fleet's collective failed (or fell below its floor), find the node(s)
or link(s) at fault in about log2(n) extra collective runs, and tell a bad node from a bad link. Pure: the caller
passes how a group of nodes is run (``run(group) -> passed``), so the search is tested on simulated fleets.

One-sided bisection (one run a step). Of the group the fault is in, run the first half only: when it fails the
fault is in it (the smallest failed run so far, ``deepest``); when it passes the fault is inferred to be in the
other half, which is split again without being run. At two candidates a lone node cannot run, so the first runs
with partners from outside ``deepest``: every node no run has shown good yet (the halves the search never ran; a
pass clears them all at once, so no run of the rest is needed after), else one known-good node. The last
candidate, when no run has named it yet, is confirmed the same way.

What names a node (``named_nodes``): it never passed, and the failed runs that hold it share no other node. A bad
link needs both its ends in every run it fails, so no link explains those runs; one-sided bisection gets this from
the failed halves plus one run with partners outside them. When every search run passed (the suspect was inferred
at every level, so only the fleet's run holds it), that proof would take two more runs with disjoint partners: one
run of three (the suspect and two known-good nodes that passed together) stands in for them. It fails when the
suspect is bad (its NIC, cable or switch port: the node's fault), and also when the path from the suspect to
exactly one of those two partners is bad, which nothing short of a second run rules out: the price of the bound
below, paid only on that path (the links from the last node of each half to its two partners; tests list them).
Two nodes that each passed elsewhere and fail as a pair are a bad link. A node named on a run that a node named
later explains as well is dropped (the smallest set of nodes that explains every failed run).

After a node is named, the nodes no run has shown good run once (the rest); when that fails there is a second
fault, searched the same way. A confirmation that passes means the inference was wrong: a link, or a fault that
shows only with many nodes. The smallest failed run is then searched two-sided (the previous search, kept for
this): both halves at once, every failing half split again; when both halves pass their quarters are crossed to
find a link; when every cross passes the fault shows only at this scale, nobody is blamed and the group is
reported as not isolated. Two or three last suspects pair with known-good nodes; three nodes alone run their ring
of pairs; two nodes alone cannot be told from their link.

Cost: one bad node among n is named, and every other node shown good, in at most ceil(log2 n) + 1 extra runs
(16 -> 5), one a round. Links, two bad nodes and faults at scale cost more runs (two-sided rounds run the groups
that share no node at once). When no run passed at all, a fault every node shares explains the runs as well as
any node: nobody is named (two bad nodes among four can end there; tests say which).
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
    search = _one_sided(state, fleet)
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


def only_explanation(name: str, trials: Iterable[Trial], good: set[str]) -> bool:
    """``name`` never passed, and the failed runs that hold it share no other node: neither another node nor a
    link (both of whose ends would be in every one of them) explains those failures. Pure."""
    if name in good:
        return False
    shared: set[str] | None = None
    for trial in trials:
        if not trial.passed and name in trial.group:
            shared = set(trial.group) if shared is None else shared & set(trial.group)
    return shared == {name}


def read_as_node(name: str, trials: Iterable[Trial], good: set[str]) -> bool:
    """``name`` never passed, and what every failed run with it shares is ``name`` and two known-good nodes that
    passed together (the one run of three that confirms a suspect no smaller run ever held): their own link is
    fine, so the fault is ``name``, unless it is the path from ``name`` to exactly one of the two, which one run
    cannot rule out (see the module's docstring). Pure."""
    if name in good:
        return False
    trials = list(trials)
    shared: set[str] | None = None
    for trial in trials:
        if not trial.passed and name in trial.group:
            shared = set(trial.group) if shared is None else shared & set(trial.group)
    if shared is None or len(shared) != 3 or not shared - {name} <= good:
        return False
    return any(shared - {name} <= set(t.group) for t in trials if t.passed)


def named_nodes(nodes: Sequence[str], trials: Sequence[Trial], good: set[str], *, final: bool = True) -> list[str]:
    """The nodes the runs name, one after another: a failed run that holds a node already named is explained by it
    and no longer counts against the others (two bad nodes each fail runs that hold the other). When no run passed
    at all, a fault every node shares (a switch, a setting) explains them as well: the final verdict names nobody
    (``final=False``: the search's own reading, before the rest has run). Pure."""
    if final and not good:
        return []
    named: list[str] = []
    changed = True
    while changed:
        changed = False
        left = [t for t in trials if t.passed or not set(t.group) & set(named)]
        for name in nodes:
            if name not in named and (bad_node(name, left, good) or only_explanation(name, left, good)
                                      or read_as_node(name, left, good)):
                named.append(name)
                changed = True
                break
    # A node named early on runs that a node named later explains as well (a failed run that holds both) is
    # not needed: keep the smallest set of nodes that explains every failed run.
    for name in list(named):
        others = set(named) - {name}
        if all(set(t.group) & others for t in trials if not t.passed and name in t.group):
            named.remove(name)
    return [n for n in nodes if n in named]


class _State:
    def __init__(self, nodes: list[str]) -> None:
        self.nodes = nodes
        self.trials: list[Trial] = []
        self.outcomes: dict[frozenset[str], bool] = {}
        self.unresolved: list[Group] = []
        self.rotation = 0  # spreads concurrent pairings over different known-good partners
        self.named: set[str] = set()  # named by the search: never a partner again

    @property
    def good(self) -> set[str]:
        return {name for t in self.trials if t.passed for name in t.group}

    @property
    def fleet(self) -> Group:
        return tuple(self.nodes)

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
        nodes = named_nodes(self.nodes, self.trials, good)
        links = sorted({(min(t.group), max(t.group)) for t in self.trials
                        if not t.passed and len(t.group) == 2 and set(t.group) <= good})
        unresolved = [g for g in self.unresolved if not (set(g) & set(nodes))
                      and not any(set(link) <= set(g) for link in links)]
        if not (nodes or links or unresolved) and self.trials and not self.trials[0].passed:
            unresolved = [self.trials[0].group]  # the fleet failed and nothing explains it
        return Isolation(nodes, links, unresolved, list(self.trials))


def _partners(state: _State, deepest: Group, avoid: Group) -> Group:
    """Who runs with a lone suspect. Nodes outside ``deepest`` (the smallest run that failed), so that a failure
    leaves the suspect the only node every failed run shares: all of those no run has shown good yet (the halves
    the search never ran: a pass clears them too, so no run of the rest is needed after), else one known-good node.
    When every run but the fleet's passed, nothing lies outside: two known-good nodes that passed together."""
    good = state.good
    outside = [n for n in state.nodes if n not in deepest and n not in avoid and n not in state.named]
    unchecked = tuple(n for n in outside if n not in good)
    if unchecked:
        return unchecked
    if outside:
        choice = outside[state.rotation % len(outside)]
        state.rotation += 1
        return (choice,)
    return next((t.group[:2] for t in reversed(state.trials) if t.passed and len(t.group) >= 2
                 and not set(t.group) & set(avoid) and not set(t.group[:2]) & state.named), ())


def _one_sided(state: _State, group: Group) -> Search:
    """``group`` failed (it was run): one-sided bisection for one fault, then a check of the rest for a second."""
    if len(group) <= 3:
        yield from _failing(state, group)
        return
    candidates, deepest = group, group
    while len(candidates) > 1:
        first, second = split(candidates)
        if len(first) >= 2:
            probe = first
        else:
            partners = _partners(state, deepest, candidates)
            if not partners:
                yield from _failing(state, deepest)
                yield from _rest(state, group)
                return
            probe = (first[0], *partners)
        (passed,) = yield [probe]
        if passed:
            candidates = second
        else:
            candidates, deepest = first, probe
    suspect = candidates[0]
    if suspect not in named_nodes(state.nodes, state.trials, state.good, final=False):
        partners = _partners(state, deepest, (suspect,))
        confirm: Group = (suspect, *partners) if partners else ()
        if not confirm:
            yield from _failing(state, deepest)
            yield from _rest(state, group)
            return
        (passed,) = yield [confirm]
        if passed or suspect not in named_nodes(state.nodes, state.trials, state.good, final=False):
            # The suspect is not at fault alone: a link or a fault that needs many nodes; search both sides.
            yield from _failing(state, deepest)
            yield from _rest(state, group)
            return
    yield from _rest(state, group)


def _rest(state: _State, group: Group) -> Search:
    """Something in ``group`` is named: the nodes no run has shown good (the halves the search never ran) may hold
    a second fault, so the rest runs once, and is searched in turn when it fails."""
    named = named_nodes(state.nodes, state.trials, state.good, final=False)
    state.named.update(named)
    rest = tuple(n for n in group if n not in state.named)
    if not named or len(rest) < 2 or len(rest) == len(group) or all(n in state.good for n in rest):
        return
    (passed,) = yield [rest]
    if not passed:
        yield from _one_sided(state, rest)


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
        pool = sorted(good - members - state.named, key=state.nodes.index)
        if not pool:
            # Nobody is known good yet: partners from outside the group, judged once they pass elsewhere.
            pool = [n for n in state.nodes if n not in members and n not in state.named]
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
    return any(n not in members and n not in state.named for n in state.nodes)


# ----- verdicts after isolation: one wording of the blame for both engines ----------------------------------

@dataclass(frozen=True)
class Blame:
    """How an engine words what isolation found: a lost node's summary and remedy, the command that re-checks a
    node beside a known-good peer, and where to look when nothing was isolated."""

    lost_summary: Callable[[str], str]
    lost_remedy: Callable[[str], str]
    again: Callable[[str], str]
    again_all: str
    shared_hint: str


def blame_records(records: dict[str, Any], isolation: Isolation, evidence: dict[str, Any], lost: set[str],
                  why_not_isolated: str, words: Blame) -> list[Any]:
    """The fleet run's records (host -> Record) once isolation has run. A node lost during the run is ``error``
    (it could not be measured, so it never drains); a node isolation names is ``fail``; beside a named fault, a
    node some isolation run showed good is ``warn``, and one no run showed good keeps its own verdict. When nothing
    was isolated the fleet's run failed with every node in it: pass and warn become ``fail`` (the breaker of the
    fleet check keeps a fleet-wide fail from draining), an ``error`` stays one (that node was not measured)."""
    at_fault = sorted(lost) + [n for n in records if n in isolation.nodes and n not in lost]
    links = isolation.links
    blame = ", ".join(at_fault + [f"link {a}<->{b}" for a, b in links]) or "not isolated"
    for name, record in records.items():
        record.evidence["isolation"] = evidence
        record.evidence["at_fault"] = {"nodes": at_fault, "links": [list(p) for p in links]}
        record.metrics["at_fault"] = [n for n in at_fault if n not in lost]
        if name in lost:
            record.status = "error"
            record.summary = f"{words.lost_summary(name)}; multi-node run: {record.summary}"
            record.remedy = words.lost_remedy(name)
        elif name in at_fault:
            record.status = "fail"
            record.summary = (f"at fault: {name} (every isolation run that failed or was slow held it, and no "
                              f"link explains them); multi-node run: {record.summary}")
            record.remedy = (f"drain {name}: check its link (ip link, cabling, switch port, tc/netem), NIC and "
                             f"firewall, then {words.again(name)}")
        elif at_fault or links:
            if name in isolation.good:
                record.status = "warn"
                record.summary = (f"multi-node run failed or was slow; fault isolated to {blame}; this node passed "
                                  f"its other runs")
                record.remedy = f"fix {blame}, then {words.again_all}"
            elif record.status == "fail" and _explained(name, isolation, set(at_fault), links):
                # Every run it failed held a named node (or both ends of a named link): its fail is theirs, and it
                # was never measured apart from them. Not evidence against it, so it must not drain.
                record.status = "error"
                record.summary = (f"not measured apart from the fault: every run it was in that failed held "
                                  f"{blame}; multi-node run: {record.summary}")
                record.remedy = f"fix {blame}, then {words.again(name)}"
            else:  # no run showed it good: it keeps what the fleet's run measured of it
                record.summary = f"{record.summary}; fault isolated to {blame}; no isolation run showed this node good"
        else:
            if record.status in ("pass", "warn"):
                record.status = "fail"
            record.summary = f"{record.summary}; not isolated: {why_not_isolated}"
            record.remedy = f"the fault is shared or shows only at scale: {words.shared_hint}"
    return list(records.values())


def _explained(name: str, isolation: Isolation, named: set[str], links: list[tuple[str, str]]) -> bool:
    """Whether every failed run that held ``name`` also held a named (or lost) node or both ends of a named link."""
    failed = [set(t.group) for t in isolation.trials if not t.passed and name in t.group]
    return bool(failed) and all((group & (named - {name})) or any(a in group and b in group for a, b in links)
                                for group in failed)
