"""Many episodes as one vectorised state: the search's K seeds x candidates of a generation in one pass.

`run_episodes_batched(policies, params, seeds)` runs episode b (``policies[b]`` on ``seeds[b]``) for every b
at once: the world state of `world.Commons` with a leading batch axis (food (B, G, G), positions as cells
y G + x, energies, carries, ... (B, N)), the features and the first-match interpreter computed for all
episodes in a few numpy calls per step, and the sequential part of a step (the alive agents acting one
after another in their random order) in a numba-compiled loop, `_resolve_step`: `Commons.apply`'s loop,
line by line, episode after episode. Without numba (it comes with the `bench` extra), or with
``kernel="numpy"``, the numpy reference resolves it **slot by slot**: in slot k every episode's k-th agent
acts (the actors of a slot grouped by action), so the episodes advance side by side, each agent still acting
on the state its predecessors in its own episode left. Moves, the nearest-food search and the neighbourhoods
are lookups in per-grid tables (`_grid_tables`). That is the transition of `Commons.apply`; the
per-episode results are **exactly** those of `world.run_episode` with the same seeds (tests: every field of
`Episode`, several worlds, rule, table and other policies, mixed batches, collapsing episodes).
`run_grid(policies, params, seeds)` is every policy on every seed (a generation: candidates x K seeds);
`evolve.evolve` and `evolve.random_search` score each generation with it (one batch per worker).

Random streams: each episode keeps its own two generators (`world.Commons`), drawn in the same order:
the initial state is built by `Commons` itself, the world stream's regrowth draws of all T steps come in one
call (``random((T, G, G))`` yields the same doubles as T calls of ``random((G, G))``), and the action stream,
drawn in fixed amounts per step, is drawn ahead for all T steps by a compiled loop (`_draw_action_stream`,
numba's `Generator` methods on the episode's own generator) or, in the numpy path, per step as in
`world.action_draws`. Both take its numbers by cheaper means: the directions as floor(4 u) of float32
uniforms (numpy's ``integers(0, 4, N)`` takes the top two bits of one 32-bit draw per agent, Lemire's
method with no rejection for a range of 4, and ``random(dtype=float32)`` the top 24 bits of the same 32-bit
draws, so ``floor(4 u)`` is the same direction) and the acting order from ``shuffle`` of ``arange(N)`` in
place (what ``permutation(N)`` does).

An episode in which every agent is dead stops (as `run_episode` breaks): its state is frozen, food included.
Speed: a generation of 16 candidates x 8 seeds (12 x 12, N = 10, T = 80) takes about 0.15 s on a 2-core
machine with the compiled kernels (0.34-0.48 s with the numpy path; `run_episode` one by one several times
more); `benchmarks/bench_constitutional_evolution.py` times it against the `mesa` peer (22-35x faster).
numba compiles the two kernels on the first call in a fresh checkout (about 15 s) and caches them on disk.
"""
from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np

try:                  # numba comes with the `bench` extra (`make install`); without it, the numpy path runs
    import numba
except ImportError:   # pragma: no cover
    numba = None

from .constitution import ACTIONS, CONFLICT, FEATURES, GT, LT, MAX_RULES, SOCIAL, A, F, default_actions
from .policies import RulePolicy, TablePolicy, situation_index
from .world import _ORACLE_CACHE, DIRS, Commons, Episode, WorldParams, _offsets, oracle_policy, remember_oracle

_GATHER, _EAT, _DEPOSIT, _EAT_STORE, _SHARE, _BROADCAST, _STEAL, _ATTACK = (
    A[a] for a in ("GATHER", "EAT", "DEPOSIT", "EAT_STORE", "SHARE", "BROADCAST", "STEAL", "ATTACK"))
_MOVE_RANDOM, _MOVE_TO_FOOD, _MOVE_TO_DEPOT, _MOVE_TO_AGENT, _IDLE = (
    A[a] for a in ("MOVE_RANDOM", "MOVE_TO_FOOD", "MOVE_TO_DEPOT", "MOVE_TO_AGENT", "IDLE"))
if (_MOVE_RANDOM, _MOVE_TO_FOOD, _MOVE_TO_DEPOT, _MOVE_TO_AGENT, _IDLE) != tuple(range(8, 13)):  # pragma: no cover
    raise RuntimeError("the batched world assumes ACTIONS ends with the four moves, then IDLE")
_N_ACT = len(ACTIONS)
_CONFLICT_IDX = [A[a] for a in CONFLICT]
_SOCIAL_IDX = [A[a] for a in SOCIAL]


# ------------------------------------------------------------------ policies over a batch

class _BatchChooser:
    """``choose(X (B, N, F), U (B, N, R), dirs (B, N), t, running) -> (actions (B, N), fired (B, N))`` for B policies,
    vectorised when they are all `RulePolicy` or all `TablePolicy`, else one `choose` call per episode."""

    def __init__(self, policies: Sequence, n: int):
        self.policies = list(policies)
        B = len(self.policies)
        self.kind = "loop"
        for b, p in enumerate(self.policies):
            if isinstance(p, RulePolicy) and p.table.feature.shape != (n, MAX_RULES, 2):
                raise ValueError(f"policy {b} reads constitutions for {p.table.feature.shape[0]} agents, "
                                 f"the world has N = {n}")
        if all(type(p) is RulePolicy for p in self.policies):
            tabs = [p.table for p in self.policies]
            self.kind = "rules"
            # rule slots past the longest constitution never fire (probability 0): drop them
            R = max(1, int((np.stack([t.prob for t in tabs]) > 0).any(axis=(0, 1)).nonzero()[0].max(initial=0)) + 1)
            self.R = R
            feature = np.stack([t.feature[:, :R] for t in tabs]).reshape(B * n, R * 2)
            self.gather = (np.arange(B * n)[:, None] * len(FEATURES) + feature).reshape(B, n, R, 2)
            # every comparison as `val >= threshold`, negated for LT (val < th is not val >= th) and with
            # the next float up for GT (val > th is val >= nextafter(th, inf)): exact for every value but
            # NaN, which no feature takes
            op = np.stack([t.op[:, :R] for t in tabs])
            th = np.stack([t.threshold[:, :R] for t in tabs])
            self.threshold = np.where(op == GT, np.nextafter(th, np.inf), th)
            self.negate = op == LT
            self.action = np.stack([t.action[:, :R] for t in tabs])
            self.prob = np.stack([t.prob[:, :R] for t in tabs])
            self.count_fires = np.stack([t.constitution_of == 0 for t in tabs])
        elif all(type(p) is TablePolicy for p in self.policies):
            self.kind = "table"
            self.cdf = np.stack([p._cdf for p in self.policies])     # (B, situations, actions)
            self.count_fires = np.ones((B, n), dtype=bool)
        else:
            self.count_fires = np.stack([
                (np.asarray(p.constitution_of) == 0) if hasattr(p, "constitution_of") else np.ones(n, dtype=bool)
                for p in self.policies])
            if self.count_fires.shape != (B, n):
                raise ValueError(f"a policy's constitution_of does not have one entry per agent (N = {n})")

    def choose(self, X, U, dirs, t, running):
        B, n, _ = X.shape
        if self.kind == "rules":           # constitution.interpret with a batch axis
            val = X.reshape(-1)[self.gather]                              # (B, N, R, 2)
            holds = (val >= self.threshold) != self.negate
            cond = holds[..., 0] & holds[..., 1]
            fire = cond & (U[:, :, :self.R] < self.prob)
            has = fire.any(axis=2)
            first = fire.argmax(axis=2)
            rule_act = np.take_along_axis(self.action, first[:, :, None], axis=2)[:, :, 0]
            acts = np.where(has, rule_act, default_actions(X.reshape(B * n, -1)).reshape(B, n))
            return acts, np.where(has, first, -1)
        if self.kind == "table":           # TablePolicy.choose with a batch axis
            s = situation_index(X.reshape(B * n, -1)).reshape(B, n)
            cdf = self.cdf[np.arange(B)[:, None], s]                   # (B, N, actions)
            acts = (U[:, :, :1] >= cdf).sum(axis=2)
            return np.minimum(acts, _N_ACT - 1), np.zeros((B, n), dtype=np.int64)
        acts = np.full((B, n), A["IDLE"], dtype=np.int64)
        fired = np.full((B, n), -1, dtype=np.int64)
        for b in running.tolist():                       # a collapsed episode's policy is not asked again
            a, f = self.policies[b].choose(X[b], U[b], dirs[b], t)
            acts[b], fired[b] = a, f
        return acts, fired


# ------------------------------------------------------------------ compiled kernels (numba)

def _jit(f):
    """``numba.njit`` with an on-disk cache (the first call in a fresh checkout compiles, about 15 s for the
    two kernels; later processes load them in well under a second); without a writable cache directory
    (a read-only install and no writable ``NUMBA_CACHE_DIR`` or home), compiled once per process instead."""
    if numba is None:                 # pragma: no cover
        return None
    try:
        return numba.njit(cache=True)(f)
    except RuntimeError:              # pragma: no cover  (numba: "no locator available" for the cache)
        return numba.njit(f)


def _draw_action_stream(rng, U, dirs, order, b):
    """All T steps of episode b's action stream (`world.action_draws`, in its order) into ``U[t, b]`` (N, R),
    ``dirs[t, b]`` and ``order[t, b]``: per step the (N, R) uniforms, then the directions as floor(4 u) of
    float32 uniforms (module docstring), then ``shuffle`` of arange(N) (numba's `Generator` methods call the
    generator's own bit generator, and its ``shuffle`` is numpy's algorithm). The stream is drawn in fixed
    amounts per step, so drawing it ahead gives the draws `run_episode` makes (an episode that collapses
    early just leaves some unused)."""
    T, _, n, R = U.shape
    for t in range(T):
        for i in range(n):
            for r in range(R):
                U[t, b, i, r] = rng.random()
        for i in range(n):
            dirs[t, b, i] = np.int64(rng.random(dtype=np.float32) * np.float32(4.0))
        for i in range(n):
            order[t, b, i] = i
        rng.shuffle(order[t, b])


def _nearest_food(food, c, search, gg):
    """First cell with F >= 1 in `_offsets` order around cell c (-1: none); ``food`` one episode's (G^2,)."""
    for s in search[c]:
        if s < gg and food[s] >= 1.0:
            return s
    return -1


def _resolve_step(order, acts, dirs, pos, energy, carry, alive, msg, has_msg, conflict, food, store, gathered,
                  acted, cost, search, towards, random_step, g, depot, cap, emax, gain, move_cost, broadcast_cost,
                  broadcast_radius, attack_damage):
    """The sequential part of one step of every episode: `world.Commons.apply`'s loop over the acting order,
    line by line on the batched state ((B, N) agents, food (B, G^2), positions as cells), episode after
    episode. Marks the agents that acted in ``acted`` and writes their action cost into ``cost`` (both
    zero on entry). Metabolism, death by starvation and regrowth stay with the caller."""
    B, n = order.shape
    gg = g * g
    for b in range(B):
        for k in range(n):
            i = order[b, k]
            if not alive[b, i] or energy[b, i] <= 0:
                continue
            a = acts[b, i]
            acted[b, i] = True
            c = pos[b, i]
            x, y = c % g, c // g
            if a == _GATHER:
                if food[b, c] >= 1.0 and carry[b, i] < cap:
                    food[b, c] -= 1.0
                    carry[b, i] += 1
                    gathered[b] += 1
            elif a == _EAT:
                if carry[b, i] >= 1:
                    carry[b, i] -= 1
                    energy[b, i] = min(emax, energy[b, i] + gain)
            elif a == _DEPOSIT:
                if c == depot and carry[b, i] >= 1:
                    store[b] += float(carry[b, i])
                    carry[b, i] = 0
            elif a == _EAT_STORE:
                if c == depot and store[b] >= 1.0:
                    store[b] -= 1.0
                    energy[b, i] = min(emax, energy[b, i] + gain)
            elif a == _BROADCAST:
                cost[b, i] = broadcast_cost
                target = _nearest_food_jit(food[b], c, search, gg)
                if target >= 0:
                    for j in range(n):
                        if j != i and alive[b, j] and abs(pos[b, j] % g - x) <= broadcast_radius \
                                and abs(pos[b, j] // g - y) <= broadcast_radius:
                            msg[b, j] = target
                            has_msg[b, j] = True
            elif a == _SHARE or a == _STEAL or a == _ATTACK:
                if a == _STEAL or a == _ATTACK:
                    conflict[b, i] = True
                # the chosen neighbour (alive, Chebyshev distance 1): SHARE and ATTACK the least energy,
                # STEAL the most carried among those carrying; ties to the lowest index
                best = -1
                for j in range(n):
                    if j == i or not alive[b, j] or abs(pos[b, j] % g - x) > 1 or abs(pos[b, j] // g - y) > 1:
                        continue
                    if a == _STEAL:
                        if carry[b, j] >= 1 and (best < 0 or carry[b, j] > carry[b, best]):
                            best = j
                    elif best < 0 or energy[b, j] < energy[b, best]:
                        best = j
                if best < 0:
                    continue
                j = best
                if a == _SHARE:
                    if carry[b, i] >= 1:
                        carry[b, i] -= 1
                        energy[b, j] = min(emax, energy[b, j] + gain)
                elif a == _STEAL:
                    if carry[b, i] < cap:
                        conflict[b, j] = True
                        carry[b, j] -= 1
                        carry[b, i] += 1
                else:
                    conflict[b, j] = True
                    energy[b, j] -= attack_damage
                    energy[b, i] = min(emax, energy[b, i] + attack_damage / 2)
                    if energy[b, j] <= 0:
                        alive[b, j] = False
                        carry[b, j] = 0
            elif a != _IDLE:                                    # the moves
                target = depot                                  # MOVE_TO_DEPOT
                if a == _MOVE_RANDOM:
                    target = -1
                elif a == _MOVE_TO_AGENT:                       # the nearest other alive agent (Manhattan)
                    target, best = -1, 0
                    for j in range(n):
                        if j != i and alive[b, j]:
                            d = abs(pos[b, j] % g - x) + abs(pos[b, j] // g - y)
                            if target < 0 or d < best:
                                target, best = pos[b, j], d
                elif a == _MOVE_TO_FOOD:                        # visible food, else the message
                    target = _nearest_food_jit(food[b], c, search, gg)
                    if target < 0 and has_msg[b, i]:
                        target = msg[b, i]
                nxt = random_step[c, dirs[b, i]] if target < 0 else towards[c, target]
                pos[b, i] = nxt
                if nxt != c:
                    cost[b, i] = move_cost
                if has_msg[b, i] and nxt == msg[b, i]:
                    has_msg[b, i] = False


_nearest_food_jit = _jit(_nearest_food)
_draw_action_stream_jit, _resolve_step_jit = _jit(_draw_action_stream), _jit(_resolve_step)


# ------------------------------------------------------------------ the batched world

def _check(policies, params, seeds) -> tuple[list, list[int]]:
    if not isinstance(params, WorldParams):
        raise TypeError(f"params must be a WorldParams, got {type(params).__name__}")
    if isinstance(policies, (str, bytes)) or not isinstance(policies, Sequence):
        raise TypeError("policies must be a sequence with one policy per episode")
    policies, seeds = list(policies), [int(s) for s in seeds]
    if not policies:
        raise ValueError("empty batch: need at least one (policy, seed) episode")
    if len(policies) != len(seeds):
        raise ValueError(f"one policy per episode: got {len(policies)} policies and {len(seeds)} seeds")
    for b, p in enumerate(policies):
        if not callable(getattr(p, "choose", None)):
            raise TypeError(f"policy {b} ({type(p).__name__}) has no choose(X, U, dirs, t) method")
    return policies, seeds


@functools.lru_cache(maxsize=32)
def _grid_tables(g: int, v: int) -> dict[str, np.ndarray]:
    """Lookup tables over the cells c = y G + x of a G x G grid (vision v), so that a step of the batched
    world is a few gathers: the nearest-food search order (`_offsets`) of each cell (a cell outside the
    grid replaced by the sentinel G^2, a cell that never holds food), the Chebyshev and Manhattan distances between
    cells, the next cell of ``towards`` (world.Commons.apply: the larger gap first, x on ties; c itself at
    the target) and of a random step in each of `DIRS` (c itself into a wall). The search covers the whole
    (2 v + 1)^2 vision window, so 'food is visible' is 'the search finds food'."""
    gg = g * g
    cell = np.arange(gg)
    x, y = cell % g, cell // g
    off = np.array(_offsets(v), dtype=np.int64)
    cx, cy = x[:, None] + off[:, 0], y[:, None] + off[:, 1]
    inside = (cx >= 0) & (cx < g) & (cy >= 0) & (cy < g)
    gx, gy = x[None, :] - x[:, None], y[None, :] - y[:, None]       # [from, to] gaps
    horiz = np.abs(gx) >= np.abs(gy)
    tx = np.where(horiz, x[:, None] + np.sign(gx), x[:, None])
    ty = np.where(horiz, y[:, None], y[:, None] + np.sign(gy))
    rx, ry = x[:, None] + DIRS[:, 0], y[:, None] + DIRS[:, 1]
    wall = (rx < 0) | (rx >= g) | (ry < 0) | (ry >= g)
    return dict(
        search=np.where(inside, cy * g + cx, gg),
        cheb=np.maximum(np.abs(gx), np.abs(gy)), manhattan=np.abs(gx) + np.abs(gy),
        towards=ty * g + tx, random_step=np.where(wall, cell[:, None], ry * g + rx))


def run_episodes_batched(policies: Sequence, params: WorldParams, seeds: Sequence[int],
                         kernel: str = "auto") -> list[Episode]:
    """Episode b runs ``policies[b]`` on ``seeds[b]`` (same length, >= 1); all in one vectorised state.

    Returns the `Episode` of each, equal field by field to ``run_episode(policies[b], params, seeds[b])``
    (module docstring). Policies: `RulePolicy` and `TablePolicy` are vectorised over the batch; any other
    object with ``choose(X, U, dirs, t)`` is called once per episode and step. ``kernel``: "numba" (the
    compiled sequential part and action streams), "numpy" (the slot-by-slot reference) or "auto" (numba
    when it imports); the episodes are the same."""
    if kernel not in ("auto", "numba", "numpy"):
        raise ValueError(f"kernel must be 'auto', 'numba' or 'numpy', got {kernel!r}")
    if kernel == "numba" and numba is None:
        raise ImportError("kernel='numba' needs numba (the `bench` extra)")
    jit = kernel != "numpy" and numba is not None
    policies, seeds = _check(policies, params, seeds)
    p = params
    B, n, g, T = len(policies), p.n_agents, p.grid, p.steps
    gg = g * g
    chooser = _BatchChooser(policies, n)
    tab = _grid_tables(g, p.vision)
    search, cheb, manhattan = tab["search"], tab["cheb"], tab["manhattan"]
    towards, random_step = tab["towards"].reshape(-1), tab["random_step"].reshape(-1)
    adjacent = (cheb <= 1).reshape(-1)                              # [c * G^2 + c']
    v = p.vision

    # initial states and random streams: exactly those of world.Commons. The state lives in flat arrays
    # (agent (b, i) at b N + i, cell (b, y, x) at b G^2 + y G + x; positions as cells y G + x) with
    # (B, N) and (B, G, G) views.
    worlds = [Commons(p, s) for s in seeds]
    regrow = np.stack([w.world_rng.random((T, g, g)) < p.reseed_prob for w in worlds])   # (B, T, G, G)
    food = np.stack([w.food for w in worlds])                       # (B, G, G)
    food_f = food.reshape(-1)
    pos = np.stack([w.pos[:, 1] * g + w.pos[:, 0] for w in worlds])  # (B, N) cells
    pos_f = pos.reshape(-1)
    energy = np.full((B, n), float(p.energy0))
    energy_f = energy.reshape(-1)
    carry = np.zeros((B, n), dtype=np.int64)
    carry_f = carry.reshape(-1)
    alive = np.ones((B, n), dtype=bool)
    alive_f = alive.reshape(-1)
    msg_f = np.zeros(B * n, dtype=np.int64)                         # the message's cell
    has_msg = np.zeros((B, n), dtype=bool)
    has_msg_f = has_msg.reshape(-1)
    conflict_agents = np.zeros((B, n), dtype=bool)
    conflict_f = conflict_agents.reshape(-1)
    store = np.zeros(B)
    gathered = np.zeros(B, dtype=np.int64)
    counts = np.zeros((B, _N_ACT), dtype=np.int64)
    fires = np.zeros((B, MAX_RULES + 1), dtype=np.int64)
    running = np.ones(B, dtype=bool)

    cap = 10 ** 9 if p.immortal else p.carry_cap
    depot = (g // 2) * g + g // 2
    emax, gain = p.energy_max, p.food_gain
    agents = np.arange(n)
    other = agents[:, None] != agents[None, :]                      # (N, N): j is not i
    bidx = np.arange(B)
    base = bidx * n
    bb = bidx[:, None]
    cell0 = bidx * gg                                               # flat index of each episode's cell 0
    has_food = np.zeros((B, gg + 1), dtype=bool)                    # F >= 1 per cell, + the sentinel (False)
    has_food_f = has_food.reshape(-1)
    hcell0 = bidx * (gg + 1)
    cost = np.zeros((B, n))                                        # this step's action costs
    cost_f = cost.reshape(-1)
    acted = np.zeros((B, n), dtype=bool)                            # the agents that acted this step
    acted_f = acted.reshape(-1)
    msg = msg_f.reshape(B, n)
    if jit:                                                         # all T steps of the action streams at once
        U_all = np.empty((T, B, n, MAX_RULES))
        dirs_all, order_all = np.empty((T, B, n), dtype=np.int64), np.empty((T, B, n), dtype=np.int64)
        for b, w in enumerate(worlds):
            _draw_action_stream_jit(w.action_rng, U_all, dirs_all, order_all, b)
        consts = (g, depot, cap, float(emax), float(gain), float(p.move_cost), float(p.broadcast_cost),
                  p.broadcast_radius, float(p.attack_damage))
    else:                                                           # per step, into these buffers
        U = np.zeros((B, n, MAX_RULES))
        u32 = np.zeros((B, n), dtype=np.float32)
        order = np.tile(agents, (B, 1))
        draws = list(zip([w.action_rng.random for w in worlds], U, u32,
                         [w.action_rng.shuffle for w in worlds], order))
    X = np.zeros((B, n, len(FEATURES)))
    X[:, :, F["true"]] = 1.0
    far = 4 * g + 1                                                 # beyond any Manhattan distance

    def nearest_food(b, c):
        """First food cell (F >= 1) in `_offsets` order around cell c of episode b: (found, cell)."""
        cells = search[c]                                           # (m, K)
        ok = has_food_f[hcell0[b][:, None] + cells]
        k = ok.argmax(axis=1)
        rows = np.arange(len(b))
        return ok[rows, k], cells[rows, k]

    def near(b, i, c, radius):
        """(m, N) alive agents other than i within Chebyshev `radius` of cell c, in episode b."""
        m = alive[b] & other[i]
        if radius < g - 1:
            m &= cheb[c[:, None], pos[b]] <= radius
        return m

    def resolve_slots(order, acts_f, dirs_f):
        """The numpy reference of `_resolve_step` (no numba): in slot k the k-th agent of every episode acts (an
        alive agent has energy > 0: every loss of energy is followed by the death check, so `alive` is
        Commons.apply's test)."""
        slot_agent = (base[:, None] + order).T.copy()                   # (N, B) flat index of slot k's agent
        slot_act = acts_f[slot_agent]
        any_msg = bool(has_msg_f.any())
        for k in range(n):
            fa, a_act = slot_agent[k], slot_act[k]
            acting = alive_f[fa].nonzero()[0]
            if acting.size == 0:
                continue
            acted_f[fa[acting]] = True
            # the actors grouped by action (a stable sort: each action's actors are one contiguous slice)
            srt = acting[np.argsort(a_act[acting], kind="stable")]
            fa, a_act = fa[srt], a_act[srt]                         # flat agent index and action of each actor
            present = np.bincount(a_act, minlength=_N_ACT).tolist()
            start = [0] * (_N_ACT + 1)
            for a in range(_N_ACT):
                start[a + 1] = start[a] + present[a]
            for a in range(_MOVE_RANDOM):                           # the actions before the moves
                if not present[a]:
                    continue
                b, f = srt[start[a]:start[a + 1]], fa[start[a]:start[a + 1]]
                if a == _EAT:
                    f = f[carry_f[f] >= 1]
                    carry_f[f] -= 1
                    energy_f[f] = np.minimum(emax, energy_f[f] + gain)
                    continue
                c = pos_f[f]
                if a == _GATHER:
                    cell = cell0[b] + c
                    ok = (food_f[cell] >= 1.0) & (carry_f[f] < cap)
                    b, f, cell, c = b[ok], f[ok], cell[ok], c[ok]
                    food_f[cell] -= 1.0
                    has_food_f[hcell0[b] + c] = food_f[cell] >= 1.0
                    carry_f[f] += 1
                    gathered[b] += 1
                elif a == _DEPOSIT:
                    ok = (c == depot) & (carry_f[f] >= 1)
                    b, f = b[ok], f[ok]
                    store[b] += carry_f[f].astype(float)
                    carry_f[f] = 0
                elif a == _EAT_STORE:
                    ok = (c == depot) & (store[b] >= 1.0)
                    b, f = b[ok], f[ok]
                    store[b] -= 1.0
                    energy_f[f] = np.minimum(emax, energy_f[f] + gain)
                elif a == _SHARE:
                    m = near(b, f - base[b], c, 1)
                    ok = (carry_f[f] >= 1) & m.any(axis=1)
                    b, f, m = b[ok], f[ok], m[ok]
                    j = base[b] + np.where(m, energy[b], np.inf).argmin(axis=1)
                    carry_f[f] -= 1
                    energy_f[j] = np.minimum(emax, energy_f[j] + gain)
                elif a == _BROADCAST:
                    cost_f[f] = p.broadcast_cost
                    found, target = nearest_food(b, c)
                    b, f, c, target = b[found], f[found], c[found], target[found]
                    rr, jj = np.nonzero(near(b, f - base[b], c, p.broadcast_radius))
                    j = base[b[rr]] + jj
                    msg_f[j] = target[rr]
                    has_msg_f[j] = True
                    any_msg = any_msg or j.size > 0
                elif a == _STEAL:
                    conflict_f[f] = True
                    m = near(b, f - base[b], c, 1) & (carry[b] >= 1)
                    ok = m.any(axis=1) & (carry_f[f] < cap)
                    b, f, m = b[ok], f[ok], m[ok]
                    j = base[b] + np.where(m, carry[b], -1).argmax(axis=1)
                    conflict_f[j] = True
                    carry_f[j] -= 1
                    carry_f[f] += 1
                elif a == _ATTACK:
                    conflict_f[f] = True
                    m = near(b, f - base[b], c, 1)
                    ok = m.any(axis=1)
                    b, f, m = b[ok], f[ok], m[ok]
                    j = base[b] + np.where(m, energy[b], np.inf).argmin(axis=1)
                    conflict_f[j] = True
                    energy_f[j] -= p.attack_damage
                    energy_f[f] = np.minimum(emax, energy_f[f] + p.attack_damage / 2)
                    j = j[energy_f[j] <= 0]
                    alive_f[j] = False
                    carry_f[j] = 0
            # ---- all moves of this slot at once (they touch only the mover's own position and message)
            lo, hi = start[_MOVE_RANDOM], start[_IDLE]
            if hi > lo:
                b, f, a = srt[lo:hi], fa[lo:hi], a_act[lo:hi]
                c = pos_f[f]
                target = np.full(hi - lo, depot)                        # MOVE_TO_DEPOT
                rnd = a == _MOVE_RANDOM
                if present[_MOVE_TO_AGENT]:                             # the nearest other alive agent
                    sel = slice(start[_MOVE_TO_AGENT] - lo, start[_MOVE_TO_AGENT + 1] - lo)
                    bs = b[sel]
                    others = alive[bs] & other[f[sel] - base[bs]]
                    dist = np.where(others, manhattan[c[sel, None], pos[bs]], far)
                    target[sel] = pos_f[base[bs] + dist.argmin(axis=1)]
                    rnd[sel] = ~others.any(axis=1)
                if present[_MOVE_TO_FOOD]:                              # visible food, else the message
                    sel = slice(start[_MOVE_TO_FOOD] - lo, start[_MOVE_TO_FOOD + 1] - lo)
                    fs = f[sel]
                    found, fc = nearest_food(b[sel], c[sel])
                    target[sel] = np.where(found, fc, msg_f[fs])
                    rnd[sel] = ~found & ~has_msg_f[fs]
                n_rnd = int(np.count_nonzero(rnd))
                if n_rnd == 0:
                    nxt = towards[c * gg + target]
                elif n_rnd == hi - lo:
                    nxt = random_step[c * 4 + dirs_f[f]]
                else:
                    nxt = np.where(rnd, random_step[c * 4 + dirs_f[f]], towards[c * gg + target])
                pos_f[f] = nxt
                cost_f[f] = (nxt != c) * p.move_cost                # an agent acts once a step: 0.0 + cost
                if any_msg:
                    arrived = f[has_msg_f[f] & (nxt == msg_f[f])]
                    has_msg_f[arrived] = False

    for t in range(T):
        live_b = np.flatnonzero(running)
        # ---- features (Commons.features with a batch axis)
        nb = adjacent[(pos * gg)[:, :, None] + pos[:, None, :]] & (alive[:, None, :] & alive[:, :, None] & other)
        np.greater_equal(food.reshape(B, gg), 1.0, out=has_food[:, :gg])
        # food visible from each cell: F >= 1 somewhere in its (2v + 1)^2 window (a separable dilation)
        hf = has_food[:, :gg].reshape(B, g, g)
        rows = hf.copy()
        for d in range(1, min(v, g - 1) + 1):
            rows[:, :, d:] |= hf[:, :, :-d]
            rows[:, :, :-d] |= hf[:, :, d:]
        seen = rows.copy()
        for d in range(1, min(v, g - 1) + 1):
            seen[:, d:, :] |= rows[:, :-d, :]
            seen[:, :-d, :] |= rows[:, d:, :]
        X[:, :, F["energy"]] = energy
        X[:, :, F["carry"]] = carry
        X[:, :, F["food_here"]] = has_food_f[hcell0[:, None] + pos]
        X[:, :, F["food_visible"]] = seen.reshape(-1)[cell0[:, None] + pos]
        X[:, :, F["at_depot"]] = pos == depot
        X[:, :, F["store"]] = store[:, None]
        e_nb = np.where(nb, energy[:, None, :], np.inf)             # (B, N, N) neighbours' energies
        nb_e = e_nb[:, :, 0].copy()
        for j in range(1, n):                                       # min over j (faster than .min(axis=2))
            np.minimum(nb_e, e_nb[:, :, j], out=nb_e)
        X[:, :, F["min_neighbour_energy"]] = np.minimum(nb_e, 1e9)
        X[:, :, F["neighbour_carrying"]] = np.einsum("bij,bj->bi", nb.view(np.uint8), (carry >= 1).view(np.uint8)) > 0
        X[:, :, F["neighbour_weaker"]] = nb_e < energy
        X[:, :, F["got_message"]] = has_msg
        for m in (2, 3, 4, 5):
            X[:, :, F[f"step_mod_{m}"]] = t % m == 0
        # ---- the action stream (world.action_draws, directions via float32: module docstring)
        if jit:
            U, dirs, order = U_all[t], dirs_all[t], order_all[t]
        else:
            order[:] = agents                                       # permutation(n) is shuffle(arange(n))
            for uniform, u, w, shuffle, o in (draws if live_b.size == B else [draws[b] for b in live_b.tolist()]):
                uniform(out=u)
                uniform(out=w, dtype=np.float32)
                shuffle(o)
            dirs = (u32 * np.float32(4.0)).astype(np.int64)
        acts, fired = chooser.choose(X, U, dirs, t, live_b)
        # ---- fire counts (run_episode: alive agents reading constitution 0; -1 -> the default's slot)
        fm = alive & chooser.count_fires
        slot = np.where(fired < 0, MAX_RULES, fired) + (MAX_RULES + 1) * bb
        fires += np.bincount(slot[fm], minlength=B * (MAX_RULES + 1)).reshape(B, MAX_RULES + 1)
        # ---- the sequential part: the alive agents act one after another in their episode's order
        cost_f.fill(0.0)
        acted_f.fill(False)
        if jit:
            _resolve_step_jit(order, acts.astype(np.int64, copy=False), dirs, pos, energy, carry, alive, msg,
                              has_msg, conflict_agents, food.reshape(B, gg), store, gathered, acted, cost,
                              search, tab["towards"], tab["random_step"], *consts)
        else:
            resolve_slots(order, acts.reshape(-1), dirs.reshape(-1))
        counts += np.bincount((bb * _N_ACT + acts)[acted], minlength=B * _N_ACT).reshape(B, _N_ACT)
        # ---- metabolism and death, then regrowth (frozen episodes: nothing changes)
        if not p.immortal:
            after = energy_f - (p.metabolism + cost_f)
            np.copyto(energy_f, after, where=alive_f)
            starved = alive_f & (energy_f <= 0)
            alive_f &= ~starved
            carry_f[starved] = 0
        if live_b.size == B:
            f = food
            f += p.regrowth * f * (1.0 - f / p.f_max)
            f += p.reseed_amount * regrow[:, t]
            np.clip(f, 0.0, p.f_max, out=f)
        else:
            f = food[live_b]
            f += p.regrowth * f * (1.0 - f / p.f_max)
            f += p.reseed_amount * regrow[live_b, t]
            np.clip(f, 0.0, p.f_max, out=f)
            food[live_b] = f
        running &= alive.any(axis=1)
        if not running.any():
            break

    out = []
    for b, s in enumerate(seeds):
        c = counts[b]
        out.append(Episode(seed=s, n_agents=n, steps=T, gathered=int(gathered[b]), alive_end=int(alive[b].sum()),
                           action_counts=tuple(int(v) for v in c),
                           conflict_attempts=int(sum(c[j] for j in _CONFLICT_IDX)),
                           social_actions=int(sum(c[j] for j in _SOCIAL_IDX)),
                           conflict_agents=int(conflict_agents[b].sum()),
                           fire_counts=tuple(int(v) for v in fires[b]),
                           store_end=float(store[b]), food_end=float(food[b].sum())))
    return out


def run_grid(policies: Sequence, params: WorldParams, seeds: Sequence[int], max_batch: int = 1024) -> list[list[Episode]]:
    """Every policy on every seed (the candidates x K seeds of a generation): ``out[c][k]`` is the episode of
    ``policies[c]`` on ``seeds[k]``, run in batches of at most ``max_batch`` episodes."""
    policies, seeds = list(policies), [int(s) for s in seeds]
    if not policies or not seeds:
        raise ValueError(f"empty grid: {len(policies)} policies x {len(seeds)} seeds")
    if max_batch < 1:
        raise ValueError(f"max_batch must be >= 1, got {max_batch}")
    pairs = [(pol, s) for pol in policies for s in seeds]
    eps: list[Episode] = []
    for lo in range(0, len(pairs), max_batch):
        chunk = pairs[lo:lo + max_batch]
        eps += run_episodes_batched([q for q, _ in chunk], params, [s for _, s in chunk])
    K = len(seeds)
    return [eps[c * K:(c + 1) * K] for c in range(len(policies))]


def prefill_oracle(params: WorldParams, seeds: Sequence[int]) -> None:
    """Compute P_ref (`world.oracle_gathering`) of every seed not yet cached, as one batch of oracle episodes."""
    missing = sorted({int(s) for s in seeds if (params, int(s)) not in _ORACLE_CACHE})
    if missing:
        policy, oracle = oracle_policy(params)
        for s, ep in zip(missing, run_episodes_batched([policy] * len(missing), oracle, missing)):
            remember_oracle(params, s, ep.gathered)


def grid_scores(genomes: Sequence[Sequence], params: WorldParams, seeds: Sequence[int]) -> list[list[float]]:
    """S_ours of each shared constitution (a rule list) on each seed, ``out[c][k]``: the candidates x K seeds
    of a generation as one batch (the oracle's episodes of these seeds as another)."""
    from .metrics import score

    prefill_oracle(params, seeds)
    pols = [RulePolicy.shared(tuple(r), params.n_agents) for r in genomes]
    return [[score(ep, params).S for ep in row] for row in run_grid(pols, params, seeds)]
