"""The device-rule cases of the string protocols' test vectors (PEM and TreeHist, SFP,
RAPPOR n-grams): a case's words, the values its devices hold and their reports
(``_vectors._device_rule_case``), with the fields every such case opens with."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from deniable.oracles._vectors import _RANDOM_ROWS, _device_rule_case

__all__ = ["device_case"]


def device_case(
    case_id: str,
    protocol: Any,
    spec: dict[str, Any],
    edges: Sequence[tuple[Any, int]],
    values: Sequence[Any],
    device_reports: Callable[..., Any],
    random_rows: int = _RANDOM_ROWS,
) -> tuple[dict[str, Any], npt.NDArray[np.uint64], Any]:
    """``(head, words, reports)`` of a case of ``protocol`` (its spec ``spec``, its
    ``words_per_report`` words a row): ``head`` its first fields ``{"id", "spec", "values",
    "words"}`` (the values each row's device holds; every word as a decimal string), then
    the ``(rows, words_per_report)`` words and ``device_reports(protocol, values,
    rng=words)``."""
    words, strings, reports = _device_rule_case(
        case_id,
        edges,
        values,
        spec["words_per_report"],
        lambda held, source: device_reports(protocol, held, rng=source),
        random_rows,
    )
    head = {
        "id": case_id,
        "spec": spec,
        "values": strings,
        "words": [str(int(x)) for x in words.reshape(-1)],
    }
    return head, words, reports
