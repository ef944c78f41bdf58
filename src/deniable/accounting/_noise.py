"""Noise for released tallies (central model): Laplace, Gaussian, discrete Laplace and discrete
Gaussian, with their privacy parameters and expected absolute error.

The continuous mechanisms add floating-point noise (inverse-CDF Laplace, Box--Muller
Gaussian).  Floating-point samplers of continuous noise leak through the pattern of
representable doubles (Mironov 2012), so for counts prefer the discrete mechanisms: they add
*integer* noise drawn by the exact samplers of Canonne, Kamath & Steinke (2020), built only
from fair 64-bit words, rational Bernoulli trials and integer arithmetic -- no float is ever
sampled (the samplers live in ``_exact_sampling``).  Every sampler draws its noise without
looking at the values it is added to.

Layout: ``_noise_continuous`` (Laplace, Gaussian), ``_noise_discrete`` (discrete Laplace,
discrete Gaussian), ``_noise_table`` (the error table and its plot), with the shared helpers in
``_noise_common``; every public name is importable from here.

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

from deniable.accounting._noise_continuous import GaussianMechanism, LaplaceMechanism
from deniable.accounting._noise_discrete import (
    DiscreteGaussianMechanism,
    DiscreteLaplaceMechanism,
)
from deniable.accounting._noise_table import NoiseErrorTable, noise_error_table, plot_noise_error

__all__ = [
    "DiscreteGaussianMechanism",
    "DiscreteLaplaceMechanism",
    "GaussianMechanism",
    "LaplaceMechanism",
    "NoiseErrorTable",
    "noise_error_table",
    "plot_noise_error",
]
