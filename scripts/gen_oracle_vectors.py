"""Regenerate tests/vectors/oracles.json (the frequency-oracle test vectors) and
tests/vectors/ranges.json (the range mechanisms' and Square Wave's; docs/specs.md).

Run: .venv/bin/python scripts/gen_oracle_vectors.py
"""

from __future__ import annotations

from pathlib import Path

from deniable.oracles import dump_oracle_vectors, dump_range_vectors

VECTORS = Path(__file__).resolve().parent.parent / "tests" / "vectors"

if __name__ == "__main__":
    for name, dump in (("oracles.json", dump_oracle_vectors), ("ranges.json", dump_range_vectors)):
        out = VECTORS / name
        out.write_text(dump(), encoding="utf-8")
        print(f"wrote {out}")
