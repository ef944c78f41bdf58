"""Randomized-response designs: each an exact channel, its epsilon, a randomizer and estimator.

Every design answers the one mechanism protocol (:class:`Mechanism`): ``name``, ``key``,
``epsilon``, ``channel`` (a :class:`Channel` operator: :class:`DenseChannel`,
:class:`SymmetricChannel` for k-ary RR, :class:`SupportChannel` for support counts),
``randomize``, ``tally`` (a :class:`Tally` bound to ``key``) and ``estimate``.
:class:`MechanismBase` supplies what every mechanism (design, frequency oracle, adapter)
derives from its parameters alike; :class:`FrequencyEstimate` is the one estimate of ``k``
frequencies (the k-ary design's and every frequency oracle's; ``CategoricalEstimate`` is
its old name).
"""

from __future__ import annotations

from deniable.designs._base import BinaryDesign, Design, binary_estimate, channel_epsilon
from deniable.designs._binary import (
    BiasedCoin,
    Binary,
    Crosswise,
    Custom,
    Mirrored,
    TwoCoin,
    Warner,
)
from deniable.designs._catalog import DesignCatalog, design_catalog
from deniable.designs._categorical import Categorical, CategoricalEstimate
from deniable.designs._channel import Channel, DenseChannel, SupportChannel, SymmetricChannel
from deniable.designs._forced import ForcedResponse, Mangat, Triangular, UnrelatedQuestion
from deniable.designs._frequency import SE_FIXED, SE_SAMPLING, FrequencyEstimate
from deniable.designs._from_epsilon import design_for_epsilon, expit
from deniable.designs._identity import exact_value, mechanism_key
from deniable.designs._kuk import (
    SE_CHOICES,
    Kuk,
    KukMultiDraw,
    KukSingleDraw,
    KukStandardErrors,
)
from deniable.designs._mechanism import MechanismBase
from deniable.designs._protocol import Mechanism
from deniable.designs._registry import DESIGNS, TWO_GROUP_DESIGNS, design_parameters, make_design
from deniable.designs._spec import QuestionSpec, design_from_spec, spec_of
from deniable.designs._spec_algorithms import SPEC_SCHEMA, LatentInput
from deniable.designs._summary import DesignEstimate
from deniable.designs._tally import MAX_COUNT, Tally
from deniable.designs._twogroup import RespondentType, TwoGroupDesign, types_epsilon
from deniable.designs._twogroup_cheater import CheaterDetection, SymmetricCheaterDetection
from deniable.designs._twogroup_models import StochasticLieDetector, UnrelatedUnknown
from deniable.designs._twogroup_results import TwoGroupEstimate, group_counts
from deniable.designs._vectors import VECTORS_SCHEMA, dump_vectors, randomizer_vectors

__all__ = [
    "DESIGNS",
    "MAX_COUNT",
    "SE_CHOICES",
    "SE_FIXED",
    "SE_SAMPLING",
    "SPEC_SCHEMA",
    "TWO_GROUP_DESIGNS",
    "VECTORS_SCHEMA",
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
    "DesignCatalog",
    "DesignEstimate",
    "ForcedResponse",
    "FrequencyEstimate",
    "Kuk",
    "KukMultiDraw",
    "KukSingleDraw",
    "KukStandardErrors",
    "LatentInput",
    "Mangat",
    "Mechanism",
    "MechanismBase",
    "Mirrored",
    "QuestionSpec",
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
    "binary_estimate",
    "channel_epsilon",
    "design_catalog",
    "design_for_epsilon",
    "design_from_spec",
    "design_parameters",
    "dump_vectors",
    "exact_value",
    "expit",
    "group_counts",
    "make_design",
    "mechanism_key",
    "randomizer_vectors",
    "spec_of",
    "types_epsilon",
]
