"""The estimate of a frequency oracle: :class:`~deniable.designs.FrequencyEstimate`, the one
estimate of ``k`` frequencies, which the k-ary design returns too (it lives in
:mod:`deniable.designs`, below both).  Kept here for the modules that import it from here."""

from __future__ import annotations

from deniable.designs import SE_FIXED, SE_SAMPLING, FrequencyEstimate

__all__ = ["SE_EXACT", "SE_FIXED", "SE_SAMPLING", "FrequencyEstimate"]

#: The convention of Wang et al.'s exact variance (``se_fixed``); until 1.1 it was ``se``.
SE_EXACT = SE_FIXED
