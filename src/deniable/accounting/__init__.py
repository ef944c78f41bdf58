"""Privacy accounting: DP measures, conversions, composition, amplification, ledgers."""

from __future__ import annotations

__all__: list[str] = []
