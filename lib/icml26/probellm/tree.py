"""The search: the toolkit docs' UCB1 trees (Original/Synthetic nodes, visits, error counts, backprop to the
root) and the baselines they are compared with at an equal budget B.

Selection (docs, "MCTS Search Engine"): ``UCB(v) = e_v / n_v + C sqrt(ln n_parent(v) / n_v)``, e_v the
errors observed in v's subtree and n_v its visits; unvisited arms score +inf, ties are broken by a seeded
generator. Descend while the node is fully expanded (``width`` children), expand by a micro move
(`Space.perturb`) and back the verdict up to the root.

ProbeLLM's hierarchy, as documented (abstract: "explicitly allocating limited probing budgets between
global exploration of new failure regions and local refinement of recurring error patterns"; docs: one
``RootNode`` per search type, ``searchtype`` in {macro, micro}, each root with its own
``num_simulations``): **two trees**,

* the *macro* tree: UCB1 over strata (`HierarchicalSampler`), each selection a fresh seed inside the
  chosen stratum (global exploration);
* the *micro* tree: ``n_seeds`` seeds from the benchmark, UCB1 descent, micro perturbations of the
  selected node (local refinement);

with the budget split between them **explicitly**: ``H`` gives the macro tree a fixed share ``split``
(default 1/2: the docs' equal ``num_simulations`` per root), interleaved deterministically; ``H_ucb``
lets a top-level two-arm UCB1 on the trees' failure rates choose the tree for each probe (the adaptive
reading). In both, a macro draw that fails is **handed to the micro tree** as a new Original node (kind
``found``, a child of the micro root with its one visit and one error), so the local refinement works on the
"recurring error patterns" that global exploration found (abstract) as well as on the benchmark seeds;
``H_sep`` is the same two trees without that hand-off (the first two-tree revision, an ablation: its micro tree
only ever refines its ``n_seeds`` benchmark seeds). ``H1`` is the chapter's first composition, kept as an
ablation: a *single* tree whose root holds the seed subtrees and one macro arm competing with them under UCB1
(macro-drawn seeds hang under the arm); ``H_flat`` hangs them under the root. ``beta``: a random split, macro
with probability ``beta``, whose macro-drawn seeds join the micro tree (the brief's section 3.4 model).

Baselines without a tree: ``static`` (i.i.d. benchmark draws), ``random`` (random walks from random seeds: a fresh
benchmark draw, then ``walk`` micro moves, each from the walk's previous item, then a fresh draw; no statistics)
and ``confirm`` (the no-tree *confirmation* baseline S+C(c) of the review of the published full run: i.i.d. draws,
and every failing draw gets ``confirm`` random micro moves of itself (`Space.perturb`), each one budget unit; it
is the method without the paper's component, the trees, but with local confirmation of what it finds).

Budget accounting: every target query *and* every duplicate proposal (canonical dedup) costs one unit
of B, for every strategy; a duplicate keeps the visit its selection added (virtual loss) and adds no
error, so the tree counts it as a pass. ``k > 1`` selects k leaves per round with a virtual loss (each
selection adds a visit without an error until the batch returns), so a batched target (SmolLM2) is
queried k items at a time; ``k = 1`` is the exact sequential algorithm. With ``benchmark`` (a fixed list
of items) the static strategy reads that benchmark in a seeded order without replacement and the trees
draw their ``n_seeds`` seeds from it (ProbeLLM seeded from a static benchmark).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .space import Item, Space, noisy_label, verify

STRATEGIES = ("static", "random", "confirm", "micro", "macro", "H", "H_ucb", "H_sep", "H1", "H_flat", "beta")
TWO_TREE = ("H", "H_ucb", "H_sep")
HANDOFF = ("H", "H_ucb")
"""Two-tree strategies whose macro failures join the micro tree (local refinement of what exploration finds)."""
SINGLE_TREE = ("H1", "H_flat")


def ucb1(errors, visits, parent_visits: float, C: float) -> np.ndarray:
    """UCB1 scores e/n + C sqrt(ln N / n), +inf where n = 0 (docs' selection rule)."""
    errors, visits = np.asarray(errors, dtype=float), np.asarray(visits, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        s = errors / visits + C * np.sqrt(math.log(max(parent_visits, 1.0)) / visits)
    return np.where(visits > 0, s, np.inf)


def argmax_ties(scores: np.ndarray, rng: np.random.Generator) -> int:
    """Index of the largest score, ties broken uniformly at random (seeded)."""
    best = np.flatnonzero(scores == scores.max())
    return int(best[0] if best.size == 1 else best[rng.integers(best.size)])


@dataclass
class Node:
    """A tree node: the root, the macro arm, or a test case (``seed`` = Original drawn from the benchmark,
    ``found`` = Original drawn by the macro sampler (handed over by the macro tree, or a macro draw of a single
    tree or a beta split), ``micro`` = Synthetic)."""

    kind: str
    item: Item | None = None
    parent: "Node | None" = None
    children: list = field(default_factory=list)
    visits: int = 0
    errors: int = 0
    depth: int = 0


class HierarchicalSampler:
    """The macro arm's sampler: UCB1 over strata (op x longest operand length x form), a fresh seed drawn
    inside the chosen stratum (`Space.sample(rng, stratum)`)."""

    def __init__(self, space: Space, C: float):
        self.space, self.C = space, C
        self.strata = list(space.strata)
        self.visits = np.zeros(len(self.strata))
        self.errors = np.zeros(len(self.strata))

    def pick(self, rng: np.random.Generator) -> int:
        return argmax_ties(ucb1(self.errors, self.visits, self.visits.sum(), self.C), rng)

    def draw(self, rng: np.random.Generator) -> tuple[int, Item]:
        j = self.pick(rng)
        self.visits[j] += 1  # a virtual loss until the verdict arrives
        return j, self.space.sample(rng, self.strata[j])


@dataclass
class Probe:
    item: Item
    failed: bool      # reported failure: answer != the label the pipeline judged against
    genuine: bool     # answer != the verified truth
    source: str       # seed | static | macro | micro | random | confirm
    step: int


@dataclass
class SearchResult:
    strategy: str
    budget: int
    probes: list
    charged: int
    duplicates: int
    root: Node
    sampler: HierarchicalSampler | None
    sources: list     # per budget unit: seed/static/macro/micro/random/confirm/duplicate

    def failures(self, upto: int | None = None, genuine: bool = True) -> list[Item]:
        """Distinct failing items among the first ``upto`` budget units."""
        upto = self.budget if upto is None else upto
        return [p.item for p in self.probes if p.step < upto and (p.genuine if genuine else p.failed)]


def _validate(budget: int, C: float, k: int, eta: float, beta: float | None, strategy: str, split: float = 0.5,
              walk: int = 3, confirm: int = 0):
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r}; known: {STRATEGIES}")
    if int(budget) != budget or budget < 1:
        raise ValueError(f"budget B must be an integer >= 1, got {budget}")
    if not (C >= 0 and math.isfinite(C)):
        raise ValueError(f"exploration constant C must be >= 0, got {C}")
    if int(k) != k or k < 1:
        raise ValueError(f"batch size k must be an integer >= 1, got {k}")
    if not 0 <= eta < 1:
        raise ValueError(f"generator noise eta must be in [0, 1), got {eta}")
    if strategy == "beta" and (beta is None or not 0 <= beta <= 1):
        raise ValueError(f"the fixed-split strategy needs beta in [0, 1], got {beta}")
    if not 0 <= split <= 1:
        raise ValueError(f"the two-tree split (macro share) must be in [0, 1], got {split}")
    if int(walk) != walk or walk < 0:
        raise ValueError(f"the random walk's length must be an integer >= 0, got {walk}")
    if int(confirm) != confirm or confirm < 0 or (strategy == "confirm" and confirm < 1):
        raise ValueError(f"the confirmation baseline needs an integer confirm >= 1 moves per failure, got {confirm}")


def search(strategy: str, space: Space, target, budget: int, seed: int, C: float = math.sqrt(2), *,
           beta: float | None = None, n_seeds: int = 10, width: int = 3, k: int = 1, eta: float = 0.0,
           verified: bool = True, split: float = 0.5, benchmark=None, labeller=None, walk: int = 3,
           confirm: int = 0) -> SearchResult:
    """Probe ``target`` with one strategy until ``budget`` units are spent.

    strategy: ``static`` (i.i.d. benchmark draws), ``random`` (random walks of ``walk`` micro moves, each from
    a fresh benchmark draw, no statistics), ``confirm`` (S+C(``confirm``): i.i.d. draws, each failing draw
    followed by ``confirm`` random micro moves of itself, no tree), ``micro`` (UCB tree over micro moves from
    ``n_seeds`` seeds), ``macro`` (UCB over strata, new seeds only), ``H`` (ProbeLLM as documented: a macro tree and a micro tree, the macro tree
    getting the share ``split`` of the budget, its failures handed to the micro tree for refinement),
    ``H_ucb`` (the same two trees, a top-level UCB1 choosing between them), ``H_sep`` (``H`` without the
    hand-off), ``H1`` / ``H_flat`` (single-tree ablations: a macro arm competing with the seed
    subtrees under the root's UCB1), ``beta`` (a random split: macro with probability ``beta``, else a
    micro descent). ``eta`` injects generator label noise; ``verified=False`` judges against the
    generator's label instead of the python_exec truth (the "cleaner" ablation); ``labeller`` (a callable
    ``items -> labels``, e.g. an LLM writing the answers) replaces the ``eta`` noise as the unverified label
    source. ``benchmark``: a fixed list of items for the static strategy and the trees' seeds.
    """
    _validate(budget, C, k, eta, beta, strategy, split, walk, confirm)
    rng = np.random.default_rng(seed)
    label_rng = np.random.default_rng([seed, 7])
    bench_order = None
    if benchmark is not None:
        benchmark = [space.check(it) for it in benchmark]
        if not benchmark:
            raise ValueError("benchmark must hold at least one item")
        bench_order = iter([benchmark[i] for i in np.random.default_rng([seed, 5]).permutation(len(benchmark))])

    def bench_draw() -> Item:
        if bench_order is None:
            return space.sample(rng)
        nxt = next(bench_order, None)
        if nxt is None:
            raise ValueError(f"the benchmark ({len(benchmark)} items) is exhausted before the budget {budget}")
        return nxt

    root = Node("root", visits=0)
    arm_stats = np.zeros((2, 2))  # H_ucb: [tree (0 macro, 1 micro)] x [visits, errors]
    macro_arm = Node("macro", parent=root, depth=1) if strategy in SINGLE_TREE else None
    if macro_arm is not None:
        root.children.append(macro_arm)
    draw_arm = Node("draw", parent=macro_arm, depth=2) if strategy == "H1" else None
    if draw_arm is not None:
        macro_arm.children.append(draw_arm)
    sampler = HierarchicalSampler(space, C) if strategy in ("macro", "beta") + TWO_TREE + SINGLE_TREE else None
    seen: set[Item] = set()
    probes: list[Probe] = []
    sources: list[str] = []
    charged = duplicates = 0
    walk_cur, walk_left = None, 0  # random: the walk's current item and the moves left in it
    pending: list[Item] = []       # confirm: failing i.i.d. draws, one entry per confirmation move still owed

    def descend(start: Node, exclude_macro: bool) -> list[Node]:
        path, v = [start], start
        while True:
            kids = [c for c in v.children if not (exclude_macro and c.kind == "macro")]
            if v is not start and v.kind != "macro" and len(v.children) < width:
                return path
            if not kids:
                return path
            j = argmax_ties(ucb1([c.errors for c in kids], [c.visits for c in kids], max(v.visits, 1), C), rng)
            v = kids[j]
            path.append(v)
            if v.kind == "draw" or (v.kind == "macro" and strategy == "H_flat"):
                return path

    while charged < budget:
        batch = []  # (item, source, path, parent-or-None, stratum, step, tree)
        while len(batch) < min(k, budget - charged):
            tree = None
            if strategy in ("H", "H_sep"):  # the explicit split: macro on the units where floor(t * split) steps up
                tree = 0 if math.floor((charged + 1) * split) > math.floor(charged * split) else 1
            elif strategy == "H_ucb":
                tree = argmax_ties(ucb1(arm_stats[:, 1], arm_stats[:, 0], max(arm_stats[:, 0].sum(), 1), C), rng)
            seeding = (strategy in ("micro", "beta") + SINGLE_TREE or tree == 1) and \
                sum(c.kind == "seed" for c in root.children) < n_seeds
            if strategy == "random":  # a walk: a fresh seed, then `walk` moves, each from the walk's last item
                if walk_cur is None or walk_left == 0:
                    item, src, walk_left = bench_draw(), "seed", walk
                else:
                    item, _ = space.perturb(walk_cur, rng)
                    src, walk_left = "random", walk_left - 1
                walk_cur, path, parent, stratum = item, [root], None, None
            elif strategy == "confirm":  # S+C(c): confirmation moves owed to earlier failures first, else a draw
                if pending:
                    item, _ = space.perturb(pending.pop(0), rng)
                    src = "confirm"
                else:
                    item, src = bench_draw(), "static"
                path, parent, stratum = [root], None, None
            elif strategy == "static" or seeding:
                item, src, path, parent, stratum = bench_draw(), ("static" if strategy == "static" else "seed"), [root], root, None
            elif strategy == "macro" or tree == 0:
                stratum, item = sampler.draw(rng)
                src, path, parent = "macro", ([] if tree == 0 else [root]), (None if tree == 0 else root)
            else:
                use_macro = strategy == "beta" and rng.random() < beta
                path = [root] if use_macro else descend(root, exclude_macro=strategy not in SINGLE_TREE)
                if use_macro or path[-1].kind in ("macro", "draw"):
                    stratum, item = sampler.draw(rng)
                    src, parent = "macro", (macro_arm if strategy == "H1" else root)
                else:
                    item, _ = space.perturb(path[-1].item, rng)
                    src, parent, stratum = "micro", path[-1], None
            if tree is not None:
                arm_stats[tree, 0] += 1  # virtual loss on the chosen tree
            for v in path:  # virtual loss
                v.visits += 1
            charged += 1
            if item in seen or any(b[0] == item for b in batch):
                duplicates += 1
                sources.append("duplicate")
                continue
            batch.append((item, src, path, parent, stratum, charged - 1, tree))
        if not batch:
            continue
        items = [b[0] for b in batch]
        gold = [verify(space, it) for it in items]
        if verified:
            labels = gold
        elif labeller is not None:
            labels = list(labeller(items))
        else:
            labels = [noisy_label(space, it, eta, label_rng) for it in items]
        reported = np.asarray(target.query(items, labels), dtype=bool)
        # verified: the label *is* the truth, so the reported failures are the genuine ones by construction
        # (P2b is a check, not evidence); unverified: judged again against the truth
        genuine = reported if verified else np.asarray(target.query(items, gold), dtype=bool)
        if len(reported) != len(items):
            raise RuntimeError(f"the target returned {len(reported)} verdicts for {len(items)} items")
        for (item, src, path, parent, stratum, step, tree), fail, real in zip(batch, reported, genuine):
            seen.add(item)
            probes.append(Probe(item, bool(fail), bool(real), src, step))
            sources.append(src)
            for v in path:
                v.errors += int(fail)
            if stratum is not None:
                sampler.errors[stratum] += int(fail)
            if tree is not None:
                arm_stats[tree, 1] += int(fail)
            if strategy == "confirm" and src == "static" and fail:  # confirm what the i.i.d. draw found
                pending.extend([item] * confirm)
            if tree == 0 and fail and strategy in HANDOFF:  # refine what global exploration found
                root.children.append(Node("found", item, root, visits=1, errors=1, depth=1))
                root.visits += 1
                root.errors += 1
            if strategy not in ("static", "macro", "random", "confirm") and parent is not None:
                # a macro draw joining the tree is an Original handed over ("found"), not a benchmark seed: only
                # "seed" nodes count toward n_seeds, so a beta split or H_flat keeps its n_seeds benchmark seeds
                kind = "found" if src == "macro" else ("seed" if parent is root or parent.kind == "macro" else "micro")
                parent.children.append(Node(kind, item, parent, visits=1, errors=int(fail), depth=parent.depth + 1))
    return SearchResult(strategy, budget, probes, charged, duplicates, root, sampler, sources)


def ucb_bandit_pulls(rates, horizons, runs: int, C: float = math.sqrt(2), seed: int = 0) -> np.ndarray:
    """UCB1 on Bernoulli arms (failure rates ``rates``), ``runs`` independent runs vectorised: the pulls
    n_i(T) of every arm at every horizon T, shape (len(horizons), runs, arms). Each arm is pulled once
    first (Auer et al. 2002)."""
    rates = np.asarray(rates, dtype=float)
    if rates.ndim != 1 or rates.size < 2 or np.any((rates < 0) | (rates > 1)):
        raise ValueError(f"rates must be >= 2 probabilities in [0, 1], got {rates}")
    horizons = sorted(int(t) for t in horizons)
    if horizons[0] < rates.size:
        raise ValueError(f"horizons must be >= the number of arms {rates.size}")
    rng = np.random.default_rng(seed)
    K = rates.size
    n = np.zeros((runs, K))
    s = np.zeros((runs, K))
    out = []
    hi = iter(horizons)
    nxt = next(hi)
    for t in range(1, horizons[-1] + 1):
        if t <= K:
            arm = np.full(runs, t - 1)
        else:
            score = s / n + C * np.sqrt(np.log(t - 1) / n)
            arm = score.argmax(1)
        r = rng.random(runs) < rates[arm]
        n[np.arange(runs), arm] += 1
        s[np.arange(runs), arm] += r
        if t == nxt:
            out.append(n.copy())
            nxt = next(hi, None)
    return np.stack(out)
