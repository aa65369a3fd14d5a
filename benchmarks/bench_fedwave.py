"""One local client round of FedWave's federated LoRA (E steps of forward, backward and Adam on the adapters of a
frozen base): icml26.fedwave's `LoRALinear` vs the same frozen model wrapped by ``peft.get_peft_model`` (the
reference LoRA implementation on PyPI), same data, same batch, same initial factors.

Run: ``pytest benchmarks/bench_fedwave.py`` (``make bench``). The ratio is measured interleaved in one process
(`icml26.timing.interleaved_best`) and recorded in ``results/bench/fedwave.json``; the target is <= 1.1x peft.
"""
from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from icml26.fedwave import PRESETS, TinyDecoder, add_lora, lora_state, to_peft_state_dict
from icml26.fedwave import data as D
from icml26.fedwave.model import LORA_TARGETS, lm_loss
from icml26.timing import interleaved_best, record_bench

peft = pytest.importorskip("peft")

CFG = PRESETS["book"]
STEPS, BATCH, ROUNDS = 12, 32, 7


def _models():
    torch.manual_seed(0)
    base = TinyDecoder(CFG["d"], CFG["n_layers"], CFG["n_heads"])
    ours = copy.deepcopy(base)
    add_lora(ours, CFG["lora_r"], CFG["lora_alpha"])
    theirs = peft.get_peft_model(copy.deepcopy(base), peft.LoraConfig(r=CFG["lora_r"], lora_alpha=CFG["lora_alpha"],
                                                                     lora_dropout=0.0, target_modules=list(LORA_TARGETS)))
    peft.set_peft_model_state_dict(theirs, to_peft_state_dict(lora_state(ours)))
    return ours, theirs


def _round(model, ids, mask):
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.Adam(params, lr=CFG["lr"])
    g = torch.Generator().manual_seed(0)
    for _ in range(STEPS):
        idx = torch.randint(0, len(ids), (BATCH,), generator=g)
        loss = lm_loss(model(ids[idx]), ids[idx], mask[idx])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    return loss.detach().item()


def test_local_round_ours_vs_peft(benchmark):
    torch.set_num_threads(1)
    data = D.stage_pairs(2, 512, np.random.default_rng(0))
    ids, mask = D.encode(data.inputs, data.outputs)
    ours, theirs = _models()
    # same algorithm: the same losses step by step from the same factors
    assert _round(copy.deepcopy(ours), ids, mask) == pytest.approx(_round(copy.deepcopy(theirs), ids, mask), rel=1e-5)
    best = interleaved_best({"ours": lambda: _round(ours, ids, mask), "peft": lambda: _round(theirs, ids, mask)}, ROUNDS)
    rec = record_bench("fedwave", f"local client round ({STEPS} LoRA steps, d {CFG['d']}, batch {BATCH})", "icml26.fedwave.LoRALinear",
                       best["ours"], f"peft {peft.__version__} get_peft_model", best["peft"], ROUNDS,
                       note="frozen 2-layer decoder, LoRA r 4 on q,k,v,o,fc1,fc2; one torch thread")
    benchmark.pedantic(lambda: _round(ours, ids, mask), rounds=3, iterations=1)
    print(f"ours {best['ours'] * 1e3:.1f} ms, peft {best['peft'] * 1e3:.1f} ms, ratio {rec['ratio']:.3f}")
    assert rec["ratio"] <= 1.1
