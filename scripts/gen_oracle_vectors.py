"""Regenerate tests/vectors/oracles.json (the frequency-oracle test vectors; docs/specs.md).

Run: .venv/bin/python scripts/gen_oracle_vectors.py
"""

from __future__ import annotations

from pathlib import Path

from deniable.oracles import dump_oracle_vectors

OUT = Path(__file__).resolve().parent.parent / "tests" / "vectors" / "oracles.json"

if __name__ == "__main__":
    OUT.write_text(dump_oracle_vectors(), encoding="utf-8")
    print(f"wrote {OUT}")
