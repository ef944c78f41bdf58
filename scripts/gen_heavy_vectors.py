"""Regenerate tests/vectors/heavy.json (PEM and TreeHist test vectors; docs/specs.md).

Run: .venv/bin/python scripts/gen_heavy_vectors.py
"""

from __future__ import annotations

from pathlib import Path

from deniable.oracles import dump_heavy_vectors

OUT = Path(__file__).resolve().parent.parent / "tests" / "vectors" / "heavy.json"

if __name__ == "__main__":
    OUT.write_text(dump_heavy_vectors(), encoding="utf-8")
    print(f"wrote {OUT}")
