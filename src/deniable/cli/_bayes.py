"""`deniable analyze --bayes [--prior A,B | a1,...,ak]`: the posterior of the prevalence (of
each category's prevalence for a categorical design) beside the estimate
(:func:`deniable.estimation.posterior`; docs/bayes.md)."""

from __future__ import annotations

import warnings
from typing import Annotated, Any

import typer

from deniable.cli._base import fail
from deniable.cli._render import emit_json, show
from deniable.exceptions import DeniableError, SamplerWarning

__all__ = ["BayesOpt", "PriorOpt", "bayes_prior", "show_with_posterior"]

BayesOpt = Annotated[
    bool,
    typer.Option(
        "--bayes",
        help="Also print the posterior of the prevalence beside the estimate (a simple random "
        "sample; exact for binary and two-group designs; per category for a categorical "
        "design, exact for few reports, else NUTS with the bayes extra).",
    ),
]
PriorOpt = Annotated[
    str | None,
    typer.Option(
        "--prior",
        metavar="A,B",
        help="The prior of --bayes: Beta(A, B) for a binary or two-group design, Dirichlet"
        "(a1, ..., ak) as a1,...,ak for a categorical design with k categories, or uniform "
        "(the default) or jeffreys.",
        show_default=False,
    ),
]


def bayes_prior(
    bayes: bool, prior: str | None, *, by: str | None, sampled: bool
) -> str | tuple[float, ...] | None:
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
    parts = text.split(",")
    try:
        if len(parts) < 2:
            raise ValueError
        return tuple(float(x) for x in parts)
    except ValueError:
        fail(
            "`--prior` must be A,B (two numbers > 0; a1,...,ak for a categorical design with "
            f"k categories), uniform or jeffreys, got {prior!r}."
        )


def show_with_posterior(
    result: Any, prior: str | tuple[float, ...], level: float, as_json: bool
) -> None:
    """The estimate and, beside it, the posterior of the prevalence (``--bayes``; of each
    category's prevalence for a categorical design)."""
    from deniable.estimation import posterior

    try:
        with warnings.catch_warnings():  # the table and the JSON say it (converged: false)
            warnings.simplefilter("ignore", SamplerWarning)
            post = posterior(result.design, result.tally, prior=prior)
    except ImportError as exc:  # NUTS without the bayes extra
        fail(f"`--bayes`: {exc}")
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
