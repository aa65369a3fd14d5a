"""Frozen automatic evaluators: the stand-ins for the paper's VLM judge and UniPercept scorer.

The official protocol (``evaluation/creation/*_evaluate.py``, ``evaluation/editing/*_evaluate.py``):

* CC (concept consistency): per reference a yes/no question to a VLM; ``CC = 10 x #yes / #valid`` answers
  (unparsable answers are dropped; `cc_official`). Here a multi-head concept CNN trained **only on oracle
  renders** and frozen before any generator trains answers each question: "yes" iff the head of the
  reference's dimension predicts the reference's value.
* PF / IF (prompt / instruction following): text-only requirements, each verified (tone and frame by the
  CNN's text heads, each named sub-class by its dimension head; for editing: each edited dimension reaches
  its target value, removal = the neutral default).
* PR (physical realism), no-reference like the official ``PR_evaluate.py`` (its auditor sees the image
  alone): 10 x the geometric mean of a ghosting check (edge NCC under 2-3 px shifts), a PCA manifold check
  (sklearn, fitted on oracle renders) and the judge's entity coherence (`pr_noref_scores`), each calibrated
  so that oracle renders score ~10. The coherence term reads the CC judge, as the official PR auditor is the
  same kind of VLM as its CC judge. The earlier full-reference score (an artefact check: connected
  components of the error mask against the ground truth, ``scipy.ndimage.label`` over the batch) is kept as
  a diagnostic (`pr_scores`).
* IAA / IQA / IS analogues of UniPercept's three heads: colourfulness + RMS contrast; Laplacian variance x
  (1 - ``estimate_sigma`` noise); SSIM of edge maps against the ground truth (full-reference: possible
  only because the ground truth exists here).
* NERC (non-edited-region consistency): 10 x SSIM averaged over the complement of the edit mask.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.linalg  # noqa: F401  (loaded here, at import: see below)
import torch
from sklearn.decomposition import PCA
from torch import nn

from .concepts import DEFAULT, N_DIMS

# The PCA manifold check runs on scipy's own BLAS. A BLAS library loaded after `icml26.Chapter` has pinned the
# compute threads keeps the environment's thread count, and the PR scores then change in the 9th digit with it
# (caught by the thread-count check after nbval); importing it with the chapter's imports puts it under the pin.


def check_images(x, size: int | None = None, name: str = "images") -> np.ndarray:
    """Validate a batch (N, S, S, 3) or one image (S, S, 3) of floats in [0, 1] without NaN."""
    x = np.asarray(x)
    if not np.issubdtype(x.dtype, np.floating):
        raise ValueError(f"{name} must be float in [0, 1], got dtype {x.dtype}")
    if x.ndim not in (3, 4) or x.shape[-1] != 3 or x.shape[-2] != x.shape[-3]:
        raise ValueError(f"{name} must have shape (N, S, S, 3) or (S, S, 3), got {x.shape}")
    if size is not None and x.shape[-2] != size:
        raise ValueError(f"{name}: canvas must be {size}x{size}, got {x.shape[-3]}x{x.shape[-2]}")
    if not np.all(np.isfinite(x)):
        raise ValueError(f"{name} contain NaN or inf")
    if x.min() < -1e-6 or x.max() > 1 + 1e-6:
        raise ValueError(f"{name} must lie in [0, 1], got [{x.min():.3g}, {x.max():.3g}]")
    return x


# --------------------------------------------------------------------------- the official CC rule
def cc_official(answers) -> float:
    """The official CC of one case: ``10 x #yes / #valid`` over the per-reference answers.

    ``answers``: "yes" / "no" (case-insensitive) or None (an unparsable VLM reply, dropped). NaN when no
    answer is valid. Anything else is an error.
    """
    valid = []
    for a in answers:
        if a is None:
            continue
        if not isinstance(a, str) or a.strip().lower() not in ("yes", "no"):
            raise ValueError(f"a CC answer is 'yes', 'no' or None, got {a!r}")
        valid.append(a.strip().lower() == "yes")
    return 10.0 * sum(valid) / len(valid) if valid else float("nan")


# --------------------------------------------------------------------------- the concept CNN
def _small_cnn(n_out: int, width: int = 32, pool: int = 2) -> nn.Sequential:
    """A small CNN (two stride-2 stages, average-pooled to ``pool`` x ``pool``, two dense layers)."""
    return nn.Sequential(
        nn.Conv2d(3, width, 3, padding=1), nn.BatchNorm2d(width), nn.ReLU(),
        nn.Conv2d(width, 2 * width, 3, stride=2, padding=1), nn.BatchNorm2d(2 * width), nn.ReLU(),
        nn.Conv2d(2 * width, 2 * width, 3, padding=1), nn.BatchNorm2d(2 * width), nn.ReLU(),
        nn.Conv2d(2 * width, 4 * width, 3, stride=2, padding=1), nn.BatchNorm2d(4 * width), nn.ReLU(),
        nn.AdaptiveAvgPool2d(pool), nn.Flatten(), nn.Linear(4 * width * pool * pool, 192), nn.ReLU(), nn.Linear(192, n_out))


GLOBAL_DIMS = (2, 3, 5)   # Style, Scene, Control (+ the two text attributes): read from the whole canvas
OBJECT_DIMS = (1, 4)      # Object, Material: read from the object box of the predicted layout
FACE_DIMS = (0, 6)        # Identity, Appearance: read from the face box of the predicted layout
CROP = 16


class ConceptClassifier(nn.Module):
    """The frozen judge: a multi-head concept CNN that reads the canvas, then the regions of its layout.

    A VLM judge looks at the whole image and then at the entity a question is about; this judge does the
    same in two stages: a global CNN on the whole canvas predicts Style, Scene, Control and the
    text attributes; the object box and the face box of the *predicted* Control layout are cropped and
    resized to 16 x 16, and two region CNNs predict Object / Material and Identity / Appearance. Each
    dimension head has V + 1 classes (the V sub-classes and the neutral default).
    """

    def __init__(self, V: int, size: int = 32):
        super().__init__()
        self.V, self.size = V, size
        c = V + 1
        self.glob = _small_cnn(3 * c + 4, pool=4)   # 4 x 4 keeps where things are (Control)
        self.obj = _small_cnn(2 * c)
        self.face = _small_cnn(2 * c)
        from .concepts import layout_boxes

        boxes = [layout_boxes(ctrl, size) for ctrl in range(-1, V)]   # index 0 = default layout
        self.register_buffer("boxes", torch.tensor([[*o, *f] for o, f in boxes], dtype=torch.long), persistent=False)

    def _crops(self, x, layout_idx, which: int):
        out = torch.empty(x.shape[0], 3, CROP, CROP, dtype=x.dtype)
        for li in torch.unique(layout_idx).tolist():
            sel = (layout_idx == li).nonzero().flatten()
            y0, x0, s = self.boxes[li, 3 * which:3 * which + 3].tolist()
            patch = x[sel, :, y0:y0 + s, x0:x0 + s]
            out[sel] = nn.functional.interpolate(patch, size=(CROP, CROP), mode="bilinear", align_corners=False)
        return out

    def forward(self, x, layout_idx=None):
        """Logits (B, 7, V + 1) and (B, 2, 2). ``layout_idx`` (0 = default, 1 + value) forces the crops'
        layout (training on the true layout); by default the global head's prediction is used."""
        c = self.V + 1
        g = self.glob(x)
        gd, gt = g[:, :3 * c].reshape(-1, 3, c), g[:, 3 * c:].reshape(-1, 2, 2)
        if layout_idx is None:
            pred = gd[:, 2].argmax(-1)                      # Control head: class V = default -> layout 0
            layout_idx = torch.where(pred == self.V, torch.zeros_like(pred), pred + 1)
        o = self.obj(self._crops(x, layout_idx, 0)).reshape(-1, 2, c)
        f = self.face(self._crops(x, layout_idx, 1)).reshape(-1, 2, c)
        dims = torch.empty(x.shape[0], N_DIMS, c, dtype=x.dtype)
        dims[:, list(GLOBAL_DIMS)] = gd
        dims[:, list(OBJECT_DIMS)] = o
        dims[:, list(FACE_DIMS)] = f
        return dims, gt


def _labels(configs: np.ndarray, V: int):
    c = torch.from_numpy(np.asarray(configs, dtype=np.int64))
    dims = torch.where(c[:, :N_DIMS] == DEFAULT, torch.full_like(c[:, :N_DIMS], V), c[:, :N_DIMS])
    return dims, c[:, N_DIMS:]


def _blur(x: torch.Tensor, sigma: float) -> torch.Tensor:
    k = _gauss(sigma, truncate=2.0).to(x.dtype)
    r = (len(k) - 1) // 2
    C = x.shape[1]
    x = nn.functional.pad(x, (r, r, r, r), mode="replicate")
    x = nn.functional.conv2d(x, k.reshape(1, 1, 1, -1).repeat(C, 1, 1, 1), groups=C)
    return nn.functional.conv2d(x, k.reshape(1, 1, -1, 1).repeat(C, 1, 1, 1), groups=C)


def train_classifier(images: np.ndarray, configs: np.ndarray, V: int, epochs: int, batch: int = 32, lr: float = 2e-3,
                     seed: int = 0, progress=None, val: tuple[np.ndarray, np.ndarray] | None = None,
                     checks_per_epoch: int = 2) -> ConceptClassifier:
    """Train the judge on oracle renders only (no generator output is ever seen), then freeze it.

    The region CNNs train on the crops of the true layout. Augmentations make the judge tolerant to what
    generated images do and oracle renders do not (as a VLM judge is): a random +-1 px shift, light
    Gaussian noise (sigma 0.02) and, on half of the batches, a Gaussian blur of sigma 0.5 or 1 px.

    ``val`` = (images, configs) of held-out oracle renders (neither training nor test renders): validation-based
    early stopping (review v2: the judge's accuracy at `full` fell below `book`'s with no explanation).
    ``checks_per_epoch`` times per epoch (evenly spaced, the last at the epoch's end) the per-attribute accuracy on
    ``val`` is measured; the judge keeps the weights of the best check (the first one on a tie).
    ``model.val_history`` holds the accuracies, ``model.val_epochs`` when they were measured (in epochs) and
    ``model.best_epoch`` the epoch of the check kept; without ``val`` the last epoch is kept, as before.
    """
    images = check_images(images)
    torch.manual_seed(seed)
    g = torch.Generator().manual_seed(seed)
    model = ConceptClassifier(V, images.shape[1])
    x = torch.from_numpy(images).permute(0, 3, 1, 2).contiguous()
    yd, yt = _labels(configs, V)
    true_layout = torch.from_numpy(np.asarray(configs)[:, 5].astype(np.int64) + 1)
    steps = epochs * math.ceil(len(x) / batch)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=1e-4)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=lr, total_steps=steps)
    it = progress(range(epochs)) if progress is not None else range(epochs)
    ce = nn.CrossEntropyLoss()
    if val is not None:
        val_img, val_cfg = check_images(val[0], name="validation images"), np.asarray(val[1])
        if len(val_img) != len(val_cfg) or len(val_img) == 0:
            raise ValueError(f"validation images and configs must be non-empty and align, got {len(val_img)} and {len(val_cfg)}")
    if checks_per_epoch < 1:
        raise ValueError(f"checks_per_epoch must be >= 1, got {checks_per_epoch}")
    n_batches = math.ceil(len(x) / batch)
    check_at = {min(n_batches, math.ceil(n_batches * (j + 1) / checks_per_epoch)) for j in range(checks_per_epoch)}
    history, when, best_state, best_acc = [], [], None, -1.0
    for epoch in it:
        perm = torch.randperm(len(x), generator=g)
        for b, s in enumerate(range(0, len(x), batch), start=1):
            idx = perm[s:s + batch]
            xb = x[idx]
            dy, dx = (int(v) for v in torch.randint(-1, 2, (2,), generator=g))
            xb = torch.roll(xb, shifts=(dy, dx), dims=(2, 3))
            r = int(torch.randint(0, 4, (1,), generator=g))
            if r >= 2:
                xb = _blur(xb, 0.5 * (r - 1))
            xb = xb + 0.02 * torch.randn(xb.shape, generator=g)
            pd, pt = model(xb, layout_idx=true_layout[idx])
            loss = ce(pd.reshape(-1, V + 1), yd[idx].reshape(-1)) + ce(pt.reshape(-1, 2), yt[idx].reshape(-1))
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            if val is not None and b in check_at:
                model.eval()
                acc = accuracy(predict(model, val_img), val_cfg)
                history.append(acc)
                when.append(epoch + b / n_batches)
                if acc > best_acc:
                    best_acc = acc
                    best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
                model.train()
    if best_state is not None:
        model.load_state_dict(best_state)
    model.eval()
    for p in model.parameters():
        p.requires_grad_(False)
    model.val_history, model.val_epochs = history, when
    model.best_epoch = float(when[int(np.argmax(history))]) if history else float(epochs)
    return model


def predict(model: ConceptClassifier, images: np.ndarray, batch: int = 512) -> np.ndarray:
    """Predicted configuration (N, 9): dimension values (-1 = default) and text attributes."""
    return judge_read(model, images, batch)[0]


def accuracy(pred: np.ndarray, configs: np.ndarray) -> float:
    """Per-attribute accuracy of predicted configurations (all 9 attributes)."""
    return float((np.asarray(pred) == np.asarray(configs)).mean())


# --------------------------------------------------------------------------- CC / PF / IF
def concept_answers(pred: np.ndarray, cases) -> list[list[str]]:
    """The per-reference "yes"/"no" answers of the frozen judge for each case (editing removal: "yes" iff
    the dimension is back to its default)."""
    out = []
    for p, c in zip(pred, cases):
        ans = []
        for j, (d, v) in enumerate(zip(c.dims, c.values)):
            removed = bool(c.ops) and c.ops[j] == 1
            ok = p[d] == DEFAULT if removed else p[d] == v
            ans.append("yes" if ok else "no")
        out.append(ans)
    return out


def cc_scores(pred: np.ndarray, cases) -> np.ndarray:
    """CC per case by the official rule."""
    return np.array([cc_official(a) for a in concept_answers(pred, cases)])


def pf_scores(pred: np.ndarray, cases) -> np.ndarray:
    """PF per creation case: 10 x the fraction of the prompt's text-only requirements verified (tone, frame,
    each named sub-class)."""
    out = []
    for p, c in zip(pred, cases):
        req = [p[N_DIMS] == c.text[0], p[N_DIMS + 1] == c.text[1]] + [p[d] == v for d, v in zip(c.dims, c.values)]
        out.append(10.0 * np.mean(req))
    return np.array(out)


def if_scores(pred: np.ndarray, cases) -> np.ndarray:
    """IF per editing case: 10 x the fraction of edited dimensions at their target value (incl. removals)."""
    return np.array([10.0 * np.mean([p[d] == c.config[d] for d in c.dims]) for p, c in zip(pred, cases)])


# --------------------------------------------------------------------------- SSIM, masked
def _gauss(sigma: float = 1.5, truncate: float = 3.5) -> torch.Tensor:
    r = int(truncate * sigma + 0.5)
    x = torch.arange(-r, r + 1, dtype=torch.float64)
    k = torch.exp(-0.5 * (x / sigma) ** 2)
    return k / k.sum()


def ssim_map(x: np.ndarray, y: np.ndarray, sigma: float = 1.5) -> np.ndarray:
    """SSIM map (N, S, S), averaged over channels: Gaussian window sigma = 1.5 (truncated at 3.5 sigma),
    population covariance, data range 1, boundary 'symmetric': the full map of skimage's
    ``structural_similarity(..., gaussian_weights=True, use_sample_covariance=False, data_range=1,
    channel_axis=-1, full=True)``. The separable filter runs on the whole batch at once
    (``scipy.ndimage.correlate1d`` along the two image axes, mode 'reflect' = numpy's 'symmetric'), float64."""
    from scipy import ndimage

    x, y = check_images(x, name="x"), check_images(y, name="y")
    if x.shape != y.shape:
        raise ValueError(f"x and y shapes differ: {x.shape} vs {y.shape}")
    X, Y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    k = _gauss(sigma).numpy()

    def filt(z):
        z = ndimage.correlate1d(z, k, axis=-3, mode="reflect")
        return ndimage.correlate1d(z, k, axis=-2, mode="reflect")

    mx, my = filt(X), filt(Y)
    vx, vy, cxy = filt(X * X) - mx * mx, filt(Y * Y) - my * my, filt(X * Y) - mx * my
    c1, c2 = 0.01 ** 2, 0.03 ** 2
    s = ((2 * mx * my + c1) * (2 * cxy + c2)) / ((mx ** 2 + my ** 2 + c1) * (vx + vy + c2))
    return s.mean(-1)


def check_mask(mask: np.ndarray) -> np.ndarray:
    """An edit mask must be boolean-like and neither empty nor full (NERC is undefined there)."""
    m = np.asarray(mask).astype(bool)
    if m.ndim not in (2, 3):
        raise ValueError(f"edit mask must be (S, S) or (N, S, S), got {m.shape}")
    flat = m.reshape(-1, m.shape[-2] * m.shape[-1])
    if np.any(flat.all(1)):
        raise ValueError("edit mask covers the whole canvas: NERC (non-edited-region consistency) is undefined")
    if np.any(~flat.any(1)):
        raise ValueError("edit mask is empty: NERC is undefined for an edit that changes nothing")
    return m


def masked_ssim(x: np.ndarray, y: np.ndarray, edit_mask: np.ndarray) -> np.ndarray:
    """Mean SSIM over the complement of the edit mask, per image."""
    m = check_mask(edit_mask)
    s = ssim_map(x, y)
    keep = ~m
    if s.ndim == 2:
        return np.asarray(s[keep].mean())
    return np.array([si[ki].mean() for si, ki in zip(s, keep)])


def nerc_scores(outputs: np.ndarray, sources: np.ndarray, edit_masks: np.ndarray) -> np.ndarray:
    """NERC = 10 x masked SSIM between the source and the edited output outside the edit mask."""
    return 10.0 * np.clip(masked_ssim(outputs, sources, edit_masks), 0, 1)


# --------------------------------------------------------------------------- PR and the perceptual analogues
def _grey(x):
    return x @ np.array([0.299, 0.587, 0.114])


def _sobel(g):
    """Sobel gradient magnitude of grey images (..., H, W): derivative along one spatial axis, [1, 2, 1]
    smoothing along the other (scipy.ndimage.sobel of each 2-D image, batched without mixing images)."""
    from scipy import ndimage

    def part(axis, other):
        d = ndimage.correlate1d(g, [-1.0, 0.0, 1.0], axis=axis, mode="reflect")
        return ndimage.correlate1d(d, [1.0, 2.0, 1.0], axis=other, mode="reflect")

    return np.hypot(part(-1, -2), part(-2, -1))


def artefact_counts(outputs: np.ndarray, targets: np.ndarray, tau: float = 0.25, min_area: int = 4) -> np.ndarray:
    """Connected components (8-connectivity) of area >= min_area in the error mask
    mean_c |output - target| > tau: spurious or missing structures. One ``scipy.ndimage.label`` call over
    the whole batch (a structure that never connects two images); equals `artefact_counts_loop`."""
    from scipy import ndimage

    err = np.abs(outputs - targets).mean(-1) > tau
    N = len(err)
    structure = np.zeros((3, 3, 3), bool)
    structure[1] = True
    lab, n = ndimage.label(err, structure=structure)
    if n == 0:
        return np.zeros(N, int)
    sizes = np.bincount(lab.ravel(), minlength=n + 1)
    owner = np.zeros(n + 1, int)
    owner[lab.reshape(N, -1)] = np.arange(N)[:, None]
    big = sizes >= min_area
    big[0] = False
    return np.bincount(owner[big], minlength=N)


def artefact_counts_loop(outputs: np.ndarray, targets: np.ndarray, tau: float = 0.25, min_area: int = 4) -> np.ndarray:
    """Reference implementation of `artefact_counts`: ``skimage.measure.label`` image by image."""
    from skimage.measure import label, regionprops

    err = np.abs(outputs - targets).mean(-1) > tau
    return np.array([sum(1 for r in regionprops(label(e, connectivity=2)) if r.area >= min_area) for e in err])


def ghosting(outputs: np.ndarray, shifts=(2, 3)) -> np.ndarray:
    """Largest normalised cross-correlation of the (mean-removed) Sobel edge map with itself shifted by
    2-3 px, horizontally or vertically (double contours of a ghosted image correlate at small shifts)."""
    e = _sobel(_grey(np.asarray(outputs, np.float64)))
    e = e - e.mean((1, 2), keepdims=True)
    best = np.full(len(e), -1.0)
    for s in shifts:
        for a, b in ((e[:, s:], e[:, :-s]), (e[:, :, s:], e[:, :, :-s])):
            den = np.sqrt((a * a).sum((1, 2)) * (b * b).sum((1, 2))) + 1e-12
            best = np.maximum(best, (a * b).sum((1, 2)) / den)
    return best


def colourfulness(x: np.ndarray) -> np.ndarray:
    """Hasler-Suesstrunk colourfulness per image (0-1 scale input)."""
    rg = x[..., 0] - x[..., 1]
    yb = 0.5 * (x[..., 0] + x[..., 1]) - x[..., 2]
    ax = (1, 2)
    return np.hypot(rg.std(ax), yb.std(ax)) + 0.3 * np.hypot(rg.mean(ax), yb.mean(ax))


def aesthetics_raw(x: np.ndarray) -> np.ndarray:
    """IAA analogue before calibration: colourfulness + RMS contrast of the grey image."""
    return colourfulness(x) + _grey(x).std((1, 2))


def quality_raw(x: np.ndarray) -> np.ndarray:
    """IQA analogue before calibration: variance of the Laplacian x (1 - estimated noise sigma x 10)."""
    from scipy import ndimage
    from skimage.restoration import estimate_sigma

    g = _grey(x)
    lap = np.array([ndimage.laplace(gi).var() for gi in g])
    noise = np.array([estimate_sigma(gi) for gi in g])
    return lap * np.clip(1 - 10 * noise, 0, 1)


def structure_scores(outputs: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """IS analogue: 10 x SSIM between the Sobel edge maps of output and ground truth."""
    eo = _sobel(_grey(np.asarray(outputs, np.float64)))
    et = _sobel(_grey(np.asarray(targets, np.float64)))
    eo, et = np.clip(eo / 2.0, 0, 1), np.clip(et / 2.0, 0, 1)
    s = ssim_map(np.repeat(eo[..., None], 3, -1), np.repeat(et[..., None], 3, -1)).mean((1, 2))
    return 10.0 * np.clip(s, 0, 1)


@dataclass
class Calibration:
    """Reference statistics measured on held-out oracle renders (frozen with the classifier)."""

    pca: object
    err95: float
    ghost95: float
    aes90: float
    qual90: float


def calibrate(oracle_images: np.ndarray, seed: int = 0) -> Calibration:
    """Fit the PCA manifold (95 % variance) and the oracle quantiles that map raw scores to 0-10."""
    check_images(oracle_images)
    X = oracle_images.reshape(len(oracle_images), -1)
    half = len(X) // 2
    pca = PCA(n_components=0.95, svd_solver="full", random_state=seed).fit(X[:half])
    err = _pca_error(pca, X[half:])
    return Calibration(pca, float(np.quantile(err, 0.95)), float(np.quantile(ghosting(oracle_images[half:]), 0.95)),
                       float(np.quantile(aesthetics_raw(oracle_images[half:]), 0.9)),
                       float(np.quantile(quality_raw(oracle_images[half:half + 400]), 0.9)))


def _pca_error(pca, X):
    rec = pca.inverse_transform(pca.transform(X))
    return np.sqrt(((rec - X) ** 2).mean(1))


def noref_parts(outputs: np.ndarray, cal: Calibration) -> dict[str, np.ndarray]:
    """The two image-only PR checks in [0, 1]: ghosting (edge NCC under small shifts above the oracle's 95th
    percentile) and manifold (PCA reconstruction error above the oracle's 95th percentile)."""
    outputs = check_images(outputs, name="outputs")
    g = np.exp(-np.maximum(0.0, ghosting(outputs) - cal.ghost95) / 0.1)
    e = _pca_error(cal.pca, outputs.reshape(len(outputs), -1))
    m = np.exp(-np.maximum(0.0, e / cal.err95 - 1.0))
    return {"ghosting": g, "manifold": m}


def pr_parts(outputs: np.ndarray, targets: np.ndarray, cal: Calibration, counts=artefact_counts,
             noref: dict[str, np.ndarray] | None = None) -> dict[str, np.ndarray]:
    """The three PR checks in [0, 1]: artefacts, ghosting and manifold (``noref``: `noref_parts` of the same
    outputs, when already computed)."""
    outputs, targets = check_images(outputs, name="outputs"), check_images(targets, name="targets")
    a = np.exp(-counts(outputs, targets) / 3.0)
    nr = noref_parts(outputs, cal) if noref is None else noref
    return {"artefact": a, "ghosting": nr["ghosting"], "manifold": nr["manifold"]}


@torch.no_grad()
def judge_read(model: ConceptClassifier, images: np.ndarray, batch: int = 512) -> tuple[np.ndarray, np.ndarray]:
    """`predict` and `judge_coherence` from one forward pass of the judge: (predicted configurations (N, 9),
    coherence (N,))."""
    check_images(images)
    preds, coh = [], []
    for s in range(0, len(images), batch):
        x = torch.from_numpy(np.ascontiguousarray(images[s:s + batch])).permute(0, 3, 1, 2)
        pd, pt = model(x)
        d = pd.argmax(-1)
        d = torch.where(d == model.V, torch.full_like(d, DEFAULT), d)
        preds.append(torch.cat([d, pt.argmax(-1)], 1).numpy())
        coh.append(torch.softmax(pd, -1).max(-1).values.mean(1).numpy())
    return np.concatenate(preds), np.concatenate(coh).astype(np.float64)


@torch.no_grad()
def judge_coherence(model: "ConceptClassifier", images: np.ndarray, batch: int = 512) -> np.ndarray:
    """Mean over the 7 dimension heads of the judge's largest class probability, per image: how definitely the
    image shows *some* value in every dimension (a valid render of any configuration scores high, an overlay of
    two renders low). It never sees the case's ground truth or references."""
    return judge_read(model, images, batch)[1]


def pr_noref_scores(outputs: np.ndarray, cal: Calibration, coherence: np.ndarray | None = None,
                    coherence_ref: float = 1.0, parts: dict[str, np.ndarray] | None = None) -> np.ndarray:
    """No-reference PR (issue 46 item 3): 10 x geometric mean of checks that look at the output image only,
    like the official `PR_evaluate.py`, whose VLM auditor gets the image alone (entity integrity, lighting,
    geometry): ghosting (double contours), the distance to the PCA manifold of oracle renders and, when
    ``coherence`` is given, an entity-coherence check min(1, coherence / coherence_ref) with the judge's
    `judge_coherence` and its median on held-out oracle renders. A valid render with wrong concept values
    scores like the oracle. What it loses against the auditor: lighting, geometry and causality checks; and
    the PCA check cannot see an average of valid renders (it lies in their linear span), which only the
    coherence check can. ``parts``: `noref_parts` of the same outputs, when already computed."""
    outputs = check_images(outputs, name="outputs")
    nr = noref_parts(outputs, cal) if parts is None else parts
    g, m = nr["ghosting"], nr["manifold"]
    if coherence is None:
        return 10.0 * np.sqrt(g * m)
    if not coherence_ref > 0:
        raise ValueError(f"coherence_ref must be > 0, got {coherence_ref}")
    c = np.clip(np.asarray(coherence, np.float64) / coherence_ref, 0.0, 1.0)
    if c.shape != g.shape:
        raise ValueError(f"coherence has shape {c.shape}, expected {g.shape}")
    return 10.0 * np.cbrt(g * m * c)


def pr_scores(outputs: np.ndarray, targets: np.ndarray, cal: Calibration) -> np.ndarray:
    """Full-reference PR of the earlier revision = 10 x geometric mean of the three checks (kept as a
    diagnostic and for the benchmark; the chapter's PR is `pr_noref_scores`)."""
    p = pr_parts(outputs, targets, cal)
    return 10.0 * np.cbrt(p["artefact"] * p["ghosting"] * p["manifold"])


def aesthetics_scores(outputs: np.ndarray, cal: Calibration) -> np.ndarray:
    return 10.0 * np.clip(aesthetics_raw(outputs) / cal.aes90, 0, 1)


def quality_scores(outputs: np.ndarray, cal: Calibration) -> np.ndarray:
    return 10.0 * np.clip(quality_raw(outputs) / cal.qual90, 0, 1)
