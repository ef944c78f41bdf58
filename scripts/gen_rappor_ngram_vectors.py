"""Regenerate tests/vectors/rappor_ngram.json (RAPPOR n-gram discovery test vectors;
docs/specs.md).

Run: .venv/bin/python scripts/gen_rappor_ngram_vectors.py
"""

from __future__ import annotations

from pathlib import Path

from deniable.oracles import dump_rappor_ngram_vectors

OUT = Path(__file__).resolve().parent.parent / "tests" / "vectors" / "rappor_ngram.json"

if __name__ == "__main__":
    OUT.write_text(dump_rappor_ngram_vectors(), encoding="utf-8")
    print(f"wrote {OUT}")
