"""Mechanisms that are not randomized-response designs: noise for released tallies (Laplace,
Gaussian, their exact discrete versions), physical coin and dice protocols, and memoization
(permanent randomized response) with the :class:`MemoStore` protocol behind it.

May import :mod:`deniable.designs`, :mod:`deniable.accounting` (privacy measures and the
ledger), :mod:`deniable.randomness`, :mod:`deniable.results` and :mod:`deniable.common`.

The continuous mechanisms add floating-point noise (inverse-CDF Laplace, Box--Muller
Gaussian).  Floating-point samplers of continuous noise leak through the pattern of
representable doubles (Mironov 2012), so for counts prefer the discrete mechanisms: they add
*integer* noise drawn by the exact samplers of Canonne, Kamath & Steinke (2020), built only
from fair 64-bit words, rational Bernoulli trials and integer arithmetic -- no float is ever
sampled (the samplers live in ``_exact_sampling``).  Every sampler draws its noise without
looking at the values it is added to.

Layout: ``_noise_continuous`` (Laplace, Gaussian), ``_noise_discrete`` (discrete Laplace,
discrete Gaussian), ``_noise_table`` (the error table; its plot is in
:mod:`deniable.plotting`), with the shared helpers in ``_noise_common``; coins in ``_coins``
and ``_coin_protocol``, memoization in ``_memoization`` with its stores in ``_memo_store``;
``_adapters`` puts the noise mechanisms and memoization under the one mechanism protocol
(:class:`NoiseMechanism`, :class:`MemoizedMechanism`).

References
----------
* Dwork, McSherry, Nissim & Smith (2006), Calibrating noise to sensitivity.
* Dwork & Roth (2014), The Algorithmic Foundations of Differential Privacy, Thm. A.1.
* Mironov (2012), On significance of the least significant bits for differential privacy.
* Balle & Wang (2018), Improving the Gaussian mechanism for differential privacy, Thm. 8.
* Bun & Steinke (2016), Concentrated differential privacy, Prop. 1.6.
* Canonne, Kamath & Steinke (2020), The discrete Gaussian for differential privacy,
  Algorithms 1--3 and Sec. 2.
"""

from __future__ import annotations

from deniable.mechanisms._adapters import AdditiveNoiseChannel, MemoizedMechanism, NoiseMechanism
from deniable.mechanisms._coin_protocol import DEVICES, CoinProtocol
from deniable.mechanisms._coins import all_protocols, design_protocol
from deniable.mechanisms._memo_legacy import upgraded_question
from deniable.mechanisms._memo_store import (
    InMemoryMemoStore,
    MemoStore,
    checked_mechanism,
    checked_reports,
    mismatch,
)
from deniable.mechanisms._memoization import MemoizedRandomizer, averaging_attack
from deniable.mechanisms._noise_calibration import (
    NOISE_MECHANISMS,
    NoiseCalibration,
    calibrate_noise,
)
from deniable.mechanisms._noise_continuous import GaussianMechanism, LaplaceMechanism
from deniable.mechanisms._noise_discrete import (
    MAX_CURVE_SIGMA,
    MAX_SIGMA,
    MIN_SIGMA,
    DiscreteGaussianMechanism,
    DiscreteLaplaceMechanism,
)
from deniable.mechanisms._noise_table import NoiseErrorTable, noise_error_table

__all__ = [
    "DEVICES",
    "MAX_CURVE_SIGMA",
    "MAX_SIGMA",
    "MIN_SIGMA",
    "NOISE_MECHANISMS",
    "AdditiveNoiseChannel",
    "CoinProtocol",
    "DiscreteGaussianMechanism",
    "DiscreteLaplaceMechanism",
    "GaussianMechanism",
    "InMemoryMemoStore",
    "LaplaceMechanism",
    "MemoStore",
    "MemoizedMechanism",
    "MemoizedRandomizer",
    "NoiseCalibration",
    "NoiseErrorTable",
    "NoiseMechanism",
    "all_protocols",
    "averaging_attack",
    "calibrate_noise",
    "checked_mechanism",
    "checked_reports",
    "design_protocol",
    "mismatch",
    "noise_error_table",
    "upgraded_question",
]
