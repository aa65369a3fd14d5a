"""The oracle MOS: a stand-in for human ratings (no IQA dataset can be downloaded here).

Pitfall avoided: the oracle is **not** built from BiRQA's inputs (SSIM, VIF-style information, YCbCr chroma,
LBP). It is the mean z-score of four distortion measures of other families -- GMSD (gradient magnitude,
Xue et al. 2014), NLPD-lite (a 4-level normalised Laplacian pyramid distance written here, after Laparra et
al. 2016), SCC (torchmetrics' spatial correlation coefficient of high-passed images) and the mean CIEDE2000
colour difference (skimage). CIEDE2000 overlaps in *kind* with the chroma branch (both see colour
differences, in CIELAB vs YCbCr): flagged. The latent quality is mapped to [1, 5] and observed through
15 simulated raters (sd 0.6, clipped to [1, 5]); the observed MOS is their mean.

A second, **level-based** oracle (5 minus the distortion level weighted per type, attenuated by the
reference's local contrast -- contrast masking) is reported beside it as a robustness check.
"""
from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from .metrics import gmsd

N_RATERS, RATER_SD = 15, 0.6


def _luma(x):
    return (0.299 * x[:, 0] + 0.587 * x[:, 1] + 0.114 * x[:, 2]).unsqueeze(1)


def _laplacian_pyramid(y, levels):
    k = torch.tensor([1.0, 4.0, 6.0, 4.0, 1.0]) / 16
    k2 = (k[:, None] * k[None, :]).view(1, 1, 5, 5).to(y)
    out = []
    for _ in range(levels):
        low = F.conv2d(F.pad(y, (2, 2, 2, 2), mode="reflect"), k2)
        out.append(y - low)
        y = F.avg_pool2d(low, 2)
    return out


def nlpd_lite(ref, dist, levels: int = 4):
    """Normalised Laplacian pyramid distance (our lite version): per level the band-pass coefficients are
    divided by (0.05 + local mean |coefficient|), and the RMS of the difference is averaged over levels."""
    d = 0.0
    box = lambda t: F.avg_pool2d(F.pad(t, (1, 1, 1, 1), mode="reflect"), 3, stride=1)
    for a, b in zip(_laplacian_pyramid(_luma(ref) ** (1 / 2.2), levels), _laplacian_pyramid(_luma(dist) ** (1 / 2.2), levels)):
        na, nb = a / (0.05 + box(a.abs())), b / (0.05 + box(b.abs()))
        d = d + ((na - nb) ** 2).mean((1, 2, 3)).sqrt()
    return d / levels


def scc_distance(ref, dist):
    """1 - SCC (torchmetrics 1.9 spatial correlation coefficient, per image)."""
    from torchmetrics.functional.image import spatial_correlation_coefficient

    return 1 - spatial_correlation_coefficient(dist, ref, reduction="none")


def ciede2000(ref, dist):
    """Mean CIEDE2000 colour difference (skimage), per image."""
    from skimage.color import deltaE_ciede2000, rgb2lab

    r = rgb2lab(ref.permute(0, 2, 3, 1).double().numpy())
    d = rgb2lab(dist.permute(0, 2, 3, 1).double().numpy())
    return torch.from_numpy(deltaE_ciede2000(r, d).mean((1, 2)))


COMPONENTS = {"GMSD": gmsd, "NLPD-lite": nlpd_lite, "1 - SCC": scc_distance, "CIEDE2000": ciede2000}


def oracle_components(ref: np.ndarray, dist: np.ndarray, batch: int = 256) -> dict[str, np.ndarray]:
    """The four distortion measures (higher is worse) of every pair."""
    out = {k: [] for k in COMPONENTS}
    for i in range(0, len(ref), batch):
        r, d = torch.from_numpy(ref[i:i + batch]), torch.from_numpy(dist[i:i + batch])
        for name, fn in COMPONENTS.items():
            kw = {"check": False} if name == "GMSD" else {}
            out[name].append(fn(r, d, **kw).double().numpy())
    return {k: np.concatenate(v) for k, v in out.items()}


def _to_mos(z: np.ndarray) -> np.ndarray:
    """Latent distortion z (higher is worse) -> quality in [1, 5] (logistic around the median)."""
    return 1 + 4 / (1 + np.exp((z - np.median(z)) / (0.5 * z.std() + 1e-12)))


def simulate_raters(true_mos: np.ndarray, rng: np.random.Generator, n: int = N_RATERS, sd: float = RATER_SD):
    """Mean of ``n`` simulated raters clip(MOS + N(0, sd^2), 1, 5)."""
    votes = np.clip(true_mos[:, None] + rng.normal(0, sd, size=(len(true_mos), n)), 1, 5)
    return votes.mean(1)


def ensemble_mos(components: dict[str, np.ndarray], rng: np.random.Generator):
    """(observed MOS, noiseless MOS): mean z-score of the components -> [1, 5] -> simulated raters."""
    z = np.mean([(v - v.mean()) / (v.std() + 1e-12) for v in components.values()], axis=0)
    true = _to_mos(z)
    return simulate_raters(true, rng), true


def level_mos(ref: np.ndarray, kinds: np.ndarray, levels: np.ndarray, rng: np.random.Generator):
    """The level-based oracle: 5 - 4 w_type (level / 5) (1 - 0.4 m), m = the reference's normalised RMS
    contrast (contrast masking), observed through the same simulated raters."""
    y = 0.299 * ref[:, 0] + 0.587 * ref[:, 1] + 0.114 * ref[:, 2]
    m = y.reshape(len(y), -1).std(1)
    m = m / (m.max() + 1e-12)
    types = sorted(set(kinds))
    w = dict(zip(types, np.random.default_rng(12345).uniform(0.5, 1.0, len(types))))
    true = 5 - 4 * np.array([w[k] for k in kinds]) * (np.asarray(levels) / 5) * (1 - 0.4 * m)
    return simulate_raters(true, rng), true
