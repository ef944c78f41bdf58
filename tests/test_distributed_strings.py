"""SFP's and RAPPOR n-grams' report tables on Dask (``deniable.distributed._strings``): the
record's items as columns ``report_0 ..``; SFP's tally and the n-grams' tallies summed over
the partitions on a LocalCluster (integer counts add exactly) and the n-grams' likelihoods
joined in the tables' order, so the result equals the in-process estimate of the same
reports; a table of another protocol or a record out of range refused naming the file."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from _distributed import cluster_client
from deniable.distributed import (
    aggregate,
    aggregate_strings,
    report_columns,
    resolve_mechanism,
    write_report_table,
)
from deniable.exceptions import DataError, ParameterError, ParameterTypeError
from deniable.oracles import PEM, SFP, Rappor, RapporNgram

SFP_H = SFP(epsilon=6.0, max_length=4, alphabet="abc", puzzle_bits=4, k=16, m=256)
SFP_C = SFP(epsilon=6.0, max_length=4, alphabet="abc", puzzle_bits=4, k=16, m=100,
            sketch="cms", salt=5)  # fmt: skip
NG = RapporNgram(
    Rappor(m=32, h=2, cohorts=8, f=0.25, p=0.25, q=0.75),
    Rappor(m=64, h=2, cohorts=4, f=0.25, p=0.25, q=0.75),
    alphabet="abc", gram=1, length=3, pairs=2,
)  # fmt: skip
WORDS = ["ab"] * 900 + ["cab"] * 600 + ["c", "ba", "bbb", "acc"] * 150
client = cluster_client(processes=True)


def _write_parts(directory: Path, protocol: Any, reports: Any, suffix: str) -> list[Path]:
    """The reports cut into three files of unequal size, row groups of 300."""
    cuts = [0, len(WORDS) // 5, len(WORDS) // 2, len(WORDS)]
    out = []
    for i in range(3):
        part = reports[cuts[i] : cuts[i + 1]] if not isinstance(protocol, RapporNgram) else (
            _ngram_slice(reports, cuts[i], cuts[i + 1]))  # fmt: skip
        out.append(directory / f"part-{i}{suffix}")
        write_report_table(out[-1], protocol, cuts[i + 1] - cuts[i], [part], row_group=300)
    return out


def _ngram_slice(reports: Any, a: int, b: int) -> Any:
    from deniable.oracles import NgramReports

    k = 2 * NG.pairs
    full = None if reports.full is None else reports.full[a:b]
    return NgramReports(reports.positions[a:b], reports.ngrams[a * k : b * k], full)


def test_the_columns_are_the_records_items() -> None:
    assert report_columns(SFP_H) == ("report_0", "report_1", "report_2")
    # CMS: the <u2 position, two rows of <u2 + ceil(100 / 8) bytes
    assert len(report_columns(SFP_C)) == 2 + 2 * (2 + 13)
    # two pairs (4 bytes), four n-gram reports of 2 + 4 bytes, the full one of 2 + 8
    assert len(report_columns(NG)) == 4 + 4 * 6 + 10
    for protocol in (SFP_H, NG):
        assert resolve_mechanism(protocol.key) == protocol


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
@pytest.mark.parametrize("sfp", [SFP_H, SFP_C])
def test_sfp_on_dask_equals_in_process(client: Any, tmp_path: Path, suffix: str, sfp: SFP) -> None:
    reports = sfp.randomize(WORDS, rng=2)
    _write_parts(tmp_path, sfp, reports, suffix)
    found = aggregate_strings(str(tmp_path / f"*{suffix}"), sfp, scheduler=client, batch=300)
    assert found == sfp.estimate(reports)
    assert {"ab", "cab"} <= set(found.strings)
    again = aggregate_strings(str(tmp_path / f"*{suffix}"), sfp.key, scheduler="synchronous",
                              alpha=0.2, level=0.9)  # fmt: skip
    other = SFP(epsilon=6.0, max_length=4, alphabet="abc", puzzle_bits=4, k=sfp.k, m=sfp.m,
                sketch=sfp.sketch, salt=sfp.salt, alpha=0.2)  # fmt: skip
    assert again == other.estimate(reports, level=0.9)


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_ngrams_on_dask_equal_in_process(client: Any, tmp_path: Path, suffix: str) -> None:
    reports = NG.randomize(WORDS, rng=3)
    _write_parts(tmp_path, NG, reports, suffix)
    found = aggregate_strings(str(tmp_path / f"part-*{suffix}"), NG, scheduler=client,
                              batch=300)  # fmt: skip
    # NgramDiscovery holds arrays: compared as JSON, every number equal
    assert found.to_dict(0.95) == NG.discover(reports).to_dict(0.95)
    assert {"ab", "cab"} <= set(found.strings)
    tight = aggregate_strings(str(tmp_path / f"part-*{suffix}"), NG, scheduler="synchronous",
                              alpha=0.01, edge_threshold=0.05)  # fmt: skip
    expected = NG.discover(reports, alpha=0.01, edge_threshold=0.05)
    assert tight.to_dict(0.9) == expected.to_dict(0.9)


def test_the_key_of_a_parquet_table_names_the_protocol(tmp_path: Path) -> None:
    reports = NG.randomize(WORDS, rng=5)
    _write_parts(tmp_path, NG, reports, ".parquet")
    found = aggregate_strings(str(tmp_path), scheduler="synchronous")
    assert found.to_dict(0.95) == NG.discover(reports).to_dict(0.95)


def test_bad_tables_are_refused_naming_the_file(tmp_path: Path) -> None:
    reports = SFP_H.randomize(WORDS, rng=6)
    (tmp_path / "a").mkdir()
    paths = _write_parts(tmp_path / "a", SFP_H, reports, ".parquet")
    other = SFP(epsilon=6.0, max_length=4, alphabet="abd", puzzle_bits=4, k=16, m=256)
    with pytest.raises(DataError, match=r"part-0\.parquet.*holds reports of sfp"):
        aggregate_strings(str(tmp_path / "a"), other, scheduler="synchronous")
    with pytest.raises(ParameterTypeError, match="aggregate_strings"):
        aggregate(str(paths[0]), scheduler="synchronous")
    pem = PEM(epsilon=2.0, max_bytes=1)
    write_report_table(tmp_path / "p.parquet", pem, 10, [pem.randomize(["a"] * 10, rng=1)])
    with pytest.raises(ParameterTypeError, match="SFP or RapporNgram"):
        aggregate_strings(str(tmp_path / "p.parquet"), scheduler="synchronous")
    # a position out of range (0..1) in a CSV row: refused naming the file
    (tmp_path / "b").mkdir()
    csv = _write_parts(tmp_path / "b", SFP_H, reports, ".csv")[1]
    lines = csv.read_text().splitlines()
    lines[3] = "5" + lines[3][1:]
    csv.write_text("\n".join(lines) + "\n")
    with pytest.raises(DataError, match=r"part-1\.csv.*got 5"):
        aggregate_strings(str(tmp_path / "b"), SFP_H, scheduler="synchronous")


def test_max_candidates_is_the_servers_choice(tmp_path: Path) -> None:
    """SFP's ``max_candidates`` (not in the key: the protocol's, or the one given) and the
    n-grams' reach the estimate as in process; out of range, or exceeded by the n-grams'
    chains, a ParameterError naming it."""
    one_bit = SFP(epsilon=6.0, max_length=4, alphabet="abc", puzzle_bits=1, k=16, m=256)
    reports = one_bit.randomize(WORDS, rng=7)
    (tmp_path / "s").mkdir()
    _write_parts(tmp_path / "s", one_bit, reports, ".parquet")
    source = str(tmp_path / "s")
    for given, alpha in ((1, None), (2, 0.2), (None, 0.2)):
        got = aggregate_strings(source, one_bit.key, scheduler="synchronous",
                                max_candidates=given, alpha=alpha)  # fmt: skip
        chosen = dataclasses.replace(one_bit, alpha=alpha or 0.01, max_candidates=given or 1024)
        assert got == chosen.estimate(reports)
    kept = dataclasses.replace(one_bit, max_candidates=1)  # a protocol's own, when not given
    assert aggregate_strings(source, kept, scheduler="synchronous") == kept.estimate(reports)
    with pytest.raises(ParameterError, match=r"`max_candidates` must be an integer in \[1, 2"):
        aggregate_strings(source, one_bit, scheduler="synchronous", max_candidates=0)
    ngrams = NG.randomize(WORDS, rng=8)
    (tmp_path / "n").mkdir()
    _write_parts(tmp_path / "n", NG, ngrams, ".parquet")
    found = aggregate_strings(str(tmp_path / "n"), scheduler="synchronous", max_candidates=20)
    assert found.to_dict(0.9) == NG.discover(ngrams, max_candidates=20).to_dict(0.9)
    for cap, words in ((3, r"`max_candidates` \(3\) is exceeded"), (10**6 + 1, r"10\*\*6")):
        with pytest.raises(ParameterError, match=words):
            aggregate_strings(str(tmp_path / "n"), scheduler="synchronous", max_candidates=cap)
