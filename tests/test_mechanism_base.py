"""The one base under every mechanism (``deniable.designs.MechanismBase``, issue 15 part 1).

A mechanism written here with only what is its own (name, epsilon, channel, randomize,
estimate) answers the whole protocol; every mechanism of the library takes its identity,
binding, tallies, description and pickling from the one base instead of a copy of its own;
and the keys those give stay what they were.
"""

from __future__ import annotations

import inspect
import math
import pickle
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pytest

from deniable.designs import (
    Categorical,
    Crosswise,
    DenseChannel,
    Mechanism,
    MechanismBase,
    Tally,
    Warner,
    mechanism_key,
)
from deniable.designs._binary import _WarnerAlgebra
from deniable.exceptions import DataError, ParameterTypeError
from deniable.mechanisms import LaplaceMechanism, MemoizedMechanism, NoiseMechanism
from deniable.oracles import OLH, OUE, Histogram, Rappor


@dataclass(frozen=True)
class FlipCoin(MechanismBase):
    """A mechanism with only its own parts: keep the bit with probability ``p``."""

    p: float
    name: ClassVar[str] = "test-flip"

    @property
    def epsilon(self) -> float:
        return abs(math.log(self.p / (1 - self.p)))

    @property
    def channel(self) -> DenseChannel:
        return DenseChannel([[self.p, 1 - self.p], [1 - self.p, self.p]])

    def randomize(self, values: Any, *, rng: Any = None) -> np.ndarray:
        x = np.asarray(values, dtype=np.uint8)
        flip = np.random.default_rng(rng).random(x.size) >= self.p
        return np.asarray(x ^ flip, dtype=np.uint8)

    def estimate(self, data: Any) -> float:
        tally = self._as_tally(data)
        return float((tally.counts[1] / tally.n - (1 - self.p)) / (2 * self.p - 1))


def test_a_mechanism_with_only_its_own_parts_answers_the_protocol() -> None:
    coin = FlipCoin(0.75)
    assert isinstance(coin, Mechanism)
    assert coin.key == 'test-flip{"p":"3/4"}' == mechanism_key("test-flip", {"p": 0.75})
    assert coin.parameters() == {"p": 0.75}
    truth = np.repeat([0, 1], [3000, 7000])
    reports = coin.randomize(truth, rng=1)
    # tallies bound to the key, adding across shards, estimated alike from either
    shards = [coin.tally(reports[:4000]), coin.tally(reports[4000:])]
    assert all(t.mechanism == coin.key for t in shards)
    total = sum(shards)
    assert total == coin.tally(reports) and total.n == 10_000
    assert coin.estimate(total) == coin.estimate(reports)
    # 0.7 within 6 SEs: sqrt(lambda (1 - lambda) / n) / (2p - 1) <= 0.01 (false alarm ~2e-9)
    assert abs(coin.estimate(total) - 0.7) < 0.06
    # a hand-built tally of the right length is bound; tally_counts builds one
    assert coin.bind(Tally([1, 2])).mechanism == coin.key
    assert coin.tally_counts([1, 2]) == coin.bind(Tally([1, 2]))
    # the description is plain data
    assert coin.describe() == {
        "mechanism": "test-flip",
        "parameters": {"p": 0.75},
        "epsilon": math.log(3),
    }


def test_the_base_refuses_what_the_mechanism_cannot_have_made() -> None:
    coin = FlipCoin(0.75)
    other = FlipCoin(0.875).tally([0, 1])
    with pytest.raises(
        DataError, match=r"belongs to mechanism test-flip\{\"p\":\"7/8\"\}, not to this"
    ):
        coin.estimate(other)
    with pytest.raises(DataError, match="has 3 report values, the mechanism 'test-flip' has 2"):
        coin.bind(Tally([1, 2, 3]))
    with pytest.raises(ParameterTypeError, match="`tally` must be a Tally, got list"):
        coin.bind([1, 2])  # type: ignore[arg-type]
    with pytest.raises(DataError, match="give reports or a Tally"):
        coin.estimate(None)
    with pytest.raises(DataError, match="at least 1, got 0 reports"):
        coin.estimate(Tally([0, 0]))
    with pytest.raises(DataError, match="takes reports or a Tally, not `yes` and `n`"):
        coin._as_tally(None, 3, 5)
    with pytest.raises(DataError, match="not both"):
        coin._as_tally(Tally([1, 2]), 1, 3)


def test_pickles_carry_the_parameters_and_not_the_cached_key() -> None:
    coin = FlipCoin(0.75)
    key = coin.key
    assert "key" in vars(coin) and "key" not in coin.__getstate__()
    back = pickle.loads(pickle.dumps(coin))
    assert back == coin and "key" not in vars(back) and back.key == key


#: What every mechanism takes from the base instead of writing it again.
SHARED = ("key", "bind", "tally_counts", "_as_tally", "__getstate__", "__setstate__")


def test_every_mechanism_takes_the_shared_parts_from_the_one_base(mechanism: Any) -> None:
    """Designs, frequency oracles, means of numbers, the histogram and the adapters: each
    is a MechanismBase, and key, bind, tally_counts, the reading of estimate's argument
    and pickling are the base's own functions (two-group designs add their second form
    of data to ``_as_tally``, and say so)."""
    assert isinstance(mechanism, MechanismBase)
    cls = type(mechanism)
    two_groups = getattr(mechanism, "n_groups", 1) == 2
    for name in SHARED:
        if name == "_as_tally" and two_groups:
            continue
        assert inspect.getattr_static(cls, name) is MechanismBase.__dict__[name], (cls, name)
    # the identity is the name and the exact parameters, whatever wrote them
    assert mechanism.key == mechanism_key(mechanism.name, mechanism.parameters())
    assert mechanism.describe()["epsilon"] == mechanism.epsilon or math.isinf(mechanism.epsilon)


def test_rappor_takes_its_identity_and_binding_from_the_base() -> None:
    r = Rappor(m=16, h=2, cohorts=4, f=0.5, p=0.25, q=0.75)
    for name in SHARED:
        assert inspect.getattr_static(Rappor, name) is MechanismBase.__dict__[name], name
    assert r.key == 'rappor{"cohorts":4,"f":"1/2","h":2,"m":16,"p":"1/4","q":"3/4"}'
    assert "hash_words" not in pickle.loads(pickle.dumps(r)).__dict__


def test_the_keys_are_what_they_were() -> None:
    """The keys the base writes, checked against literal strings from before it."""
    assert Histogram((0.0, 1.0, 2.0, 5.0, 9.0), OLH.from_epsilon(1.0, k=4)).key == (
        'histogram{"edges":["0","1","2","5","9"],"oracle":"olh{\\"g\\":3,\\"k\\":4,'
        '\\"p_truthful\\":\\"3280199735289221/9007199254740992\\"}"}'
    )
    assert OUE(k=8, q=0.25).key == 'oue{"k":8,"q":"1/4"}'
    assert NoiseMechanism(LaplaceMechanism(2.0)).key == 'laplace{"scale":"2","sensitivity":"1"}'
    assert MemoizedMechanism(Warner(0.75)).key == (
        'memoized{"design":"warner{\\"p\\":\\"3/4\\"}","instantaneous":null}'
    )
    assert Categorical(3, 0.5).key == 'categorical{"forced":null,"k":3,"p_truthful":"1/2"}'


def test_crosswise_shares_warners_algebra_and_keeps_its_own_epsilon() -> None:
    """Crosswise and Warner are one channel written once (``_WarnerAlgebra``): the same
    probabilities, validation and ``from_epsilon``.  Crosswise states the channel's epsilon
    from the float probabilities, Warner the closed form; both are kept (they differ in the
    last digit for some ``p``, and a spec states the thresholds that follow from them)."""
    for cls in (Warner, Crosswise):
        assert issubclass(cls, _WarnerAlgebra)
        for attr in ("p_yes_given_1", "p_yes_given_0", "p_no_given_0", "__post_init__"):
            assert inspect.getattr_static(cls, attr) is _WarnerAlgebra.__dict__[attr]
    assert not issubclass(Crosswise, Warner)
    for p in (0.2, 0.85, 0.999):
        w, c = Warner(p), Crosswise(p)
        assert (c.p_yes_given_1, c.p_yes_given_0) == (w.p_yes_given_1, w.p_yes_given_0)
        assert c.epsilon == pytest.approx(w.epsilon, rel=1e-12)
    assert type(Crosswise.from_epsilon(1.0)) is Crosswise
    assert Crosswise.from_epsilon(1.0).p == Warner.from_epsilon(1.0).p
    with pytest.raises(Exception, match="`p` must be in"):
        Crosswise(0.5)
