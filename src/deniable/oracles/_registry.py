"""The frequency oracles by name: the one registry that the command line (``deniable
telemetry simulate --mechanism NAME``), the oracle specs and keys (:func:`oracle_from_key`,
:func:`oracle_from_spec`) and :func:`choose_oracle` all read, so that a new oracle is
registered once and every one of them knows it.

A name is the oracle's ``--mechanism`` name; it is also the first part of the oracle's
``key``, except for k-ary randomized response (``"grr"``), which is the design
:class:`~deniable.designs.Categorical` with uniform forcing and keeps the design's name
(``categorical{...}``) in its key and its question spec (``designs.spec_of``).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from deniable.common import validation as v
from deniable.designs import Categorical
from deniable.oracles._hadamard import HadamardResponse
from deniable.oracles._hashing import BLH, OLH
from deniable.oracles._linear_hashing import LinearOLH
from deniable.oracles._loloha import LOLOHA
from deniable.oracles._longitudinal_grr import LGRR
from deniable.oracles._longitudinal_unary import LOSUE, LOUE, LSUE
from deniable.oracles._subset import SubsetSelection
from deniable.oracles._unary import OUE, SUE

__all__ = ["FREQUENCY_ORACLES", "make_oracle"]

#: Every frequency oracle of ``k`` values, by its ``--mechanism`` name, in the order of the
#: documentation (read-only: one registry shared by every thread).  Each class has
#: ``from_epsilon(epsilon, k)``, the variance-optimal parameters at ``epsilon`` (the
#: longitudinal oracles ``l-*``: ``epsilon`` is the bound over all reports of a value, and
#: the first report's is ``epsilon / 2`` unless ``eps_1=`` is given; ``loloha`` too, over
#: its hashed domain).
FREQUENCY_ORACLES: Mapping[str, type[Any]] = MappingProxyType(
    {
        "grr": Categorical,
        "sue": SUE,
        "oue": OUE,
        "blh": BLH,
        "olh": OLH,
        "olh-linear": LinearOLH,
        "hadamard": HadamardResponse,
        "subset": SubsetSelection,
        "l-grr": LGRR,
        "l-sue": LSUE,
        "l-oue": LOUE,
        "l-osue": LOSUE,
        "loloha": LOLOHA,
    }
)


def make_oracle(name: str, epsilon: float, k: int) -> Any:
    """The frequency oracle ``name`` (a key of :data:`FREQUENCY_ORACLES`) for ``k`` values at
    ``epsilon``, built by its ``from_epsilon``.

    >>> make_oracle("oue", 1.0, k=8).name, make_oracle("grr", 1.0, k=8).name
    ('oue', 'categorical')
    >>> make_oracle("rappor", 1.0, k=8)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    deniable.exceptions.ParameterError: `name` must be one of 'grr', 'sue', 'oue', ...
    """
    cls = FREQUENCY_ORACLES[v.choice("name", name, tuple(FREQUENCY_ORACLES))]
    return cls.from_epsilon(epsilon, k)
