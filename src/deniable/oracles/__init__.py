"""Telemetry at scale: frequency oracles, their post-processing, and means of numbers.

Every oracle is a mechanism of the one protocol (:class:`~deniable.designs.Mechanism`):
``name``, ``key``, an exact ``epsilon`` in closed form, ``channel``
(:class:`~deniable.designs.SupportChannel`, or :class:`~deniable.designs.SymmetricChannel`
for k-ary randomized response), ``randomize(values, rng=...)`` over numpy arrays (a fixed
number of 64-bit words per report, thresholds rounded toward privacy), ``tally(reports)``
(a :class:`~deniable.designs.Tally` of support counts that adds across batches, O(k)
memory) and ``estimate(tally)`` (a :class:`FrequencyEstimate`, the k-ary design's estimate
too: the unbiased frequency of each value, its variance for respondents sampled from a
population (``se``, the default) and for the fixed population of the ``n`` respondents
(``se_fixed``: Wang et al. 2017's exact variance), and intervals).

========================  ==============================================================
:data:`GRR`               k-ary randomized response (direct encoding): the design
                          :class:`~deniable.designs.Categorical`
:class:`SUE`, :class:`OUE`  symmetric (basic one-time RAPPOR) and optimized unary encoding
:class:`BLH`, :class:`OLH`  binary and optimized local hashing
:class:`LinearOLH`          OLH with a linear hash over GF(2): decoded by one Walsh-Hadamard
                          transform, O(n g + k log k)
:class:`HadamardResponse`   a Hadamard row and one randomized bit
:class:`SubsetSelection`    a random subset of about ``k / (e^eps + 1)`` values
:class:`LGRR`, :class:`LSUE`  two-round memoized longitudinal oracles (L-GRR, L-SUE,
:class:`LOUE`, :class:`LOSUE`  L-OUE, L-OSUE): a permanent response kept per device and
                          value, a fresh instantaneous one every report
:class:`LOLOHA`            longitudinal local hashing (Arcolezi et al. 2023): a hash kept
                          per device, L-GRR over its buckets
:class:`Rappor`            RAPPOR: Bloom filter, PRR and IRR, per-cohort tally, decoding
                          (:class:`RapporClient` memoizes PRRs; ``docs/rappor.md``);
                          :func:`rappor_spec` as versioned JSON for a device
:class:`RapporNgram`        strings nobody listed: n-grams at fixed positions through
                          RAPPOR, decoded per position, linked by EM, candidates decoded
                          (Fanti, Pihur & Erlingsson 2016; :class:`NgramDiscovery`)
:class:`CMS`, :class:`HCMS`   count mean sketches of strings (Apple 2017): a row of a
                          sketch per device, frequencies of any candidate string;
                          :func:`cms_spec` as versioned JSON for a device,
                          :func:`sketch_from_key` the sketch of a report file's key
:data:`FREQUENCY_ORACLES`   every oracle of ``k`` values by its name (``--mechanism``), one
                          registry for the command line, the specs and keys, and the choice;
                          :func:`make_oracle` builds one at an epsilon
:func:`choose_oracle`       the oracle with the smallest exact variance for ``k``, eps, n
:func:`oracle_spec`         an oracle as versioned JSON (:func:`oracle_from_spec` reads it)
:data:`DEVICE_SPECS`        every kind of device spec by its schema (oracles, RAPPOR,
                          sketches, heavy hitters, ranges, Square Wave, GRR's question
                          spec): :func:`device_spec` writes a mechanism's,
                          :func:`mechanism_from_spec` reads any of them back
:func:`report_epsilon`      what one report costs a device against any change of its
                          values: a telemetry stream's per-report charge
:class:`DBitFlipPM`         dBitFlipPM (Ding et al. 2017): bucket histograms collected every
                          day, memoized per device by :class:`DBitFlipMemo` (its own tally)
:class:`MultiAttribute`     several attributes per device: SPL, SMP or RS+FD over any mix
                          of the oracles; :func:`choose_multi` picks the protocol and oracles
:class:`OneBitMean`         1BitMean (Duchi et al.'s bit on ``[0, m]``) with alpha-point
                          rounding, memoized by :class:`OneBitMeanMemo`: daily means
:class:`HierarchicalHistogram`  range queries and quantiles over ``0..D-1``: a B-ary tree of
                          oracles, one level per device, made consistent (Hay et al. 2010)
:class:`HaarHRR`            range queries from Haar coefficients, Hadamard randomized
                          response per level (Cormode, Kulkarni & Srivastava 2019)
:class:`SquareWave`         Square Wave (Li et al. 2020): the distribution of bounded
                          numbers by EM with smoothing (:class:`SquareWaveEstimate`: the
                          mean, quantiles, bootstrap intervals)
:func:`range_spec`          the range mechanisms and Square Wave as versioned JSON
:func:`square_wave_spec`    (:func:`range_from_spec`, :func:`square_wave_from_spec` read
                          them); :func:`range_from_key` the mechanism of a report file's key
:class:`PEM`, :class:`TreeHist`  heavy hitters over an unknown domain of strings (prefix
                          extension, binary prefix tree): :class:`HeavyHitters`;
                          :func:`heavy_from_key` the protocol of a report file's key,
                          :func:`heavy_spec` as versioned JSON for a device,
                          :func:`read_heavy_file` its reports
:class:`SFP`                Sequence Fragment Puzzle (Apple 2017): frequent strings from a
                          fragment sketch with puzzle pieces and a whole-string sketch
                          (:class:`SFPResult`); :func:`sfp_from_key` the protocol of a
                          report file's key (its file tallied by :func:`tally_file`),
                          :func:`sfp_spec` as versioned JSON for a device;
                          :func:`rappor_ngram_from_key` likewise for :class:`RapporNgram`,
                          :func:`read_ngram_file` its reports, :func:`rappor_ngram_spec`
                          as versioned JSON for a device
========================  ==============================================================

May import :mod:`deniable.designs`, :mod:`deniable.results`, :mod:`deniable.randomness`,
:mod:`deniable.common`, :mod:`deniable.accounting` and :mod:`deniable.mechanisms`; nothing
below it imports it (``docs/architecture.md``).  Importing it registers the oracles'
question-spec algorithms with :mod:`deniable.designs`.
"""

from __future__ import annotations

from deniable.designs import Categorical as GRR
from deniable.designs import FrequencyEstimate
from deniable.oracles._base import FrequencyOracle
from deniable.oracles._choose import CRITERION, OracleChoice, choose_oracle
from deniable.oracles._cms import CMS
from deniable.oracles._cms_base import CountMeanSketch
from deniable.oracles._cms_spec import CMS_SPEC2_SCHEMA, CMS_SPEC_SCHEMA, cms_from_spec, cms_spec
from deniable.oracles._consistency import (
    ConsistentFrequencies,
    clip_and_normalize,
    maximum_likelihood,
    project_to_simplex,
)
from deniable.oracles._dbitflip import DBitFlipEstimate, DBitFlipPM, DBitFlipReports
from deniable.oracles._dbitflip_memo import DBitFlipMemo
from deniable.oracles._device_spec import (
    DEVICE_SPECS,
    DeviceSpec,
    device_spec,
    mechanism_from_spec,
)
from deniable.oracles._files import (
    REPORTS_MAGIC,
    read_report_key,
    read_report_metadata,
    tally_batches,
    tally_file,
    write_report_batches,
    write_reports,
)
from deniable.oracles._haar import HaarEstimate, HaarHRR
from deniable.oracles._hadamard import HadamardResponse, walsh_hadamard
from deniable.oracles._hashing import BLH, OLH, LocalHashing, collision_probability
from deniable.oracles._hcms import HCMS
from deniable.oracles._heavy_files import (
    heavy_from_key,
    heavy_from_records,
    heavy_key,
    heavy_records,
    is_heavy_key,
    read_heavy_file,
)
from deniable.oracles._heavy_hitters import PEM, HeavyHitterReports, TreeHist
from deniable.oracles._heavy_result import HeavyHitterRound, HeavyHitters
from deniable.oracles._heavy_spec import (
    HEAVY_SPEC_SCHEMA,
    heavy_device_records,
    heavy_from_spec,
    heavy_spec,
)
from deniable.oracles._heavy_vectors import HEAVY_VECTORS_SCHEMA, dump_heavy_vectors, heavy_vectors
from deniable.oracles._hierarchical import (
    HIERARCHY_ORACLES,
    HierarchicalEstimate,
    HierarchicalHistogram,
)
from deniable.oracles._histogram import Histogram
from deniable.oracles._linear_hashing import LinearOLH
from deniable.oracles._loloha import LOLOHA
from deniable.oracles._longitudinal import LongitudinalOracle
from deniable.oracles._longitudinal_grr import LGRR
from deniable.oracles._longitudinal_unary import LOSUE, LOUE, LSUE, LongitudinalUnary
from deniable.oracles._multi import (
    MULTI_ORACLES,
    MULTI_PROTOCOLS,
    MultiAttribute,
    MultiReports,
    MultiTally,
    rsfd_attribute_epsilon,
)
from deniable.oracles._multi_choose import MULTI_CRITERION, MultiChoice, choose_multi
from deniable.oracles._numeric import DuchiMechanism, PiecewiseMechanism
from deniable.oracles._numeric_base import MeanChannel
from deniable.oracles._onebit import OneBitMean, OneBitMeanMemo
from deniable.oracles._range_files import (
    is_range_key,
    range_from_key,
    range_from_records,
    range_records,
)
from deniable.oracles._range_spec import (
    RANGE_SPEC_SCHEMA,
    SQUARE_WAVE_SPEC_SCHEMA,
    range_from_spec,
    range_spec,
    square_wave_from_spec,
    square_wave_spec,
)
from deniable.oracles._range_vectors import (
    RANGE_VECTORS_SCHEMA,
    dump_range_vectors,
    range_vectors,
)
from deniable.oracles._ranges import (
    QUANTILE_METHOD,
    LevelReports,
    RangeAnswer,
    RangeEstimate,
    RangeQuantile,
)
from deniable.oracles._rappor import Rappor, RapporReports, string_digest
from deniable.oracles._rappor_client import RapporClient
from deniable.oracles._rappor_decode import RapporEstimate
from deniable.oracles._rappor_files import rappor_from_key
from deniable.oracles._rappor_ngram import RapporNgram
from deniable.oracles._rappor_ngram_decode import (
    NgramReports,
    PairLabels,
    PairLikelihoods,
    discover_tallies,
    pair_likelihoods,
)
from deniable.oracles._rappor_ngram_result import NgramDiscovery
from deniable.oracles._rappor_ngram_spec import (
    RAPPOR_NGRAM_SPEC_SCHEMA,
    rappor_ngram_device_reports,
    rappor_ngram_from_spec,
    rappor_ngram_spec,
)
from deniable.oracles._rappor_ngram_vectors import (
    RAPPOR_NGRAM_VECTORS_SCHEMA,
    dump_rappor_ngram_vectors,
    rappor_ngram_vectors,
)
from deniable.oracles._rappor_spec import RAPPOR_SPEC_SCHEMA, rappor_from_spec, rappor_spec
from deniable.oracles._registry import FREQUENCY_ORACLES, make_oracle
from deniable.oracles._report_epsilon import report_epsilon
from deniable.oracles._sfp import SFP
from deniable.oracles._sfp_result import SFPReports, SFPResult, SFPTally
from deniable.oracles._sfp_spec import (
    SFP_SPEC_SCHEMA,
    sfp_device_reports,
    sfp_from_spec,
    sfp_spec,
)
from deniable.oracles._sfp_vectors import SFP_VECTORS_SCHEMA, dump_sfp_vectors, sfp_vectors
from deniable.oracles._sketch import SketchEstimate, SketchReports
from deniable.oracles._sketch_files import sketch_from_key
from deniable.oracles._spec import (
    ORACLE_SPEC_SCHEMA,
    oracle_from_key,
    oracle_from_spec,
    oracle_spec,
)
from deniable.oracles._square_wave import SquareWave, square_wave_b
from deniable.oracles._square_wave_em import BOOTSTRAP_REPLICATES, SquareWaveEstimate
from deniable.oracles._string_files import (
    ngram_from_records,
    ngram_records,
    read_ngram_file,
    sfp_from_records,
    sfp_records,
    string_record,
)
from deniable.oracles._string_keys import (
    is_string_protocol_key,
    rappor_ngram_from_key,
    sfp_from_key,
)
from deniable.oracles._study import METHODS, PostProcessingStudy, post_processing_study
from deniable.oracles._subset import SubsetSelection
from deniable.oracles._unary import OUE, SUE, UnaryEncoding
from deniable.oracles._variance import (
    exact_variance,
    sampling_variance,
    support_probabilities,
    total_variance,
)
from deniable.oracles._vectors import ORACLE_VECTORS_SCHEMA, dump_oracle_vectors, oracle_vectors

__all__ = [
    "BLH",
    "BOOTSTRAP_REPLICATES",
    "CMS",
    "CMS_SPEC2_SCHEMA",
    "CMS_SPEC_SCHEMA",
    "CRITERION",
    "DEVICE_SPECS",
    "FREQUENCY_ORACLES",
    "GRR",
    "HCMS",
    "HEAVY_SPEC_SCHEMA",
    "HEAVY_VECTORS_SCHEMA",
    "HIERARCHY_ORACLES",
    "LGRR",
    "LOLOHA",
    "LOSUE",
    "LOUE",
    "LSUE",
    "METHODS",
    "MULTI_CRITERION",
    "MULTI_ORACLES",
    "MULTI_PROTOCOLS",
    "OLH",
    "ORACLE_SPEC_SCHEMA",
    "ORACLE_VECTORS_SCHEMA",
    "OUE",
    "PEM",
    "QUANTILE_METHOD",
    "RANGE_SPEC_SCHEMA",
    "RANGE_VECTORS_SCHEMA",
    "RAPPOR_NGRAM_SPEC_SCHEMA",
    "RAPPOR_NGRAM_VECTORS_SCHEMA",
    "RAPPOR_SPEC_SCHEMA",
    "REPORTS_MAGIC",
    "SFP",
    "SFP_SPEC_SCHEMA",
    "SFP_VECTORS_SCHEMA",
    "SQUARE_WAVE_SPEC_SCHEMA",
    "SUE",
    "ConsistentFrequencies",
    "CountMeanSketch",
    "DBitFlipEstimate",
    "DBitFlipMemo",
    "DBitFlipPM",
    "DBitFlipReports",
    "DeviceSpec",
    "DuchiMechanism",
    "FrequencyEstimate",
    "FrequencyOracle",
    "HaarEstimate",
    "HaarHRR",
    "HadamardResponse",
    "HeavyHitterReports",
    "HeavyHitterRound",
    "HeavyHitters",
    "HierarchicalEstimate",
    "HierarchicalHistogram",
    "Histogram",
    "LevelReports",
    "LinearOLH",
    "LocalHashing",
    "LongitudinalOracle",
    "LongitudinalUnary",
    "MeanChannel",
    "MultiAttribute",
    "MultiChoice",
    "MultiReports",
    "MultiTally",
    "NgramDiscovery",
    "NgramReports",
    "OneBitMean",
    "OneBitMeanMemo",
    "OracleChoice",
    "PairLabels",
    "PairLikelihoods",
    "PiecewiseMechanism",
    "PostProcessingStudy",
    "RangeAnswer",
    "RangeEstimate",
    "RangeQuantile",
    "Rappor",
    "RapporClient",
    "RapporEstimate",
    "RapporNgram",
    "RapporReports",
    "SFPReports",
    "SFPResult",
    "SFPTally",
    "SketchEstimate",
    "SketchReports",
    "SquareWave",
    "SquareWaveEstimate",
    "SubsetSelection",
    "TreeHist",
    "UnaryEncoding",
    "choose_multi",
    "choose_oracle",
    "clip_and_normalize",
    "cms_from_spec",
    "cms_spec",
    "collision_probability",
    "device_spec",
    "discover_tallies",
    "dump_heavy_vectors",
    "dump_oracle_vectors",
    "dump_range_vectors",
    "dump_rappor_ngram_vectors",
    "dump_sfp_vectors",
    "exact_variance",
    "heavy_device_records",
    "heavy_from_key",
    "heavy_from_records",
    "heavy_from_spec",
    "heavy_key",
    "heavy_records",
    "heavy_spec",
    "heavy_vectors",
    "is_heavy_key",
    "is_range_key",
    "is_string_protocol_key",
    "make_oracle",
    "maximum_likelihood",
    "mechanism_from_spec",
    "ngram_from_records",
    "ngram_records",
    "oracle_from_key",
    "oracle_from_spec",
    "oracle_spec",
    "oracle_vectors",
    "pair_likelihoods",
    "post_processing_study",
    "project_to_simplex",
    "range_from_key",
    "range_from_records",
    "range_from_spec",
    "range_records",
    "range_spec",
    "range_vectors",
    "rappor_from_key",
    "rappor_from_spec",
    "rappor_ngram_device_reports",
    "rappor_ngram_from_key",
    "rappor_ngram_from_spec",
    "rappor_ngram_spec",
    "rappor_ngram_vectors",
    "rappor_spec",
    "read_heavy_file",
    "read_ngram_file",
    "read_report_key",
    "read_report_metadata",
    "report_epsilon",
    "rsfd_attribute_epsilon",
    "sampling_variance",
    "sfp_device_reports",
    "sfp_from_key",
    "sfp_from_records",
    "sfp_from_spec",
    "sfp_records",
    "sfp_spec",
    "sfp_vectors",
    "sketch_from_key",
    "square_wave_b",
    "square_wave_from_spec",
    "square_wave_spec",
    "string_digest",
    "string_record",
    "support_probabilities",
    "tally_batches",
    "tally_file",
    "total_variance",
    "walsh_hadamard",
    "write_report_batches",
    "write_reports",
]
