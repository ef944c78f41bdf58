"""A unary-encoding mechanism whose one calibration is deliberately wrong, for showing what
:func:`deniable.audit.audit` catches (see :mod:`deniable.audit`)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from deniable.common import validation as v
from deniable.randomness import bernoulli, resolve_rng

__all__ = ["UnaryEncoding"]


@dataclass(frozen=True)
class UnaryEncoding:
    """Symmetric unary (one-hot) encoding of a category in ``0..k-1``: each of the ``k`` bits
    of the one-hot vector is kept with probability ``t`` and flipped otherwise.

    Changing the answer changes *two* bits, so the true epsilon is
    ``2 ln(t / (1 - t))`` (Wang et al. 2017, "Locally differentially private protocols for
    frequency estimation").  ``calibration="half"`` uses ``t = e^(eps/2) / (1 + e^(eps/2))``
    and is exactly ``eps``-LDP; ``calibration="exact"`` uses ``t = e^eps / (1 + e^eps)``, the
    one-bit calibration, and is really ``2 eps``-LDP: the deliberate bug the audit catches.

    A vectorized mechanism for :func:`audit`: ``mechanism(x, rng, trials)`` returns a
    ``(trials, k)`` array of bits.
    """

    epsilon_parameter: float
    k: int
    calibration: str = "half"
    vectorized: bool = field(default=True, init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "epsilon_parameter", v.positive("epsilon_parameter", self.epsilon_parameter)
        )
        object.__setattr__(self, "k", v.integer("k", self.k, minimum=2, maximum=64))
        v.choice("calibration", self.calibration, ("exact", "half"))

    @property
    def keep_probability(self) -> float:
        """Probability that each bit is reported unchanged."""
        e = self.epsilon_parameter / (2 if self.calibration == "half" else 1)
        return 1 / (1 + math.exp(-e))

    @property
    def epsilon(self) -> float:
        # eps = 2 ln(t / (1 - t)): one answer change flips two coordinates' likelihoods
        t = self.keep_probability
        if t == 1.0:  # the flip probability rounds to 0: every report reveals the answer
            return math.inf
        return 2 * math.log(t / (1 - t))

    def __call__(self, x: Any, rng: Any, trials: int) -> npt.NDArray[np.uint8]:
        cat = v.integer("x", x, minimum=0, maximum=self.k - 1)
        gen = resolve_rng(rng)
        onehot = np.zeros(self.k, dtype=np.uint8)
        onehot[cat] = 1
        flips = bernoulli(gen, 1 - self.keep_probability, trials * self.k).reshape(trials, self.k)
        return np.asarray(onehot[None, :] ^ flips, dtype=np.uint8)
