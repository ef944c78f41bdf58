"""Regenerate tests/vectors/sfp.json (Sequence Fragment Puzzle test vectors; docs/specs.md).

Run: .venv/bin/python scripts/gen_sfp_vectors.py
"""

from __future__ import annotations

from pathlib import Path

from deniable.oracles import dump_sfp_vectors

OUT = Path(__file__).resolve().parent.parent / "tests" / "vectors" / "sfp.json"

if __name__ == "__main__":
    OUT.write_text(dump_sfp_vectors(), encoding="utf-8")
    print(f"wrote {OUT}")
