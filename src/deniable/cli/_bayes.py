"""`deniable analyze --bayes [--prior A,B]`: the posterior of the prevalence beside the
estimate (:func:`deniable.estimation.posterior`; docs/bayes.md)."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from deniable.cli._base import fail
from deniable.cli._render import emit_json, show
from deniable.exceptions import DeniableError

__all__ = ["BayesOpt", "PriorOpt", "bayes_prior", "show_with_posterior"]

BayesOpt = Annotated[
    bool,
    typer.Option(
        "--bayes",
        help="Also print the posterior of the prevalence (exact, no MCMC; a simple random "
        "sample of a binary or two-group design) beside the estimate.",
    ),
]
PriorOpt = Annotated[
    str | None,
    typer.Option(
        "--prior",
        metavar="A,B",
        help="The Beta(A, B) prior of --bayes, or uniform (the default) or jeffreys.",
        show_default=False,
    ),
]


def bayes_prior(
    bayes: bool, prior: str | None, *, by: str | None, sampled: bool
) -> str | tuple[float, float] | None:
    """The prior of ``--bayes`` (``None`` without it), or one error line."""
    if not bayes:
        if prior is not None:
            fail("`--prior` is the prior of --bayes: add --bayes, or drop --prior.")
        return None
    if by is not None:
        fail("`--bayes` gives the posterior of the whole column: it does not combine with --by.")
    if sampled:
        fail(
            "`--bayes` assumes a simple random sample: it does not combine with --weights, "
            "--strata, --psu, --fpc or replicate weights (use the design-based estimate)."
        )
    if prior is None:
        return "uniform"
    text = prior.strip().lower()
    if text in ("uniform", "jeffreys"):
        return text
    a, sep, b = text.partition(",")
    try:
        if not sep:
            raise ValueError
        return float(a), float(b)
    except ValueError:
        fail(f"`--prior` must be A,B (two numbers > 0), uniform or jeffreys, got {prior!r}.")


def show_with_posterior(
    result: Any, prior: str | tuple[float, float], level: float, as_json: bool
) -> None:
    """The estimate and, beside it, the posterior of the prevalence (``--bayes``)."""
    from deniable.estimation import posterior

    try:
        post = posterior(result.design, result.tally, prior=prior)
    except DeniableError as exc:
        text = str(exc)
        fail(text.replace("`prior`", "`--prior`") if "`prior`" in text else f"`--bayes`: {text}")
    summary = result.summary()
    if as_json:
        payload = dict(summary.to_dict())
        payload["posterior"] = post.to_dict(level)
        emit_json(payload)
        return
    show(summary)
    show(post, level=level)
