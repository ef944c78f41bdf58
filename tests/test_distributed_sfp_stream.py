"""An SFP telemetry stream read on Dask (distributed.aggregate_sfp_stream): the partitions
the ingestion path writes (append_batch of device batches, several days) give, on a
LocalCluster of worker processes, the SFPResult the protocol's in-process estimate of the
same reports gives (tallies add exactly); one day alone likewise; a stream of another kind
refused naming the right reader."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from _distributed import cluster_client
from deniable.distributed import (
    aggregate_sfp_stream,
    aggregate_stream,
    append_batch,
    encode_batch,
)
from deniable.exceptions import DataError
from deniable.oracles import OUE, SFP, SFPReports, sfp_device_reports, sfp_from_records

SFP_C = SFP(epsilon=6.0, max_length=4, alphabet="abc", puzzle_bits=4, k=16, m=100,
            sketch="cms", salt=5)  # fmt: skip
SFP_H = SFP(epsilon=6.0, max_length=4, alphabet="abc", puzzle_bits=4, k=16, m=256)
client = cluster_client(processes=True)


def _write_days(root: Path, sfp: SFP) -> dict[str, list[Any]]:
    """Two days of device reports, each day in two batches of unequal size."""
    rng = np.random.default_rng(8)
    days: dict[str, list[Any]] = {}
    for day in ("2026-11-20", "2026-11-21"):
        items = [str(s) for s in rng.choice(["ab", "cab", "c", "bbb"], size=1500,
                                             p=[0.5, 0.3, 0.1, 0.1])]  # fmt: skip
        reports = sfp_device_reports(sfp, items, rng=rng)
        days[day] = [reports[:400], reports[400:]]
        for part in days[day]:
            append_batch(root, "words", sfp, encode_batch(sfp, part), day=day)
    return days


def _joined(parts: list[Any], sfp: SFP) -> SFPReports:
    from deniable.oracles import sfp_records

    return sfp_from_records(sfp, np.concatenate([sfp_records(sfp, p) for p in parts]))


@pytest.mark.parametrize("sfp", [SFP_H, SFP_C], ids=["hcms", "cms"])
def test_an_sfp_stream_on_dask_equals_in_process(client: Any, tmp_path: Path, sfp: SFP) -> None:
    days = _write_days(tmp_path, sfp)
    every = _joined([p for parts in days.values() for p in parts], sfp)
    found = aggregate_sfp_stream(tmp_path, "words", scheduler=client, batch=300)
    assert found == sfp.estimate(every)
    assert {"ab", "cab"} <= set(found.strings)
    one = aggregate_sfp_stream(tmp_path, "words", start="2026-11-21", scheduler="synchronous",
                               level=0.9)  # fmt: skip
    assert one == sfp.estimate(_joined(days["2026-11-21"], sfp), level=0.9)
    assert one.n == 1500


def test_the_stream_readers_refuse_the_other_kind(tmp_path: Path) -> None:
    _write_days(tmp_path, SFP_H)
    with pytest.raises(DataError, match=r"an sfp stream: .*aggregate_sfp_stream"):
        aggregate_stream(tmp_path, "words", scheduler="synchronous")
    with pytest.raises(DataError, match="has no reports in the days asked for"):
        aggregate_sfp_stream(tmp_path, "words", start="2026-11-22", scheduler="synchronous")
    oue = OUE.from_epsilon(1.0, k=4)
    append_batch(tmp_path, "counts", oue, encode_batch(oue, oue.randomize([1, 2], rng=1)),
                 day="2026-11-20")  # fmt: skip
    with pytest.raises(DataError, match="not an SFP or RAPPOR n-gram one"):
        aggregate_sfp_stream(tmp_path, "counts", scheduler="synchronous")
    from deniable.oracles import Rappor, RapporNgram

    ng = RapporNgram(Rappor(m=8, h=1, cohorts=1, f=0.5, p=0.25, q=0.75), None, "ab", 1, 2)
    append_batch(tmp_path, "grams", ng, encode_batch(ng, ng.randomize(["a", "ab"], rng=1)),
                 day="2026-11-20")  # fmt: skip
    with pytest.raises(DataError, match=r"a rappor-ngram stream: .*aggregate_sfp_stream"):
        aggregate_stream(tmp_path, "grams", scheduler="synchronous")
    found = aggregate_sfp_stream(tmp_path, "grams", scheduler="synchronous")
    assert found.to_dict(0.9) == ng.discover(ng.randomize(["a", "ab"], rng=1)).to_dict(0.9)
