"""A paraphrase of the official basis-rotation step, and the golden fixture of the official class (issue 53).

:func:`official_rule` applies, gradient by gradient, one step of the official ``optim/basis_rotation.py``
(LOG-postech/basis-rotation, class ``BasisRotation``) as plain functions. It is a *paraphrase*, not an
independent statement: it was written from the research brief's Algorithms 1-2 and a line-by-line account of
the official file, and it follows :mod:`~icml26.basis_rotation.optim` closely (the refresh and permutation
logic is the same logic re-typed), so agreement between the two shows that the class and its paraphrase say
the same thing, not that either says what the official code says. That evidence comes from the **golden
fixture** ``official_golden.json`` (beside this file): the final weights of the official class itself, run
outside this project on :func:`_problem` with :data:`DIFF_HP` for 2nd/1st x bi/uni x five shapes (provenance
inside the file: repository joonkyoo/basis-rotation, commit a277112, file ``optim/basis_rotation.py``).
:func:`golden_differential` compares any implementation with it.

What the paraphrase writes down:

* (Alg. 1) first moment in the original space, second moment in the rotated space; weight decay
  ``W <- W - lr wd W`` before the step; step size ``lr sqrt(1 - b2^t) / (1 - b1^t)``;
* (Alg. 2) refresh when ``t % freq == 0 or Q_L is None`` (so ``uni`` on a weight with rows >= cols
  refreshes every step); ``2nd``: cold start ``eigh(L + 1e-30 I)`` flipped to descending order, warm start
  sort by ``diag(Q^T L Q)``, permute the second moment along that axis, one ``qr(L Q)`` power step;
  ``1st``: cold start full SVD of the look-ahead momentum ``M' = b1 M + (1 - b1) G``, warm start
  ``U <- qr(M' V)`` then ``V <- qr(M'^T U_old)`` (complete), the second moment permuted along axis 1 then 0;
  decompositions in float32. A consequence the official code has too: with ``(1st, uni)`` on a weight with
  rows >= cols, ``Q_L`` stays the identity, yet every refresh (every step, by the quirk above) permutes the
  *rows* of the second moment by the row-norm order of the look-ahead momentum.

``ema="lerp"`` is the official covariance EMA op; ``ema="ours"`` the same EMA rounded as ours
(``mul_().addmm_()``): the two differ by round-off, which decides the basis ``eigh`` picks for the null space
of a rank-deficient cold-start factor (a 9 x 9 ``G^T G`` from 6 rows).
"""
from __future__ import annotations

import json
from pathlib import Path

import torch

__all__ = ["DIFF_HP", "GOLDEN_PATH", "golden_cases", "golden_differential", "official_differential", "official_rule",
           "quirk_off_differential", "soap_differential", "cold_start_rank_deficient",
           "null_basis_sensitivity"]


def _sides(geometry, rows, cols):
    if geometry == "bi":
        return True, True
    return rows < cols, rows >= cols


def official_rule(W: torch.Tensor, grads, *, lr: float, betas: tuple[float, float], eps: float, wd: float, source: str,
                  geometry: str, freq: int, sbeta: float, ema: str = "lerp") -> torch.Tensor:
    """The official step applied to ``W`` (float32, m x n) for each gradient in ``grads``; returns the final weight.

    ``source`` in {"2nd", "1st"}, ``geometry`` in {"bi", "uni"}, ``freq`` the refresh period, ``sbeta`` the
    covariance EMA coefficient, ``ema`` in {"lerp", "ours"} (module docstring)."""
    if source not in ("2nd", "1st") or geometry not in ("bi", "uni") or ema not in ("lerp", "ours"):
        raise ValueError(f"source / geometry / ema must be 2nd|1st, bi|uni, lerp|ours; got {source!r}, {geometry!r}, {ema!r}")
    if W.dim() != 2:
        raise ValueError(f"official_rule rotates 2-D weights only, got shape {tuple(W.shape)}")
    b1, b2 = betas
    rows, cols = W.shape
    left, right = _sides(geometry, rows, cols)
    W = W.clone()
    m, v = torch.zeros_like(W), torch.zeros_like(W)
    QL = QR = None
    cov = {}
    if source == "2nd":
        if left:
            cov["L"] = torch.zeros(rows, rows)
        if right:
            cov["R"] = torch.zeros(cols, cols)

    def ema_update(key, A, B):
        if ema == "lerp":                      # the official op
            cov[key].lerp_(A @ B, 1 - sbeta)
        else:                                  # ours: the same EMA, rounded differently
            cov[key].mul_(sbeta).addmm_(A, B, alpha=1 - sbeta)

    for t, G in enumerate(grads, start=1):
        if source == "2nd":
            if "L" in cov:
                ema_update("L", G, G.T)
            if "R" in cov:
                ema_update("R", G.T, G)
        if t % freq == 0 or QL is None:
            look = b1 * m + (1 - b1) * G
            warm = (QL is not None if left else True) and (QR is not None if right else True)
            if source == "2nd":
                sides = [(0, "L")] * left + [(1, "R")] * right
                new = {}
                for dim, key in sides:
                    M = cov[key].float()
                    if not warm:
                        k = M.shape[0]
                        new[key] = torch.flip(torch.linalg.eigh(M + 1e-30 * torch.eye(k))[1], [1])
                        continue
                    o = (QL if key == "L" else QR).float()
                    order = torch.argsort(torch.diag(o.T @ M @ o), descending=True)
                    v = v.index_select(dim, order)
                    new[key] = torch.linalg.qr(M @ o[:, order]).Q
                QL = new.get("L", QL)
                QR = new.get("R", QR)
            elif not warm:
                U, _, Vh = torch.linalg.svd(look.float(), full_matrices=True)
                QL = U if left else QL
                QR = Vh.T if right else QR
            else:
                old_L, old_R = QL, QR
                if left:  # U from M' V: sort V's columns by ||M' v_j||^2, permute the second moment's columns
                    o = old_R if old_R is not None else torch.eye(cols)
                    order = torch.argsort(((look @ o) ** 2).sum(0), descending=True)
                    v = v.index_select(1, order)
                    QL = torch.linalg.qr(look @ o[:, order], mode="complete").Q
                if right:  # V from M'^T U (the old U), permute the second moment's rows
                    o = old_L if old_L is not None else torch.eye(rows)
                    order = torch.argsort(((look.T @ o) ** 2).sum(0), descending=True)
                    v = v.index_select(0, order)
                    QR = torch.linalg.qr(look.T @ o[:, order], mode="complete").Q
        Gt = _proj(G, QL, QR)
        m = b1 * m + (1 - b1) * G
        Mt = _proj(m, QL, QR)
        v = b2 * v + (1 - b2) * Gt * Gt
        upd = _back(Mt / (v.sqrt() + eps), QL, QR)
        step = lr * (1 - b2 ** t) ** 0.5 / (1 - b1 ** t)
        W = W - lr * wd * W
        W = W - step * upd
    return W


def _proj(X, QL, QR):
    if QL is not None:
        X = QL.T @ X
    if QR is not None:
        X = X @ QR
    return X


def _back(X, QL, QR):
    if QR is not None:
        X = X @ QR.T
    if QL is not None:
        X = QL @ X
    return X


def _problem(shape: tuple[int, int], seed: int, steps: int) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """A start weight and correlated gradients (a misaligned eigenbasis), float32, reproducible."""
    g = torch.Generator().manual_seed(seed)
    W = torch.randn(*shape, generator=g)
    mix = torch.randn(shape[1], shape[1], generator=g) / shape[1] ** 0.5
    return W, [torch.randn(*shape, generator=g) @ mix + 0.3 * torch.randn(*shape, generator=g) for _ in range(steps)]


def _run_ours(W: torch.Tensor, grads, **hp) -> torch.Tensor:
    from .optim import BasisRotationAdam

    p = torch.nn.Parameter(W.clone())
    opt = BasisRotationAdam([p], lr=hp["lr"], betas=hp["betas"], eps=hp["eps"], weight_decay=hp["wd"],
                            source=hp["source"], geometry=hp["geometry"], freq=hp["freq"], shampoo_beta=hp["sbeta"])
    for G in grads:
        p.grad = G.clone()
        opt.step()
    return p.detach()


DIFF_HP = dict(lr=1e-2, betas=(0.9, 0.999), eps=1e-2, wd=0.01, freq=3, sbeta=0.95)
"""Settings of the differential check: a short refresh period (many warm starts) and an eps large enough
that float32 round-off in the rotated coordinates is not amplified into +-lr steps. At the official eps = 1e-8 the
two-sided update is chaotic: perturbing the gradients by 1e-7 (relative) moves the final weights of the well-posed
``bi`` cases by 5e-2 to 1e-1 of their total move, against ~1e-6 at eps = 1e-2 (measured when this was written;
``tests/test_basis_rotation_official.py::test_official_eps_is_chaotic_so_the_differential_uses_a_larger_eps``), so no
two exact implementations can be compared at 1e-8."""


def official_differential(shapes=((6, 9), (9, 6), (7, 7)), steps: int = 60, seed: int = 0,
                          ema: str = "lerp") -> dict[tuple[str, str, tuple[int, int]], float]:
    """``max |ours - official_rule| / max |official_rule - W0|`` after ``steps`` steps, for every
    (source, geometry, shape): :class:`~icml26.basis_rotation.optim.BasisRotationAdam` against the
    paraphrase of the official step (:func:`official_rule`, with the official ``lerp`` EMA by default), on the
    same gradients. Class and paraphrase share their logic: this shows consistency, :func:`golden_differential`
    shows fidelity."""
    out = {}
    for source in ("2nd", "1st"):
        for geometry in ("bi", "uni"):
            for shape in shapes:
                W, grads = _problem(tuple(shape), seed, steps)
                hp = dict(DIFF_HP, source=source, geometry=geometry)
                ref = official_rule(W, grads, ema=ema, **hp)
                got = _run_ours(W, grads, **hp)
                out[(source, geometry, tuple(shape))] = float((got - ref).abs().max() / (ref - W).abs().max())
    return out


GOLDEN_PATH = Path(__file__).with_name("official_golden.json")
"""The golden fixture: final weights of the official ``BasisRotation`` class (module docstring)."""


def golden_cases(path: Path = GOLDEN_PATH) -> dict:
    """The golden fixture as ``{"provenance": {...}, "cases": [{"source", "geometry", "shape", "final"}, ...]}``.

    Each case's problem is regenerated with :func:`_problem`; its checksums (``w0_sum``, ``g_sum``) are
    checked so that a change of the generator cannot silently compare different problems."""
    data = json.loads(Path(path).read_text())
    steps, seed = data["provenance"]["steps"], data["provenance"]["seed"]
    for case in data["cases"]:
        W, grads = _problem(tuple(case["shape"]), seed, steps)
        w0, gs = float(W.double().sum()), float(sum(g.double().sum() for g in grads))
        if abs(w0 - case["w0_sum"]) > 1e-6 * (1 + abs(w0)) or abs(gs - case["g_sum"]) > 1e-6 * (1 + abs(gs)):
            raise RuntimeError(f"golden case {case['source']}/{case['geometry']}/{case['shape']}: the problem generator "
                               "no longer reproduces the fixture's problem (checksums differ)")
        case["W0"], case["grads"] = W, grads
        case["final"] = torch.tensor(case["final"], dtype=torch.float32)
    return data


def golden_differential(run=None, path: Path = GOLDEN_PATH) -> dict[tuple[str, str, tuple[int, int]], float]:
    """``max |run - official| / max |official - W0|`` for every case of the golden fixture.

    ``run(W0, grads, **hp)`` returns the final weight (hp: :data:`DIFF_HP` with ``source`` and ``geometry``);
    the default is :class:`~icml26.basis_rotation.optim.BasisRotationAdam` (:func:`_run_ours`)."""
    run = _run_ours if run is None else run
    data = golden_cases(path)
    hp0 = {k: tuple(v) if isinstance(v, list) else v for k, v in data["provenance"]["hp"].items()}
    out = {}
    for case in data["cases"]:
        hp = dict(hp0, source=case["source"], geometry=case["geometry"])
        got = run(case["W0"], case["grads"], **hp)
        ref, W = case["final"], case["W0"]
        out[(case["source"], case["geometry"], tuple(case["shape"]))] = float((got - ref).abs().max() / (ref - W).abs().max())
    return out


def cold_start_rank_deficient(source: str, geometry: str, shape: tuple[int, int]) -> bool:
    """Whether the official second-order cold start decomposes a rank-deficient factor for this weight.

    The first refresh (Alg. 2, ``Q is None``) is ``eigh(G G^T + 1e-30 I)`` (and ``eigh(G^T G + ...)``) of the EMA
    after one gradient: on the longer side of a rectangular weight that factor has rank ``min(m, n)``, so every
    orthonormal basis of its null space is an exact answer and LAPACK's pick depends on round-off and on the build
    (CPU kernel). The warm starts that follow (one power-iteration step from the previous basis) carry the pick
    forward, so the final weights depend on it (:func:`null_basis_sensitivity`): for these cases no fixture recorded
    on another machine can judge an implementation. ``1st`` (SVD of the momentum) and ``uni`` (the shorter side only)
    are not affected."""
    if source != "2nd":
        return False
    rows, cols = shape
    left, right = _sides(geometry, rows, cols)
    return bool((left and rows > cols) or (right and cols > rows))


def null_basis_sensitivity(source: str, geometry: str, shape: tuple[int, int], seed: int = 0, steps: int = 60,
                           rotation_seed: int = 1) -> float:
    """``max |a - b| / max |a - W0|``: ``a`` the class on :func:`_problem` with :data:`DIFF_HP`; ``b`` the same run
    whose cold-start basis has its null-space columns (eigenvalue below ``1e-6`` of the largest) rotated by a fixed
    random orthogonal matrix right after the first step: an equally exact ``eigh`` output. 0 where the cold start
    has no null space (:func:`cold_start_rank_deficient` is False). The first step's update is unchanged by the
    rotation (the rotated gradient has no component in the null space)."""
    from .optim import BasisRotationAdam

    W0, grads = _problem(tuple(shape), seed, steps)
    hp = dict(DIFF_HP, source=source, geometry=geometry)
    finals = []
    for rotate in (False, True):
        p = torch.nn.Parameter(W0.clone())
        opt = BasisRotationAdam([p], lr=hp["lr"], betas=hp["betas"], eps=hp["eps"], weight_decay=hp["wd"],
                                source=source, geometry=geometry, freq=hp["freq"], shampoo_beta=hp["sbeta"])
        for t, G in enumerate(grads):
            p.grad = G.clone()
            opt.step()
            if rotate and t == 0:
                state = opt.state[p]
                g = torch.Generator().manual_seed(rotation_seed)
                for key, GG in (("QL", state["GGL"]), ("QR", state["GGR"])):
                    if GG is None or state[key] is None:
                        continue
                    Q = state[key]
                    lam = torch.diagonal(Q.T @ GG @ Q)
                    null = lam < 1e-6 * lam.max()
                    k = int(null.sum())
                    if k >= 2:
                        O = torch.linalg.qr(torch.randn(k, k, generator=g)).Q
                        Q = Q.clone()
                        Q[:, null] = Q[:, null] @ O
                        state[key] = Q
        finals.append(p.detach())
    a, b = finals
    return float((a - b).abs().max() / (a - W0).abs().max())


def _run_quirk_off(W: torch.Tensor, grads, **hp) -> torch.Tensor:
    from .optim import BasisRotationAdam

    p = torch.nn.Parameter(W.clone())
    opt = BasisRotationAdam([p], lr=hp["lr"], betas=hp["betas"], eps=hp["eps"], weight_decay=hp["wd"], source=hp["source"],
                            geometry=hp["geometry"], freq=hp["freq"], shampoo_beta=hp["sbeta"], uni_refresh_quirk=False)
    for G in grads:
        p.grad = G.clone()
        opt.step()
    return p.detach()


def quirk_off_differential(path: Path = GOLDEN_PATH) -> float:
    """The negative control of the golden comparison: a rule that differs from the official one only in
    refreshing ``uni`` every ``freq`` steps instead of every step (``uni_refresh_quirk=False``), against the
    official class's outputs on the weights where the two rules differ (``uni``, rows >= cols); the worst
    case. Must be far from zero."""
    diffs = golden_differential(_run_quirk_off, path)
    return max(v for (src, geo, shape), v in diffs.items() if geo == "uni" and shape[0] >= shape[1])


def soap_differential(freq: int = 10, n: int = 6, steps: int = 40, seed: int = 0) -> dict[str, float] | None:
    """Basis rotation (2nd, bi) and plain Adam against ``pytorch_optimizer.SOAP`` (the same algorithm without
    staleness), as ``max |X - SOAP| / max |SOAP - W0|``; None when ``pytorch-optimizer`` is not installed.

    The gradients ``U diag(s_t) V^T`` share one fixed Kronecker eigenbasis, so SOAP's conventions cannot move
    the basis: it spends its first step on the preconditioner only (ours and Adam get gradients 2..T), it
    accumulates its covariance *after* the update, and it decays weights after the step (weight decay 0 here).
    eps 1e-2 keeps the float32 round-off of the off-diagonal rotated entries from becoming +-lr steps."""
    try:
        import pytorch_optimizer as po
    except ImportError:
        return None
    from .optim import BasisRotationAdam
    from .toys import random_rotation

    U = torch.tensor(random_rotation(n, seed + 1), dtype=torch.float32)
    V = torch.tensor(random_rotation(n, seed + 2), dtype=torch.float32)
    g = torch.Generator().manual_seed(seed)
    scale = torch.linspace(1.0, 4.0, n)
    grads = [U @ torch.diag(scale * (1 + 0.3 * torch.randn(n, generator=g))) @ V.T for _ in range(steps)]
    W0 = torch.randn(n, n, generator=g)
    hp = dict(lr=1e-2, betas=(0.9, 0.999), eps=1e-2)

    def run(make, gs):
        p = torch.nn.Parameter(W0.clone())
        opt = make([p])
        for G in gs:
            p.grad = G.clone()
            opt.step()
        return p.detach()

    soap = run(lambda ps: po.SOAP(ps, shampoo_beta=0.95, weight_decay=0.0, precondition_frequency=freq, **hp), grads)
    ours = run(lambda ps: BasisRotationAdam(ps, shampoo_beta=0.95, weight_decay=0.0, freq=freq, **hp), grads[1:])
    adam = run(lambda ps: torch.optim.Adam(ps, **hp), grads[1:])
    moved = (soap - W0).abs().max()
    return {"ours": float((ours - soap).abs().max() / moved), "adam": float((adam - soap).abs().max() / moved),
            "moved": float(moved)}
