"""Randomized-response designs: each an exact channel, its epsilon, a randomizer and estimator.

Every design answers the one mechanism protocol (:class:`Mechanism`): ``name``, ``key``,
``epsilon``, ``channel`` (a :class:`Channel` operator: :class:`DenseChannel`,
:class:`SymmetricChannel` for k-ary RR, :class:`SupportChannel` for support counts),
``randomize``, ``tally`` (a :class:`Tally` bound to ``key``) and ``estimate``.
"""

from __future__ import annotations

from deniable.designs._base import BinaryDesign, Design, channel_epsilon
from deniable.designs._binary import (
    BiasedCoin,
    Binary,
    Crosswise,
    Custom,
    Mirrored,
    TwoCoin,
    Warner,
)
from deniable.designs._categorical import Categorical, CategoricalEstimate
from deniable.designs._channel import Channel, DenseChannel, SupportChannel, SymmetricChannel
from deniable.designs._forced import ForcedResponse, Mangat, Triangular, UnrelatedQuestion
from deniable.designs._identity import mechanism_key
from deniable.designs._kuk import Kuk
from deniable.designs._protocol import Mechanism
from deniable.designs._registry import DESIGNS, TWO_GROUP_DESIGNS, design_parameters, make_design
from deniable.designs._tally import Tally
from deniable.designs._twogroup import RespondentType, TwoGroupDesign, types_epsilon
from deniable.designs._twogroup_cheater import CheaterDetection, SymmetricCheaterDetection
from deniable.designs._twogroup_models import StochasticLieDetector, UnrelatedUnknown
from deniable.designs._twogroup_results import TwoGroupEstimate, group_counts

__all__ = [
    "DESIGNS",
    "TWO_GROUP_DESIGNS",
    "BiasedCoin",
    "Binary",
    "BinaryDesign",
    "Categorical",
    "CategoricalEstimate",
    "Channel",
    "CheaterDetection",
    "Crosswise",
    "Custom",
    "DenseChannel",
    "Design",
    "ForcedResponse",
    "Kuk",
    "Mangat",
    "Mechanism",
    "Mirrored",
    "RespondentType",
    "StochasticLieDetector",
    "SupportChannel",
    "SymmetricChannel",
    "SymmetricCheaterDetection",
    "Tally",
    "Triangular",
    "TwoCoin",
    "TwoGroupDesign",
    "TwoGroupEstimate",
    "UnrelatedQuestion",
    "UnrelatedUnknown",
    "Warner",
    "channel_epsilon",
    "design_parameters",
    "group_counts",
    "make_design",
    "mechanism_key",
    "types_epsilon",
]
