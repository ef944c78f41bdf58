"""The sample-design options of `deniable analyze` and `deniable report`: weights, strata,
PSUs and finite population corrections, or replicate weights, as columns of the data file.
Parsed here into a :class:`~deniable.survey.DesignColumns`; the statistics are
:mod:`deniable.sampling`'s."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any

import typer

from deniable.cli._base import fail, parse_numbers
from deniable.cli._options import OptionGroup, text_option

if TYPE_CHECKING:
    from deniable.survey import DesignColumns

__all__ = ["LABELS", "NO_SAMPLE", "SAMPLE", "SampleOptions"]

#: The option that sets each parameter of :class:`~deniable.survey.DesignColumns`.
LABELS = {
    "weights": "--weights", "strata": "--strata", "psu": "--psu", "fpc": "--fpc",
    "replicate_weights": "--repweights", "replicate_method": "--repmethod", "rho": "--rho",
    "scale": "--scale", "rscales": "--rscales", "mse": "--mse", "lonely_psu": "--lonely-psu",
}  # fmt: skip


@dataclass(frozen=True)
class SampleOptions:
    """The sample-design options as given on the command line."""

    weights: str | None = None
    strata: str | None = None
    psu: str | None = None
    fpc: str | None = None
    repweights: str | None = None
    repmethod: str | None = None
    rho: str | None = None
    scale: str | None = None
    rscales: str | None = None
    mse: bool = False
    lonely_psu: str | None = None

    def columns(self) -> DesignColumns | None:
        """The design they describe (``None`` without any design column); one error line
        for an option that needs another."""
        from deniable.survey import DesignColumns

        columns = (self.weights, self.strata, self.psu, self.fpc, self.repweights)
        if all(c is None for c in columns):
            extra = [flag for flag, x in (("--repmethod", self.repmethod), ("--rho", self.rho),
                     ("--scale", self.scale), ("--rscales", self.rscales),
                     ("--mse", self.mse or None), ("--lonely-psu", self.lonely_psu))
                     if x is not None]  # fmt: skip
            if extra:
                fail(
                    f"`{extra[0]}` describes the sample's design: give its columns too "
                    "(--weights, --strata, --psu, --fpc or --repweights), or drop it."
                )
            return None
        if self.repweights is None:
            extra = [f for f, x in (("--repmethod", self.repmethod), ("--mse", self.mse or None))
                     if x is not None]  # fmt: skip
            if extra:
                fail(f"`{extra[0]}` applies to replicate weights only: give --repweights too.")
        kwargs: dict[str, Any] = {
            "weights": self.weights, "strata": self.strata, "psu": self.psu, "fpc": self.fpc,
            "replicate_weights": self.repweights, "mse": self.mse,
        }  # fmt: skip
        if self.repmethod is not None:
            kwargs["replicate_method"] = self.repmethod
        if self.lonely_psu is not None:
            kwargs["lonely_psu"] = self.lonely_psu
        for name, flag, text in (("rho", "--rho", self.rho), ("scale", "--scale", self.scale)):
            if text is not None:
                values = parse_numbers(flag, text)
                if len(values) != 1:
                    fail(f"`{flag}` takes one number, got {text!r}.")
                kwargs[name] = values[0]
        if self.rscales is not None:
            kwargs["rscales"] = parse_numbers("--rscales", self.rscales)
        return DesignColumns(**kwargs, labels=LABELS)


#: The sample-design options, in the order ``--help`` lists them; a command takes them as
#: one parameter (``sampling: SampleOptions = NO_SAMPLE``, decorated with
#: ``SAMPLE.expand("sampling")``), `deniable numbers` a part of them.
SAMPLE = OptionGroup(SampleOptions, {
    "weights": text_option("--weights", metavar="COL",
                     help="Column of sampling weights (finite, > 0): the design-based estimate "
                     "is printed beside the unweighted one."),
    "strata": text_option("--strata", metavar="COL", help="Column of strata labels."),
    "psu": text_option("--psu", metavar="COL",
                 help="Column of primary sampling units (clusters), read within their "
                 "stratum."),
    "fpc": text_option("--fpc", metavar="COL",
                 help="Column of each stratum's population count of PSUs (finite population "
                 "correction)."),
    "repweights": text_option("--repweights", metavar="PATTERN_OR_COLS",
                        help="Replicate-weight columns: a pattern such as 'rw*' or names a,b,c "
                        "(with --weights, the full-sample weights)."),
    "repmethod": text_option("--repmethod", metavar="METHOD",
                       help="Replicate method: JK1 (default), JKn, bootstrap, BRR or Fay.",
                       show_default=False),
    "rho": text_option("--rho", help="Fay's coefficient in [0, 1) (--repmethod Fay).",
                 show_default=False),
    "scale": text_option("--scale",
                   help="Overall factor of the replicate variance [default: the method's].",
                   show_default=False),
    "rscales": text_option("--rscales", metavar="S1,S2,...",
                     help="One factor per replicate (required for JKn: (n_h - 1) / n_h of each "
                     "replicate's stratum).", show_default=False),
    "mse": (Annotated[bool, typer.Option(
        "--mse", help="Centre the replicates at the full-sample estimate, not their mean.")],
        False),
    "lonely_psu": text_option("--lonely-psu", metavar="RULE",
                        help="A stratum with one PSU: fail (default), certainty, remove, adjust "
                        "or average (R's survey.lonely.psu).", show_default=False),
})  # fmt: skip
#: No sample-design option given (the default of a command's ``sampling`` parameter).
NO_SAMPLE = SampleOptions()
