"""Gaussian primitives (brief 2.1): means, log-scales, (w, x, y, z) quaternions, sigmoid opacities, and real
spherical-harmonic colour coefficients up to degree 3 with the 3DGS constants (``SH_C0..SH_C3``)."""
from __future__ import annotations

import math

import numpy as np
import torch

SH_C0 = 0.28209479177387814
SH_C1 = 0.4886025119029199
SH_C2 = (1.0925484305920792, -1.0925484305920792, 0.31539156525252005, -1.0925484305920792, 0.5462742152960396)
SH_C3 = (-0.5900435899266435, 2.890611442640554, -0.4570457994644658, 0.3731763325901154, -0.4570457994644658,
         1.445305721320277, -0.5900435899266435)


def sh_degree(n_coeffs: int) -> int:
    """L from the coefficient count (L+1)^2, L <= 3; anything else is a ValueError."""
    L = int(round(math.sqrt(n_coeffs))) - 1
    if (L + 1) ** 2 != n_coeffs or not 0 <= L <= 3:
        raise ValueError(f"sh: the coefficient count must be (L+1)^2 with 0 <= L <= 3, got {n_coeffs}")
    return L


def sh_basis(dirs: torch.Tensor, L: int) -> torch.Tensor:
    """The 3DGS real SH basis at unit directions (..., 3): (..., (L+1)^2), with the 3DGS sign conventions."""
    x, y, z = dirs.unbind(-1)
    out = [torch.full_like(x, SH_C0)]
    if L >= 1:
        out += [-SH_C1 * y, SH_C1 * z, -SH_C1 * x]
    if L >= 2:
        xx, yy, zz, xy, yz, xz = x * x, y * y, z * z, x * y, y * z, x * z
        out += [SH_C2[0] * xy, SH_C2[1] * yz, SH_C2[2] * (2 * zz - xx - yy), SH_C2[3] * xz, SH_C2[4] * (xx - yy)]
    if L >= 3:
        out += [SH_C3[0] * y * (3 * xx - yy), SH_C3[1] * xy * z, SH_C3[2] * y * (4 * zz - xx - yy),
                SH_C3[3] * z * (2 * zz - 3 * xx - 3 * yy), SH_C3[4] * x * (4 * zz - xx - yy),
                SH_C3[5] * z * (xx - yy), SH_C3[6] * x * (xx - 3 * yy)]
    return torch.stack(out, -1)


def eval_sh(dirs: torch.Tensor, coeffs: torch.Tensor) -> torch.Tensor:
    """sum_lm k_lm Y_lm(d) for coefficients (N, (L+1)^2, 3) at unit directions (N, 3): (N, 3), no +0.5."""
    L = sh_degree(coeffs.shape[-2])
    return torch.einsum("nk,nkc->nc", sh_basis(dirs, L), coeffs)


def quat_to_rotmat(q: torch.Tensor) -> torch.Tensor:
    """Unit (w, x, y, z) quaternions (N, 4) to rotation matrices (N, 3, 3) (the gsplat / kornia convention)."""
    w, x, y, z = torch.nn.functional.normalize(q, dim=-1).unbind(-1)
    return torch.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y),
                        2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x),
                        2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1).reshape(-1, 3, 3)


class GaussianModel(torch.nn.Module):
    """N anisotropic 3D Gaussians (brief 2.1). Parameters are raw: scales = exp(log_scales),
    opacity = sigmoid(opacity_logits), rotation from normalised quaternions; the SH coefficients are two parameters
    as in 3DGS (``sh_dc`` the degree-0 band (N, 1, 3), ``sh_rest`` the view-dependent bands (N, (L+1)^2 - 1, 3)),
    so an optimizer can give them their own learning rates; ``sh`` is their concatenation (read-only)."""

    def __init__(self, means, log_scales, quats, opacity_logits, sh):
        super().__init__()
        tensors = dict(means=means, log_scales=log_scales, quats=quats, opacity_logits=opacity_logits, sh=sh)
        tensors = {k: torch.as_tensor(v, dtype=torch.float32) for k, v in tensors.items()}
        N = tensors["means"].shape[0]
        shapes = dict(means=(N, 3), log_scales=(N, 3), quats=(N, 4), opacity_logits=(N,))
        for name, shape in shapes.items():
            if tuple(tensors[name].shape) != shape:
                raise ValueError(f"GaussianModel: {name} must have shape {shape}, got {tuple(tensors[name].shape)}")
        if tensors["sh"].ndim != 3 or tensors["sh"].shape[0] != N or tensors["sh"].shape[2] != 3:
            raise ValueError(f"GaussianModel: sh must have shape (N, (L+1)^2, 3), got {tuple(tensors['sh'].shape)}")
        self.L = sh_degree(tensors["sh"].shape[1])
        sh = tensors.pop("sh")
        tensors["sh_dc"], tensors["sh_rest"] = sh[:, :1], sh[:, 1:]
        for name, value in tensors.items():
            setattr(self, name, torch.nn.Parameter(value.clone()))
        self.validate()

    @property
    def sh(self) -> torch.Tensor:
        """All SH coefficients (N, (L+1)^2, 3): ``sh_dc`` then ``sh_rest``."""
        return torch.cat([self.sh_dc, self.sh_rest], 1)

    def validate(self) -> None:
        """Non-finite parameters or a zero-norm quaternion: a ValueError naming the argument."""
        for name in ("means", "log_scales", "quats", "opacity_logits", "sh_dc", "sh_rest"):
            if not bool(torch.isfinite(getattr(self, name)).all()):
                raise ValueError(f"GaussianModel: {name} has non-finite entries")
        if bool((self.quats.detach().norm(dim=-1) < 1e-12).any()):
            raise ValueError("GaussianModel: quats has a zero-norm quaternion (no rotation defined)")

    def __len__(self) -> int:
        return self.means.shape[0]

    @property
    def scales(self):
        return self.log_scales.exp()

    @property
    def opacities(self):
        return torch.sigmoid(self.opacity_logits)

    def rotations(self):
        return quat_to_rotmat(self.quats)

    def covariances(self):
        Rm = self.rotations()
        S = self.scales
        M = Rm * S[:, None, :]
        return M @ M.transpose(-1, -2)

    active_sh: int | None = None   # progressive SH (3DGS/official: one degree more every 1000 of 30k iterations)

    def colors(self, cam_center: torch.Tensor) -> torch.Tensor:
        """View-dependent colour c_i(d) = max(0, sum k Y(d) + 0.5), d from the camera centre to mu_i, over the
        bands up to ``active_sh`` (all when None)."""
        d = torch.nn.functional.normalize(self.means - cam_center, dim=-1)
        sh = self.sh if self.active_sh is None else self.sh[:, : (min(self.active_sh, self.L) + 1) ** 2]
        return torch.clamp_min(eval_sh(d, sh) + 0.5, 0.0)

    @classmethod
    def from_points(cls, points: np.ndarray, colors: np.ndarray, sh_degree_: int, seed: int,
                    opacity: float = 0.3) -> "GaussianModel":
        """3DGS/official initialisation (``gaussian_model.py create_from_pcd``): isotropic scales sqrt(mean squared
        distance to the 3 nearest neighbours, clamped at 1e-7), near-identity rotations, SH DC from the colours,
        higher bands zero. Deviation, named: one opacity of 0.3, not the official 0.1, because nothing here
        densifies and the schedules are 60-250x shorter (a few hundred Gaussians must cover the views quickly)."""
        from scipy.spatial import cKDTree

        points = np.asarray(points, float)
        if points.ndim != 2 or points.shape[1] != 3 or len(points) < 4:
            raise ValueError(f"from_points: points must be (N >= 4, 3), got {points.shape}")
        if not 0 < opacity < 1:
            raise ValueError(f"from_points: opacity must be in (0, 1), got {opacity}")
        if not 0 <= sh_degree_ <= 3:
            raise ValueError(f"from_points: sh_degree must be in 0..3, got {sh_degree_}")
        dist, _ = cKDTree(points).query(points, k=4)
        s = np.log(np.sqrt(np.clip((dist[:, 1:] ** 2).mean(1), 1e-7, None)))
        rng = np.random.default_rng(seed)
        q = np.tile([1.0, 0, 0, 0], (len(points), 1)) + 0.05 * rng.standard_normal((len(points), 4))
        sh = np.zeros((len(points), (sh_degree_ + 1) ** 2, 3))
        sh[:, 0] = (np.clip(colors, 0, 1) - 0.5) / SH_C0
        logit = math.log(opacity / (1 - opacity))
        return cls(points, np.repeat(s[:, None], 3, 1), q, np.full(len(points), logit), sh)
