"""Link functions for regression with a randomized binary outcome, and the per-row pieces of
its log-likelihood as a function of the linear predictor.

The true answer has ``P(T = 1 | eta) = F(eta)`` with ``F`` the inverse link:

    logit    F = expit(eta),              F' = F (1 - F),       F'' = F' (1 - 2 F)
    probit   F = Phi(eta),                F' = phi(eta),        F'' = -eta phi(eta)
    cloglog  F = 1 - exp(-exp(eta)),      F' = exp(eta - e^eta), F'' = F' (1 - e^eta)

and the report has ``lambda = P1 F + P0 (1 - F)`` (Fox, Klotzke & Veen 2016, GLMMRR's
``RRglmer`` links).  With ``c = P1 - P0``, per row

    l = y ln(lambda) + (1 - y) ln(1 - lambda),
    lambda' = c F',   lambda'' = c F'',
    dl/deta     = y lambda'/lambda - (1 - y) lambda'/(1 - lambda),
    d2l/deta2   = y (lambda''/lambda - (lambda'/lambda)^2)
                  - (1 - y) (lambda''/(1 - lambda) + (lambda'/(1 - lambda))^2),
    E[-d2l/deta2] = lambda'^2 / (lambda (1 - lambda)),

the same algebra as ``_regression_logit`` for any ``F``.  ``lambda`` and ``1 - lambda`` are
computed as sums of non-negative terms from ``F`` and ``1 - F``, each computed without
cancellation (``expit(-eta)``, ``Phi(-eta)``, ``exp(-exp(eta))``).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from deniable.estimation._regression_links import link_functions

__all__ = [
    "expected_information",
    "inverse_link",
    "report_pieces",
    "row_pieces",
]

Array = npt.NDArray[np.float64]


def inverse_link(link: str, eta: Array) -> tuple[Array, Array, Array, Array]:
    """``F(eta)``, ``1 - F(eta)``, ``F'(eta)`` and ``F''(eta)`` for ``link`` (the fixed-effects
    models' link functions)."""
    return link_functions(link)(eta)


def report_pieces(
    link: str, eta: Array, a: Array, b: Array, *, derivs: bool
) -> tuple[Array, Array | None, Array | None]:
    """Per row: log-likelihood and (``derivs``) dl/deta and d2l/deta2, from the probabilities
    of the report given, ``a = P(y | T = 1)`` and ``b = P(y | T = 0)``:
    ``l = ln(a F + b (1 - F))``, ``dl = (a - b) F' / e^l``,
    ``d2l = (a - b) F'' / e^l - dl^2``."""
    F, G, d1, d2 = inverse_link(link, eta)
    lik = a * F + b * G
    with np.errstate(divide="ignore", invalid="ignore"):
        ll = np.log(lik)
        if not derivs:
            return ll, None, None
        c = a - b
        score = c * d1 / lik
        hess = c * d2 / lik - score * score
    if not np.all(lik > 0):  # an impossible report: those terms never enter an accepted step
        score[lik <= 0] = 0.0
        hess[lik <= 0] = 0.0
    return ll, score, hess


def expected_information(link: str, eta: Array, p1: Array, p0: Array) -> Array:
    """``E[-d2l/deta2] = lambda'^2 / (lambda (1 - lambda))`` per row."""
    F, G, d1, _ = inverse_link(link, eta)
    lam = p1 * F + p0 * G
    mlam = (1 - p1) * F + (1 - p0) * G
    l1 = (p1 - p0) * d1
    return _ratio(l1 * l1, lam * mlam)


def _ratio(a: Array, b: Array) -> Array:
    return np.divide(a, b, out=np.zeros_like(a), where=b > 0)


def row_pieces(
    link: str, eta: Array, yes: npt.NDArray[np.bool_], p1: Array, p0: Array, *, derivs: bool
) -> tuple[Array, Array | None, Array | None, Array | None]:
    """Per row: log-likelihood, and (``derivs``) dl/deta, d2l/deta2 and the expected
    information ``E[-d2l/deta2]``."""
    F, G, d1, d2 = inverse_link(link, eta)
    lam = p1 * F + p0 * G
    mlam = (1 - p1) * F + (1 - p0) * G
    with np.errstate(divide="ignore"):
        ll = np.log(np.where(yes, lam, mlam))
    if not derivs:
        return ll, None, None, None
    c = p1 - p0
    l1, l2 = c * d1, c * d2
    a, b = _ratio(l1, lam), _ratio(l1, mlam)
    score = np.where(yes, a, -b)
    hess = np.where(yes, _ratio(l2, lam) - a * a, -_ratio(l2, mlam) - b * b)
    fisher = _ratio(l1 * l1, lam * mlam)
    return ll, score, hess, fisher
