"""The chapter's figures (each names the paper figure it mirrors)."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import torch

from .losses import sh_ambiguity
from .render import render
from .scene import REGIONS, SPECULAR_MIN
from .train import RUN_LABELS, RUNS, Hyper

_REGION_CMAP = plt.get_cmap("tab10", 7)


def _normal_rgb(n):
    n = np.asarray(n)
    return np.clip((n * np.array([1, -1, -1]) + 1) / 2, 0, 1)


def _labels(ax, lab, title="GT regions"):
    im = ax.imshow(lab, cmap=_REGION_CMAP, vmin=-0.5, vmax=6.5, interpolation="nearest")
    ax.set_title(title)
    return im


def fig_scene(scene, k: int = 1):
    """Fig. 1 analogue ("challenging scenario"): image, exact depth and normals, regions, and the prior's error."""
    v = scene.train[k]
    fig, ax = plt.subplots(1, 5, figsize=(15, 3.3))
    ax[0].imshow(v.rgb, interpolation="nearest"); ax[0].set_title("training image")
    im = ax[1].imshow(np.where(v.depth > 0, v.depth, np.nan), cmap="viridis"); ax[1].set_title("GT depth z")
    fig.colorbar(im, ax=ax[1], label="depth (scene units)")
    ax[2].imshow(_normal_rgb(v.normal) * (v.depth > 0)[..., None], interpolation="nearest"); ax[2].set_title("GT normal")
    im = _labels(ax[3], v.label)
    cb = fig.colorbar(im, ax=ax[3], ticks=range(7)); cb.ax.set_yticklabels([REGIONS[i] for i in range(7)], fontsize=7)
    rel = np.where((v.depth > 0) & (v.prior > 0), np.abs(v.prior - v.depth) / np.maximum(v.depth, 1e-6), np.nan)
    im = ax[4].imshow(100 * rel, cmap="magma", vmin=0, vmax=10); ax[4].set_title("prior depth error")
    fig.colorbar(im, ax=ax[4], label="|Z_prior - Z| / Z (%)")
    for a in ax:
        a.set_xlabel("x (px)"); a.set_ylabel("y (px)")
    return fig


@torch.no_grad()
def fig_qualitative(results, scene, names=("A", "B", "C", "D"), seed: int = 0, k: int = 0):
    """The paper's qualitative comparison: rendered depth-normals and depth error, runs side by side (test view)."""
    v = scene.test[k]
    names = [n for n in names if (n, seed) in results]
    fig, ax = plt.subplots(2, len(names) + 1, figsize=(3 * (len(names) + 1), 6), squeeze=False)
    ax[0, 0].imshow(_normal_rgb(v.normal) * (v.depth > 0)[..., None]); ax[0, 0].set_title("GT normal")
    ax[1, 0].imshow(v.rgb); ax[1, 0].set_title("test image")
    for j, n in enumerate(names, 1):
        r = render(results[(n, seed)].model, v.cam, RUNS[n]["trunc"], depth_mode=RUNS[n]["depth_mode"])
        ok = (r.alpha.numpy() > 0.5)[..., None]
        ax[0, j].imshow(_normal_rgb(r.normal_d.numpy()) * ok); ax[0, j].set_title(RUN_LABELS[n], fontsize=9)
        err = np.where((v.depth > 0) & ok[..., 0], np.abs(r.depth.numpy() - v.depth), np.nan)
        im = ax[1, j].imshow(err, cmap="inferno", vmin=0, vmax=0.15)
        ax[1, j].set_title(f"|Z - Z_gt|, mean {np.nanmean(err):.3f}", fontsize=9)
    fig.colorbar(im, ax=ax[1, -1], label="depth error (scene units)")
    for a in ax.ravel():
        a.set_xlabel("x (px)"); a.set_ylabel("y (px)")
    return fig


@torch.no_grad()
def fig_ambiguity(result, scene, cfg, k: int = 1):
    """Self-indication figure: U(p) of the trained AmbiSuR-lite model beside the GT regions, and the histogram of
    u_i with both cut-offs."""
    h = Hyper(**cfg.get("hyper", {}))
    m = result.model
    mask, u, hi, lo = sh_ambiguity(m.sh, h.upper, h.lower, h.lower_max)
    v = scene.train[k]
    r = render(m, v.cam, 2.0, amb_mask=hi.float())
    r2 = render(m, v.cam, 2.0, amb_mask=mask)
    fig, ax = plt.subplots(1, 4, figsize=(15, 3.4))
    _labels(ax[0], v.label)
    im = ax[1].imshow(r.ambiguity.numpy(), cmap="viridis", vmin=0, vmax=1); ax[1].set_title("U(p), high-end flags")
    fig.colorbar(im, ax=ax[1], label="U(p)")
    im = ax[2].imshow(r2.ambiguity.numpy(), cmap="viridis", vmin=0, vmax=1); ax[2].set_title("U(p), dual-end mask")
    fig.colorbar(im, ax=ax[2], label="U(p)")
    for a in ax[:3]:
        a.set_xlabel("x (px)"); a.set_ylabel("y (px)")
    un = u.numpy()
    q_hi, q_lo = np.quantile(un, h.upper), min(np.quantile(un, h.lower), h.lower_max)
    hl = result.per_gaussian["specular"] > SPECULAR_MIN   # C4h's target: the GT radiance varies across views
    bins = np.linspace(0, un.max() * 1.02 + 1e-9, 40)
    ax[3].hist(un[~hl], bins=bins, alpha=0.7, label="no highlight in any view")
    ax[3].hist(un[hl], bins=bins, alpha=0.7, label=f"highlight-bearing (GT specular > {SPECULAR_MIN})")
    ax[3].axvline(q_hi, color="k", ls="--", label=f"upper cut Q{h.upper:.2f}")
    ax[3].axvline(q_lo, color="grey", ls=":", label=f"lower cut min(Q{h.lower:.2f}, {h.lower_max})")
    ax[3].set_xlabel("u_i = ||SH bands 1..L|| (colour units)"); ax[3].set_ylabel("Gaussians"); ax[3].legend(fontsize=7)
    return fig


def fig_region_bars(results, seeds, names):
    """Ablation-table analogue: Chamfer distance overall and per region, mean and standard error over seeds."""
    regions = [1, 2, 3, 4, 5, 6]
    cols = ["overall"] + [REGIONS[r] for r in regions]
    fig, ax = plt.subplots(figsize=(13, 4))
    width = 0.8 / len(names)
    for j, n in enumerate(names):
        ss = [s for s in seeds if (n, s) in results]
        vals = np.array([[results[(n, s)].metrics["cd"]] + [results[(n, s)].metrics["region"].get(r, np.nan)
                         for r in regions] for s in ss])
        mean = vals.mean(0)
        sem = vals.std(0, ddof=1) / np.sqrt(len(ss)) if len(ss) > 1 else np.zeros_like(mean)
        ax.bar(np.arange(len(cols)) + j * width, mean, width, yerr=sem, capsize=2, label=f"{RUN_LABELS[n]} (n={len(ss)})")
    ax.set_xticks(np.arange(len(cols)) + 0.4 - width / 2)
    ax.set_xticklabels(cols)
    ax.set_ylabel("Chamfer distance (scene units)")
    ax.legend(fontsize=7, ncol=4)
    return fig


def fig_diagnostics(results, seeds, cfg):
    """Spillover mass (A vs B) and ray-colour variance V_rc (B vs C) over iterations, seed means."""
    h = Hyper(**cfg.get("hyper", {}))
    fig, ax = plt.subplots(1, 2, figsize=(11, 3.6))
    for n, a in (("A", 0), ("B", 0), ("B", 1), ("C", 1)):
        ss = [s for s in seeds if (n, s) in results]
        if not ss:
            continue
        it = results[(n, ss[0])].log["it"]
        key = "tail" if a == 0 else "vrc"
        y = np.mean([results[(n, s)].log[key] for s in ss], 0)
        ax[a].plot(it, y, marker=".", label=RUN_LABELS[n])
    T = cfg["iters"]
    ax[1].axvspan(h.rcc_window[0] * T, h.rcc_window[1] * T, color="orange", alpha=0.15, label="RCC window")
    ax[0].set_xlabel("iteration"); ax[0].set_ylabel("weight fraction from r > 2 sigma")
    ax[0].set_title("boundary spillover (ambiguity A1)")
    ax[1].set_xlabel("iteration"); ax[1].set_ylabel("V_rc = mean_p sum_i w_i ||c_i - C||^2")
    ax[1].set_title("ray-colour variance (ambiguity A2)")
    for a in ax:
        a.legend(fontsize=8)
    return fig


@torch.no_grad()
def draw_gamma(model, view, gamma: float):
    """The interactive panel: one fitted view re-rendered with truncation at ``gamma``."""
    r = render(model, view.cam, gamma)
    r0 = render(model, view.cam, None, tail_sigma=gamma)
    fig, ax = plt.subplots(1, 3, figsize=(12, 3.5))
    ok = (r.alpha.numpy() > 0.5)
    im = ax[0].imshow(np.where(ok, r.depth.numpy(), np.nan), cmap="viridis", vmin=1.2, vmax=3.6)
    ax[0].set_title(f"plane depth, GPT at gamma = {gamma:.2f}"); fig.colorbar(im, ax=ax[0], label="depth (units)")
    ax[1].imshow(_normal_rgb(r.normal_d.numpy()) * ok[..., None]); ax[1].set_title("depth normals")
    im = ax[2].imshow(r.color.numpy().clip(0, 1)); ax[2].set_title(f"colour; untruncated mass beyond gamma {float(r0.tail_mass):.1%}")
    for a in ax:
        a.set_xlabel("x (px)"); a.set_ylabel("y (px)")
    return fig


def fig_convergence(metric_curves: dict, photo_curves: dict, key: str = "cd"):
    """The training curves of every run (a panel each): the claims' metric ``key`` at the checkpoints, every seed,
    the judged last fifth shaded, its verdict in the title (the gate of the claims since review 3), and on the
    right axis the seed-mean training photometric loss (dashed, a diagnostic), with its own verdict."""
    runs = [n for n in photo_curves if (n, key) in metric_curves]
    cols = (len(runs) + 1) // 2
    fig, axes = plt.subplots(2, cols, figsize=(3.3 * cols, 5.8), squeeze=False)
    for ax, n in zip(axes.ravel(), runs):
        cv, ph = metric_curves[(n, key)], photo_curves[n]
        cv.plot(ax)
        if ax.get_legend():
            ax.get_legend().remove()
        ax.set_ylabel(cv.label, fontsize=8)
        tw = ax.twinx()
        tw.plot(ph.steps, np.mean(np.asarray(ph.values), 0), ls="--", lw=1, color="0.45")
        tw.grid(False)
        tw.set_ylabel("photometric loss (dashed)", fontsize=7, color="0.45")
        tw.tick_params(labelsize=7, colors="0.45")
        ax.set_title(f"{n}: {cv.label} {'converged' if cv.converged else 'NOT converged'}\n"
                     f"photometric loss {'converged' if ph.converged else 'not converged'}", fontsize=8)
    for ax in axes.ravel()[len(runs):]:
        ax.axis("off")
    fig.tight_layout()
    return fig
