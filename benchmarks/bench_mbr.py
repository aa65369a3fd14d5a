"""The mbr chapter's core kernel, the utility matrix of candidates x pseudo-references in both directions,
against the best peers on PyPI, plus a cross-check of the MBR selections with the ``mbrs`` library.

* chrF + BLEU, 64 x 64 (H = R), vs sacrebleu sentence scores pair by pair (the reference implementation);
* chrF, vs ``fastchrf.pairwise_chrf`` (a Rust kernel built for MBR, the brief's §6 peer): 64 x 64 with
  H = R (one call, reverse = transpose), and the chapter's batched shape (S sources x N candidates x
  N + K references, both directions = two calls), single-threaded (``RAYON_NUM_THREADS=1``, like ours)
  and, in a subprocess, with fastchrf's default thread pool;
* ``mbrs``: ``DecoderMBR`` end to end (mbrs's own ``MetricChrF`` on the strings; our BLEU and SoftF1 matrices
  through a precomputed metric; the model-based estimate with ``reference_lprobs``) selects the same candidates as
  ``mbr_decode``, and its expectation (``mbrs.functional.expectation``) ranks like our R2 at (1,0,0,0) and
  (1,0,0,1); the end-to-end decode time is recorded beside the agreement.

Scores must agree (|diff| < 1e-9) before anything is timed. ``fastchrf`` and ``mbrs`` are not in the
book's environment (``mbrs`` cannot be: it pulls numpy < 2 and a CUDA torch through unbabel-comet); the
tests that need them are skipped without them.

Run: ``pytest benchmarks/bench_mbr.py --benchmark-only`` (``make bench``).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

DEFAULT_THREADS_ENV = "ICML26_MBR_BENCH_DEFAULT_THREADS"
if not os.environ.get(DEFAULT_THREADS_ENV):
    os.environ.setdefault("RAYON_NUM_THREADS", "1")  # before fastchrf starts its pool: single-threaded, like ours

import numpy as np
import pytest
import sacrebleu

from icml26.mbr import (METHODS, NoiseModel, SynTrans, channel_scores, multiplicities, noisy_samples,
                        utility_tensors)
from icml26.timing import interleaved_best, record_bench

N = 64
BATCH = dict(S=100, N=16, K=32)


def _candidates(seed: int = 0, n: int = N, task: str = "A") -> list[str]:
    world = SynTrans.make(task, seed)
    rng = np.random.default_rng(seed)
    tree = world.sample_source(rng)
    return [t for t, _ in noisy_samples(world, tree, rng, NoiseModel(), n)]


def _batch(seed: int = 0):
    """The chapter's shape: per source N samples as candidates, the samples plus K true references as references."""
    world = SynTrans.make("A", seed)
    rng = np.random.default_rng(seed)
    hyps, refs = [], []
    for _ in range(BATCH["S"]):
        tree = world.sample_source(rng)
        h = [t for t, _ in noisy_samples(world, tree, rng, NoiseModel(), BATCH["N"])]
        hyps.append(h); refs.append(h + world.sample_references(tree, rng, BATCH["K"]))
    return hyps, refs


def ours(hyps):
    out = utility_tensors([hyps], [hyps], ("chrf", "bleu"))
    return out["chrf"][0][0], out["chrf"][1][0], out["bleu"][0][0], out["bleu"][1][0]


def theirs(hyps):
    chrf = np.array([[sacrebleu.sentence_chrf(h, [r]).score for r in hyps] for h in hyps])
    bleu = np.array([[sacrebleu.sentence_bleu(h, [r]).score for r in hyps] for h in hyps])
    return chrf, chrf.T, bleu, bleu.T  # the reverse direction u(r, h) is the transpose when H = R


def ours_chrf(hyps, refs):
    """Both chrF directions, (S, N, K) each, from one pass of match statistics."""
    return utility_tensors(hyps, refs, ("chrf",))["chrf"]


def fastchrf_both(fastchrf, hyps, refs):
    """Both chrF directions with fastchrf: u(h, r) and u(r, h) need two calls when H != R."""
    fwd = np.asarray(fastchrf.pairwise_chrf(hyps, refs))
    rev = np.asarray(fastchrf.pairwise_chrf(refs, hyps)).transpose(0, 2, 1)
    return fwd, rev


@pytest.mark.parametrize("impl", ["icml26", "sacrebleu"])
def test_utility_matrix_64x64(benchmark, impl):
    hyps = _candidates()
    benchmark.group = "chrF + BLEU utility matrix, 64 x 64, both directions"
    benchmark(ours if impl == "icml26" else theirs, hyps)


def test_ratio_ours_vs_sacrebleu():
    hyps = _candidates()
    a, b = ours(hyps), theirs(hyps)
    for x, y in zip(a, b):
        assert np.max(np.abs(x - y)) < 1e-9
    best = interleaved_best({"ours": lambda: ours(hyps), "sacrebleu": lambda: theirs(hyps)}, rounds=3)
    ratio = best["sacrebleu"] / best["ours"]
    print(f"\n64x64 chrF+BLEU, both directions: ours {best['ours'] * 1e3:.1f} ms, sacrebleu pair by pair "
          f"{best['sacrebleu'] * 1e3:.1f} ms, speed-up = {ratio:.1f}x")
    record_bench("mbr", "64x64 chrF+BLEU utility matrix, both directions", "ours (vectorised)", best["ours"],
                 "sacrebleu sentence scores pair by pair", best["sacrebleu"], rounds=3)
    assert ratio >= 10


def test_ratio_ours_vs_fastchrf_64x64_one_thread():
    fastchrf = pytest.importorskip("fastchrf")
    hyps = _candidates()
    fwd, rev = ours_chrf([hyps], [hyps])
    theirs_ = np.asarray(fastchrf.pairwise_chrf([hyps], [hyps]))
    assert np.max(np.abs(fwd - theirs_)) < 1e-9 and np.max(np.abs(rev - theirs_.transpose(0, 2, 1))) < 1e-9
    best = interleaved_best({"ours": lambda: ours_chrf([hyps], [hyps]),
                             "fastchrf": lambda: np.asarray(fastchrf.pairwise_chrf([hyps], [hyps]))}, rounds=7)
    print(f"\n64x64 chrF, H = R, one thread: ours {best['ours'] * 1e3:.1f} ms, fastchrf {best['fastchrf'] * 1e3:.1f} ms")
    record_bench("mbr", "64x64 chrF matrix, H = R, both directions (1 thread)", "ours (vectorised, one pass)", best["ours"],
                 "fastchrf.pairwise_chrf (one call + transpose, RAYON_NUM_THREADS=1)", best["fastchrf"], rounds=7)


def test_ratio_ours_vs_fastchrf_batched_one_thread():
    fastchrf = pytest.importorskip("fastchrf")
    hyps, refs = _batch()
    fwd, rev = ours_chrf(hyps, refs)
    tf, tr = fastchrf_both(fastchrf, hyps, refs)
    assert np.max(np.abs(fwd - tf)) < 1e-9 and np.max(np.abs(rev - tr)) < 1e-9
    best = interleaved_best({"ours": lambda: ours_chrf(hyps, refs), "fastchrf": lambda: fastchrf_both(fastchrf, hyps, refs)},
                            rounds=3)
    shape = f"{BATCH['S']}x{BATCH['N']}x{BATCH['N'] + BATCH['K']}"
    print(f"\n{shape} chrF, both directions, one thread: ours {best['ours']:.2f} s, fastchrf {best['fastchrf']:.2f} s")
    record_bench("mbr", f"{shape} chrF tensor (sources x candidates x references), both directions (1 thread)",
                 "ours (vectorised, one pass)", best["ours"],
                 "fastchrf.pairwise_chrf (two calls, RAYON_NUM_THREADS=1)", best["fastchrf"], rounds=3)


_DEFAULT_THREADS_SCRIPT = r"""
import json, os, sys
os.environ.pop("RAYON_NUM_THREADS", None)
sys.path.insert(0, os.path.dirname(sys.argv[1]))
import numpy as np, fastchrf
from bench_mbr import _batch, fastchrf_both, ours_chrf
from icml26.timing import interleaved_best
hyps, refs = _batch()
best = interleaved_best({"ours": lambda: ours_chrf(hyps, refs), "fastchrf": lambda: fastchrf_both(fastchrf, hyps, refs)}, rounds=3)
print(json.dumps({**best, "cpus": os.cpu_count()}))
"""


def test_ratio_ours_vs_fastchrf_batched_default_threads():
    """fastchrf with its default thread pool (all cores) vs ours on one thread, in a fresh process."""
    pytest.importorskip("fastchrf")
    env = {k: v for k, v in os.environ.items() if k != "RAYON_NUM_THREADS"}
    env[DEFAULT_THREADS_ENV] = "1"
    out = subprocess.run([sys.executable, "-c", _DEFAULT_THREADS_SCRIPT, os.path.abspath(__file__)], env=env,
                         capture_output=True, text=True, check=True)
    best = json.loads(out.stdout.strip().splitlines()[-1])
    shape = f"{BATCH['S']}x{BATCH['N']}x{BATCH['N'] + BATCH['K']}"
    print(f"\n{shape} chrF, both directions: ours (1 thread) {best['ours']:.2f} s, fastchrf ({best['cpus']} threads) {best['fastchrf']:.2f} s")
    record_bench("mbr", f"{shape} chrF tensor, both directions (ours 1 thread, fastchrf default threads)",
                 "ours (vectorised, one pass, 1 thread)", best["ours"],
                 f"fastchrf.pairwise_chrf (two calls, default rayon pool, {best['cpus']} CPUs)", best["fastchrf"], rounds=3)


_MBRS_STUB_ROOTS = ("bert_score", "bleurt_pytorch", "comet", "transformers", "huggingface_hub", "simple_parsing")


def _import_mbrs_decoders():
    """``mbrs.decoders`` and ``mbrs.metrics`` with the neural metrics' packages (BERTScore, COMET, BLEURT, MetricX,
    transformers, huggingface_hub, simple_parsing) replaced by inert stubs: ``mbrs/metrics/__init__`` imports them
    all, though ``DecoderMBR`` and ``MetricChrF`` use none. They are stubbed only while mbrs is imported (an
    installed transformers too, whose version mbrs may not match), then the real modules are restored. Skips when mbrs is not importable (``pip install --no-deps --target DIR mbrs==0.1.8``, then
    ``PYTHONPATH=DIR``)."""
    import importlib.abc
    import importlib.machinery
    import importlib.util
    import types

    if importlib.util.find_spec("mbrs") is None:
        pytest.skip("mbrs is not installed (pip install --no-deps --target DIR mbrs==0.1.8; PYTHONPATH=DIR)")

    class _Meta(type):
        def __getattr__(cls, name):
            if name.startswith("__"):
                raise AttributeError(name)
            return _Any()

    class _Any(metaclass=_Meta):
        def __init__(self, *a, **k):
            pass

        def __call__(self, *a, **k):
            return _Any()

        def __getattr__(self, name):
            if name.startswith("__"):
                raise AttributeError(name)
            return _Any()

    class _StubModule(types.ModuleType):
        def __getattr__(self, name):
            if name.startswith("__"):
                raise AttributeError(name)
            return _Meta(name, (_Any,), {})

    stubbed = set(_MBRS_STUB_ROOTS)

    class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
        def find_spec(self, fullname, path, target=None):
            return (importlib.machinery.ModuleSpec(fullname, self, is_package=True)
                    if fullname.split(".")[0] in stubbed else None)

        def create_module(self, spec):
            module = _StubModule(spec.name)
            module.__path__ = []
            return module

        def exec_module(self, module):
            pass

    # an installed transformers of another version than mbrs expects is stubbed too; the real modules come back after
    saved = {k: sys.modules.pop(k) for k in list(sys.modules) if k.split(".")[0] in stubbed}
    finder = _Finder()
    sys.meta_path.insert(0, finder)
    try:
        import mbrs.decoders
        import mbrs.metrics
    finally:
        sys.meta_path.remove(finder)
        for k in [k for k in sys.modules if k.split(".")[0] in stubbed]:
            del sys.modules[k]
        sys.modules.update(saved)
    return mbrs.decoders, mbrs.metrics


def test_mbrs_decoder_end_to_end():
    """``mbrs.decoders.DecoderMBR`` end to end against ``mbr_decode``: (1) with mbrs's own chrF (``MetricChrF``,
    sacrebleu's chrF pair by pair) on the raw strings, so its utility, expectation and selection are all mbrs's;
    (2) with a metric that returns our precomputed BLEU and SoftF1 matrices, for MBR and the model-based estimate
    (``reference_lprobs`` over the distinct references, Jinnai et al. 2023). The selected candidates must agree on
    every source (a tie in expected utility is compared by its value); the agreement and the end-to-end time of one
    source's decode (ours against DecoderMBR + MetricChrF) are recorded."""
    pytest.importorskip("torch")
    import torch

    from icml26.mbr import ConceptEmbedder, mbr_decode

    decoders, metrics = _import_mbrs_decoders()

    class Precomputed(metrics.Metric):
        """A Metric whose pairwise scores are a given matrix (rows: hypotheses, columns: references)."""

        def __init__(self, matrix):
            super().__init__(metrics.Metric.Config())
            self.matrix = torch.tensor(matrix, dtype=torch.float64)

        def score(self, hypothesis, reference, source=None):  # pragma: no cover - pairwise_scores is used
            raise NotImplementedError

        def pairwise_scores(self, hypotheses, references, source=None):
            assert self.matrix.shape == (len(hypotheses), len(references))
            return self.matrix

    # mbrs's fastest chrF: its fastchrf path (Rust) where fastchrf is installed, else sacrebleu pair by pair
    import importlib.util
    rust = importlib.util.find_spec("fastchrf") is not None
    chrf = decoders.DecoderMBR(decoders.DecoderMBR.Config(),
                               metrics.MetricChrF(metrics.MetricChrF.Config(num_workers=1, fastchrf=rust)))
    world = SynTrans.make("B", 0)
    embedder = ConceptEmbedder(world.lexicon.concept, dim=32, seed=0)
    rng = np.random.default_rng(3)
    n_sources, agree = 40, {"chrf (mbrs metric)": 0, "bleu": 0, "softf1": 0, "chrf model-based": 0}
    cases = []
    for _ in range(n_sources):
        tree = world.sample_source(rng)
        draws = noisy_samples(world, tree, rng, NoiseModel(), 16)
        hyps, lbar = [t for t, _ in draws], np.array([l for _, l in draws])
        cases.append(hyps)
        ours = mbr_decode(hyps, utility="chrf")
        theirs = chrf.decode(hyps, hyps, nbest=1)
        agree["chrf (mbrs metric)"] += int(ours.index == theirs.idx[0]
                                           or abs(ours.scores[ours.index] - ours.scores[theirs.idx[0]]) < 1e-9)
        for u in ("bleu", "softf1"):
            res = mbr_decode(hyps, utility=u, embedder=embedder if u == "softf1" else None)
            got = decoders.DecoderMBR(decoders.DecoderMBR.Config(), Precomputed(res.U_fwd)).decode(hyps, hyps, nbest=1).idx[0]
            agree[u] += int(res.index == got or abs(res.scores[res.index] - res.scores[got]) < 1e-9)
        first = multiplicities(hyps) > 0        # the model-based estimate weighs each distinct reference once
        res = mbr_decode(hyps, utility="chrf", method="model", hyp_lbar=lbar)
        refs = [h for h, f in zip(hyps, first) if f]
        got = decoders.DecoderMBR(decoders.DecoderMBR.Config(), Precomputed(res.U_fwd[:, first])).decode(
            hyps, refs, nbest=1, reference_lprobs=torch.tensor(lbar[first])).idx[0]
        agree["chrf model-based"] += int(res.index == got or abs(res.scores[res.index] - res.scores[got]) < 1e-9)
    text = ", ".join(f"{k} {v}/{n_sources}" for k, v in agree.items())
    print(f"\nmbrs DecoderMBR agreement: {text}")
    assert all(v == n_sources for v in agree.values()), text
    best = interleaved_best({"ours": lambda: [mbr_decode(h, utility="chrf") for h in cases[:8]],
                             "mbrs": lambda: [chrf.decode(h, h, nbest=1) for h in cases[:8]]}, rounds=3)
    # one source at a time, as DecoderMBR works; ours computes both directions (the channels read them), mbrs one
    record_bench("mbr", "MBR decode end to end, chrF, 8 sources x 16 samples one at a time (ours: both directions; "
                 "mbrs: forward only); agreement with mbrs DecoderMBR",
                 "ours (mbr_decode)", best["ours"],
                 f"mbrs DecoderMBR + MetricChrF ({'fastchrf' if rust else 'sacrebleu chrF'}, 1 worker)",
                 best["mbrs"], rounds=3, note=f"selections equal on {n_sources} sources: {text}")


def test_mbrs_selects_the_same_candidates():
    """mbrs's expectation over identical utility matrices ranks like our R2: MBR over the samples (duplicates
    counted) and the model-based estimate over the distinct references weighted by softmax(lbar).

    The expectation step alone (``mbrs.functional.expectation``), on the very matrices R2 reads; the decoder end to
    end (``DecoderMBR``, its own chrF included) is compared in :func:`test_mbrs_decoder_end_to_end`. mbrs is not in
    the pinned environment: ``make bench`` installs it (``pip install --no-deps --target DIR mbrs``, run with
    ``PYTHONPATH=DIR``)."""
    pytest.importorskip("torch")
    functional = pytest.importorskip("mbrs.functional")
    import torch

    world = SynTrans.make("B", 0)
    rng = np.random.default_rng(3)
    agree_mbr = agree_model = 0
    n_sources = 40
    for _ in range(n_sources):
        tree = world.sample_source(rng)
        draws = noisy_samples(world, tree, rng, NoiseModel(), 16)
        hyps, lbar = [t for t, _ in draws], np.array([l for _, l in draws])
        U_fwd, U_rev = (x[0] for x in utility_tensors([hyps], [hyps], ("chrf",))["chrf"])
        counts = multiplicities(hyps)
        ours_mbr = np.argmax(channel_scores(U_fwd, U_rev, METHODS["mbr"], ref_counts=counts))
        ours_model = np.argmax(channel_scores(U_fwd, U_rev, METHODS["model"], ref_counts=counts, ref_lbar=lbar))
        theirs_mbr = int(torch.argmax(functional.expectation(torch.tensor(U_fwd))))
        first = counts > 0  # mbrs weights every column it is given: give it each distinct reference once
        theirs_model = int(torch.argmax(functional.expectation(torch.tensor(U_fwd[:, first]), lprobs=torch.tensor(lbar[first]))))
        agree_mbr += int(ours_mbr == theirs_mbr); agree_model += int(ours_model == theirs_model)
    print(f"\nmbrs agreement on {n_sources} sources: MBR {agree_mbr}/{n_sources}, model-based {agree_model}/{n_sources}")
    assert agree_mbr == agree_model == n_sources
