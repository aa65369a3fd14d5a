"""The commons grid world (research brief §2.2): a stand-in for the paper's survival grid world.

G x G cells with walls, a depot (the commons store) at the centre, food that regrows logistically

    F <- F + rho F (1 - F / F_max) + eps,         eps = `reseed_amount` on a cell with prob `reseed_prob`,

N agents with energy E_0, metabolism -1 per step, -`move_cost` more to move and -`broadcast_cost` to
broadcast, death at E <= 0, and the actions of `constitution.ACTIONS`. The paper's grid size, agent
count, horizon and costs are not public; these are ours.

Two random streams per episode seed, so that a candidate's policy randomness never changes the world:
the **world stream** (``default_rng([seed, 0])``: food layout, start positions, reseeding) and the
**action stream** (``default_rng([seed, 1])``: per step one (N, 8) uniform matrix for the rules'
probabilities, one random direction per agent and the order in which agents act). Both are drawn in
fixed amounts per step, so the same seed gives the same draws whatever the agents do.

`Commons` is the numpy core; `CommonsWorld` wraps it as a `pettingzoo.ParallelEnv`.
"""
from __future__ import annotations

import functools
import math
from dataclasses import asdict, dataclass

import numpy as np

from .constitution import ACTIONS, CONFLICT, FEATURES, MAX_RULES, SOCIAL, A, F

DIRS = np.array([(0, 1), (0, -1), (1, 0), (-1, 0)])  # (dx, dy)
(_GATHER, _EAT, _DEPOSIT, _EAT_STORE, _SHARE, _BROADCAST, _STEAL, _ATTACK, _MOVE_RANDOM, _MOVE_TO_FOOD,
 _MOVE_TO_DEPOT, _MOVE_TO_AGENT, _IDLE) = (A[a] for a in ACTIONS)


@dataclass(frozen=True)
class WorldParams:
    """Every constant of the world; validated on construction."""

    grid: int = 12
    n_agents: int = 10
    steps: int = 80
    energy0: float = 30.0
    energy_max: float = 60.0
    food_gain: float = 8.0
    carry_cap: int = 5
    f_max: float = 4.0
    food_density: float = 0.25
    regrowth: float = 0.08
    reseed_prob: float = 0.002
    reseed_amount: float = 1.0
    vision: int = 2
    broadcast_radius: int = 4
    metabolism: float = 1.0
    move_cost: float = 1.0
    broadcast_cost: float = 0.5
    attack_damage: float = 6.0
    food_patches: int = 0           # 0: food on random cells; k > 0: food only in k random 3 x 3 patches
    immortal: bool = False          # the oracle society: no metabolism, no carry cap

    def __post_init__(self):
        if int(self.grid) < 3:
            raise ValueError(f"grid size G must be >= 3, got {self.grid}")
        if int(self.n_agents) < 1:
            raise ValueError(f"number of agents N must be >= 1, got {self.n_agents}")
        if int(self.steps) < 1:
            raise ValueError(f"horizon T must be >= 1, got {self.steps}")
        if not (math.isfinite(self.regrowth) and self.regrowth > 0):
            raise ValueError(f"regrowth rate rho must be > 0, got {self.regrowth}")
        for name in ("metabolism", "move_cost", "broadcast_cost", "attack_damage", "reseed_amount", "food_gain"):
            v = getattr(self, name)
            if not (math.isfinite(v) and v >= 0):
                raise ValueError(f"{name} must be a finite non-negative number, got {v}")
        if not 0 <= self.food_density <= 1 or not 0 <= self.reseed_prob <= 1:
            raise ValueError("food_density and reseed_prob are probabilities in [0, 1]")
        if self.f_max <= 0 or self.energy0 <= 0 or self.energy_max < self.energy0:
            raise ValueError("need f_max > 0 and 0 < energy0 <= energy_max")
        if self.carry_cap < 1 or self.vision < 0 or self.broadcast_radius < 0:
            raise ValueError("need carry_cap >= 1, vision >= 0, broadcast_radius >= 0")
        if self.food_patches < 0:
            raise ValueError(f"food_patches must be >= 0, got {self.food_patches}")

    def replace(self, **kw) -> "WorldParams":
        return WorldParams(**{**asdict(self), **kw})


@functools.lru_cache(maxsize=16)
def _offsets(v: int) -> tuple[tuple[int, int], ...]:
    """Window offsets (dx, dy) by Manhattan distance, ties in row-major order (dy, then dx)."""
    cells = [(dx, dy) for dy in range(-v, v + 1) for dx in range(-v, v + 1)]
    return tuple(sorted(cells, key=lambda c: (abs(c[0]) + abs(c[1]), c[1], c[0])))


def initial_food(params: WorldParams, rng: np.random.Generator) -> np.ndarray:
    """The food grid at t = 0 (indexed [y, x]) from the world stream, the depot cell empty.

    Uniform layout (``food_patches = 0``): each cell holds food with probability `food_density`. Patchy
    layout (``food_patches = k``): food only inside k random 3 x 3 patches, each of their cells with
    probability `food_density`; the regime where a broadcast sighting is worth a turn (Experiments, F5).
    """
    g = params.grid
    cells = rng.random((g, g)) < params.food_density
    amount = params.f_max * rng.uniform(0.5, 1.0, (g, g))
    if params.food_patches:
        patch = np.zeros((g, g), dtype=bool)
        for cx, cy in rng.integers(0, g, (params.food_patches, 2)):
            patch[max(cy - 1, 0):cy + 2, max(cx - 1, 0):cx + 2] = True
        cells &= patch
    food = np.where(cells, amount, 0.0)
    food[g // 2, g // 2] = 0.0
    return food


def action_draws(rng: np.random.Generator, n: int):
    """One step of the action stream: uniforms (n, MAX_RULES), directions (n,), acting order (n,)."""
    return rng.random((n, MAX_RULES)), rng.integers(0, 4, n), rng.permutation(n)


class Commons:
    """The numpy state of one episode and its transition (`features`, `apply`)."""

    def __init__(self, params: WorldParams, seed: int):
        self.p = p = params
        self.seed = int(seed)
        self.world_rng = np.random.default_rng([self.seed, 0])
        self.action_rng = np.random.default_rng([self.seed, 1])
        g, n = p.grid, p.n_agents
        r = self.world_rng
        self.food = initial_food(p, r)
        self.depot = (g // 2, g // 2)
        cells = r.choice(g * g, size=n, replace=n > g * g)
        self.pos = np.stack([cells % g, cells // g], axis=1).astype(np.int64)  # (x, y); food[y, x]
        self.energy = np.full(n, float(p.energy0))
        self.carry = np.zeros(n, dtype=np.int64)
        self.alive = np.ones(n, dtype=bool)
        self.msg = np.zeros((n, 2), dtype=np.int64)
        self.has_msg = np.zeros(n, dtype=bool)
        self.store = 0.0
        self.t = 0
        self.gathered = 0
        self.gathered_by = np.zeros(n, dtype=np.int64)
        self.counts = np.zeros((n, len(ACTIONS)), dtype=np.int64)
        self.conflict_agents = np.zeros(n, dtype=bool)

    # -------------------------------------------------------------- observation
    def neighbours(self) -> np.ndarray:
        d = np.abs(self.pos[:, None, :] - self.pos[None, :, :]).max(axis=2)
        nb = (d <= 1) & self.alive[None, :] & self.alive[:, None]
        np.fill_diagonal(nb, False)
        return nb

    def food_visible(self) -> np.ndarray:
        """Number of food cells (F >= 1) within Chebyshev radius `vision` of each agent (integral image)."""
        v, g = self.p.vision, self.p.grid
        m = (self.food >= 1.0).astype(np.int64)
        ii = np.zeros((g + 1, g + 1), dtype=np.int64)
        ii[1:, 1:] = m.cumsum(0).cumsum(1)
        x, y = self.pos[:, 0], self.pos[:, 1]
        x0, x1 = np.maximum(x - v, 0), np.minimum(x + v + 1, g)
        y0, y1 = np.maximum(y - v, 0), np.minimum(y + v + 1, g)
        return ii[y1, x1] - ii[y0, x1] - ii[y1, x0] + ii[y0, x0]

    def features(self) -> np.ndarray:
        """(N, len(FEATURES)) features of `constitution.FEATURES` (the interpreter's input)."""
        n = self.p.n_agents
        X = np.zeros((n, len(FEATURES)))
        nb = self.neighbours()
        x, y = self.pos[:, 0], self.pos[:, 1]
        X[:, F["energy"]] = self.energy
        X[:, F["carry"]] = self.carry
        X[:, F["food_here"]] = self.food[y, x] >= 1.0
        X[:, F["food_visible"]] = self.food_visible() >= 1
        X[:, F["at_depot"]] = (x == self.depot[0]) & (y == self.depot[1])
        X[:, F["store"]] = self.store
        nb_e = np.where(nb, self.energy[None, :], np.inf).min(axis=1)
        X[:, F["min_neighbour_energy"]] = np.minimum(nb_e, 1e9)
        X[:, F["neighbour_carrying"]] = (nb & (self.carry[None, :] >= 1)).any(axis=1)
        X[:, F["neighbour_weaker"]] = nb_e < self.energy
        X[:, F["got_message"]] = self.has_msg
        for m in (2, 3, 4, 5):
            X[:, F[f"step_mod_{m}"]] = self.t % m == 0
        X[:, F["true"]] = 1.0
        return X

    # -------------------------------------------------------------- transition
    def apply(self, actions: np.ndarray, dirs: np.ndarray, order: np.ndarray) -> None:
        """Resolve one step: the alive agents act in ``order`` (sequentially, so two agents never take the
        same food unit), then metabolism and death, then regrowth (one world-stream draw per step).

        The sequential part runs on Python lists (scalar numpy indexing costs more than the arithmetic);
        the float operations are the same IEEE operations either way, so the `mesa` peer matches exactly.
        """
        p = self.p
        n, g = p.n_agents, p.grid
        cap = 10 ** 9 if p.immortal else p.carry_cap
        energy, carry, alive = self.energy.tolist(), self.carry.tolist(), self.alive.tolist()
        px, py = self.pos[:, 0].tolist(), self.pos[:, 1].tolist()
        has_msg, mx, my = self.has_msg.tolist(), self.msg[:, 0].tolist(), self.msg[:, 1].tolist()
        food = self.food.tolist()                    # food[y][x]
        acts, dirs_ = [int(a) for a in actions], [int(d) for d in dirs]
        counts = self.counts
        cost = [0.0] * n
        offsets = _offsets(p.vision)
        dx_, dy_ = DIRS[:, 0].tolist(), DIRS[:, 1].tolist()
        depx, depy = self.depot
        emax, gain = p.energy_max, p.food_gain

        def nearest_food(i):
            x, y = px[i], py[i]
            for ox, oy in offsets:
                cx, cy = x + ox, y + oy
                if 0 <= cx < g and 0 <= cy < g and food[cy][cx] >= 1.0:
                    return cx, cy
            return None

        def neighbours(i, radius=1):
            x, y = px[i], py[i]
            return [j for j in range(n) if j != i and alive[j] and abs(px[j] - x) <= radius and abs(py[j] - y) <= radius]

        def towards(i, tx, ty):
            dx, dy = tx - px[i], ty - py[i]
            if dx == 0 and dy == 0:
                return False
            if abs(dx) >= abs(dy):
                px[i] += 1 if dx > 0 else -1
            else:
                py[i] += 1 if dy > 0 else -1
            return True

        def random_step(i, d):
            nx, ny = px[i] + dx_[d], py[i] + dy_[d]
            if 0 <= nx < g and 0 <= ny < g:
                px[i], py[i] = nx, ny
                return True
            return False

        for i in order.tolist():
            if not alive[i] or energy[i] <= 0:
                continue
            a = acts[i]
            counts[i, a] += 1
            x, y = px[i], py[i]
            if a == _GATHER:
                if food[y][x] >= 1.0 and carry[i] < cap:
                    food[y][x] -= 1.0
                    carry[i] += 1
                    self.gathered += 1
                    self.gathered_by[i] += 1
            elif a == _EAT:
                if carry[i] >= 1:
                    carry[i] -= 1
                    energy[i] = min(emax, energy[i] + gain)
            elif a == _DEPOSIT:
                if x == depx and y == depy and carry[i] >= 1:
                    self.store += float(carry[i])
                    carry[i] = 0
            elif a == _EAT_STORE:
                if x == depx and y == depy and self.store >= 1.0:
                    self.store -= 1.0
                    energy[i] = min(emax, energy[i] + gain)
            elif a == _SHARE:
                nb = neighbours(i)
                if carry[i] >= 1 and nb:
                    j = min(nb, key=lambda j: (energy[j], j))
                    carry[i] -= 1
                    energy[j] = min(emax, energy[j] + gain)
            elif a == _BROADCAST:
                cost[i] += p.broadcast_cost
                target = nearest_food(i)
                if target is not None:
                    for j in neighbours(i, p.broadcast_radius):
                        mx[j], my[j] = target
                        has_msg[j] = True
            elif a == _STEAL:
                self.conflict_agents[i] = True
                nb = [j for j in neighbours(i) if carry[j] >= 1]
                if nb and carry[i] < cap:
                    j = max(nb, key=lambda j: (carry[j], -j))
                    self.conflict_agents[j] = True
                    carry[j] -= 1
                    carry[i] += 1
            elif a == _ATTACK:
                self.conflict_agents[i] = True
                nb = neighbours(i)
                if nb:
                    j = min(nb, key=lambda j: (energy[j], j))
                    self.conflict_agents[j] = True
                    energy[j] -= p.attack_damage
                    energy[i] = min(emax, energy[i] + p.attack_damage / 2)
                    if energy[j] <= 0:
                        alive[j] = False
                        carry[j] = 0
            elif a == _IDLE:
                pass
            else:  # moves
                if a == _MOVE_RANDOM:
                    moved = random_step(i, dirs_[i])
                elif a == _MOVE_TO_DEPOT:
                    moved = towards(i, depx, depy)
                elif a == _MOVE_TO_AGENT:
                    others = [j for j in range(n) if alive[j] and j != i]
                    if others:
                        j = min(others, key=lambda j: (abs(px[j] - x) + abs(py[j] - y), j))
                        moved = towards(i, px[j], py[j])
                    else:
                        moved = random_step(i, dirs_[i])
                else:  # MOVE_TO_FOOD: nearest visible food, else the message's target, else random
                    target = nearest_food(i)
                    if target is None and has_msg[i]:
                        target = (mx[i], my[i])
                    moved = towards(i, *target) if target is not None else random_step(i, dirs_[i])
                if moved:
                    cost[i] += p.move_cost
                if has_msg[i] and px[i] == mx[i] and py[i] == my[i]:
                    has_msg[i] = False
        if not p.immortal:
            for i in range(n):
                if alive[i]:
                    energy[i] -= p.metabolism + cost[i]
                    if energy[i] <= 0:
                        alive[i] = False
                        carry[i] = 0
        self.energy[:] = energy
        self.carry[:] = carry
        self.alive[:] = alive
        self.pos[:, 0], self.pos[:, 1] = px, py
        self.has_msg[:] = has_msg
        self.msg[:, 0], self.msg[:, 1] = mx, my
        f = self.food
        f[:] = food
        f += p.regrowth * f * (1.0 - f / p.f_max)
        f += p.reseed_amount * (self.world_rng.random(f.shape) < p.reseed_prob)
        np.clip(f, 0.0, p.f_max, out=f)
        self.t += 1


# ------------------------------------------------------------------ episodes under a policy

@dataclass(frozen=True)
class Episode:
    """What one episode yields: totals for the metrics of `metrics.py` (denominators fixed at N * T)."""

    seed: int
    n_agents: int
    steps: int
    gathered: int
    alive_end: int
    action_counts: tuple[int, ...]       # per action of ACTIONS, summed over agents
    conflict_attempts: int
    social_actions: int
    conflict_agents: int                 # agents involved in >= 1 conflict (as actor or target)
    fire_counts: tuple[int, ...]         # per rule index (of agent 0's constitution) + the default (last)
    store_end: float
    food_end: float


def run_episode(policy, params: WorldParams, seed: int, trace: bool = False):
    """Run one episode of ``policy`` (`policies.Policy`: ``choose(X, U, dirs, t) -> (actions, fired)``).

    Returns an `Episode` (and, with ``trace``, a list of per-step dicts of positions, energies, carries,
    food and actions, used by the mesa equivalence test)."""
    w = Commons(params, seed)
    n = params.n_agents
    fires = np.zeros(MAX_RULES + 1, dtype=np.int64)
    steps = []
    for _ in range(params.steps):
        X = w.features()
        U, dirs, order = action_draws(w.action_rng, n)
        acts, fired = policy.choose(X, U, dirs, w.t)
        live = w.alive
        f0 = fired[live & (policy.constitution_of == 0)] if hasattr(policy, "constitution_of") else fired[live]
        np.add.at(fires, np.where(f0 < 0, MAX_RULES, f0), 1)
        if trace:
            steps.append(dict(actions=np.where(w.alive, acts, -1)))
        w.apply(acts, dirs, order)
        if trace:
            steps[-1].update(pos=w.pos.copy(), energy=w.energy.copy(), carry=w.carry.copy(),
                             food=w.food.copy(), alive=w.alive.copy(), store=w.store)
        if not w.alive.any():  # collapse: nothing can change any more but the food
            break
    counts = w.counts.sum(axis=0)
    ep = Episode(seed=int(seed), n_agents=n, steps=params.steps, gathered=int(w.gathered),
                 alive_end=int(w.alive.sum()), action_counts=tuple(int(c) for c in counts),
                 conflict_attempts=int(sum(counts[A[a]] for a in CONFLICT)),
                 social_actions=int(sum(counts[A[a]] for a in SOCIAL)),
                 conflict_agents=int(w.conflict_agents.sum()), fire_counts=tuple(int(c) for c in fires),
                 store_end=float(w.store), food_end=float(w.food.sum()))
    return (ep, steps) if trace else ep


_ORACLE_CACHE: dict[tuple[WorldParams, int], int] = {}
_ORACLE_CACHE_MAX = 65_536


def oracle_policy(params: WorldParams):
    """The oracle society's policy and world: rules 'gather on food, else move towards food', immortal
    agents, no carry cap."""
    from .constitution import Predicate, Rule
    from .policies import RulePolicy

    rules = (Rule((Predicate("food_here"),), "GATHER"), Rule((Predicate("energy_above", 0),), "MOVE_TO_FOOD"))
    return RulePolicy.shared(rules, params.n_agents), params.replace(immortal=True)


def remember_oracle(params: WorldParams, seed: int, gathered: int) -> int:
    """Cache P_ref of (params, seed) from the oracle episode's gathering (`batch.prefill_oracle`)."""
    if len(_ORACLE_CACHE) >= _ORACLE_CACHE_MAX:
        _ORACLE_CACHE.clear()
    ref = _ORACLE_CACHE[(params, int(seed))] = max(1, int(gathered))
    return ref


def oracle_gathering(params: WorldParams, seed: int) -> int:
    """P_ref: food gathered in the same seed by the all-gather, no-conflict oracle society (immortal
    agents, no carry cap, rules 'gather on food, else move towards food'); computed once per (params,
    seed) and cached."""
    ref = _ORACLE_CACHE.get((params, int(seed)))
    if ref is None:
        policy, oracle = oracle_policy(params)
        ref = remember_oracle(params, seed, run_episode(policy, oracle, seed).gathered)
    return ref


# ------------------------------------------------------------------ PettingZoo wrapper

def _parallel_env_base():
    from pettingzoo import ParallelEnv

    return ParallelEnv


class CommonsWorld(_parallel_env_base()):
    """`Commons` as a `pettingzoo.ParallelEnv` (passes `parallel_api_test` and `parallel_seed_test`).

    Observation: the agent's `FEATURES` vector (float32, the neighbour energy clipped to energy_max + 1).
    Action: `Discrete(len(ACTIONS))`. Reward: food gathered this step. Dead agents terminate; the episode
    truncates at T. The random direction and acting order come from the env's action stream.
    """

    metadata = {"name": "commons_world_v0", "is_parallelizable": True}

    def __init__(self, params: WorldParams | None = None):
        from gymnasium import spaces

        self.params = params if params is not None else WorldParams()
        self.possible_agents = [f"agent_{i}" for i in range(self.params.n_agents)]
        hi = np.full(len(FEATURES), np.float32(max(self.params.energy_max + 1, 10 ** 6)), dtype=np.float32)
        self._obs_space = spaces.Box(low=np.float32(-1e6), high=hi, dtype=np.float32)
        self._act_space = spaces.Discrete(len(ACTIONS))
        self.world: Commons | None = None
        self.agents: list[str] = []

    def observation_space(self, agent):
        return self._obs_space

    def action_space(self, agent):
        return self._act_space

    def _obs(self):
        X = self.world.features().astype(np.float32)
        X[:, F["min_neighbour_energy"]] = np.minimum(X[:, F["min_neighbour_energy"]], self.params.energy_max + 1)
        return {a: X[int(a.split("_")[1])] for a in self.agents}

    def reset(self, seed=None, options=None):
        seed = int(np.random.SeedSequence().generate_state(1)[0]) if seed is None else int(seed)
        self.world = Commons(self.params, seed)
        self.agents = list(self.possible_agents)
        return self._obs(), {a: {} for a in self.agents}

    def step(self, actions):
        w, n = self.world, self.params.n_agents
        acts = np.full(n, A["IDLE"], dtype=np.int64)
        for a, act in actions.items():
            if not self._act_space.contains(int(act)):
                raise ValueError(f"{a}: action {act!r} is not in {self._act_space}")
            acts[int(a.split("_")[1])] = int(act)
        before = w.gathered_by.copy()
        _, dirs, order = action_draws(w.action_rng, n)
        w.apply(acts, dirs, order)
        acting = list(self.agents)
        trunc = w.t >= self.params.steps
        rewards = {a: float(w.gathered_by[int(a.split("_")[1])] - before[int(a.split("_")[1])]) for a in acting}
        terms = {a: not bool(w.alive[int(a.split("_")[1])]) for a in acting}
        truncs = {a: bool(trunc) for a in acting}
        self.agents = [a for a in acting if not terms[a] and not trunc]
        X = w.features().astype(np.float32)
        X[:, F["min_neighbour_energy"]] = np.minimum(X[:, F["min_neighbour_energy"]], self.params.energy_max + 1)
        obs = {a: X[int(a.split("_")[1])] for a in acting}
        return obs, rewards, terms, truncs, {a: {} for a in acting}
