"""A semi-real check on text shipped with Python (brief §5.10): composition of CQF only.

HQ = paragraphs of CPython's `pydoc_data.topics` (the language reference's help topics). LQ = a pool of
four sources: docstrings of installed numpy / scipy / sympy / torch members, chunks of stdlib sources,
word-shuffled paragraphs of held-out pydoc topics (noise with HQ vocabulary), and generated spam.
There is no downstream task on this text; it shows only whether CQF removes the noise (shuffled + spam)
from the top of real text. Words are mapped to ids with a vocabulary built from the documents.
"""
from __future__ import annotations

import inspect
import re
from pathlib import Path

import numpy as np

from .world import Docs

SOURCES = ("docstring", "code", "shuffled", "spam")
WORD = re.compile(r"[a-z]+|[0-9]+|[^\sa-z0-9]")


def _chunks(text: str, size: int) -> list[list[str]]:
    w = WORD.findall(text.lower())
    return [w[i:i + size] for i in range(0, len(w) - size // 2, size)]


def _docstrings(limit_chars: int) -> str:
    import numpy, scipy.linalg, scipy.stats, sympy, torch  # noqa: E401 - installed with the book

    out, n = [], 0
    for mod in (numpy, scipy.linalg, scipy.stats, sympy, torch):
        # public, non-module members only: a submodule shows up in dir() once anything has imported it, so
        # counting modules would make the corpus depend on what the kernel imported before (live vs batch)
        for name in sorted(n for n in dir(mod) if not n.startswith("_")):
            try:
                member = getattr(mod, name)
                doc = None if inspect.ismodule(member) else inspect.getdoc(member)
            except Exception:  # pragma: no cover - exotic attributes
                continue
            # prose only: some scipy.stats docstrings are generated at import with unseeded sample outputs
            # in their Examples section ("# may vary"), which would make the corpus differ between processes
            doc = doc and re.split(r"\n(?:Examples|>>> )", doc)[0]
            if doc and len(doc) > 200:
                out.append(doc)
                n += len(doc)
            if n > limit_chars * (1 + [numpy, scipy.linalg, scipy.stats, sympy, torch].index(mod)) / 5:
                break
    return "\n".join(out)


def _stdlib_code(limit_chars: int) -> str:
    root = Path(inspect.getfile(inspect)).parent
    out, n = [], 0
    for name in ("inspect.py", "argparse.py", "functools.py", "pathlib.py", "textwrap.py", "dataclasses.py",
                 "typing.py", "enum.py", "json/decoder.py", "csv.py"):
        p = root / name
        if p.exists():
            txt = p.read_text(errors="ignore")
            out.append(txt)
            n += len(txt)
        if n > limit_chars:
            break
    return "\n".join(out)


def build_corpus(seed: int = 0, doc_words: int = 60, n_hq_train: int = 600, n_lq_per_source: int = 1200):
    """(vocab, hq_train, hq_heldout, lq_train, lq_pool): `Docs` whose genre code indexes `SOURCES` (LQ) or 0 (HQ)."""
    from pydoc_data import topics

    rng = np.random.default_rng([seed, 11])
    keys = sorted(topics.topics)
    perm = rng.permutation(len(keys))
    cut = int(0.75 * len(keys))
    hq_text = "\n".join(topics.topics[keys[i]] for i in perm[:cut])
    noise_text = "\n".join(topics.topics[keys[i]] for i in perm[cut:])
    hq = _chunks(hq_text, doc_words)
    rng.shuffle(hq)
    need = n_lq_per_source
    doc = _chunks(_docstrings(need * doc_words * 7), doc_words)
    code = _chunks(_stdlib_code(need * doc_words * 12), doc_words)
    noise_words = WORD.findall(noise_text.lower())
    shuffled = [list(rng.choice(noise_words, doc_words)) for _ in range(need)]
    spam_words = ("buy now free click here www deal win cheap offer login cart subscribe best price limited "
                  "casino bonus $ ! | home > sale").split()
    spam = [list(rng.choice(spam_words, doc_words, p=None)) for _ in range(need)]
    for lst in (doc, code):
        rng.shuffle(lst)
    lq_sources = [doc[:need], code[:need], shuffled, spam]
    if min(len(s) for s in lq_sources) < need or len(hq) < n_hq_train + 50:
        raise ValueError(f"not enough installed text for the semi-real corpus: {[len(s) for s in lq_sources]} LQ, {len(hq)} HQ")
    words = sorted({w for d in hq for w in d} | {w for s in lq_sources for d in s for w in d})
    index = {w: i for i, w in enumerate(words)}

    def as_docs(lists, genres, ids0):
        toks = np.array([index[w] for d in lists for w in d], dtype=np.int32)
        lengths = np.array([len(d) for d in lists])
        return Docs(toks, np.concatenate([[0], np.cumsum(lengths)]), np.asarray(genres), ids0 + np.arange(len(lists)))

    hq_tr = as_docs(hq[:n_hq_train], [0] * n_hq_train, 0)
    hq_ho = as_docs(hq[n_hq_train:], [0] * (len(hq) - n_hq_train), 10**6)
    lq_train = [d for s in lq_sources for d in s[:n_lq_per_source // 4]]
    lq_train_g = [g for g, s in enumerate(lq_sources) for _ in s[:n_lq_per_source // 4]]
    lq_pool = [d for s in lq_sources for d in s[n_lq_per_source // 4:need]]
    lq_pool_g = [g for g, s in enumerate(lq_sources) for _ in s[n_lq_per_source // 4:need]]
    return (tuple(words), hq_tr, hq_ho, as_docs(lq_train, lq_train_g, 2 * 10**6),
            as_docs(lq_pool, lq_pool_g, 3 * 10**6))
