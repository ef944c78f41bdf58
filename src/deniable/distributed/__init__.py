"""Aggregation beyond one machine: report tables tallied on a Dask cluster.

Telemetry reports as **tables** (Parquet or CSV, one column per report item:
:func:`report_columns`), written by :func:`write_report_table` (or ``deniable telemetry
simulate --format parquet``), are tallied by :func:`aggregate` partition by partition on
the workers of a Dask cluster (a ``LocalCluster`` by default, or an existing one given its
scheduler address), with each oracle's own vectorized tally, and the partial tallies are
added in a tree.  Only tallies (``k + 1`` integers and the oracle's key) and the oracle's
parameters cross a process boundary; the result is **equal** to the in-process tally of
the same reports (integer addition is exact and associative), so the estimate is too.

========================  ==============================================================
:func:`aggregate`         the tally of Parquet or CSV reports (a path, a glob, a list, a
                          directory or any fsspec URL), on a Dask cluster or in-process
:func:`write_report_table`  reports of an oracle, given in batches, to a Parquet or CSV
                          table (atomically; Parquet carries the oracle's key)
:func:`report_columns`    the column names of an oracle's reports
:func:`aggregate_heavy_hitters`  PEM's or TreeHist's heavy hitters from report tables,
                          each round a map-reduce on the cluster (equal to in-process)
:func:`aggregate_strings`  the strings SFP or RAPPOR's n-grams find in report tables
                          (their tallies, the n-grams' likelihoods on the cluster)
:func:`table_mechanism`   the oracle whose key a Parquet report table carries
:func:`require_dask`      the ``dask`` extra imported, or an ``ImportError`` naming it
:func:`encode_batch`      a device's reports as a binary batch (``deniable.batch/1``);
:func:`decode_batch`      read back with the header, length and every report checked
                          (:func:`encode_json_batch`, :func:`decode_json_batch`: JSON)
:func:`append_batch`      a batch appended to a stream's Parquet partition of a day,
                          durably (:func:`append_batches`: a group as one file;
                          :func:`append_reports`: reports already decoded)
:func:`aggregate_stream`  the tally of a stream's days, in process or on Dask
                          (:func:`stream_files`, :func:`stream_oracle`,
                          :func:`clean_stream`); :func:`aggregate_heavy_stream` a PEM or
                          TreeHist stream's heavy hitters, :func:`aggregate_sfp_stream`
                          an SFP stream's strings
========================  ==============================================================

May import :mod:`deniable.oracles`, :mod:`deniable.designs`, :mod:`deniable.common` and
the layers below them; nothing in the library imports it except the command line
(``docs/architecture.md``).  dask, distributed, fsspec and pyarrow (the ``dask`` extra)
are imported inside the functions that use them: importing this package loads none of
them.
"""

from __future__ import annotations

from deniable.distributed._aggregate import DEFAULT_BATCH, LOCAL_WORKERS, aggregate
from deniable.distributed._batch import (
    BATCH_HEADER_SIZE,
    BATCH_MAGIC,
    BATCH_VERSION,
    batch_digest,
    decode_batch,
    decode_json_batch,
    encode_batch,
    encode_json_batch,
)
from deniable.distributed._heavy import aggregate_heavy_hitters
from deniable.distributed._sources import require_dask, resolve_mechanism, table_mechanism
from deniable.distributed._stream_read import (
    CLEAN_AFTER,
    aggregate_heavy_stream,
    aggregate_sfp_stream,
    aggregate_stream,
    clean_stream,
    stream_files,
    stream_oracle,
)
from deniable.distributed._streams import (
    STREAM_SPEC_FILE,
    STREAM_SPEC_SCHEMA,
    StoredBatch,
    append_batch,
    append_batches,
    append_reports,
)
from deniable.distributed._strings import aggregate_strings
from deniable.distributed._tables import (
    CSV_SUFFIXES,
    KEY_METADATA,
    TABLE_FORMATS,
    report_columns,
    table_format,
    write_report_table,
)

__all__ = [
    "BATCH_HEADER_SIZE",
    "BATCH_MAGIC",
    "BATCH_VERSION",
    "CLEAN_AFTER",
    "CSV_SUFFIXES",
    "DEFAULT_BATCH",
    "KEY_METADATA",
    "LOCAL_WORKERS",
    "STREAM_SPEC_FILE",
    "STREAM_SPEC_SCHEMA",
    "TABLE_FORMATS",
    "StoredBatch",
    "aggregate",
    "aggregate_heavy_hitters",
    "aggregate_heavy_stream",
    "aggregate_sfp_stream",
    "aggregate_stream",
    "aggregate_strings",
    "append_batch",
    "append_batches",
    "append_reports",
    "batch_digest",
    "clean_stream",
    "decode_batch",
    "decode_json_batch",
    "encode_batch",
    "encode_json_batch",
    "report_columns",
    "require_dask",
    "resolve_mechanism",
    "stream_files",
    "stream_oracle",
    "table_format",
    "table_mechanism",
    "write_report_table",
]
