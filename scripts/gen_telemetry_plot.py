"""Draw docs/img/post-processing.png: what post-processing does to OUE's frequency
estimates (bias and RMSE per category) on a simulated skewed population (docs/telemetry.md).

Run: .venv/bin/python scripts/gen_telemetry_plot.py   (prints the summary table too)
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import numpy as np

from deniable.common import atomic_write
from deniable.oracles import OUE, post_processing_study
from deniable.plotting import plot_post_processing

OUT = Path(__file__).resolve().parent.parent / "docs" / "img" / "post-processing.png"

if __name__ == "__main__":
    k = 32
    weights = 1 / np.arange(1, k + 1) ** 1.5  # a few common values, many rare ones
    study = post_processing_study(
        OUE.from_epsilon(1.0, k=k), weights / weights.sum(), 2000, repeats=300, seed=2026
    )
    fig = plot_post_processing(study)
    atomic_write(
        OUT, lambda tmp: fig.savefig(tmp, format="png", dpi=110, metadata={"Software": None})
    )
    print(study)
    print(f"wrote {OUT}")
