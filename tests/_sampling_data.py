"""Data and reference estimators shared by the sampling tests (tests/test_sampling*.py)."""

from __future__ import annotations

import warnings

import numpy as np

from deniable.designs import Warner


def samplics_taylor(param: str):  # type: ignore[no-untyped-def]
    with warnings.catch_warnings():  # samplics warns on import that it is archived
        warnings.simplefilter("ignore")
        from samplics.estimation import TaylorEstimator
        from samplics.utils.types import PopParam
    return TaylorEstimator(getattr(PopParam, param))


def clustered_sample(seed: int = 3, strata: int = 8, psus: int = 5, size: int = 12):
    """A stratified clustered weighted sample of Warner reports: (design parts, reports)."""
    rng = np.random.default_rng(seed)
    n = strata * psus * size
    stratum = np.repeat(np.arange(strata), psus * size)
    psu = np.tile(np.repeat(np.arange(psus), size), strata)  # labels repeat across strata
    cluster_effect = rng.normal(0, 1, strata * psus)[np.repeat(np.arange(strata * psus), size)]
    truth = (rng.random(n) < 1 / (1 + np.exp(1 - cluster_effect))).astype(int)
    weights = rng.uniform(1, 4, n)
    reports = Warner(0.8).randomize(truth, rng=seed)
    return stratum, psu, weights, reports
