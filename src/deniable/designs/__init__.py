"""Randomized-response designs: each an exact channel, its epsilon, a randomizer and estimator."""

from __future__ import annotations

from deniable.designs._base import BinaryDesign, Design, Tally, channel_epsilon
from deniable.designs._binary import Binary, BiasedCoin, Crosswise, Custom, Mirrored, TwoCoin, Warner
from deniable.designs._categorical import Categorical, CategoricalEstimate
from deniable.designs._forced import ForcedResponse, Mangat, Triangular, UnrelatedQuestion
from deniable.designs._kuk import Kuk
from deniable.designs._registry import DESIGNS, design_parameters, make_design

__all__ = [
    "DESIGNS",
    "BiasedCoin",
    "Binary",
    "BinaryDesign",
    "Categorical",
    "CategoricalEstimate",
    "Crosswise",
    "Custom",
    "Design",
    "ForcedResponse",
    "Kuk",
    "Mangat",
    "Mirrored",
    "Tally",
    "Triangular",
    "TwoCoin",
    "UnrelatedQuestion",
    "Warner",
    "channel_epsilon",
    "design_parameters",
    "make_design",
]
