"""Plot of what post-processing does to frequency estimates: bias and RMSE per category."""

from __future__ import annotations

from typing import Any

from deniable.oracles import METHODS, PostProcessingStudy
from deniable.plotting._mpl import pyplot

__all__ = ["plot_post_processing"]


def plot_post_processing(study: PostProcessingStudy, *, axes: Any = None) -> Any:
    """Plot a :class:`~deniable.oracles.PostProcessingStudy`: the bias (left) and the RMSE
    (right) of each method per category, categories in the order of their true frequency
    (commonest first); returns the matplotlib ``Figure``.

    ``axes``: two matplotlib ``Axes`` to draw on (default: a new figure).  Needs
    matplotlib: ``pip install deniable[plot]``.
    """
    plt = pyplot("plot_post_processing")
    if axes is None:
        fig, axes = plt.subplots(1, 2, figsize=(10, 4), constrained_layout=True)
    else:
        fig = axes[0].figure
    left, right = axes
    order = (-study.truth).argsort(kind="stable")
    x = range(study.truth.size)
    for method, marker in zip(METHODS, "osv^", strict=True):
        left.plot(x, study.bias[method][order], marker=marker, ms=3, lw=1, label=method)
        right.plot(x, study.rmse[method][order], marker=marker, ms=3, lw=1, label=method)
    left.axhline(0.0, color="grey", lw=0.8, ls=":")
    left.set_ylabel("bias (mean estimate - true frequency)")
    right.set_ylabel("root mean squared error")
    for ax in axes:
        ax.set_xlabel("category, commonest first")
    left.legend(fontsize="small")
    fig.suptitle(
        f"{study.oracle.name}, k = {study.truth.size}, epsilon = {study.oracle.epsilon:.3g}, "
        f"n = {study.n}: {study.repeats} seeded runs"
    )
    return fig
