"""An independent reading of RAPPOR n-gram discovery's device rule (docs/specs.md,
``deniable.rappor-ngram-spec/1``): each device's report computed from its spec's JSON and
its words alone, in plain integers (no numpy, no ``deniable``), for the spec's and the
vectors' tests."""

from __future__ import annotations

import hashlib
from typing import Any

M64 = (1 << 64) - 1


def rappor_report(spec: dict[str, Any], value: str, cohort: int, words: list[int]) -> str:
    """One RAPPOR report (``rappor/1``) of ``value`` in ``cohort`` from its ``2 m`` words
    (PRR, then IRR), as hex of its packed bits (bit i at bit i % 8 of byte i // 8)."""
    c = spec["constants"]
    m, h = c["bits"], c["hashes"]
    digest = hashlib.blake2b(value.encode("utf-8"), digest_size=8, person=b"deniable-rappor")
    x = int.from_bytes(digest.digest(), "big") >> 31
    bloom = [0] * m
    for i in range(h):
        seed = hashlib.blake2b(f"deniable.rappor/1:{cohort}:{i}".encode(), digest_size=16)
        raw = seed.digest()
        a, b = int.from_bytes(raw[:8], "little"), int.from_bytes(raw[8:], "little")
        bloom[((((a * x + b) & M64) >> 32) * m) >> 32] = 1
    prr = [(w & 1) if (w >> 11) < c["f"] else bit for bit, w in zip(bloom, words[:m], strict=True)]
    irr = [
        int((w >> 11) < (c["q"] if bit else c["p"]))
        for bit, w in zip(prr, words[m : 2 * m], strict=True)
    ]
    packed = bytes(
        sum(irr[8 * i + j] << j for j in range(8) if 8 * i + j < m) for i in range(-(-m // 8))
    )
    return packed.hex()


def device_report(spec: dict[str, Any], value: str, words: list[int]) -> dict[str, Any]:
    """A device's report: its pairs, its n-gram reports ``[label, cohort, hex]`` and its
    full-string report ``[cohort, hex]`` (or None)."""
    params = spec["parameters"]
    gram, length, pairs, pad = params["gram"], params["length"], params["pairs"], params["pad"]
    g = length // gram
    all_pairs = [(a, b) for a in range(g) for b in range(a + 1, g)]
    c = len(all_pairs)
    assert len(words) == spec["words_per_report"]
    keys = words[1 : 1 + c]
    order = sorted(range(c), key=lambda t: (keys[t], t))[:pairs]
    chosen = [all_pairs[t] for t in order]
    padded = value + pad * (length - len(value))
    ngram = spec["ngram_report"]
    m = ngram["constants"]["bits"]
    cohort = ((words[0] >> 32) * ngram["constants"]["cohorts"]) >> 32
    reports = []
    at = 1 + c
    for pair in chosen:
        for j in pair:
            label = f"{j}:{padded[j * gram : (j + 1) * gram]}"
            reports.append([label, cohort, rappor_report(ngram, label, cohort, words[at:])])
            at += 2 * m
    full = None
    if spec["full_report"] is not None:
        fs = spec["full_report"]
        fc = ((words[0] >> 32) * fs["constants"]["cohorts"]) >> 32
        full = [fc, rappor_report(fs, value, fc, words[at:])]
        at += 2 * fs["constants"]["bits"]
    assert at == len(words)
    return {"pairs": [list(p) for p in chosen], "ngrams": reports, "full": full}
