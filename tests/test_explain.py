"""Explaining epsilon: closed forms, tables, sentences, plots."""

from __future__ import annotations

import math
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from deniable.audit import (
    epsilon_from_lying_probability,
    epsilon_from_truth_probability,
    explain,
    likelihood_sentence,
    lying_table,
    posterior,
    posterior_table,
    truth_table,
)
from deniable.audit._explain import Table
from deniable.designs import BiasedCoin, Binary, Mangat, Warner
from deniable.exceptions import ParameterError, ParameterTypeError
from deniable.plotting import plot_epsilon_lying, plot_epsilon_truth, plot_posterior


def test_truth_probability_closed_forms() -> None:
    assert epsilon_from_truth_probability(0.75) == pytest.approx(math.log(3), rel=1e-12)
    assert epsilon_from_truth_probability(0.75, "half") == pytest.approx(2 * math.log(3), rel=1e-12)
    assert epsilon_from_truth_probability(0.5) == 0.0
    assert epsilon_from_truth_probability(1.0) == math.inf
    # round trip through the designs: Binary(eps) tells the truth with e^eps / (1 + e^eps)
    for eps in (0.1, 1.0, 4.0):
        assert epsilon_from_truth_probability(Binary(eps).truth_probability) == pytest.approx(
            eps, rel=1e-12
        )
        half = Binary(eps, calibration="half")
        assert epsilon_from_truth_probability(half.truth_probability, "half") == pytest.approx(
            eps, rel=1e-12
        )
        assert half.epsilon == pytest.approx(eps / 2, rel=1e-12)


def test_lying_probability_closed_forms() -> None:
    for q in (0.01, 0.1, 0.25, 0.4):
        assert epsilon_from_lying_probability(q) == pytest.approx(BiasedCoin(q).epsilon, rel=1e-12)
    assert epsilon_from_lying_probability(0.5) == 0.0
    for bad in (0.0, -0.1, 0.6, 1.0):
        with pytest.raises(ParameterError, match=r"`q` must be in \(0, 0.5\]"):
            epsilon_from_lying_probability(bad)


def test_posterior_is_bayes_rule() -> None:
    for eps in (0.5, math.log(3), 2.0):
        t = math.exp(eps) / (1 + math.exp(eps))  # P(yes | A) = t, P(yes | not A) = 1 - t
        for p in (0.01, 0.2, 0.5, 0.9):
            yes = p * t / (p * t + (1 - p) * (1 - t))
            no = p * (1 - t) / (p * (1 - t) + (1 - p) * t)
            assert posterior(p, eps) == pytest.approx(yes, rel=1e-12)
            assert posterior(p, eps, "no") == pytest.approx(no, rel=1e-12)
    assert posterior(0.0, 3.0) == 0.0 and posterior(1.0, 3.0, "no") == 1.0
    assert posterior(0.3, math.inf) == 1.0 and posterior(0.3, math.inf, "no") == 0.0
    assert posterior(0.3, 0.0) == pytest.approx(0.3, rel=1e-12)


def test_tables() -> None:
    t = truth_table([0.5, math.log(3)])
    rows = t.to_dicts()
    assert rows[1]["P(truth) exact"] == pytest.approx(0.75, rel=1e-12)
    assert rows[1]["odds exact"] == pytest.approx(3.0, rel=1e-12)
    assert rows[1]["P(lie) exact"] == pytest.approx(0.25, rel=1e-12)
    assert rows[0]["P(truth) half"] == pytest.approx(1 / (1 + math.exp(-0.25)), rel=1e-12)
    assert rows[0]["one-bit epsilon half"] == 0.25
    inf_row = truth_table([math.inf]).to_json()[0]
    assert inf_row["odds exact"] == "inf" and inf_row["P(truth) exact"] == 1.0
    lt = lying_table([0.1, 0.25])
    assert lt.column("epsilon") == pytest.approx([math.log(9), math.log(3)], rel=1e-12)
    pt = posterior_table(math.log(3), [0.1, 0.5])
    assert pt.column("after a 'yes'") == pytest.approx([0.25, 0.75], rel=1e-12)
    assert "likelihood ratio 3" in pt.title


def test_sentences_and_explain() -> None:
    s = likelihood_sentence(math.log(3))
    assert "3 times as likely" in s and "prior odds x 3" in s
    assert "9 times as likely" in likelihood_sentence(math.log(9), "uses drugs")
    assert "'uses drugs'" in likelihood_sentence(1.0, "uses drugs")
    assert "nothing" in likelihood_sentence(0.0)
    inf_text = likelihood_sentence(math.inf)
    assert "not deniable" in inf_text and not re.search(r"\d", inf_text)
    text = explain(1.0)
    assert "0.7311" in text and "2.718" in text and "0.5-LDP" in text
    assert "after a 'yes'" in text
    # infinite epsilon: never a finite number where epsilon belongs
    for arg in (math.inf, Mangat(0.5)):
        out = explain(arg)
        assert "epsilon = inf" in out and "no finite privacy budget" in out
        assert not re.search(r"epsilon = \d", out)
    assert explain(Warner(0.75)).startswith("design 'warner': epsilon = 1.0986")
    assert "reveal nothing" in explain(0)


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (
            lambda: epsilon_from_truth_probability(0.4),
            ParameterError,
            r"`truth_probability` must be in \[0.5",
        ),
        (lambda: epsilon_from_truth_probability(1.2), ParameterError, "`truth_probability`"),
        (lambda: epsilon_from_truth_probability(0.7, "double"), ParameterError, "`calibration`"),
        (lambda: epsilon_from_lying_probability("a"), ParameterTypeError, "`q`"),
        (lambda: posterior(1.5, 1.0), ParameterError, "`prior`"),
        (lambda: posterior(0.5, -1.0), ParameterError, "`epsilon`"),
        (lambda: posterior(0.5, 1.0, "maybe"), ParameterError, "`report`"),
        (lambda: explain(-1.0), ParameterError, "`epsilon`"),
        (lambda: explain(float("nan")), ParameterError, "`epsilon`"),
        (lambda: explain("1"), ParameterTypeError, "`epsilon`"),
        (lambda: likelihood_sentence(1.0, ""), ParameterError, "`attribute`"),
        (lambda: truth_table([]), ParameterError, "`epsilons`"),
        (lambda: truth_table([1.0, -2.0]), ParameterError, r"`epsilons\[1\]`"),
        (lambda: lying_table([]), ParameterError, "`qs`"),
        (lambda: posterior_table(1.0, []), ParameterError, "`priors`"),
        (lambda: posterior_table(1.0, [2.0]), ParameterError, r"`priors\[0\]`"),
        (lambda: Table(("a", "b"), ((1,),)), ParameterError, r"`rows\[0\]`"),
        (lambda: Table(("a",), ((1,),)).column("b"), ParameterError, "`name`"),
    ],
)
def test_bad_input(call: Any, error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        call()


def test_table_printing() -> None:
    t = Table(("x", "value"), ((1, 0.5), (2, math.inf), (3, 1e-7)), title="T", notes=("n",))
    lines = str(t).splitlines()
    assert lines[0] == "T" and lines[-1] == "n"
    assert lines[1].split() == ["x", "value"]
    assert lines[4].split() == ["2", "inf"] and lines[5].split() == ["3", "1e-07"]
    assert len({len(line) for line in lines[1:-1]}) == 1  # aligned
    assert t.to_json()[1] == {"x": 2, "value": "inf"} and len(t) == 3


# --------------------------------------------------------------------------- plots


@pytest.mark.parametrize("suffix", [".png", ".svg"])
def test_plots_write_files(tmp_path: Path, suffix: str) -> None:
    for i, fn in enumerate(
        (
            lambda p: plot_epsilon_truth(p),
            lambda p: plot_epsilon_lying(p),
            lambda p: plot_posterior((0.5, 2.0), p),
        )
    ):
        path = tmp_path / f"plot{i}{suffix}"
        fig = fn(path)
        data = path.read_bytes()
        if suffix == ".png":
            assert data.startswith(b"\x89PNG\r\n\x1a\n")
        else:
            assert b"<svg" in data
        assert fig.axes


def test_plot_bad_input(tmp_path: Path) -> None:
    with pytest.raises(ParameterError, match=r"`path` must end in \.png, \.svg or \.pdf"):
        plot_epsilon_lying(tmp_path / "x.jpg")
    with pytest.raises(ParameterError, match="`max_epsilon`"):
        plot_epsilon_truth(max_epsilon=0)
    assert plot_epsilon_truth() is not None  # no path: the figure only


def test_plots_without_matplotlib_name_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    with pytest.raises(ImportError, match=r"pip install deniable\[plot\]"):
        plot_epsilon_lying()


@pytest.mark.parametrize("eps", [709.0, 800.0, 1e6])
def test_epsilon_beyond_float_range_is_a_named_error_not_an_overflow(eps: float) -> None:
    # e^eps overflows a float past ~709.78: a clear ParameterError, never OverflowError
    for call in (
        lambda: explain(eps),
        lambda: truth_table([eps]),
        lambda: likelihood_sentence(eps),
    ):
        with pytest.raises(ParameterError, match="`epsilon"):
            call()


def test_epsilon_700_and_infinity_are_explained() -> None:
    # e^700 = 1.0142e304, computed independently of the module's formatting
    assert f"{math.exp(700.0):.4g}" in explain(700.0)
    assert "epsilon = inf" in explain(math.inf)
    assert "no deniability" in explain(math.inf)
