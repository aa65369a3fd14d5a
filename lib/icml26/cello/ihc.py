"""A real protein signal: scikit-image's bundled IHC image (colon tissue, DAB + hematoxylin; brief 5.2).

Nuclei by Otsu on the smoothed hematoxylin channel, distance transform, `peak_local_max` and
`watershed`; the per-nucleus DAB mean (`regionprops`) is the protein signal. A small CNN learns DAB
positivity from *hematoxylin-only* crops (`hed2rgb` with E and DAB zeroed), trained on the left half
of the image and tested on the right half (a spatial split). Colour deconvolution has crosstalk, so
some DAB can leak into the "H-only" channel: a demo of real supervision, not a clean experiment.
"""
from __future__ import annotations

import numpy as np
import torch
from scipy import ndimage
from skimage import data, feature, filters, measure, segmentation
from skimage.color import hed2rgb, rgb2hed
from sklearn.metrics import roc_auc_score

from .encoders import CellEncoder, augment_flips, crops_to_tensor
from .slides import extract_crops


def segment_nuclei(rgb: np.ndarray, min_distance: int = 4) -> tuple[np.ndarray, np.ndarray]:
    """Label image of nuclei and the HED densities of an RGB IHC image."""
    hed = rgb2hed(rgb)
    h = ndimage.gaussian_filter(hed[..., 0], 1.0)
    fg = h > filters.threshold_otsu(h)
    dist = ndimage.distance_transform_edt(fg)
    peaks = feature.peak_local_max(dist, min_distance=min_distance, labels=measure.label(fg), exclude_border=False)
    markers = np.zeros(h.shape, dtype=int)
    markers[tuple(peaks.T)] = np.arange(1, len(peaks) + 1)
    labels = segmentation.watershed(-dist, markers, mask=fg)
    return labels, hed


def ihc_demo(steps: int, crop: int = 16, seed: int = 0, min_area: int = 12) -> dict:
    """Segment, measure DAB per nucleus, train an H-only positivity classifier left -> right."""
    rgb = data.immunohistochemistry()
    labels, hed = segment_nuclei(rgb)
    props = [p for p in measure.regionprops(labels, intensity_image=hed[..., 2]) if p.area >= min_area]
    cent = np.array([np.round(p.centroid).astype(int) for p in props])
    dab = np.array([p.intensity_mean for p in props])
    positive = dab > filters.threshold_otsu(dab)
    h_only = hed2rgb(np.stack([hed[..., 0], np.zeros_like(hed[..., 0]), np.zeros_like(hed[..., 0])], -1))
    crops = crops_to_tensor(extract_crops((h_only * 255).round().astype(np.uint8), cent, crop))
    left = cent[:, 1] < rgb.shape[1] // 2
    torch.manual_seed(seed)
    enc, head = CellEncoder(16), torch.nn.Linear(16, 1)
    opt = torch.optim.Adam(list(enc.parameters()) + list(head.parameters()), lr=3e-3, weight_decay=1e-4)
    g = torch.Generator().manual_seed(seed)
    tr = torch.as_tensor(np.flatnonzero(left))
    y = torch.as_tensor(positive, dtype=torch.float32)
    pw = ((1 - y[tr].mean()) / y[tr].mean().clamp_min(1e-3)).detach()
    enc.train()
    for _ in range(steps):
        idx = tr[torch.randint(len(tr), (64,), generator=g)]
        loss = torch.nn.functional.binary_cross_entropy_with_logits(head(enc(augment_flips(crops[idx], g))).squeeze(-1), y[idx], pos_weight=pw)
        opt.zero_grad()
        loss.backward()
        opt.step()
    enc.eval()
    with torch.no_grad():
        score = head(enc(crops[~torch.as_tensor(left)])).squeeze(-1).numpy()
    test_y = positive[~left]
    return dict(rgb=rgb, labels=labels, hed=hed, centroids=cent, dab=dab, positive=positive, left=left,
                n_nuclei=len(props), auroc=float(roc_auc_score(test_y, score)) if 0 < test_y.sum() < len(test_y) else float("nan"),
                test_score=score, h_only=h_only)
