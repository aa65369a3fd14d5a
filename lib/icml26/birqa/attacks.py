"""White-box L-inf attacks on a full-reference IQA score, and the robustness protocol of the chapter.

Protocol (pitfall 5): only the *distorted* image is perturbed, the reference stays fixed, every iterate is
projected on the eps-ball and clamped to [0, 1], adversarial pairs keep the clean MOS as label, and the
robust score is SROCC(f(ref, dist + delta), MOS). ``objective="boost"`` maximises the predicted quality,
``"reduce"`` minimises it.

**The rank-direction protocol** (:func:`rank_direction`, :func:`attack_directed`) is the one of the paper's lab
(Antsiferova group, ``wianluna/metrics_at`` @ 674c463, ``robust-lpips/experiments/kadid/test_kadid_correlations.py``
lines 40-41; an earlier ``test_kadid.py`` was deleted in 980d7a7), assumed to be the paper's: on KADID-10k
each distorted image whose MOS is above the mean MOS is pushed *down*, each one at or below it *up*, and
SROCC(attacked scores, MOS) is reported, eps in {2, 4, 6, 8, 10}/255. This is an attack on the ranking; a
uniform boost of every pair (the earlier primary protocol of this chapter) is a near-monotone transform of the
scores and leaves SROCC almost intact (a diagnostic now).

Deviation from the lab's attack code (``robust-lpips/common/attacks.py``): the lab's ``BaseFGSM``/``PGD`` compute
``dir = direction * 2 - 1`` on a direction that is already +-1, so the pushed-up half steps by +1 x step and the
pushed-down half by -3 x step (three times larger, then clipped to the eps-ball); our steps are symmetric (the
same alpha in both directions). The lab's ``IFGSM`` also hard-codes eps = 10/255 whatever it is given.

* FGSM (Goodfellow et al. 2015): one step eps * sign(grad);
* I-FGSM (Kurakin et al. 2017): ``steps`` steps of size ``alpha`` (default eps / 4), projected (equals ART's
  ``ProjectedGradientDescent`` without random start: tests);
* PGD (Madry et al. 2018): I-FGSM from a uniform random start in the ball;
* MI-FGSM (Dong et al. 2018): momentum mu = 1 on the L1-normalised gradient;
* APGD (Croce & Hein 2020, Alg. 1): **ART 1.20.1's** ``AutoProjectedGradientDescent`` (step 2 eps, momentum
  0.75, checkpoints with the rho = 0.75 rule) on a two-logit wrapper of the score (:func:`art_apgd`), run on
  chunks of at most :data:`ART_CHUNK` pairs and returning the **best iterate** ``x_max`` as Croce & Hein's
  algorithm does (ART itself returns its last iterate).
BPDA (Athalye et al. 2018) is obtained by attacking a model whose hard LBP is run in ``"bpda"`` mode.
"""
from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import torch

ATTACKS = ("fgsm", "ifgsm", "pgd", "mifgsm", "apgd")
UNSEEN = ("mifgsm", "apgd")
"""Attack algorithms never used in AT/AAT training (which uses PGD in both directions)."""
OBJECTIVES = ("boost", "reduce")
ART_CHUNK = 128
"""Largest chunk :func:`art_apgd` hands ART: ART's ``predict`` runs the wrapper on sub-batches of 128 (its default),
and the wrapper needs the whole batch (each image is scored against its own reference)."""
ScoreFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


def _check(eps, steps, method, objective):
    if method not in ATTACKS:
        raise ValueError(f"unknown attack {method!r}; known: {', '.join(ATTACKS)}")
    if objective not in OBJECTIVES:
        raise ValueError(f"objective must be one of {OBJECTIVES}, got {objective!r}")
    if not (isinstance(eps, (int, float)) and math.isfinite(eps) and eps > 0):
        raise ValueError(f"eps must be a positive number (L-inf budget on [0, 1] images), got {eps!r}")
    if not isinstance(steps, int) or steps < 1:
        raise ValueError(f"steps must be an integer >= 1, got {steps!r}")


def _grad(score_fn, ref, x, sign):
    x = x.detach().requires_grad_(True)
    s = score_fn(ref, x)
    g, = torch.autograd.grad((sign * s).sum(), x)
    return g, s.detach()


def _project(x, dist, eps):
    return torch.min(torch.max(x, dist - eps), dist + eps).clamp(0.0, 1.0)


def attack(score_fn: ScoreFn, ref: torch.Tensor, dist: torch.Tensor, eps: float, steps: int = 5,
           method: str = "ifgsm", objective: str = "boost", alpha: float | None = None, seed: int = 0,
           mu: float = 1.0) -> torch.Tensor:
    """The adversarial distorted images (same shape as ``dist``, within eps of it in L-inf, in [0, 1])."""
    _check(eps, steps, method, objective)
    if ref.shape != dist.shape:
        raise ValueError(f"ref and dist must have the same shape, got {tuple(ref.shape)} and {tuple(dist.shape)}")
    sign = 1.0 if objective == "boost" else -1.0
    ref, dist = ref.detach(), dist.detach()
    if method == "fgsm":
        g, _ = _grad(score_fn, ref, dist, sign)
        return _project(dist + eps * g.sign(), dist, eps).detach()
    alpha = eps / 4 if alpha is None else alpha
    x = dist.clone()
    if method == "pgd":
        gen = torch.Generator().manual_seed(seed)
        x = _project(dist + (torch.rand(dist.shape, generator=gen) * 2 - 1).to(dist) * eps, dist, eps)
    if method in ("ifgsm", "pgd"):
        for _ in range(steps):
            g, _ = _grad(score_fn, ref, x, sign)
            x = _project(x + alpha * g.sign(), dist, eps)
        return x.detach()
    if method == "mifgsm":
        m = torch.zeros_like(dist)
        for _ in range(steps):
            g, _ = _grad(score_fn, ref, x, sign)
            m = mu * m + g / g.abs().flatten(1).sum(1).clamp_min(1e-12).view(-1, 1, 1, 1)
            x = _project(x + alpha * m.sign(), dist, eps)
        return x.detach()
    return art_apgd(lambda r, x: sign * score_fn(r, x), ref, dist, eps, steps)


def attack_batched(score_fn, ref, dist, eps, steps, method, objective="boost", batch: int = 64, seed: int = 0,
                   alpha: float | None = None):
    """`attack` over mini-batches (same result as one call for the deterministic attacks)."""
    out = [attack(score_fn, ref[i:i + batch], dist[i:i + batch], eps, steps, method, objective, alpha=alpha,
                  seed=seed + i) for i in range(0, len(ref), batch)]
    return torch.cat(out)


def rank_direction(mos, center: float | None = None) -> np.ndarray:
    """The lab's attack direction per pair (test_kadid_correlations.py: ``better_than_mean = mos > mean_mos;
    attack_direction = better_than_mean * -2 + 1``): -1 (push the score down) where the MOS is above
    ``center`` (default: the mean MOS of the pairs), +1 (push it up) elsewhere."""
    mos = np.asarray(mos, dtype=float)
    if mos.ndim != 1 or mos.size < 2 or not np.isfinite(mos).all():
        raise ValueError(f"mos must be a finite 1-D array of at least 2 scores, got shape {mos.shape}")
    center = float(mos.mean()) if center is None else float(center)
    return np.where(mos > center, -1.0, 1.0)


def attack_directed(score_fn: ScoreFn, ref: torch.Tensor, dist: torch.Tensor, eps: float, steps: int, method: str,
                    direction, batch: int = 64, seed: int = 0, alpha: float | None = None) -> torch.Tensor:
    """Each pair attacked in its own direction (``direction[i]`` = +1: raise the score, -1: lower it): the
    attack maximises ``direction * f`` (the rank-direction protocol when ``direction = rank_direction(mos)``)."""
    direction = torch.as_tensor(np.asarray(direction, dtype=np.float32))
    if direction.shape != (len(ref),) or not bool(((direction == 1) | (direction == -1)).all()):
        raise ValueError(f"direction must hold one +1 or -1 per pair ({len(ref)}), got shape {tuple(direction.shape)}")
    direction = direction.to(dist.device)
    if method == "apgd":
        batch = min(batch, ART_CHUNK)
    out = []
    for i in range(0, len(ref), batch):
        s_i = direction[i:i + batch]
        out.append(attack(lambda a, b, s_i=s_i: s_i * score_fn(a, b), ref[i:i + batch], dist[i:i + batch], eps, steps,
                          method, "boost", alpha=alpha, seed=seed + i))
    return torch.cat(out)


def art_margin_classifier(score_fn: ScoreFn, ref: torch.Tensor, dist: torch.Tensor):
    """ART's view of a score for one batch: a ``PyTorchClassifier`` whose two logits are ``(0, g(x))`` with
    ``g(x) = f(ref, x) - f(ref, dist)`` and whose loss is the margin ``g`` itself (mean, sum or per pair). Used by
    :func:`art_apgd`; its ``loss_gradient`` is the gradient of mean(g) (tests, check P6)."""
    from art.estimators.classification import PyTorchClassifier

    ref, dist = ref.detach(), dist.detach()
    with torch.no_grad():
        f0 = score_fn(ref, dist).detach()

    class Margin(torch.nn.Module):
        def forward(self, x):
            if x.shape[0] != ref.shape[0]:
                if x.shape[0] == 1 and not torch.is_grad_enabled():  # ART's constructor probes one dummy input
                    return torch.zeros(1, 2, dtype=x.dtype, device=x.device)
                raise RuntimeError("ART called the wrapper on a sub-batch: the reference would not match")
            g = score_fn(ref, x) - f0
            return torch.stack([torch.zeros_like(g), g], 1)

    class MarginLoss(torch.nn.Module):
        reduction = "mean"

        def forward(self, logits, y):
            g = logits[:, 1] - logits[:, 0]
            return g if self.reduction == "none" else (g.sum() if self.reduction == "sum" else g.mean())

    return PyTorchClassifier(Margin(), loss=MarginLoss(), input_shape=tuple(dist.shape[1:]), nb_classes=2,
                             clip_values=(0.0, 1.0), device_type="gpu" if dist.device.type == "cuda" else "cpu")


def art_apgd(score_fn: ScoreFn, ref: torch.Tensor, dist: torch.Tensor, eps: float, steps: int) -> torch.Tensor:
    """APGD (Croce & Hein 2020) by ART's ``AutoProjectedGradientDescent``, maximising ``score_fn``.

    ART attacks classifiers: the score becomes the two logits ``(0, g(x))`` with ``g(x) = f(x) - f(dist)``, label 0,
    and the loss ART follows is the logit margin ``g`` itself (:func:`art_margin_classifier`; no cross-entropy
    saturation: APGD's step-size rule compares loss values). ART runs on chunks of at most :data:`ART_CHUNK` pairs
    (its ``predict`` calls the wrapper on sub-batches of 128), one ART batch per chunk, and the returned point of
    each pair is ART's best iterate ``x_max`` (Croce & Hein's Alg. 1 returns x_max; ART 1.20.1 returns its last
    iterate where ``g > 0`` and its random start elsewhere, and keeps x_max as an attribute). ``score_fn`` must score
    each pair independently of the others (it is called on chunks).
    """
    from art.attacks.evasion import AutoProjectedGradientDescent

    ref, dist = ref.detach(), dist.detach()
    out = []
    for i in range(0, len(dist), ART_CHUNK):
        r, d = ref[i:i + ART_CHUNK], dist[i:i + ART_CHUNK]
        clf = art_margin_classifier(score_fn, r, d)
        apgd = AutoProjectedGradientDescent(clf, norm=np.inf, eps=eps, eps_step=2 * eps, max_iter=steps, targeted=False,
                                            nb_random_init=1, batch_size=len(d), verbose=False)
        adv = apgd.generate(d.cpu().numpy(), y=np.zeros(len(d), dtype=int))
        best = getattr(apgd, "x_max", None)
        if best is None or best.shape != adv.shape:
            raise RuntimeError("ART's APGD kept no best iterate for the whole chunk (x_max missing or of another shape)")
        out.append(_project(torch.from_numpy(best).to(d), d, eps))
    return torch.cat(out).detach()


def ir_score(eps_values, srocc_values, clean_srocc: float) -> float:
    """IR-Score-like integral robustness (after Chistyakova et al. 2024): the trapezoid integral of SROCC(eps)
    from 0 (clean) to eps_max, divided by eps_max (1 = no loss at any budget)."""
    e = np.concatenate([[0.0], np.asarray(eps_values, dtype=float)])
    s = np.concatenate([[clean_srocc], np.asarray(srocc_values, dtype=float)])
    order = np.argsort(e)
    e, s = e[order], s[order]
    return float(np.sum((s[1:] + s[:-1]) / 2 * np.diff(e)) / e[-1])
