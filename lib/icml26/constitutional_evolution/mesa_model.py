"""The same commons world as an object-per-agent `mesa` model: the peer implementation.

`mesa` (3.3.1; the brief's 3.5.1 needs Python >= 3.12) is the standard agent-based-modelling framework.
`CommonsModel` keeps agents as `mesa.Agent` objects on a `mesa.space.MultiGrid` with the food in a
`mesa.space.PropertyLayer`, computes each agent's features by querying the grid, and resolves actions
one agent at a time, as a mesa model would. It shares with `world.Commons` only what a cross-check must
share: the interpreter (`constitution.interpret`) and the two random streams, drawn in the same amounts.
The tests require identical positions, energies, carries, food, store and actions over 100 steps; the
benchmark times episodes per second of both.
"""
from __future__ import annotations

import numpy as np

from .constitution import FEATURES, A, F, interpret
from .world import DIRS, WorldParams, _offsets, action_draws, initial_food


def _mesa():
    try:
        import mesa
        from mesa.space import MultiGrid, PropertyLayer
    except ImportError as exc:  # pragma: no cover
        raise ModuleNotFoundError("the mesa peer needs `pip install mesa==3.3.1`") from exc
    return mesa, MultiGrid, PropertyLayer


mesa, MultiGrid, PropertyLayer = _mesa()


class CommonsAgent(mesa.Agent):
    def __init__(self, model, index: int, energy: float):
        super().__init__(model)
        self.index = index
        self.energy = energy
        self.carry = 0
        self.alive = True
        self.has_msg = False
        self.msg = (0, 0)

    def neighbours(self, radius: int = 1) -> list["CommonsAgent"]:
        found = self.model.grid.get_neighbors(self.pos, moore=True, include_center=True, radius=radius)
        return sorted((a for a in found if a is not self and a.alive), key=lambda a: a.index)


class CommonsModel(mesa.Model):
    """One episode of the commons world under a `RuleTable` (per-agent constitutions)."""

    def __init__(self, params: WorldParams, seed: int, table):
        super().__init__(seed=int(seed))
        self.p = p = params
        self.table = table
        self.world_rng = np.random.default_rng([int(seed), 0])
        self.action_rng = np.random.default_rng([int(seed), 1])
        g, n, r = p.grid, p.n_agents, self.world_rng
        food = initial_food(p, r)
        self.depot = (g // 2, g // 2)
        self.food = PropertyLayer("food", g, g, np.float64(0.0), dtype=np.float64)
        self.food.data[:] = food.T                       # the layer is indexed [x, y]
        self.grid = MultiGrid(g, g, torus=False, property_layers=self.food)
        cells = r.choice(g * g, size=n, replace=n > g * g)
        self.roster = []
        for i, c in enumerate(cells):
            a = CommonsAgent(self, i, float(p.energy0))
            self.grid.place_agent(a, (int(c % g), int(c // g)))
            self.roster.append(a)
        self.store = 0.0
        self.t = 0
        self.gathered = 0
        self.last_actions = np.full(n, -1)

    def features(self) -> np.ndarray:
        X = np.zeros((self.p.n_agents, len(FEATURES)))
        for a in self.roster:
            if not a.alive:
                # a dead agent's row is never acted on; mirror the vectorised core's values anyway
                X[a.index, F["energy"]] = a.energy
                X[a.index, F["min_neighbour_energy"]] = 1e9
                X[a.index, F["true"]] = 1.0
                continue
            x, y = a.pos
            nb = a.neighbours()
            nb_e = min((b.energy for b in nb), default=np.inf)
            row = X[a.index]
            row[F["energy"]] = a.energy
            row[F["carry"]] = a.carry
            row[F["food_here"]] = self.food.data[x, y] >= 1.0
            row[F["food_visible"]] = self._nearest_food(a) is not None
            row[F["at_depot"]] = (x, y) == self.depot
            row[F["store"]] = self.store
            row[F["min_neighbour_energy"]] = min(nb_e, 1e9)
            row[F["neighbour_carrying"]] = any(b.carry >= 1 for b in nb)
            row[F["neighbour_weaker"]] = nb_e < a.energy
            row[F["got_message"]] = a.has_msg
            for m in (2, 3, 4, 5):
                row[F[f"step_mod_{m}"]] = self.t % m == 0
            row[F["true"]] = 1.0
        return X

    def _nearest_food(self, a):
        g, x, y = self.p.grid, a.pos[0], a.pos[1]
        for dx, dy in _offsets(self.p.vision):
            cx, cy = x + dx, y + dy
            if 0 <= cx < g and 0 <= cy < g and self.food.data[cx, cy] >= 1.0:
                return cx, cy
        return None

    def _towards(self, a, tx, ty) -> bool:
        x, y = a.pos
        dx, dy = tx - x, ty - y
        if dx == 0 and dy == 0:
            return False
        new = (x + (1 if dx > 0 else -1), y) if abs(dx) >= abs(dy) else (x, y + (1 if dy > 0 else -1))
        self.grid.move_agent(a, new)
        return True

    def _random(self, a, d) -> bool:
        new = (a.pos[0] + int(DIRS[d, 0]), a.pos[1] + int(DIRS[d, 1]))
        if self.grid.out_of_bounds(new):
            return False
        self.grid.move_agent(a, new)
        return True

    def _die(self, a):
        a.alive = False
        a.carry = 0
        self.grid.remove_agent(a)

    def step(self):
        p = self.p
        X = self.features()
        U, dirs, order = action_draws(self.action_rng, p.n_agents)
        acts, _ = interpret(self.table, X, U)
        self.last_actions = np.array([int(acts[a.index]) if a.alive else -1 for a in self.roster])
        cost = {}
        for i in order:
            a = self.roster[int(i)]
            if not a.alive:
                continue
            act = int(acts[a.index])
            c = 0.0
            x, y = a.pos
            if act == A["GATHER"]:
                if self.food.data[x, y] >= 1.0 and a.carry < p.carry_cap:
                    self.food.data[x, y] -= 1.0
                    a.carry += 1
                    self.gathered += 1
            elif act == A["EAT"]:
                if a.carry >= 1:
                    a.carry -= 1
                    a.energy = min(p.energy_max, a.energy + p.food_gain)
            elif act == A["DEPOSIT"]:
                if (x, y) == self.depot and a.carry >= 1:
                    self.store += float(a.carry)
                    a.carry = 0
            elif act == A["EAT_STORE"]:
                if (x, y) == self.depot and self.store >= 1.0:
                    self.store -= 1.0
                    a.energy = min(p.energy_max, a.energy + p.food_gain)
            elif act == A["SHARE"]:
                nb = a.neighbours()
                if a.carry >= 1 and nb:
                    b = min(nb, key=lambda b: (b.energy, b.index))
                    a.carry -= 1
                    b.energy = min(p.energy_max, b.energy + p.food_gain)
            elif act == A["BROADCAST"]:
                c += p.broadcast_cost
                target = self._nearest_food(a)
                if target is not None:
                    for b in a.neighbours(p.broadcast_radius):
                        b.msg, b.has_msg = target, True
            elif act == A["STEAL"]:
                nb = [b for b in a.neighbours() if b.carry >= 1]
                if nb and a.carry < p.carry_cap:
                    b = max(nb, key=lambda b: (b.carry, -b.index))
                    b.carry -= 1
                    a.carry += 1
            elif act == A["ATTACK"]:
                nb = a.neighbours()
                if nb:
                    b = min(nb, key=lambda b: (b.energy, b.index))
                    b.energy -= p.attack_damage
                    a.energy = min(p.energy_max, a.energy + p.attack_damage / 2)
                    if b.energy <= 0:
                        self._die(b)
            elif act == A["IDLE"]:
                pass
            else:
                if act == A["MOVE_RANDOM"]:
                    moved = self._random(a, int(dirs[a.index]))
                elif act == A["MOVE_TO_DEPOT"]:
                    moved = self._towards(a, *self.depot)
                elif act == A["MOVE_TO_AGENT"]:
                    others = [b for b in self.roster if b.alive and b is not a]
                    if others:
                        b = min(others, key=lambda b: (abs(b.pos[0] - x) + abs(b.pos[1] - y), b.index))
                        moved = self._towards(a, *b.pos)
                    else:
                        moved = self._random(a, int(dirs[a.index]))
                else:
                    target = self._nearest_food(a)
                    if target is None and a.has_msg:
                        target = a.msg
                    moved = self._towards(a, *target) if target is not None else self._random(a, int(dirs[a.index]))
                if moved:
                    c += p.move_cost
                if a.has_msg and tuple(a.pos) == tuple(a.msg):
                    a.has_msg = False
            cost[a.index] = c
        for a in self.roster:
            if a.alive:
                a.energy -= p.metabolism + cost.get(a.index, 0.0)
                if a.energy <= 0:
                    self._die(a)
        f = self.food.data
        draws = self.world_rng.random((p.grid, p.grid)).T
        f += p.regrowth * f * (1.0 - f / p.f_max)
        f += p.reseed_amount * (draws < p.reseed_prob)
        np.clip(f, 0.0, p.f_max, out=f)
        self.t += 1

    def state(self) -> dict:
        pos = np.array([a.pos if a.alive else (-1, -1) for a in self.roster])
        return dict(pos=pos, energy=np.array([a.energy for a in self.roster]),
                    carry=np.array([a.carry for a in self.roster]), alive=np.array([a.alive for a in self.roster]),
                    food=self.food.data.T.copy(), store=self.store, actions=self.last_actions.copy())


def run_mesa_episode(table, params: WorldParams, seed: int, trace: bool = False):
    """Run the mesa model for T steps (or until every agent is dead); returns food gathered (and the trace)."""
    m = CommonsModel(params, seed, table)
    steps = []
    for _ in range(params.steps):
        m.step()
        if trace:
            steps.append(m.state())
        if not any(a.alive for a in m.roster):
            break
    return (m.gathered, steps) if trace else m.gathered
