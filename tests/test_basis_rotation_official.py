"""Fidelity of :class:`BasisRotationAdam` to the official code (issue 53, item 5; third review).

The evidence is the **golden fixture** ``lib/icml26/basis_rotation/official_golden.json``: the final weights of
the official ``BasisRotation`` class (joonkyoo/basis-rotation@a277112, ``optim/basis_rotation.py``; provenance
inside the file), run outside this project on :func:`reference._problem` with :data:`reference.DIFF_HP` for
2nd/1st x bi/uni x five shapes. ``reference.official_rule`` is a *paraphrase* of the official step that shares
its logic with ``optim.py``; it is checked against the fixture too, and against the class (consistency, not
independence). The negative control changes only when ``uni`` refreshes and must be caught by the fixture.
"""
import pytest
import torch

from icml26.basis_rotation import BasisRotationAdam
from icml26.basis_rotation import reference as ref
from icml26.basis_rotation.reference import DIFF_HP as HP, _problem, _run_ours, official_rule

torch.set_num_threads(1)


def test_golden_fixture_has_provenance_and_all_twenty_cases():
    data = ref.golden_cases()
    prov = data["provenance"]
    assert prov["commit"] == "a277112" and "basis_rotation.py" in prov["file"] and "joonkyoo/basis-rotation" in prov["repository"]
    keys = {(c["source"], c["geometry"], tuple(c["shape"])) for c in data["cases"]}
    assert len(keys) == 20 and {k[:2] for k in keys} == {("2nd", "bi"), ("2nd", "uni"), ("1st", "bi"), ("1st", "uni")}
    for c in data["cases"]:                             # every case moves the weights: a difference is visible
        assert float((c["final"] - c["W0"]).abs().max()) > 0.1


def _well_posed(d):
    return {k: v for k, v in d.items() if not ref.cold_start_rank_deficient(*k)}


def test_ours_matches_the_official_class_golden_outputs():
    """On the 16 cases whose cold start is well posed; the 4 others are decided by round-off (next tests)."""
    d = _well_posed(ref.golden_differential())
    assert len(d) == 16 and max(d.values()) <= 1e-5, max(d.items(), key=lambda kv: kv[1])


def test_the_paraphrase_matches_the_official_class_with_the_official_ema():
    d = _well_posed(ref.golden_differential(lambda W, g, **hp: official_rule(W, g, ema="lerp", **hp)))
    assert max(d.values()) <= 1e-5


def test_rank_deficient_cold_starts_are_exactly_the_rectangular_second_order_bi_cases():
    keys = {(c["source"], c["geometry"], tuple(c["shape"])) for c in ref.golden_cases()["cases"]}
    flagged = {k for k in keys if ref.cold_start_rank_deficient(*k)}
    assert flagged == {("2nd", "bi", s) for s in [(6, 9), (9, 6), (5, 12), (12, 5)]}


def test_a_rotated_null_space_basis_moves_the_rank_deficient_cases_only():
    """Another exact eigh answer at the cold start moves the final weights by percents where the factor is
    rank-deficient (so a fixture from another machine's LAPACK cannot judge them), and not at all elsewhere."""
    assert min(ref.null_basis_sensitivity("2nd", "bi", s) for s in [(6, 9), (12, 5)]) > 1e-2
    assert ref.null_basis_sensitivity("2nd", "bi", (7, 7)) == 0.0
    assert ref.null_basis_sensitivity("2nd", "uni", (5, 12)) == 0.0


def test_the_golden_comparison_sees_a_changed_rule():
    """Negative control: uni without the official every-step refresh is far from the official outputs."""
    assert ref.quirk_off_differential() > 1e-2


def test_golden_fixture_checksum_guards_the_problem_generator(tmp_path):
    import json

    data = json.loads(ref.GOLDEN_PATH.read_text())
    data["cases"][0]["w0_sum"] += 1.0
    bad = tmp_path / "golden.json"
    bad.write_text(json.dumps(data))
    with pytest.raises(RuntimeError, match="checksums"):
        ref.golden_cases(bad)


def test_first_source_uni_permutes_second_moment_rows_on_square_weights():
    """The disclosed official quirk: (1st, uni) on a square weight keeps Q_L = I yet permutes the rows of the
    second moment at every refresh; with the permutation the result matches the fixture, so it is official."""
    d = ref.golden_differential()
    assert d[("1st", "uni", (7, 7))] <= 1e-5


@pytest.mark.parametrize("shape", [(6, 9), (9, 6), (7, 7)], ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("geometry", ["bi", "uni"])
@pytest.mark.parametrize("source", ["2nd", "1st"])
def test_class_and_paraphrase_agree_with_matched_ema(source, geometry, shape):
    W, grads = _problem(shape, 0, 60)
    hp = dict(HP, source=source, geometry=geometry)
    want = official_rule(W, grads, ema="ours", **hp)
    got = _run_ours(W, grads, **hp)
    moved = (want - W).abs().max()
    assert moved > 0.1
    assert (got - want).abs().max() <= 1e-5 * moved, float((got - want).abs().max())


# ---------------------------------------------------------------------- SOAP: the same algorithm, other conventions
def _kronecker_gradients(n=6, steps=40, seed=0):
    """Gradients ``U diag(s_t) V^T`` that share one fixed Kronecker eigenbasis (square: no null space)."""
    from icml26.basis_rotation import random_rotation

    U = torch.tensor(random_rotation(n, seed + 1), dtype=torch.float32)
    V = torch.tensor(random_rotation(n, seed + 2), dtype=torch.float32)
    g = torch.Generator().manual_seed(seed)
    scale = torch.linspace(1.0, 4.0, n)
    grads = [U @ torch.diag(scale * (1 + 0.3 * torch.randn(n, generator=g))) @ V.T for _ in range(steps)]
    return torch.randn(n, n, generator=g), grads


@pytest.mark.parametrize("freq", [1, 5, 10])
def test_basis_rotation_2nd_bi_is_soap(freq):
    """Numerical cross-check against ``pytorch_optimizer.SOAP`` (= basis rotation (2nd, bi) without staleness).

    Conventions matched: SOAP spends its first step on the preconditioner only (ours is fed gradients 2..T),
    it accumulates the covariance *after* its update (a one-step lag that cannot change a basis the gradients
    share) and applies weight decay after the step (here 0). eps 1e-2 keeps the float32 round-off of the
    off-diagonal rotated entries (SOAP runs its QR in float32) from being amplified into +-lr steps.
    Negative control: plain Adam (no rotation) on the same gradients is far from SOAP."""
    po = pytest.importorskip("pytorch_optimizer")
    W0, grads = _kronecker_gradients()
    hp = dict(lr=1e-2, betas=(0.9, 0.999), shampoo_beta=0.95, weight_decay=0.0, eps=1e-2)
    p = torch.nn.Parameter(W0.clone())
    soap = po.SOAP([p], precondition_frequency=freq, **hp)
    for G in grads:
        p.grad = G.clone()
        soap.step()
    q = torch.nn.Parameter(W0.clone())
    ours = BasisRotationAdam([q], freq=freq, **hp)
    for G in grads[1:]:
        q.grad = G.clone()
        ours.step()
    r = torch.nn.Parameter(W0.clone())
    adam = torch.optim.Adam([r], lr=hp["lr"], betas=hp["betas"], eps=hp["eps"])
    for G in grads[1:]:
        r.grad = G.clone()
        adam.step()
    moved = float((p.detach() - W0).abs().max())
    assert moved > 0.1
    assert float((q.detach() - p.detach()).abs().max()) <= 1e-3 * moved
    assert float((r.detach() - p.detach()).abs().max()) > 0.05 * moved


def test_official_differential_summary_and_validation():
    from icml26.basis_rotation.reference import official_differential

    d = official_differential(steps=30)                  # the official lerp EMA: round-off decides the
    assert len(d) == 12 and max(_well_posed(d).values()) < 1e-5       # rank-deficient cold starts (F1r)
    d = official_differential(steps=30, ema="ours")       # the same round-off: all twelve agree
    assert len(d) == 12 and max(d.values()) < 1e-5
    with pytest.raises(ValueError):
        official_rule(torch.zeros(3, 3), [], source="3rd", geometry="bi", ema="lerp", **{k: v for k, v in HP.items()})
    with pytest.raises(ValueError):
        official_rule(torch.zeros(3), [], source="2nd", geometry="bi", ema="lerp", **HP)


def test_chapter_helpers_for_the_fidelity_checks():
    from icml26.basis_rotation.reference import quirk_off_differential, soap_differential

    assert quirk_off_differential() > 1e-2
    pytest.importorskip("pytorch_optimizer")
    s = soap_differential(freq=5)
    assert s["moved"] > 0.1 and s["ours"] < 1e-3 and s["adam"] > 0.05


def test_official_eps_is_chaotic_so_the_differential_uses_a_larger_eps():
    """At the official eps = 1e-8 a two-sided run parts from itself by percents when its gradients move at the seventh
    digit (round-off in the rotated coordinates above eps becomes a +-lr step); at the differential's eps = 1e-2 it
    does not. Why F1 compares the update at eps = 1e-2 and must not be tightened to 1e-8."""
    from icml26.basis_rotation.reference import DIFF_HP, _problem, _run_ours

    for source, shape in (("2nd", (6, 6)), ("1st", (6, 6)), ("1st", (8, 5))):
        W, grads = _problem(shape, 0, 40)
        gen = torch.Generator().manual_seed(1)
        nudged = [G * (1 + 1e-7 * torch.randn(G.shape, generator=gen)) for G in grads]
        gap = {}
        for eps in (1e-8, DIFF_HP["eps"]):
            hp = dict(DIFF_HP, eps=eps, source=source, geometry="bi")
            a, b = _run_ours(W, grads, **hp), _run_ours(W, nudged, **hp)
            gap[eps] = float((a - b).abs().max() / (a - W).abs().max())
        assert gap[1e-8] > 1e-2 and gap[DIFF_HP["eps"]] < 1e-4, (source, shape, gap)
