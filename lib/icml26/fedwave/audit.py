"""Audits of the released code (``Cochain1/FedWave`` at cc4fe24), each re-expressed in a few lines and measured.

The release is read, not run (it needs Llama-3-8B, a GPU and a data file it does not ship). Each function below
re-expresses the lines it cites and measures what they do; each returns a number that would be different if the
release did otherwise, and a control that runs the same measurement on a path where the effect is present.

* `router_logit_effect` (``moe_improved_model.py:63-94``): the forward computes the router's scores, stores them
  and uses them in the *loss* (lines 113-129); the logits are ``lm_head(VCL(h, current_stage_id))``. Two different
  routers give the same logits. Control: the chapter's output fusion (`evaluate.decode`'s mixture), where the gates
  do reach the next-token distribution.
* `preference_bypass` (``generate_preference_pairs.py:90-117``): to sample an expert's answer the script sets
  ``model.current_stage_id`` and calls ``model.base_model.generate`` (and the wrapper's own ``generate`` is the same
  bound method, proxied in ``moe_improved_model.py:41-49``): the PEFT model, without the VCL, for every expert. The
  chosen and rejected answers are two samples of one distribution, so a pair is in the better order with
  probability 1/2: the label accuracy q = 1/2 of the chapter's DPO theory, an optimal margin logit(1/2)/beta = 0.
  Control: the chapter's pairs, sampled through each expert's stage-conditioned head.
* `default_run_audit` (``main_sft_moe.py:293-306, 497-523``, ``custom_trainer.py:7-20``,
  ``moe_improved_model.py:87-94, 157-166``), on a tiny Hugging Face Llama wrapped by ``peft``, as the release wraps
  Llama-3-8B:

  - the Trainer is built with ``model=model.base_model`` (the PEFT model), so its optimizer holds the LoRA factors
    and neither the value chain layer nor the router (both live on the wrapper); control: the same Trainer built on
    the wrapper holds them;
  - ``_get_actual_hf_model`` follows ``.model`` while it exists: PeftModel -> LlamaForCausalLM -> LlamaModel, which
    has no ``lm_head``, so the forward takes ``base_outputs.logits`` and the VCL's output is discarded (its losses
    are returned as constant zeros, line 168-178): the VCL gets no gradient. Control: the ``lm_head`` one level up,
    where the stage does change the logits.
"""
from __future__ import annotations

import tempfile
from collections.abc import Sequence

import numpy as np
import torch
from torch import nn

from .data import BOS, N_STAGES, SEP, encode
from .evaluate import decode
from .router import top_k_gates
from .vcl import AffineVCL


class ReleasedWrapper(nn.Module):
    """``ImprovedMoEValueChainModel`` (moe_improved_model.py:10-94), the parts that decide the logits and what
    ``generate`` runs. ``base_model`` must offer ``hidden(ids)`` and ``lm_head`` (the chapter's adapted trunk)."""

    def __init__(self, base_model, value_chain_layer: nn.Module | None, moe_router: nn.Module | None):
        super().__init__()
        self.base_model, self.value_chain_layer, self.moe_router = base_model, value_chain_layer, moe_router
        self.current_stage_id = 0
        self.last_routing_scores = None

    def forward(self, ids: torch.Tensor, stage_id: int | None = None) -> torch.Tensor:
        if stage_id is not None:
            self.current_stage_id = stage_id
        h = self.base_model.hidden(ids)                                     # hidden_states[-1]
        if self.moe_router is not None:
            self.last_routing_scores = self.moe_router(h.mean(1))           # stored; used by the loss only
        if self.value_chain_layer is not None:
            h = self.value_chain_layer(h, torch.full((ids.shape[0],), self.current_stage_id))
        return self.base_model.lm_head(h)                                   # lm_head(VCL(h)): no routing term


class _Trunk(nn.Module):
    """The adapted trunk of a chapter model and its ``lm_head``, with no VCL: the PEFT model of the release."""

    def __init__(self, model):
        super().__init__()
        self.model_ = model

    def hidden(self, ids):
        return self.model_.hidden(ids)

    @property
    def lm_head(self):
        return self.model_.base.lm_head


class _Bypass:
    """What ``model.base_model.generate`` samples from: the trunk and ``lm_head``, whatever ``current_stage_id``
    says (duck-typed for `evaluate.decode`: ``hidden`` and ``head(h, stage)``)."""

    def __init__(self, wrapper: ReleasedWrapper):
        self.wrapper = wrapper

    def hidden(self, ids):
        return self.wrapper.base_model.hidden(ids)

    def head(self, h, stage):
        return self.wrapper.base_model.lm_head(h)                           # stage ignored: no VCL on this path


def _router(d: int, seed: int) -> nn.Module:
    g = torch.Generator().manual_seed(seed)
    r = nn.Sequential(nn.Linear(d, d), nn.ReLU(), nn.Linear(d, N_STAGES), nn.Softmax(-1))   # MoERouter's MLP
    with torch.no_grad():
        for p in r.parameters():
            p.copy_(torch.randn(p.shape, generator=g) / p.shape[-1] ** 0.5)
    return r


def _tv(logits_a: torch.Tensor, logits_b: torch.Tensor) -> float:
    """Largest total-variation distance between the next-token distributions at any position."""
    return float(0.5 * (torch.softmax(logits_a, -1) - torch.softmax(logits_b, -1)).abs().sum(-1).max())


@torch.no_grad()
def router_logit_effect(model, inputs: Sequence[Sequence[int]], seed: int = 0) -> dict[str, float]:
    """``released``: max |logits(router A) - logits(router B)| of the re-expressed released forward, at every stage
    id and position of ``inputs`` (a trained chapter model with its VCL). ``fusion_control``: the largest TV distance
    between the chapter's top-2 fused next-token distributions under the same two routers' gates (> 0: gates that
    reach the output do change it)."""
    ids = torch.tensor([[BOS, *z, SEP] for z in inputs if len(z) == len(inputs[0])], dtype=torch.long)
    d = model.base.d
    diff = 0.0
    for s in range(N_STAGES):
        la = ReleasedWrapper(_Trunk(model), model.vcl, _router(d, seed))(ids, stage_id=s)
        lb = ReleasedWrapper(_Trunk(model), model.vcl, _router(d, seed + 1))(ids, stage_id=s)
        diff = max(diff, float((la - lb).abs().max()))
    h = model.hidden(ids)
    feats = h.mean(1)
    mix = []
    for r in (_router(d, seed), _router(d, seed + 1)):
        g = torch.tensor(top_k_gates(r(feats).numpy(), 2), dtype=torch.float32)
        p = sum(g[:, k:k + 1, None] * torch.softmax(model.head(h, torch.full((len(ids),), k)), -1) for k in range(N_STAGES))
        mix.append(p)
    control = float(0.5 * (mix[0] - mix[1]).abs().sum(-1).max())
    return {"released": diff, "fusion_control": control}


@torch.no_grad()
def preference_bypass(model, inputs: Sequence[Sequence[int]], outputs: Sequence[Sequence[int]], gates: np.ndarray,
                      seed: int = 0) -> dict[str, float]:
    """The released pair generator re-expressed on a trained chapter model. ``released_tv``: the largest TV distance,
    over every position of ``BOS x SEP y EOS`` (y the true answer) and every input, between the distributions the
    generator samples for the router's top-1 and top-2 experts (0: one distribution). ``chapter_tv``: the same through
    the experts' own heads (the chapter's `make_pairs`). ``released_q`` / ``n_decisive``: the share, among sampled pairs
    with exactly one correct answer, of those where the top-1 expert's answer is the correct one (T = 0.7, top-p 0.9,
    as the script), and their number."""
    order = np.argsort(-np.asarray(gates), axis=1, kind="stable")
    ids, _ = encode(inputs, outputs)
    wrapper = ReleasedWrapper(_Trunk(model), model.vcl, None)
    bypass = _Bypass(wrapper)
    h = model.hidden(ids)
    top1, top2 = torch.as_tensor(order[:, 0]), torch.as_tensor(order[:, 1])
    released_tv = _tv(bypass.head(h, top1), bypass.head(h, top2))
    chapter_tv = _tv(model.head(h, top1), model.head(h, top2))
    gen = torch.Generator().manual_seed(seed)
    ans = []
    for col in (0, 1):
        one = np.zeros_like(np.asarray(gates))
        one[np.arange(len(one)), order[:, col]] = 1.0
        wrapper.current_stage_id = order[:, col]                           # set, then never read by generate
        ans.append(decode(bypass, inputs, one, temperature=0.7, top_p=0.9, gen=gen))
    right = [(w == tuple(y), l == tuple(y)) for w, l, y in zip(ans[0], ans[1], outputs)]
    decisive = [a for a, b in right if a != b]
    return {"released_tv": released_tv, "chapter_tv": chapter_tv,
            "released_q": float(np.mean(decisive)) if decisive else float("nan"), "n_decisive": len(decisive)}


def released_lm_head_owner(model):
    """``_get_actual_hf_model`` (moe_improved_model.py:157-166): follow ``.model`` while it exists, then try
    ``get_base_model``. Returns the object whose ``lm_head`` the released forward looks for."""
    m = model
    while hasattr(m, "model"):
        m = m.model
    if hasattr(m, "get_base_model"):
        try:
            m = m.get_base_model()
        except Exception:  # the release swallows the error too
            pass
    return m


def default_run_audit(seed: int = 0) -> dict[str, float | str]:
    """The release's training path on a tiny Hugging Face Llama wrapped by ``peft`` (LoRA on the seven projections,
    as ``config.py``), with the released VCL (`AffineVCL`, ``W^O(h + e_s)``, e_s ~ N(0, 1) as released) and router:

    * ``vcl_in_optimizer`` / ``router_in_optimizer`` / ``lora_in_optimizer``: parameters of each that the
      ``transformers.Trainer`` built with ``model=model.base_model`` (main_sft_moe.py:515-523) puts in its optimizer;
      ``vcl_in_optimizer_control``: the same on a Trainer built on the wrapper;
    * ``owner``: the class `released_lm_head_owner` lands on, ``owner_has_lm_head`` (0/1);
    * ``vcl_logit_effect``: max |logits(stage 0) - logits(stage 3)| of the released forward (the owner has no
      ``lm_head``: base logits); ``vcl_logit_effect_control``: the same with the ``lm_head`` of the causal LM;
    * ``vcl_grad``: the largest |gradient| of the released loss with respect to the VCL's parameters (0 when none
      reaches them)."""
    import peft
    from transformers import LlamaConfig, LlamaForCausalLM, Trainer, TrainingArguments

    torch.manual_seed(seed)
    d = 16
    hf = LlamaForCausalLM(LlamaConfig(vocab_size=32, hidden_size=d, intermediate_size=32, num_hidden_layers=1,
                                      num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=32))
    targets = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
    pm = peft.get_peft_model(hf, peft.LoraConfig(task_type=peft.TaskType.CAUSAL_LM, r=4, lora_alpha=8,
                                                 lora_dropout=0.0, target_modules=targets))
    vcl = AffineVCL(d, N_STAGES, seed=seed)
    with torch.no_grad():
        vcl.stage_emb.normal_()                                             # torch.randn(num_stages, hidden), as released
        nn.init.kaiming_uniform_(vcl.W_O.weight, a=5 ** 0.5)                # nn.Linear's default init, as released
    router = _router(d, seed)
    wrapper = nn.Module()
    wrapper.base_model, wrapper.value_chain_layer, wrapper.moe_router = pm, vcl, router

    def in_optimizer(model, module) -> int:
        with tempfile.TemporaryDirectory() as tmp:
            args = TrainingArguments(output_dir=tmp, report_to=[], use_cpu=True, learning_rate=2e-5)
            opt = Trainer(model=model, args=args).create_optimizer()
        held = {id(p) for g in opt.param_groups for p in g["params"]}
        return sum(p.numel() for p in module.parameters() if id(p) in held)

    lora = nn.ParameterList([p for n, p in pm.named_parameters() if "lora_" in n])
    out: dict[str, float | str] = {
        "vcl_in_optimizer": in_optimizer(pm, vcl), "router_in_optimizer": in_optimizer(pm, router),
        "lora_in_optimizer": in_optimizer(pm, lora), "vcl_params": sum(p.numel() for p in vcl.parameters()),
        "vcl_in_optimizer_control": in_optimizer(wrapper, vcl)}
    owner = released_lm_head_owner(pm)
    out["owner"], out["owner_has_lm_head"] = type(owner).__name__, float(hasattr(owner, "lm_head"))
    ids = torch.randint(0, 32, (3, 7), generator=torch.Generator().manual_seed(seed))

    def released_logits(stage: int, head_owner):
        base_out = pm(input_ids=ids, output_hidden_states=True)
        h = base_out.hidden_states[-1]
        router(h.mean(1))                                                   # routing scores: loss only
        h = vcl(h, torch.full((ids.shape[0],), stage))
        return head_owner.lm_head(h) if hasattr(head_owner, "lm_head") else base_out.logits

    with torch.no_grad():
        out["vcl_logit_effect"] = float((released_logits(0, owner) - released_logits(3, owner)).abs().max())
        causal_lm = pm.get_base_model()
        out["vcl_logit_effect_control"] = float((released_logits(0, causal_lm) - released_logits(3, causal_lm)).abs().max())
    logits = released_logits(1, owner)
    loss = nn.functional.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1))
    grads = torch.autograd.grad(loss, list(vcl.parameters()), allow_unused=True)
    out["vcl_grad"] = max((float(g.abs().max()) for g in grads if g is not None), default=0.0)
    return out
