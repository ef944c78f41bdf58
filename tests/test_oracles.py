"""The frequency oracles beyond the conformance suite (tests/test_conformance.py runs the
mechanism contract, unbiasedness, the exact variance and the epsilon audit on each):

* specs and test vectors: the committed file is current, every case replays through an
  independent pure-Python reading of the algorithms of docs/specs.md, specs round-trip
  and a tampered or unknown field is refused by name;
* the hash family: its strong universality enumerated on a small word size, and the
  exact collision probability;
* bad input: values outside [0, k), k < 2, malformed reports, a foreign tally: one error
  naming the parameter, the allowed values and what was given;
* post-processing, the adaptive choice, numeric means and histograms.
"""

from __future__ import annotations

import hashlib
import json
import math
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from deniable.designs import Tally
from deniable.exceptions import DataError, ParameterError, ParameterTypeError
from deniable.mechanisms import InMemoryMemoStore
from deniable.oracles import (
    BLH,
    GRR,
    OLH,
    OUE,
    SUE,
    DuchiMechanism,
    FrequencyEstimate,
    HadamardResponse,
    Histogram,
    LinearOLH,
    PiecewiseMechanism,
    Rappor,
    RapporClient,
    SubsetSelection,
    choose_oracle,
    clip_and_normalize,
    collision_probability,
    dump_oracle_vectors,
    exact_variance,
    maximum_likelihood,
    oracle_from_spec,
    oracle_spec,
    project_to_simplex,
    rappor_from_spec,
    rappor_spec,
    tally_batches,
    tally_file,
    write_reports,
)
from deniable.oracles._vectors import VECTOR_ORACLES
from deniable.randomness import ArrayWords

VECTORS_FILE = Path(__file__).parent / "vectors" / "oracles.json"
M64 = (1 << 64) - 1

ORACLE_MAKERS = [
    lambda: SUE.from_epsilon(1.0, k=12),
    lambda: OUE.from_epsilon(1.0, k=70),
    lambda: BLH.from_epsilon(1.0, k=9),
    lambda: OLH.from_epsilon(2.0, k=33),
    lambda: LinearOLH.from_epsilon(2.0, k=33),
    lambda: HadamardResponse.from_epsilon(1.0, k=20),
    lambda: SubsetSelection.from_epsilon(1.0, k=17),
]
ORACLE_IDS = ["sue", "oue", "blh", "olh", "olh-linear", "hadamard", "subset"]
LONGITUDINAL_IDS = ["l-grr", "l-sue", "l-oue", "l-osue", "loloha"]


@pytest.fixture(params=ORACLE_MAKERS, ids=ORACLE_IDS)
def oracle(request: pytest.FixtureRequest) -> Any:
    return request.param()


# ------------------------------------------------------------------ specs and vectors


def test_the_vectors_file_is_current() -> None:
    # regenerate with `.venv/bin/python scripts/gen_oracle_vectors.py`
    assert VECTORS_FILE.read_text(encoding="utf-8") == dump_oracle_vectors()


def test_the_vectors_cover_every_oracle_and_threshold_edge() -> None:
    data = json.loads(VECTORS_FILE.read_text(encoding="utf-8"))
    assert data["schema"] == "deniable.oracle-vectors/1"
    names = {c["spec"]["mechanism"] for c in data["cases"]}
    assert (
        names - {"rappor", "cms", "hcms"}
        == set(VECTOR_ORACLES)
        == set(ORACLE_IDS) | set(LONGITUDINAL_IDS)
    )
    devices = {c["spec"]["mechanism"] for c in data["cases"] if "prr" in c}
    assert devices == {*LONGITUDINAL_IDS, "rappor"}
    for case in data["cases"]:
        if "prr" in case:  # a device's rounds: covered by the device tests below
            continue
        words = [int(w) for w in case["words"]]
        w = case["spec"]["words_per_report"]
        assert len(words) == w * len(case["values"]) == w * len(case["reports"])
        assert 0 in words and M64 in words


def _lane_bits(words: list[int], bits: int, set_count: int, n_lanes: int) -> list[int]:
    """docs/specs.md, unary encoding: lane ``b`` of plane-word ``c`` across the ``bits``
    planes is an integer U (plane 0 least significant); set iff U >= 2**bits - set."""
    planes = len(words) // bits
    out = []
    for lane in range(n_lanes):
        c, b = divmod(lane, 64)
        u = sum(((words[i * planes + c] >> b) & 1) << i for i in range(bits))
        out.append(int(u >= (1 << bits) - set_count))
    return out


def _uniform(word: int, m: int) -> int:
    """docs/specs.md: a uniform integer in 0..m-1 from one word (multiply-shift)."""
    if m & (m - 1) == 0:
        return word >> (64 - (m.bit_length() - 1)) if m > 1 else 0
    b = 64 - m.bit_length()
    return ((word >> (64 - b)) * m) >> b


def _pack(bits: list[int]) -> str:
    data = bytearray((len(bits) + 7) // 8)
    for j, bit in enumerate(bits):
        data[j // 8] |= bit << (j % 8)
    return bytes(data).hex()


def _replay(spec: dict[str, Any], value: int, words: list[int]) -> Any:
    """One report from its words by the algorithm of docs/specs.md, in plain Python."""
    k, c, alg = spec["k"], spec["constants"], spec["algorithm"]
    if alg in ("symmetric-unary/1", "optimized-unary/1"):
        nw = (k + 63) // 64
        bits = _lane_bits(words[: c["bits"] * nw], c["bits"], c["set"], k)
        if alg == "symmetric-unary/1":
            bits[value] ^= 1
        else:
            bits[value] = words[-1] >> 63
        return _pack(bits)
    if alg == "local-hashing/1":
        a, b, keep_word, bucket_word = words
        g = c["buckets"]
        bucket = ((((a * value + b) & M64) >> 32) * g) >> 32
        y = bucket if (keep_word >> 11) < c["keep"] else _uniform(bucket_word, g)
        return [str(a), str(b), y]
    if alg == "linear-local-hashing/1":
        # docs/specs.md: R rows of L bits a row word, keep word, bucket word; the report is
        # the rows in place, y after the last row if it fits, else in a word of its own
        big_l, per, l_bits = c["value_bits"], c["rows_per_word"], c["buckets"].bit_length() - 1
        row_words = len(words) - 2
        out = [0] * c["report_words"]
        bucket = 0
        for r in range(l_bits):
            word, shift = r // per, (r % per) * big_l
            row = (words[word] >> shift) & ((1 << big_l) - 1)
            out[word] |= row << shift
            bucket |= (bin(row & value).count("1") & 1) << r
        keep_word, bucket_word = words[row_words], words[row_words + 1]
        y = bucket if (keep_word >> 11) < c["keep"] else bucket_word >> (64 - l_bits)
        word, shift = (l_bits - 1) // per, ((l_bits - 1) % per + 1) * big_l
        if shift + l_bits > 64:
            word, shift = word + 1, 0
        out[word] |= y << shift
        return [str(x) for x in out]
    if alg == "hadamard-response/1":
        rows = c["rows"]
        j = words[0] >> (64 - (rows.bit_length() - 1))
        bit = bin(j & value).count("1") & 1
        if (words[1] >> 11) < c["flip"]:
            bit ^= 1
        return 2 * j + bit
    if alg == "subset-selection/1":
        d = c["size"]
        include = (words[0] >> 11) < c["include"]
        chosen: set[int] = {value} if include else set()
        m = k - 1
        for s in range(d):
            if s == 0 and include:
                continue
            j = m - d + s
            t = _uniform(words[1 + s], j + 1)
            t_value = t + (t >= value)
            j_value = j + (j >= value)
            chosen.add(j_value if t_value in chosen else t_value)
        return _pack([int(x in chosen) for x in range(k)])
    if alg == "longitudinal-grr/1":
        prr = _keep_or_uniform(value, words[0], words[1], c["keep_1"], k)
        return _keep_or_uniform(prr, words[2], words[3], c["keep_2"], k)
    if alg == "longitudinal-unary/1":
        prr = [(words[j] >> 11) < (c["p1"] if j == value else c["q1"]) for j in range(k)]
        return _pack(_unary_irr(c, prr, words[k:]))
    if alg == "loloha/1":
        a, b = words[0], words[1]
        g = c["buckets"]
        bucket = ((((a * value + b) & M64) >> 32) * g) >> 32
        prr = _keep_or_uniform(bucket, words[2], words[3], c["keep_1"], g)
        return [str(a), str(b), _keep_or_uniform(prr, words[4], words[5], c["keep_2"], g)]
    raise AssertionError(alg)  # pragma: no cover


def _keep_or_uniform(x: int, keep_word: int, word: int, keep: int, m: int) -> int:
    """docs/specs.md: one round of k-ary randomized response (keep-or-forced/1)."""
    return x if (keep_word >> 11) < keep else _uniform(word, m)


def _unary_irr(c: dict[str, int], prr: list[bool], words: list[int]) -> list[int]:
    pairs = zip(prr, words, strict=True)
    return [int((w >> 11) < (c["p2"] if bit else c["q2"])) for bit, w in pairs]


def _replay_device(spec: dict[str, Any], values: list[int], rounds: list[list[int]]) -> Any:
    """A device's rounds by docs/specs.md in plain Python: ``(reports, held PRRs)``, the memo
    a dict from the value (LOLOHA: the seeds, then the bucket) to its permanent response."""
    k, c, alg = spec["k"], spec["constants"], spec["algorithm"]
    memo: dict[Any, Any] = {}
    reports, held = [], []
    for value, words in zip(values, rounds, strict=True):
        words = list(words)
        if alg == "loloha/1":
            if "seeds" not in memo:  # 4 words, their top 32 bits: a low, a high, b low, b high
                top = [words.pop(0) >> 32 for _ in range(4)]
                memo["seeds"] = (top[0] | top[1] << 32, top[2] | top[3] << 32)
            a, b = memo["seeds"]
            g = c["buckets"]
            key: Any = ((((a * value + b) & M64) >> 32) * g) >> 32
            if key not in memo:
                memo[key] = _keep_or_uniform(key, words.pop(0), words.pop(0), c["keep_1"], g)
            report: Any = [str(a), str(b), _keep_or_uniform(memo[key], *words, c["keep_2"], g)]
            held.append(memo[key])
        elif alg == "longitudinal-grr/1":
            if value not in memo:
                memo[value] = _keep_or_uniform(value, words.pop(0), words.pop(0), c["keep_1"], k)
            report = _keep_or_uniform(memo[value], *words, c["keep_2"], k)
            held.append(memo[value])
        else:
            if value not in memo:
                memo[value] = [
                    (words.pop(0) >> 11) < (c["p1"] if j == value else c["q1"]) for j in range(k)
                ]
            report = _pack(_unary_irr(c, memo[value], words))
            held.append(_pack([int(bit) for bit in memo[value]]))
        reports.append(report)
    return reports, held


def _device_cases(schema: str = "deniable.oracle/1") -> list[dict[str, Any]]:
    data = json.loads(VECTORS_FILE.read_text(encoding="utf-8"))
    return [c for c in data["cases"] if "prr" in c and c["spec"]["schema"] == schema]


def _replay_rappor(spec: dict[str, Any], values: list[str], rounds: list[list[int]]) -> Any:
    """A RAPPOR device's rounds by docs/specs.md in plain Python (hashlib's BLAKE2b):
    ``(reports, held PRRs)``; the memo holds the cohort and the PRR of each string."""
    c = spec["constants"]
    m, h = c["bits"], c["hashes"]
    memo: dict[str, Any] = {}
    reports, held = [], []
    for value, words in zip(values, rounds, strict=True):
        words = list(words)
        if "cohort" not in memo:
            memo["cohort"] = ((words.pop(0) >> 32) * c["cohorts"]) >> 32
        cohort = memo["cohort"]
        if value not in memo:
            digest = hashlib.blake2b(value.encode(), digest_size=8, person=b"deniable-rappor")
            x = int.from_bytes(digest.digest(), "big") >> 31
            bloom = [0] * m
            for i in range(h):
                raw = hashlib.blake2b(f"deniable.rappor/1:{cohort}:{i}".encode(), digest_size=16)
                a, b = (int.from_bytes(raw.digest()[j : j + 8], "little") for j in (0, 8))
                bloom[((((a * x + b) & M64) >> 32) * m) >> 32] = 1
            coins = zip([words.pop(0) for _ in range(m)], bloom, strict=True)
            memo[value] = [w & 1 if (w >> 11) < c["f"] else bit for w, bit in coins]
        pairs = zip(memo[value], words, strict=True)  # the IRR's m words, all of the rest
        irr = [int((w >> 11) < (c["q"] if bit else c["p"])) for bit, w in pairs]
        reports.append([cohort, _pack(irr)])
        held.append(_pack(memo[value]))
    return reports, held


def test_every_rappor_device_case_replays_by_the_documented_algorithm() -> None:
    cases = _device_cases("deniable.rappor-spec/1")
    assert len(cases) >= 2
    for case in cases:
        rounds = [[int(w) for w in ws] for ws in case["words"]]
        reports, held = _replay_rappor(case["spec"], case["values"], rounds)
        assert reports == case["reports"], case["id"]
        assert held == case["prr"], case["id"]


def test_every_rappor_device_case_replays_through_the_client_and_a_memo_store() -> None:
    for case in _device_cases("deniable.rappor-spec/1"):
        rappor = rappor_from_spec(case["spec"])
        client = RapporClient(rappor, InMemoryMemoStore())
        got = []
        for value, ws in zip(case["values"], case["words"], strict=True):
            source = ArrayWords(np.array([int(w) for w in ws], dtype=np.uint64))
            report = client.report(["phone"], [value], rng=source)
            assert source.remaining == 0, case["id"]
            got.append([int(report.cohorts[0]), bytes(report.bits[0]).hex()])
        assert got == case["reports"], case["id"]


def test_a_rappor_spec_round_trips_and_a_tampered_field_is_refused() -> None:
    rappor = Rappor(m=24, h=2, cohorts=3, f=0.25, p=0.1, q=0.9)
    spec = rappor_spec(rappor)
    assert rappor_from_spec(spec) == rappor == rappor_from_spec(json.dumps(spec))
    for field, value in [("epsilon", 0.5), ("key", "rappor{}"), ("report", "bits")]:
        with pytest.raises(DataError, match=f"`{field}`"):
            rappor_from_spec({**spec, field: value})
    with pytest.raises(DataError, match="`constants`"):
        rappor_from_spec({**spec, "constants": {**spec["constants"], "f": 1}})
    with pytest.raises(DataError, match="unknown spec field `k`"):
        rappor_from_spec({**spec, "k": 2})
    with pytest.raises(DataError, match="`parameters`: `p` must be less than `q`"):
        rappor_from_spec({**spec, "parameters": {**spec["parameters"], "p": "1"}})


def test_every_device_case_replays_through_the_documented_algorithms() -> None:
    """An independent reading of docs/specs.md (a device's memo) gives every report and
    every permanent response of the device cases, each round using exactly its words."""
    for case in _device_cases():
        rounds = [[int(w) for w in ws] for ws in case["words"]]
        reports, held = _replay_device(case["spec"], case["values"], rounds)
        assert reports == case["reports"], case["id"]
        assert held == case["prr"], case["id"]


def test_every_device_case_replays_through_the_library_and_a_memo_store() -> None:
    """The oracle, given each round's words, a MemoStore and one device, reports as the
    case says, uses exactly the round's words, and keeps the PRR across rounds."""
    for case in _device_cases():
        oracle = oracle_from_spec(case["spec"])
        memo = InMemoryMemoStore()
        got = []
        for value, ws in zip(case["values"], case["words"], strict=True):
            source = ArrayWords(np.array([int(w) for w in ws], dtype=np.uint64))
            report = oracle.randomize([value], rng=source, memo=memo, devices=["phone"])
            assert source.remaining == 0, case["id"]
            got.append(report)
        reports = np.concatenate(got)
        assert oracle.tally(reports).counts.tolist() == case["tally"], case["id"]
        if case["spec"]["report"] == "packed-bits":
            assert [bytes(r).hex() for r in reports] == case["reports"], case["id"]
        elif case["spec"]["report"] == "hash-bucket":
            assert [[str(a), str(b), int(y)] for a, b, y in reports] == case["reports"]
        else:
            assert reports.tolist() == case["reports"], case["id"]


def test_every_vector_replays_through_the_documented_algorithms() -> None:
    """An independent reading of docs/specs.md gives every report of the file."""
    data = json.loads(VECTORS_FILE.read_text(encoding="utf-8"))
    for case in [c for c in data["cases"] if "prr" not in c and "columns" not in c]:
        spec = case["spec"]
        w = spec["words_per_report"]
        words = [int(x) for x in case["words"]]
        for i, (value, report) in enumerate(zip(case["values"], case["reports"], strict=True)):
            got = _replay(spec, value, words[i * w : (i + 1) * w])
            assert got == report, (case["id"], i, value)


def test_every_vector_tallies_to_its_support_counts() -> None:
    data = json.loads(VECTORS_FILE.read_text(encoding="utf-8"))
    for case in [c for c in data["cases"] if "prr" not in c and "columns" not in c]:
        oracle = oracle_from_spec(case["spec"])
        kind = case["spec"]["report"]
        if kind == "packed-bits":
            reports = np.array([list(bytes.fromhex(r)) for r in case["reports"]], np.uint8)
        elif kind == "hash-bucket":
            reports = np.array([[int(a), int(b), y] for a, b, y in case["reports"]], np.uint64)
        elif kind == "linear-hash":
            reports = np.array([[int(w) for w in r] for r in case["reports"]], np.uint64)
            reports = reports[:, 0] if reports.shape[1] == 1 else reports
        else:
            reports = np.array(case["reports"])
        assert oracle.tally(reports).counts.tolist() == case["tally"], case["id"]


def test_spec_round_trips(oracle: Any) -> None:
    spec = oracle_spec(oracle)
    assert oracle_from_spec(spec) == oracle
    assert oracle_from_spec(json.dumps(spec)) == oracle
    assert spec["key"] == oracle.key and spec["epsilon"] == oracle.epsilon
    assert spec["implemented_epsilon"] <= spec["epsilon"]
    assert (spec["hash"] is not None) == isinstance(oracle, BLH | OLH | LinearOLH)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("epsilon", 0.5),
        ("words_per_report", 1),
        ("k", 3),
        ("key", "oue{}"),
        ("algorithm", "optimized-unary/2"),
        ("report", "index"),
        ("schema", "deniable.oracle/2"),
    ],
)
def test_a_tampered_spec_field_is_refused_by_name(field: str, value: Any) -> None:
    spec = oracle_spec(OLH(k=5, g=3, p_truthful=0.5))
    spec[field] = value
    with pytest.raises(DataError, match=f"`{field}`"):
        oracle_from_spec(spec)


def test_a_tampered_threshold_or_hash_is_refused() -> None:
    spec = oracle_spec(HadamardResponse(k=5, p=0.75))
    spec["constants"]["flip"] += 1
    with pytest.raises(DataError, match="`constants`"):
        oracle_from_spec(spec)
    spec = oracle_spec(OLH(k=5, g=3, p_truthful=0.5))
    spec["hash"]["family"] = "tabulation/1"
    with pytest.raises(DataError, match="`hash`"):
        oracle_from_spec(spec)


def test_unknown_missing_and_malformed_spec_fields() -> None:
    spec = oracle_spec(SUE(k=5, q=0.25))
    with pytest.raises(DataError, match="unknown spec field `colour`"):
        oracle_from_spec({**spec, "colour": 1})
    with pytest.raises(DataError, match="`epsilon` is missing"):
        oracle_from_spec({f: x for f, x in spec.items() if f != "epsilon"})
    with pytest.raises(DataError, match="`mechanism` must be one of"):
        oracle_from_spec({**spec, "mechanism": "rappor"})
    with pytest.raises(DataError, match=r"`parameters.q` must be an integer or an exact"):
        oracle_from_spec({**spec, "parameters": {"k": 5, "q": "a quarter"}})
    with pytest.raises(DataError, match="`parameters`"):
        oracle_from_spec({**spec, "parameters": {"k": 5, "q": "1/4", "d": 2}})
    with pytest.raises(DataError, match="JSON text"):
        oracle_from_spec("{not json")
    with pytest.raises(ParameterTypeError, match="`oracle` must be one of"):
        oracle_spec(GRR.from_epsilon(1.0, k=4))  # type: ignore[arg-type]


# ------------------------------------------------------------------ the hash family


def test_multiply_add_shift_is_strongly_universal_on_a_small_word() -> None:
    """The family of docs/telemetry.md at 8-bit words and 4-bit hashes (the 64/32 family
    scaled down: inputs below 2**(8 - 4 + 1)): for every pair of inputs, over all 2**16
    seeds (a, b), the pair of hashes takes each of the 256 values exactly 256 times."""
    a, b = np.meshgrid(np.arange(256), np.arange(256), indexing="ij")
    a, b = a.ravel(), b.ravel()
    hashes = [((a * x + b) % 256) >> 4 for x in range(32)]
    for x in range(32):
        for y in range(x + 1, 32):
            pairs = np.bincount(hashes[x] * 16 + hashes[y], minlength=256)
            assert np.all(pairs == 256), (x, y)
    # and it is not for inputs beyond the bound (the bound in the docs is needed)
    far = ((a * 64 + b) % 256) >> 4
    assert not np.all(np.bincount(hashes[0] * 16 + far, minlength=256) == 256)


@pytest.mark.parametrize("g", [2, 3, 4, 5, 7, 12])
def test_collision_probability_is_exact(g: int) -> None:
    """``sum_y n_y^2 / 2**64`` with ``n_y`` the 32-bit hashes in bucket ``y``; on an 8-bit
    hash the same formula counts the buckets of every hash value."""
    base, extra = divmod(1 << 32, g)
    assert collision_probability(g) == Fraction(
        extra * (base + 1) ** 2 + (g - extra) * base**2, 1 << 64
    )
    if g & (g - 1) == 0:
        assert collision_probability(g) == Fraction(1, g)
    assert abs(collision_probability(g) - Fraction(1, g)) < Fraction(1, 1 << 32)
    sizes = np.bincount((np.arange(256) * g) >> 8, minlength=g)  # the bucket map, 8 bits
    assert sizes.sum() == 256 and sizes.max() - sizes.min() <= 1


def test_local_hashing_decodes_the_hash_it_randomized() -> None:
    """With the bucket always kept (p_truthful = 1 - tiny), every report supports its value:
    the decoder computes the same hash as the randomizer, block by block."""
    olh = OLH(k=300, g=7, p_truthful=1 - 2**-40)
    values = np.arange(40_000) % 300
    reports = olh.randomize(values, rng=3)
    assert all(olh.supports(reports[values == j], j).all() for j in (0, 1, 150, 299))
    counts = olh.tally(reports).counts
    assert np.all(counts[:300] >= np.bincount(values, minlength=300))


# ------------------------------------------------------------------ bad input


@pytest.mark.parametrize("bad", [-1, 99, 2.5])
def test_values_outside_the_range_name_values(oracle: Any, bad: Any) -> None:
    with pytest.raises(DataError, match=rf"`values` must hold integers in 0\.\.{oracle.k - 1}"):
        oracle.randomize([0, bad])


@pytest.mark.parametrize(
    "maker", [SUE, OUE, BLH, OLH, LinearOLH, HadamardResponse, SubsetSelection]
)
@pytest.mark.parametrize("k", [1, 0, -3])
def test_k_below_two_is_refused(maker: Any, k: int) -> None:
    with pytest.raises(ParameterError, match=rf"`k` must be an integer in \[2, .*got {k}"):
        maker.from_epsilon(1.0, k=k)


@pytest.mark.parametrize(
    "maker", [SUE, OUE, BLH, OLH, LinearOLH, HadamardResponse, SubsetSelection]
)
def test_k_of_the_wrong_type_and_a_bad_epsilon(maker: Any) -> None:
    with pytest.raises(ParameterTypeError, match=r"`k` must be an integer, got float 4\.5"):
        maker.from_epsilon(1.0, k=4.5)
    for eps in (0.0, -1.0, math.nan, math.inf):
        with pytest.raises((ParameterError, ParameterTypeError), match="`epsilon`"):
            maker.from_epsilon(eps, k=8)


def test_malformed_reports_are_refused_naming_reports(oracle: Any) -> None:
    good = oracle.randomize(np.arange(oracle.k), rng=1)
    bad = [np.zeros((3, 99), dtype=np.uint8), "reports", np.array([[1.5, 2.0]])]
    if isinstance(oracle, LinearOLH):  # packed words: only the layout's bits may be set
        bad += [good.astype(np.int64), good.reshape(-1, 1), good | np.uint64(1 << 63)]
    elif good.ndim == 1:  # Hadamard response: integers below 2 K
        bad = [np.array([2 * oracle.rows]), np.array([-1]), good.reshape(-1, 1)]
    elif good.dtype == np.uint64:  # local hashing: (a, b, bucket)
        bad.append(np.array([[1, 2, oracle.n_reports]], dtype=np.uint64))
    else:  # packed bits: the padding bits after k - 1 must be 0
        if oracle.k % 8:
            pad = good[:1].copy()
            pad[0, -1] |= np.uint8(0x80)
            bad.append(pad)
    for reports in bad:
        with pytest.raises((DataError, ParameterTypeError), match="`reports`"):
            oracle.tally(reports)


def test_a_truncated_bit_vector_names_its_width() -> None:
    oue = OUE.from_epsilon(1.0, k=20)
    reports = oue.randomize([1, 2], rng=1)
    with pytest.raises(DataError, match=r"3 bytes a row \(k = 20 bits\), got .* shape \(2, 2\)"):
        oue.tally(reports[:, :2])


def test_tallies_add_across_batches_and_refuse_other_mechanisms(oracle: Any) -> None:
    values = np.arange(3000) % oracle.k
    reports = oracle.randomize(values, rng=8)
    whole = oracle.tally(reports)
    assert sum(oracle.tally(r) for r in np.array_split(reports, 4)) == whole
    other = OUE.from_epsilon(3.0, k=oracle.k)
    with pytest.raises(DataError, match="different mechanisms"):
        _ = whole + other.tally(other.randomize([0], rng=1))
    with pytest.raises(DataError, match="not to this oracle"):
        oracle.estimate(other.tally(other.randomize([0], rng=1)))
    assert oracle.estimate(Tally(whole.counts)).values.tolist() == (
        oracle.estimate(whole).values.tolist()
    )
    bad = whole.counts.copy()
    bad[0] = bad[-1] + 1
    with pytest.raises(DataError, match="at most the number of reports"):
        oracle.estimate(Tally(bad))


def test_supports_agrees_with_the_tally(oracle: Any) -> None:
    reports = oracle.randomize(np.arange(500) % oracle.k, rng=4)
    counts = oracle.tally(reports).counts
    for j in (0, oracle.k // 2, oracle.k - 1):
        assert int(oracle.supports(reports, j).sum()) == counts[j]
    with pytest.raises(ParameterError, match="`value`"):
        oracle.supports(reports, oracle.k)


# ------------------------------------------------------------------ estimates and intervals


def test_estimate_prints_a_table_and_converts_to_json(oracle: Any) -> None:
    est = oracle.estimate(oracle.randomize(np.arange(2000) % oracle.k, rng=5))
    assert isinstance(est, FrequencyEstimate)
    text = str(est)
    assert f"{oracle.name}: {oracle.k} categories, n = 2000" in text
    assert "SE sampling: respondents drawn from a population" in text
    assert "fixed population: Wang et al. (2017)" in text
    data = json.loads(json.dumps(est.to_dict()))
    assert len(data["estimate"]) == len(data["ci_exact"]) == len(data["se_fixed"]) == oracle.k
    wald = est.ci(0.9, "wald")
    np.testing.assert_allclose(wald.mean(axis=1), est.values, rtol=0, atol=1e-12)
    exact = est.ci(0.9, "exact")
    assert np.all((exact >= 0) & (exact <= 1)) and np.all(exact[:, 0] <= exact[:, 1])
    assert est.category(0).value == est.values[0]


def test_exact_intervals_cover_at_their_level() -> None:
    """Wald and exact 90% intervals of OUE at k = 8 over 400 seeded repetitions of 1 000
    reports: coverage of each category at least 0.85 (binomial(400, 0.9) falls below 340
    with probability about 1e-4 per category)."""
    oue = OUE.from_epsilon(1.0, k=8)
    values = np.repeat(np.arange(8), [300, 200, 150, 120, 100, 70, 40, 20])
    truth = np.bincount(values, minlength=8) / values.size
    gen = np.random.default_rng(9)
    hits = np.zeros((2, 8))
    for _ in range(400):
        est = oue.estimate(oue.randomize(values, rng=gen))
        for m, method in enumerate(("wald", "exact")):
            ci = est.ci(0.9, method)
            hits[m] += (ci[:, 0] <= truth) & (truth <= ci[:, 1])
    assert np.all(hits / 400 >= 0.85), hits / 400


# ------------------------------------------------------------------ post-processing


def test_clip_and_projection_land_on_the_simplex() -> None:
    raw = np.array([0.7, 0.4, -0.05, -0.2, 0.15])
    clip = clip_and_normalize(raw)
    proj = project_to_simplex(raw)
    for res in (clip, proj):
        assert res.values.sum() == pytest.approx(1.0, abs=1e-15) and res.values.min() >= 0
        np.testing.assert_array_equal(res.raw, raw)
    np.testing.assert_allclose(clip.values, np.array([0.7, 0.4, 0, 0, 0.15]) / 1.25)
    # the projection subtracts tau = (1.25 - 1) / 3 from the three positive values
    np.testing.assert_allclose(proj.values, [0.7 - 1 / 12, 0.4 - 1 / 12, 0, 0, 0.15 - 1 / 12])
    # a point already on the simplex stays
    on = np.array([0.5, 0.25, 0.25])
    np.testing.assert_allclose(project_to_simplex(on).values, on, atol=1e-15)
    np.testing.assert_allclose(clip_and_normalize(on).values, on, atol=1e-15)


def test_projection_is_the_closest_point_of_the_simplex() -> None:
    gen = np.random.default_rng(1)
    for _ in range(50):
        raw = gen.normal(0.1, 0.3, size=6)
        best = project_to_simplex(raw).values
        for _ in range(200):  # no random point of the simplex is closer
            other = gen.dirichlet(np.ones(6) * 0.5)
            assert np.sum((raw - best) ** 2) <= np.sum((raw - other) ** 2) + 1e-12


def test_maximum_likelihood_states_its_convergence() -> None:
    oue = OUE.from_epsilon(1.0, k=6)
    est = oue.estimate(oue.randomize(np.repeat(np.arange(6), [500, 300, 100, 60, 30, 10]), rng=2))
    mle = maximum_likelihood(est, tol=1e-9)
    assert mle.converged and mle.iterations is not None and mle.iterations > 1
    assert mle.values.sum() == pytest.approx(1.0, abs=1e-12) and mle.values.min() >= 0
    assert "converged" in str(mle) and mle.to_dict()["convergence"].startswith("max_j")
    short = maximum_likelihood(est, tol=1e-15, max_iter=3)
    assert short.iterations == 3 and not short.converged and "NOT converged" in str(short)
    # GRR: the EM of the categorical design's reports maximizes their likelihood
    grr = GRR.from_epsilon(2.0, k=4)
    g_est = grr.estimate(grr.randomize(np.repeat(np.arange(4), [50, 30, 15, 5]), rng=3))
    g_mle = maximum_likelihood(g_est)
    assert g_mle.converged and g_mle.log_likelihood is not None
    with pytest.raises(ParameterTypeError, match="`estimate` must be a FrequencyEstimate"):
        maximum_likelihood([0.5, 0.5])


def test_post_processing_lowers_the_error_on_a_skewed_population() -> None:
    """OUE, k = 32, eps = 1, a Zipf-like population of 2 000: over 60 seeded runs the mean
    squared error of each consistent estimate is below the raw estimate's (the raw one is
    unbiased; the others trade bias for a smaller error)."""
    oue = OUE.from_epsilon(1.0, k=32)
    weights = 1 / np.arange(1, 33) ** 1.5
    counts = np.floor(weights / weights.sum() * 2000).astype(int)
    values = np.repeat(np.arange(32), counts)
    truth = counts / counts.sum()
    gen = np.random.default_rng(11)
    err = np.zeros(4)
    for _ in range(60):
        est = oue.estimate(oue.randomize(values, rng=gen))
        for i, vals in enumerate((est.values, clip_and_normalize(est).values,
                                  project_to_simplex(est).values,
                                  maximum_likelihood(est, tol=1e-8).values)):  # fmt: skip
            err[i] += np.sum((vals - truth) ** 2)
    assert np.all(err[1:] < err[0]), err


# ------------------------------------------------------------------ the adaptive choice


@pytest.mark.parametrize(("eps", "k"), [(1.0, 1024), (4.0, 4), (0.5, 16), (3.0, 64)])
def test_choose_oracle_picks_the_smallest_exact_variance(eps: float, k: int) -> None:
    choice = choose_oracle(eps, k, 10**5)
    rows = choice.candidates.to_dicts()
    variances = [r["variance"] for r in rows]
    assert variances == sorted(variances)
    assert exact_variance(choice.oracle, 10**5)[0] == pytest.approx(min(variances), rel=1e-9)
    assert choice.table().notes[-1] == choice.reason and "smallest exact variance" in str(choice)
    assert choice.to_dict()["oracle"] == choice.oracle.key


def test_choose_oracle_textbook_regimes() -> None:
    assert choose_oracle(4.0, k=4, n=1000).oracle.name == "categorical"  # GRR: few values
    assert choose_oracle(1.0, k=1024, n=10**6).oracle.name in {"subset", "oue", "olh"}
    with pytest.raises(ParameterError, match="`k` must be an integer in"):
        choose_oracle(1.0, k=1, n=10)
    with pytest.raises(ParameterError, match=r"no frequency oracle takes k = 57216 at epsilon"):
        choose_oracle(122.0, k=57216, n=10)


def test_a_tiny_epsilon_is_refused_by_every_oracle_and_names_it() -> None:
    """Below the randomizers' resolution (here 1e-200) every oracle says so; subset
    selection used to search its inclusion threshold down one step at a time (2**40 steps,
    found by the CLI fuzz test as a hang), and OLH used to say epsilon was too *large*."""
    with pytest.raises(ParameterError, match=r"`epsilon` must be at least .* 'subset'"):
        SubsetSelection.from_epsilon(1e-200, k=64)
    with pytest.raises(ParameterError, match=r"'olh' at k = 64: `epsilon` must be at least"):
        OLH.from_epsilon(1e-200, k=64)
    with pytest.raises(ParameterError, match=r"out of every candidate's range"):
        choose_oracle(1e-200, k=64, n=10)
    # the galloping search still ends on a threshold within epsilon, next to one over it
    ss = SubsetSelection(64, 32, 0.5 + 1e-12)
    ss.__dict__.pop("_include_threshold", None)
    from deniable.oracles import _subset

    steps, _subset._STEPS = _subset._STEPS, 0  # gallop from the start
    try:
        t = ss._include_threshold
    finally:
        _subset._STEPS = steps
    assert t > 0 and ss._bound(t) <= ss.epsilon < ss._bound(t + 1)


# ------------------------------------------------------------------ numeric means, histograms


@pytest.mark.parametrize(
    "make",
    [
        lambda: DuchiMechanism(1.0, lower=-2.0, upper=6.0),
        lambda: PiecewiseMechanism(1.0, lower=-2.0, upper=6.0),
        lambda: PiecewiseMechanism(4.0, lower=0.0, upper=1.0),
    ],
    ids=["duchi", "piecewise-1", "piecewise-4"],
)
def test_numeric_means_are_unbiased_with_their_variance(make: Any) -> None:
    """300 seeded repetitions of 2 000 values: the mean estimate is within 6 of its SEs of
    the true mean (false alarm ~2e-9), and the empirical variance of the estimates is
    within the chi-square(299) band at 1e-6 of ``variance(values)``."""
    from scipy import stats

    mech = make()
    gen = np.random.default_rng(31)
    values = gen.uniform(mech.lower, mech.upper, 2000)  # a fixed population
    means = np.array([mech.estimate(mech.randomize(values, rng=gen)).value for _ in range(300)])
    exact = mech.variance(values)  # of the mean estimate
    assert abs(means.mean() - values.mean()) <= 6 * math.sqrt(exact / 300)
    lo, hi = stats.chi2.ppf([1e-6, 1 - 1e-6], 299) / 299
    assert lo <= means.var(ddof=1) / exact <= hi


def test_numeric_means_refuse_out_of_range_values_and_bounds() -> None:
    duchi = DuchiMechanism(1.0, lower=0.0, upper=1.0)
    with pytest.raises(DataError, match=r"`values` must be numbers in \[lower, upper\] = \[0, 1\]"):
        duchi.randomize([0.5, 1.5])
    with pytest.raises(DataError, match="`values`"):
        duchi.randomize([math.nan])
    with pytest.raises(ParameterError, match="`upper`"):
        PiecewiseMechanism(1.0, lower=1.0, upper=1.0)
    with pytest.raises(DataError, match=r"`reports` must hold integers in 0\.\.4095, got one"):
        PiecewiseMechanism(1.0, lower=0.0, upper=1.0).tally(np.array([5000], dtype=np.uint16))


def test_histogram_buckets_numbers_into_an_oracle() -> None:
    h = Histogram((0.0, 1.0, 2.0, 5.0), OLH.from_epsilon(2.0, k=3))
    assert h.bins([0.0, 0.99, 1.0, 4.9, 5.0]).tolist() == [0, 0, 1, 2, 2]
    values = np.concatenate([np.full(6000, 0.5), np.full(3000, 1.5), np.full(1000, 3.0)])
    est = h.estimate(h.randomize(values, rng=4))
    # seeded: 6 SEs of the widest bucket (false alarm ~2e-9 per bucket)
    np.testing.assert_allclose(est.values, [0.6, 0.3, 0.1], atol=6 * est.se.max())
    assert h.epsilon == h.oracle.epsilon and h.implemented_epsilon <= h.epsilon
    with pytest.raises(DataError, match=r"`values` must be numbers in \[0, 5\]"):
        h.randomize([5.5])
    with pytest.raises(ParameterError, match="`oracle` must take one value per bin"):
        Histogram((0.0, 1.0, 2.0), OLH.from_epsilon(2.0, k=3))
    auto = Histogram.from_epsilon(1.0, (0, 10, 20, 30, 40))
    assert auto.oracle.channel.n_truths == 4


# ------------------------------------------------------------------ the post-processing study


def test_post_processing_study_and_its_plot() -> None:
    from deniable.oracles import METHODS, post_processing_study

    study = post_processing_study(OUE.from_epsilon(1.0, k=6), [0.5, 0.3, 0.1, 0.1, 0.0, 0.0],
                                  600, repeats=40, seed=3)  # fmt: skip
    assert list(study.bias) == list(METHODS) and study.truth.sum() == pytest.approx(1.0, rel=1e-12)
    # clipping pushes the empty categories up; the raw estimate's bias is only noise
    assert study.bias["clip and normalize"][4] > 0 and study.bias["clip and normalize"][5] > 0
    # the mean of 40 raw estimates: within 6 SEs of 0 (false alarm ~2e-9 per category)
    raw_se = np.sqrt(exact_variance(study.oracle, 600, study.truth) / 40)
    assert np.all(np.abs(study.bias["raw (unbiased)"]) <= 6 * raw_se)
    assert "simplex projection" in str(study)
    assert json.loads(json.dumps(study.to_dict()))["repeats"] == 40
    with pytest.raises(DataError, match="`frequencies` must be 6 non-negative numbers"):
        post_processing_study(study.oracle, [0.5, 0.5], 100)
    import matplotlib

    matplotlib.use("Agg")
    from deniable.plotting import plot_post_processing

    fig = plot_post_processing(study)
    left, right = fig.axes
    assert len(left.get_lines()) == len(METHODS) + 1 and len(right.get_lines()) == len(METHODS)
    matplotlib.pyplot.close(fig)


# ------------------------------------------------------------------ report files, chunked tallies


@pytest.mark.parametrize(
    "make",
    [*ORACLE_MAKERS, lambda: GRR.from_epsilon(1.0, k=300)],
    ids=[*ORACLE_IDS, "grr"],
)
def test_a_report_file_tallies_in_batches_to_the_in_memory_tally(make: Any, tmp_path: Path) -> None:
    oracle = make()
    reports = oracle.randomize(np.arange(10_007) % oracle.k, rng=12)
    path = write_reports(tmp_path / "r.dnrp", oracle, reports)
    seen: list[tuple[int, int]] = []
    got = tally_file(oracle, path, batch=1000, progress=lambda d, t: seen.append((d, t)))
    assert got == oracle.tally(reports)
    assert seen[0] == (1000, 10_007) and seen[-1] == (10_007, 10_007) and len(seen) == 11
    batches = (reports[i : i + 3000] for i in range(0, len(reports), 3000))
    assert tally_batches(oracle, batches) == got


def test_a_truncated_or_foreign_report_file_is_refused_before_counting(tmp_path: Path) -> None:
    olh = OLH.from_epsilon(1.0, k=50)
    path = write_reports(tmp_path / "r.dnrp", olh, olh.randomize(np.arange(100) % 50, rng=1))
    data = path.read_bytes()
    calls: list[int] = []
    cut = tmp_path / "cut.dnrp"
    cut.write_bytes(data[:-5])
    with pytest.raises(DataError, match=r"promises 100 reports of 24 bytes .* 99 whole reports "
                       r"and 19 bytes of a partial one \(truncated\)"):  # fmt: skip
        tally_file(olh, cut, progress=lambda d, t: calls.append(d))
    assert calls == []
    long = tmp_path / "long.dnrp"
    long.write_bytes(data + b"\0")
    with pytest.raises(DataError, match="bytes after the last report"):
        tally_file(olh, long)
    other = OLH.from_epsilon(2.0, k=50)
    with pytest.raises(DataError, match=r"holds reports of olh.* not of this oracle olh"):
        tally_file(other, path)
    for bad, match in (
        (b"PK\x03\x04xxxx", "not a report file"),
        (data[:9], "ends inside its header"),
    ):
        (tmp_path / "bad.dnrp").write_bytes(bad)
        with pytest.raises(DataError, match=match):
            tally_file(olh, tmp_path / "bad.dnrp")
    with pytest.raises(ParameterError, match="`batch`"):
        tally_file(olh, path, batch=0)


def test_write_reports_refuses_malformed_reports_and_writes_nothing(tmp_path: Path) -> None:
    oue = OUE.from_epsilon(1.0, k=20)
    target = tmp_path / "r.dnrp"
    with pytest.raises(DataError, match="`reports`"):
        write_reports(target, oue, np.zeros((4, 2), dtype=np.uint8))
    assert not target.exists() and list(tmp_path.iterdir()) == []
    with pytest.raises(DataError, match="`batches` must hold at least one batch"):
        tally_batches(oue, [])


def test_oracle_from_key_rebuilds_every_oracle_and_refuses_others() -> None:
    from deniable.designs import Warner
    from deniable.oracles import oracle_from_key

    for make in [*ORACLE_MAKERS, lambda: GRR.from_epsilon(1.0, k=300)]:
        oracle = make()
        assert oracle_from_key(oracle.key) == oracle
    with pytest.raises(DataError, match="must name a frequency oracle"):
        oracle_from_key(Warner(0.75).key)
    with pytest.raises(DataError, match=r"must look like NAME\{JSON parameters\}"):
        oracle_from_key("olh[1, 2]")
    with pytest.raises(DataError, match="does not fit its mechanism"):
        oracle_from_key('oue{"k":8}')
    with pytest.raises(DataError, match="not canonical"):
        oracle_from_key('oue{"q":"1/4","k":8}')


def test_local_hashing_implemented_epsilon_is_at_most_the_stated_one_exactly() -> None:
    """The realised ratio of the bucket randomized response, in exact arithmetic from its
    integer keep threshold and outcome counts, is at most the stated ``1 + g t / ((1 - t)
    f_min)``; so reporting ``implemented_epsilon <= epsilon`` (float logs once landed an ulp
    above it, e.g. g = 2 at t = 0.7) is the truth, not a clip."""
    for g in (2, 3, 4, 5, 8, 16, 21):
        for t in np.linspace(0.05, 0.95, 19):
            olh = OLH(k=64, g=g, p_truthful=float(t))
            rr = olh.randomized_response
            keep, _ = rr.thresholds()
            _, counts, total = rr._forced_plan
            kept = Fraction(keep, 1 << 53)
            low = (1 - kept) * Fraction(min(counts), total)
            high = kept + (1 - kept) * Fraction(max(counts), total)
            tt = Fraction(float(t))
            stated = 1 + tt / ((1 - tt) * Fraction(1, g))
            assert high / low <= stated, (g, t)
            assert olh.implemented_epsilon <= olh.epsilon
            assert olh.implemented_epsilon == pytest.approx(math.log(high / low), rel=1e-12)
