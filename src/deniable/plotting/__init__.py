"""Every plot in deniable (matplotlib, the ``[plot]`` extra, imported only when a plot is drawn).

Power curves (one line per design, or per epsilon: :func:`epsilon_lines`), the noise
error table, amplification by shuffling, the plots that explain
epsilon, and what post-processing does to frequency estimates.
May import every layer below it (estimation, audit, mechanisms, accounting,
designs); only :mod:`deniable.survey`, :mod:`deniable.simulation` and the CLI import it.
"""

from __future__ import annotations

from deniable.plotting._dashboard import budget_svg, message_svg, time_limits, timeline_svg
from deniable.plotting._explain import plot_epsilon_lying, plot_epsilon_truth, plot_posterior
from deniable.plotting._forest import forest_svg
from deniable.plotting._noise import plot_noise_error
from deniable.plotting._oracles import plot_post_processing
from deniable.plotting._power import (
    PLOT_FORMATS,
    design_label,
    epsilon_lines,
    plot_power_curves,
)
from deniable.plotting._shuffle import plot_shuffle

__all__ = [
    "PLOT_FORMATS",
    "budget_svg",
    "design_label",
    "epsilon_lines",
    "forest_svg",
    "message_svg",
    "plot_epsilon_lying",
    "plot_epsilon_truth",
    "plot_noise_error",
    "plot_post_processing",
    "plot_posterior",
    "plot_power_curves",
    "plot_shuffle",
    "time_limits",
    "timeline_svg",
]
