"""Unit tests of icml26.cello (renderer, encoders, pooling vs torchmil, prototypes, Cello, bad input)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from icml26.cello import (PRESETS, Cello, CellEncoder, GatedAttentionPool, PrototypeHead, STAINS, auc, check_route_matrix,
                          check_stain_matrix, crops_to_tensor, deconvolve, dilution_monte_carlo, extract_crops,
                          extract_tiles, fit_mil, make_bags, make_cohort, make_model, make_slide, predict, protein_loss,
                          embed, rank_normalise, region_softmax, render_od, train_protein_encoder)
from icml26.cello import slides as sl


def test_presets_have_the_same_keys_at_every_scale():
    keys = {k: set(v) for k, v in PRESETS.items()}
    assert keys["smoke"] == keys["book"] == keys["full"]
    assert len(PRESETS["book"]["seeds"]) >= 3 and len(PRESETS["full"]["seeds"]) >= 10   # power (review 3)
    for cfg in PRESETS.values():
        assert cfg["cssl_steps"] == cfg["protein_steps"]             # C-SSL trains as long as the protein encoder
        assert {4, 12} <= set(cfg["m_sweep"])                          # C4b inside the training range
        assert max(cfg["del_ks"]) >= 2 * cfg["m_range"][1]             # deletion up to twice the largest lesion
        assert cfg["kappa0_slides"] % 2 == 0 and cfg["curve_seeds"] <= len(cfg["seeds"])


# ----------------------------------------------------------------------------- stains and slides

def test_render_and_rgb2hed_round_trip_h_and_dab():
    d = np.random.default_rng(0).uniform(0, 1.5, (16, 16, 3))
    back = deconvolve(render_od(d))
    assert np.abs(back[..., 0] - d[..., 0]).max() < 1e-2 and np.abs(back[..., 2] - d[..., 2]).max() < 1e-2


def test_singular_stain_matrix_is_rejected():
    bad = STAINS.copy()
    bad[2] = bad[0]
    with pytest.raises(ValueError, match="singular"):
        check_stain_matrix(bad)
    with pytest.raises(ValueError):
        render_od(np.zeros((2, 2, 3)), bad)


def test_slide_shortcuts_are_closed_cell_count_and_mean_h_density():
    rng = np.random.default_rng(0)
    for label in (0, 1):
        s = make_slide(np.random.default_rng(3), label, size=192, m=8)
        assert (s.types == sl.LESION).sum() == (8 if label else 0)
        assert (s.types == sl.MIMIC).sum() == (8 if label == 1 else 16)
    a = make_slide(np.random.default_rng(3), 0, size=192, m=8)
    b = make_slide(np.random.default_rng(3), 1, size=192, m=8)
    assert a.n_cells == b.n_cells
    # every nucleus of a lesion and a mimic carries the same mean hematoxylin density (exact matching)
    types = np.array([sl.LESION, sl.MIMIC] * 20)
    od, mask = sl._nuclei(rng, types, 0.7, 13, 0.0)
    mean = (od.sum((1, 2)) / mask.sum((1, 2)))
    assert abs(mean[types == sl.LESION].mean() - mean[types == sl.MIMIC].mean()) < 0.02


def test_kappa_zero_lesion_cells_render_like_normal_cells():
    types_l = np.full(30, sl.LESION)
    types_n = np.full(30, sl.NORMAL)
    od_l, _ = sl._nuclei(np.random.default_rng(5), types_l, 0.0, 13, 0.3)
    od_n, _ = sl._nuclei(np.random.default_rng(5), types_n, 0.0, 13, 0.3)
    np.testing.assert_allclose(od_l, od_n, atol=1e-12)


def test_kappa_zero_twins_are_pixel_identical_and_kappa_half_twins_are_not():
    """C4n's premise: at kappa = 0 a positive slide and its negative twin have the same H&E image, so no
    model can score them apart; at kappa > 0 the lesion shows."""
    from icml26.cello import make_twin_cohort
    twins = make_twin_cohort(5, 3, size=128, kappa=0.0)
    assert [s.label for s in twins] == [1, 0] * 3
    for pos, neg in zip(twins[::2], twins[1::2]):
        assert np.array_equal(pos.he, neg.he) and pos.lesion.sum() == pos.m and not neg.lesion.any()
    seen = make_twin_cohort(5, 3, size=128, kappa=0.5)
    assert not any(np.array_equal(p.he, n.he) for p, n in zip(seen[::2], seen[1::2]))
    with pytest.raises(ValueError):
        make_twin_cohort(5, 0)


@pytest.mark.parametrize("kw", [dict(kappa=1.5), dict(kappa=-0.1), dict(m=0), dict(m=500)])
def test_bad_slide_parameters(kw):
    with pytest.raises(ValueError):
        make_slide(np.random.default_rng(0), 1, size=192, **kw)


def test_crops_match_a_per_nucleus_loop_and_reject_oversized_crops():
    s = make_slide(np.random.default_rng(1), 1, size=128, m=4)
    crops = extract_crops(s.he, s.centroids, 12)
    pad = np.pad(s.he, ((6, 12), (6, 12), (0, 0)), constant_values=255)
    for i in (0, 7, len(crops) - 1):
        r, c = s.centroids[i]
        np.testing.assert_array_equal(crops[i], pad[r:r + 12, c:c + 12])
    with pytest.raises(ValueError, match="larger than the canvas"):
        extract_crops(s.he, s.centroids, 500)
    tiles, corners = extract_tiles(s.he, 64, 32)
    np.testing.assert_array_equal(tiles[1], s.he[0:64, 32:96])


def test_measured_protein_follows_the_marker_table():
    slides = make_cohort(0, 8, size=192)
    p = np.concatenate([s.protein for s in slides])
    t = np.concatenate([s.types for s in slides])
    pos = p[:, 0] > 0.15
    assert pos[t == sl.LESION].mean() > 0.7 and pos[t == sl.NORMAL].mean() < 0.15


# ----------------------------------------------------------------------------- encoders and losses

def test_protein_loss_and_targets_are_validated():
    logits = torch.zeros(4, 2)
    with pytest.raises(ValueError):
        protein_loss(logits, torch.ones(4, 2), torch.full((4, 2), 1.5))
    r = rank_normalise(np.array([[0.0, 0.5], [0.1, 0.0], [0.9, 0.3], [0.3, 0.2]]), 0.15)
    assert r.min() >= 0 and r.max() <= 1
    crops = torch.zeros(10, 3, 12, 12)
    with pytest.raises(ValueError, match="required"):
        train_protein_encoder(crops, None, dim=8, steps=1, batch=4, threshold=0.1)
    with pytest.raises(ValueError, match="NaN"):
        train_protein_encoder(crops, np.full((10, 2), np.nan), dim=8, steps=1, batch=4, threshold=0.1)
    with pytest.raises(ValueError, match="NaN"):
        CellEncoder(8)(torch.full((2, 3, 12, 12), float("nan")))


# ----------------------------------------------------------------------------- pooling vs torchmil

def test_gated_pool_equals_torchmil_attention_pool_on_masked_bags():
    from torchmil.nn import AttentionPool
    torch.manual_seed(0)
    theirs = AttentionPool(in_dim=32, att_dim=16, gated=True)
    ours = GatedAttentionPool(32, 16).load_torchmil(theirs)
    X = torch.randn(4, 50, 32)
    mask = torch.ones(4, 50)
    mask[1, 30:] = 0
    mask[3, 5:] = 0
    z_t, f_t = theirs(X, mask, return_att=True)
    z_o, a_o, f_o = ours(X, mask)
    assert torch.allclose(z_t, z_o, atol=1e-6) and torch.allclose(f_t, f_o, atol=1e-6)
    assert torch.allclose(a_o.sum(1), torch.ones(4), atol=1e-6) and (a_o[mask == 0] == 0).all()


@pytest.mark.parametrize("bad", ["empty", "nan", "shape"])
def test_pool_rejects_bad_bags(bad):
    pool = GatedAttentionPool(8, 4)
    X, mask = torch.randn(2, 5, 8), torch.ones(2, 5)
    if bad == "empty":
        mask[0] = 0
    elif bad == "nan":
        X[0, 0, 0] = float("inf")
    else:
        mask = torch.ones(2, 4)
    with pytest.raises(ValueError):
        pool(X, mask)
    with pytest.raises(ValueError):
        pool(torch.zeros(2, 0, 8))


def test_region_softmax_sums_to_one_per_region():
    f = torch.randn(2, 9)
    region = torch.tensor([[0, 0, 1, 1, 1, 2, 2, 2, 2]] * 2)
    onehot = torch.nn.functional.one_hot(region, 3).float()
    a = region_softmax(f, onehot)
    sums = torch.einsum("bn,bnr->br", a, onehot)
    assert torch.allclose(sums, torch.ones(2, 3), atol=1e-6)


# ----------------------------------------------------------------------------- prototypes

def test_prototypes_kmeans_add_class_and_errors():
    rng = np.random.default_rng(0)
    centres = np.eye(4)[:3] * 3
    z = np.concatenate([c + 0.1 * rng.standard_normal((20, 4)) for c in centres])
    y = np.repeat(np.arange(3), 20)
    head = PrototypeHead(3, 4, n_protos=2, tau=0.1).init_kmeans(z, y)
    assert (head.scores(torch.tensor(z, dtype=torch.float32)).argmax(1).numpy() == y).mean() == 1.0
    new = np.eye(4)[3] * 3 + 0.1 * rng.standard_normal((5, 4))
    k = head.add_class(torch.tensor(new, dtype=torch.float32))
    assert k == 3 and (head.scores(torch.tensor(new, dtype=torch.float32)).argmax(1) == 3).all()
    with pytest.raises(ValueError, match="tau"):
        PrototypeHead(3, 4, tau=0.0)
    with pytest.raises(ValueError, match="no example"):
        PrototypeHead(3, 4).init_kmeans(z[:40], y[:40])
    with pytest.raises(ValueError, match="local labels"):
        head.loss(torch.randn(2, 4), torch.tensor([0, 7]))


def test_dead_prototypes_are_reseeded():
    head = PrototypeHead(1, 2, n_protos=3)
    z = torch.tensor([[1.0, 0.0]] * 4)
    with torch.no_grad():
        head.protos[0] = torch.tensor([[1.0, 0.0], [-1.0, 0.0], [0.0, -1.0]])
    assert head.reseed_dead(z, torch.zeros(4, dtype=torch.long)) == 2


# ----------------------------------------------------------------------------- Cello model

def _toy_bags(seed=0, n=40, cells=30, regions=4, d=8, signal=3.0):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(n, cells, d, generator=g)
    Y = torch.arange(n) % 2
    region = torch.randint(regions, (n, cells), generator=g)
    pos = torch.zeros(n, cells, dtype=torch.bool)
    pos[Y == 1, :3] = True
    X[pos] += signal
    rl = torch.full((n, regions), -1)
    for i in range(n):
        rl[i, region[i, 0]] = 2 if Y[i] else 0
        rl[i, (region[i, 0] + 1) % regions] = 1 if i % 3 == 0 else -1
    return make_bags(list(X), Y.numpy(), list(region.numpy()), list(rl.numpy()), list(pos.numpy()), n_regions=regions)


def test_cello_learns_and_is_permutation_invariant():
    bags = _toy_bags()
    model = make_model("cello", 8, 4, dim=8, att_dim=8)
    fit_mil(model, bags, epochs=25, lr=3e-3, batch=8, seed=0)
    test = _toy_bags(seed=1)
    score, att = predict(model, test)
    assert auc(test.Y.numpy(), score) > 0.9
    assert np.allclose(att.sum(1), 1, atol=1e-5)
    perm = torch.randperm(30)
    s2 = model.predict(test.X[:, perm], test.mask[:, perm], test.region[:, perm], return_inst_pred=False)
    assert torch.allclose(torch.as_tensor(score, dtype=torch.float32), s2, atol=1e-5)


def test_cello_global_head_behaves_like_torchmil_abmil_on_the_mil_unit_test_sets():
    """torchmil's MCStandardMILDataset (Raff & Holt 2023): both learn the clean rule; on the poisoned test
    bags both fail the same way (attention MIL is known to fail this algorithmic unit test)."""
    from torchmil.datasets import MCStandardMILDataset

    def bags(ds):
        return make_bags([ds[i]["X"] for i in range(len(ds))], [int(ds[i]["Y"]) for i in range(len(ds))])
    torch.manual_seed(0)
    tr = bags(MCStandardMILDataset(D=4, num_bags=60, seed=0))
    clean, poisoned = bags(MCStandardMILDataset(D=4, num_bags=60, seed=1)), bags(MCStandardMILDataset(D=4, num_bags=60, train=False, seed=1))
    res = {}
    for kind, kw in (("gated", {}), ("cello", dict(dim=8, att_dim=8, gamma=0.0, local="linear"))):
        model = make_model(kind, 4, 1, **kw)
        fit_mil(model, tr, epochs=40, lr=3e-3, batch=8, seed=0)
        res[kind] = (auc(clean.Y.numpy(), predict(model, clean)[0]), auc(poisoned.Y.numpy(), predict(model, poisoned)[0]))
    assert res["gated"][0] > 0.8 and res["cello"][0] > 0.8
    assert (res["gated"][1] < 0.5) == (res["cello"][1] < 0.5)


def test_cello_bad_input():
    model = Cello(8, 4)
    X = torch.randn(2, 5, 8)
    with pytest.raises(ValueError, match="leakage"):
        model.predict(X, protein=torch.rand(2, 5))
    with pytest.raises(ValueError, match="declared classes"):
        model.compute_loss(torch.tensor([0, 2]), X)
    with pytest.raises(ValueError, match="dimensional"):
        model(torch.randn(2, 5, 7))
    with pytest.raises(ValueError, match="region"):
        model(X, region=torch.full((2, 5), 9))
    with pytest.raises(ValueError, match="sum 1"):
        check_route_matrix([[1.0, 0.5, 0.0], [0.0, 0.0, 1.0]], 3)
    with pytest.raises(ValueError):
        Cello(8, 4, pool="max")
    with pytest.raises(ValueError, match="no cells"):
        make_bags([torch.zeros(0, 8)], [1])


def test_consistency_is_zero_when_routes_agree_and_positive_otherwise():
    from icml26.cello import kl
    p = torch.tensor([[0.3, 0.7]])
    assert float(kl(p, p)) == pytest.approx(0.0, abs=1e-7)
    assert float(kl(p, torch.tensor([[0.6, 0.4]]))) > 0


def test_dilution_monte_carlo_matches_phi():
    r = dilution_monte_carlo(6, 25, 1.0, 1.0, 4000, seed=0)
    assert abs(r["cell"] - r["cell_theory"]) < 0.03 and abs(r["patch"] - r["patch_theory"]) < 0.03
    with pytest.raises(ValueError):
        dilution_monte_carlo(30, 25, 1.0, 1.0, 100)


def test_foundation_encoder_is_wider_and_pools_average_and_max():
    from icml26.cello import FoundationEncoder, PatchEncoder
    fm, small = FoundationEncoder(32, width=2), PatchEncoder(32)
    x = torch.rand(3, 3, 64, 64)
    assert fm(x).shape == small(x).shape == (3, 32)
    assert sum(p.numel() for p in fm.parameters()) > 3 * sum(p.numel() for p in small.parameters())
    with pytest.raises(ValueError, match="NaN"):
        fm(torch.full((1, 3, 64, 64), float("nan")))


def test_curve_helpers():
    from icml26.cello.experiments import chunk_mean, probit_dprime
    steps, means = chunk_mean(np.arange(100.0), 4)
    assert steps == [25, 50, 75, 100] and means == [12.0, 37.0, 62.0, 87.0]
    assert probit_dprime(0.5) == pytest.approx(0.0) and probit_dprime(0.76) > 0 > probit_dprime(0.3)
    from icml26.cello.theory import oracle_auc
    assert oracle_auc(probit_dprime(0.8)) == pytest.approx(0.8)


def test_crops_to_tensor_is_optical_density():
    x = crops_to_tensor(np.full((1, 4, 4, 3), 255, dtype=np.uint8))
    assert x.shape == (1, 3, 4, 4) and float(x.abs().max()) < 1e-6


def test_nt_xent_equals_pytorch_metric_learning():
    pml = pytest.importorskip("pytorch_metric_learning.losses")
    from icml26.cello.encoders import nt_xent
    z = torch.randn(32, 8, generator=torch.Generator().manual_seed(0))
    ref = pml.NTXentLoss(temperature=0.1)(z, torch.arange(16).repeat(2))
    assert float(nt_xent(z, 0.1)) == pytest.approx(float(ref), abs=1e-5)


# ----------------------------------------------------------------------------- revision of issue 51

def test_split_slides_is_disjoint_and_the_validation_set_is_label_balanced():
    from icml26.cello.experiments import split_slides
    slides = make_cohort(3, 20, size=128, m=6)
    tr, va, te = split_slides(slides, 8, 6)
    ids = [id(s) for s in tr + va + te]
    assert len(ids) == len(set(ids)) == 20 and tr == slides[:8]
    assert sorted(s.label for s in va) == [0, 0, 0, 1, 1, 1]


def test_tile_mean_bags_average_the_cells_of_each_tile():
    from icml26.cello.experiments import Encoded, tile_mean_bags
    cfg = dict(size=128, tile=64)
    s = make_slide(np.random.default_rng(0), 1, size=128, m=6)
    h = torch.randn(s.n_cells, 5)
    b = tile_mean_bags(Encoded([s], [h], [], [], [], []), cfg)
    occupied = np.unique(s.region)
    assert int(b.mask[0].sum()) == len(occupied)
    for j, r in enumerate(occupied):
        assert torch.allclose(b.X[0, j], h[torch.as_tensor(s.region == r)].mean(0), atol=1e-6)
        assert bool(b.inst_pos[0, j]) == bool(s.lesion[s.region == r].any())


def test_ablations_start_from_the_same_weights():
    """Two models built by _fit_eval (no training epochs) are identical even when the global RNG moved in
    between: the initialisation is drawn from the seed (review 2, finding c)."""
    from icml26.cello.experiments import _fit_eval
    bags = _toy_bags()
    cfg = dict(dim=8, size=128, tile=64, epochs=0, lr=1e-3, lr_mil=1e-3, batch=8)
    m1 = _fit_eval("gated", bags, bags, cfg, seed=4)[0]
    torch.randn(1000)
    m2 = _fit_eval("gated", bags, bags, cfg, seed=4)[0]
    m3 = _fit_eval("gated", bags, bags, cfg, seed=5)[0]
    p1, p2, p3 = (torch.cat([p.flatten() for p in m.parameters()]) for m in (m1, m2, m3))
    assert torch.equal(p1, p2) and not torch.equal(p1, p3)


def test_early_stopping_restores_the_weights_of_the_best_validation_epoch():
    tr, va = _toy_bags(), _toy_bags(seed=1)
    model = make_model("gated", 8, 1)
    torch.manual_seed(0)
    fit_mil(model, tr, epochs=12, lr=3e-3, batch=8, seed=0, val=va)
    assert 0.2 * 12 <= model.best_epoch < 12
    assert auc(va.Y.numpy(), predict(model, va)[0]) == pytest.approx(model.val_auc)
    # the learning curve of the selected model: best validation AUC so far, one point per epoch after the warm-up
    assert model.val_epochs == list(range(3, 12)) and len(model.val_curve) == 9
    assert np.all(np.diff(model.val_curve) >= 0) and model.val_curve[-1] == model.val_auc
    model2 = make_model("gated", 8, 1)
    fit_mil(model2, tr, epochs=12, lr=3e-3, batch=8, seed=0)
    assert np.isnan(model2.val_auc) and model2.best_epoch == 11


def test_pooled_baseline_returns_the_validation_auc_on_request():
    from icml26.cello.train import pooled_baseline
    tr, va = _toy_bags(), _toy_bags(seed=1)
    t = pooled_baseline(tr, tr, "mean", 0)
    t2, v = pooled_baseline(tr, tr, "mean", 0, val=va)
    assert t == t2 and v == pooled_baseline(tr, va, "mean", 0)


def test_oracle_deletion_drops_the_prediction_more_than_random_deletion():
    """C7p's ranking (the true positive instances first) moves a model that uses them: the control can pass."""
    from icml26.cello.train import deletion_aopc
    bags = _toy_bags()
    model = make_model("cello", 8, 4, dim=8, att_dim=8)
    fit_mil(model, bags, epochs=25, lr=3e-3, batch=8, seed=0)
    oracle = deletion_aopc(model, bags, bags.inst_pos.numpy().astype(float), (1, 2, 4))
    rnd = deletion_aopc(model, bags, np.random.default_rng(0).random(bags.inst_pos.shape), (1, 2, 4))
    assert oracle > rnd + 0.1   # on a toy where the positive instances carry the label (C7p's margin, on the logit)
    # the relabelled chance baseline's bags keep the instances and change only the labels
    from icml26.cello.experiments import relabel
    flipped = relabel(bags, 1 - bags.Y.numpy())
    assert torch.equal(flipped.X, bags.X) and torch.equal(flipped.Y, 1 - bags.Y)
    # every logit pushed below 0 (a model early-stopped on AUC has no calibrated offset): the positives it
    # ranks correctly are the same, and so is the AOPC (it was NaN with "logit > 0", C7 at book in 8a5b3bd)
    import copy
    negative = copy.deepcopy(model)
    with torch.no_grad():
        negative.classifier.bias.sub_(20.0)
    assert (predict(negative, bags)[0] < 0).all()
    ranking = np.random.default_rng(1).random(bags.inst_pos.shape)
    assert deletion_aopc(negative, bags, ranking, (1, 2)) == pytest.approx(deletion_aopc(model, bags, ranking, (1, 2)), abs=1e-4)
    assert np.isfinite(deletion_aopc(negative, bags, np.zeros(bags.inst_pos.shape), (1,), only_correct=False))
    with pytest.raises(ValueError, match="deletion sizes"):
        deletion_aopc(model, bags, np.zeros(bags.inst_pos.shape), (0,))


def test_ranked_correct_is_calibration_free():
    """The positives deletion is averaged over: above the median negative logit, whatever the offset;
    none when every positive is ranked at or below it (deletion_aopc is then NaN)."""
    from icml26.cello.train import ranked_correct
    y = np.array([0, 0, 0, 1, 1, 1])
    logits = np.array([-9.0, -8.0, -7.0, -8.5, -7.5, -6.0])
    assert ranked_correct(logits, y).tolist() == [False, False, False, False, True, True]
    assert ranked_correct(logits + 100, y).tolist() == ranked_correct(logits, y).tolist()
    assert not ranked_correct(np.array([0.0, 1, 2, -1, 0, 1]), y).any()
    with pytest.raises(ValueError, match="negative slide"):
        ranked_correct(np.zeros(2), np.ones(2))


def test_cosine_schedule_ends_at_its_floor():
    from icml26.cello.encoders import cosine_schedule
    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=1.0)
    sched = cosine_schedule(opt, 10, 0.05)
    rates = []
    for _ in range(12):
        rates.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    assert rates[0] == pytest.approx(1.0) and rates[10] == pytest.approx(0.05) and rates[11] == pytest.approx(0.05)
    assert np.all(np.diff(rates) <= 1e-12)
    with pytest.raises(ValueError, match="floor"):
        cosine_schedule(opt, 10, 0.0)


def test_protein_encoder_records_a_held_out_learning_curve():
    """The curve the chapter judges: the protein loss on a fixed balanced sample of held-out cells, at evenly
    spaced steps (the training batches change with the hard-negative mining)."""
    rng = np.random.default_rng(0)
    crops = torch.rand(64, 3, 12, 12)
    protein = rng.random((64, 2)) * 0.4
    enc, head, curves = train_protein_encoder(crops, protein, dim=8, steps=10, batch=8, threshold=0.15, hard_every=4,
                                              monitor=(crops[:32], protein[:32]), monitor_points=5)
    assert curves["steps"] == [2, 4, 6, 8, 10] and len(curves["monitor"]) == 5 and len(curves["train"]) == 10
    assert np.all(np.isfinite(curves["monitor"]))
    with pytest.raises(ValueError, match="monitor protein"):
        train_protein_encoder(crops, protein, dim=8, steps=2, batch=8, threshold=0.15, monitor=(crops[:32], protein[:16]))


def test_aggregators_read_embeddings_standardised_on_the_training_slides():
    from icml26.cello.experiments import Encoders, cell_tensors, zscore, zscore_fit
    feats = [torch.randn(30, 4) * 5 + 3, torch.randn(20, 4) * 5 + 3]
    stats = zscore_fit(feats)
    z = torch.cat(zscore(feats, stats))
    assert torch.allclose(z.mean(0), torch.zeros(4), atol=1e-5) and torch.allclose(z.std(0), torch.ones(4), atol=1e-5)
    encs = Encoders.__new__(Encoders)   # no training: only the standardisation bookkeeping
    encs.cell = encs.cell_ssl = CellEncoder(8).eval()
    encs.patch = encs.fm = None
    encs.stats = {}
    cfg = dict(crop=12, tile=64, size=128, spacing=12.0)
    slides = make_cohort(0, 2, size=128, m=4)
    with pytest.raises(ValueError, match="training slides first"):
        encs.encode(slides, cfg, ("cells",))
    tr = encs.encode(slides, cfg, ("cells",), fit=True)
    h = torch.cat(tr.cells)
    assert torch.allclose(h.mean(0), torch.zeros(8), atol=1e-4)
    raw = torch.cat([embed(encs.cell, x) for x in cell_tensors(slides, cfg)])
    assert torch.allclose(encs.raw_cells(h), raw, atol=1e-4)
