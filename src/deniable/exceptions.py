"""The one exception tree of ``deniable``.

::

    DeniableError                      base of everything raised on purpose
    ├── ParameterTypeError (TypeError) a parameter of the wrong kind (a string for a probability)
    ├── ParameterError (ValueError)    a parameter out of its allowed range (p = 0.5 for Warner)
    ├── DataError (ValueError)         data inconsistent with the design (yes > n, a report of 2)
    └── PrivacyError (ValueError)      a request that would weaken or misstate privacy
                                       (e.g. a finite epsilon for a design whose epsilon is
                                       infinite, a question over a respondent's budget)

    DeniableWarning (UserWarning)      base of every warning ``deniable`` issues on purpose
    └── ConvergenceWarning (RuntimeWarning)
                                       an optimiser stopped before its tolerance, or an
                                       estimate sits on the boundary of its parameter space
        └── SamplerWarning             a Markov chain did not clearly converge (R-hat, divergences)

Every message names the parameter, the allowed values and the value received, e.g.
"`p` must be in (0, 1) and not 0.5, got 0.5."  Catch ``ValueError`` / ``TypeError`` if
you do not care that the error came from ``deniable``.
"""

from __future__ import annotations

__all__ = [
    "ConvergenceWarning",
    "DataError",
    "DeniableError",
    "DeniableWarning",
    "ParameterError",
    "ParameterTypeError",
    "PrivacyError",
    "SamplerWarning",
]


class DeniableError(Exception):
    """Base class of every error ``deniable`` raises on purpose."""


class ParameterTypeError(DeniableError, TypeError):
    """A parameter has the wrong type (e.g. a string where a probability is expected)."""


class ParameterError(DeniableError, ValueError):
    """A parameter is outside its allowed range."""


class DataError(DeniableError, ValueError):
    """Data (reports, counts) are inconsistent with the design or with each other."""


class PrivacyError(DeniableError, ValueError):
    """The request would weaken or misstate a privacy guarantee."""


class DeniableWarning(UserWarning):
    """Base class of every warning ``deniable`` issues on purpose."""


class ConvergenceWarning(DeniableWarning, RuntimeWarning):
    """A fit did not converge, or an estimate lies on the boundary of its parameter space.

    The message says why; the result keeps the same text in its ``notes``.  It is a
    ``RuntimeWarning`` too, so filters on ``RuntimeWarning`` still catch it.
    """


class SamplerWarning(ConvergenceWarning):
    """A Markov chain sampler did not clearly converge (R-hat above its limit, or divergent
    transitions): the posterior summaries may be wrong."""
