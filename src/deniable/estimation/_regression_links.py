"""Link functions of a binary regression: ``P(T = 1 | x) = F(x' beta)``.

Each link gives ``F(eta)`` and ``1 - F(eta)`` (both computed without cancellation, so that
the randomized-response likelihood stays accurate far into the tails), the density
``f = F'`` and its derivative ``f'``, which are all the score and the information need
(``_regression_logit``):

=========  =============================  ====================  ========================
link       ``F(eta)``                     ``f(eta)``            ``f'(eta)``
=========  =============================  ====================  ========================
logit      ``1 / (1 + e^-eta)``           ``F (1 - F)``         ``f (1 - 2 F)``
probit     ``Phi(eta)``                   ``phi(eta)``          ``-eta phi(eta)``
cloglog    ``1 - exp(-e^eta)``            ``e^(eta - e^eta)``   ``f (1 - e^eta)``
=========  =============================  ====================  ========================

The complementary log-log link is asymmetric: ``F`` approaches 1 much faster than 0
(McCullagh & Nelder 1989, sec. 4.3.1); GLMMRR's ``RRglmer`` offers the same three links for
randomized response (Fox, Klotzke & Veen 2016).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from deniable.common import validation as v

__all__ = ["LINKS", "LINK_FORMULAS", "Link", "check_link", "link_functions", "log_probabilities"]

Array = npt.NDArray[np.float64]

#: The links offered for a binary outcome, by name.
LINKS = ("logit", "probit", "cloglog")

#: Each link's inverse, as summaries print it.
LINK_FORMULAS = {
    "logit": "P(T = 1) = 1 / (1 + exp(-eta))",
    "probit": "P(T = 1) = Phi(eta)",
    "cloglog": "P(T = 1) = 1 - exp(-exp(eta))",
}

#: ``eta -> (F, 1 - F, f, f')``.
Link = Callable[[Array], tuple[Array, Array, Array, Array]]


def _logit(eta: Array) -> tuple[Array, Array, Array, Array]:
    from scipy.special import expit

    p, q = expit(eta), expit(-eta)
    f = p * q
    return p, q, f, f * (q - p)


def _probit(eta: Array) -> tuple[Array, Array, Array, Array]:
    from scipy.special import ndtr

    f = np.exp(-0.5 * eta * eta) / np.sqrt(2 * np.pi)
    return ndtr(eta), ndtr(-eta), f, -eta * f


def _cloglog(eta: Array) -> tuple[Array, Array, Array, Array]:
    with np.errstate(over="ignore"):
        e = np.exp(np.minimum(eta, 700.0))
        q = np.exp(-e)
        f = np.exp(np.minimum(eta, 700.0) - e)
    return -np.expm1(-e), q, f, f * (1 - e)


_FUNCTIONS: dict[str, Link] = {"logit": _logit, "probit": _probit, "cloglog": _cloglog}


def check_link(link: object) -> str:
    """The name of a link, one of :data:`LINKS` (a ``ParameterError`` names the others)."""
    return v.choice("link", link, LINKS)


def link_functions(link: str) -> Link:
    """``eta -> (F, 1 - F, f, f')`` for the link named ``link``."""
    return _FUNCTIONS[check_link(link)]


def log_probabilities(link: str, eta: Array) -> tuple[Array, Array]:
    """``(ln F(eta), ln(1 - F(eta)))``, accurate in both tails."""
    from scipy.special import log_ndtr

    if link == "logit":
        return -np.logaddexp(0.0, -eta), -np.logaddexp(0.0, eta)
    if link == "probit":
        return log_ndtr(eta), log_ndtr(-eta)
    with np.errstate(over="ignore", divide="ignore"):
        e = np.exp(np.minimum(eta, 700.0))
        return np.log(-np.expm1(-e)), -e
