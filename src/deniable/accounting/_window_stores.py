"""Where per-period budgets live: the :class:`WindowStore` protocol and
:class:`InMemoryWindowStore`.

A store keeps, per device, every charge with its time, and the set of window specs it has
enforced.  Its one write, :meth:`WindowStore.charge`, is an atomic check-and-charge:

1. record the ledger's spec among the store's specs (if new),
2. read every spec and the device's charges,
3. decide with :func:`~deniable.accounting._windows.decide_charge` (pure),
4. write the charge if admitted; if refused, write nothing (not even the spec).

Two charges of one device never both pass on a total read before the other wrote (a lock
in memory; one transaction holding the device's row in SQL:
:class:`deniable.service.storage.SqlWindowStore`).  A spec stays once it has admitted a
charge: a ledger with another spec on the same store is held to every spec recorded, so a
change of configuration never forgets what was spent.

This module is pure accounting: it never imports a mechanism.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

from deniable.accounting._windows import BudgetWindow, Charge, decide_charge
from deniable.exceptions import ParameterError, ParameterTypeError

__all__ = [
    "InMemoryWindowStore",
    "WindowRequest",
    "WindowStore",
    "device_key",
]


def device_key(device: Any) -> int | str:
    """A device key checked: an integer id or a non-empty string token."""
    if isinstance(device, np.integer):
        return int(device)
    if isinstance(device, bool) or not isinstance(device, int | str):
        raise ParameterTypeError(
            f"`device` must be an integer id or a string token, got {type(device).__name__} "
            f"{device!r}."
        )
    if isinstance(device, str) and not device:
        raise ParameterError("`device` must be a non-empty string token, got ''.")
    return device


@dataclass(frozen=True)
class WindowRequest:
    """One charge as a store receives it: charge ``charge`` to a device under ``window``
    (the ledger's spec) and every spec the store has recorded."""

    window: BudgetWindow
    charge: Charge

    def decide(self, windows: list[BudgetWindow], charges: list[Charge]) -> str | None:
        """The refusal reason, or ``None``: :func:`decide_charge` under ``windows`` and this
        request's own spec."""
        specs = list(windows)
        if self.window not in specs:
            specs.append(self.window)
        # only charges within the longest reach can share a window with this one
        reach, t = max(w.reach for w in specs), self.charge.at
        near = [c for c in charges if abs(c.at - t) <= reach + 1.0]
        return decide_charge(specs, near, self.charge)


@runtime_checkable
class WindowStore(Protocol):
    """Storage of per-period budgets (module docstring)."""

    def charge(self, device: int | str, request: WindowRequest) -> str | None:
        """Atomically: decide ``request`` for ``device`` and write it if admitted.  Returns
        ``None`` when charged, else the refusal reason (nothing written)."""
        ...

    def charges(self, device: int | str) -> list[Charge]:
        """Every charge of ``device``, oldest first."""
        ...

    def windows(self) -> list[BudgetWindow]:
        """Every spec the store has enforced, in the order they were recorded."""
        ...


class InMemoryWindowStore:
    """A :class:`WindowStore` in this process's memory, safe under threads (one lock).

    >>> from deniable.accounting import BudgetWindow, WindowedLedger
    >>> store = InMemoryWindowStore()
    >>> WindowedLedger(BudgetWindow("day", 1.0), store=store).charge("dev-1", 0.5)
    >>> [c.epsilon for c in store.charges("dev-1")]
    [0.5]
    """

    __slots__ = ("_charges", "_lock", "_windows")

    def __init__(self) -> None:
        self._charges: dict[int | str, list[Charge]] = {}
        self._windows: list[BudgetWindow] = []
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        with self._lock:
            return (
                f"InMemoryWindowStore(devices={len(self._charges)}, windows={len(self._windows)})"
            )

    def charge(self, device: int | str, request: WindowRequest) -> str | None:
        with self._lock:  # read, decide and write: one atomic check-and-charge
            held = self._charges.get(device, [])
            refused = request.decide(self._windows, held)
            if refused is not None:
                return refused
            if request.window not in self._windows:
                self._windows.append(request.window)
            self._charges[device] = [*held, request.charge]
            return None

    def charges(self, device: int | str) -> list[Charge]:
        with self._lock:
            return sorted(self._charges.get(device, []), key=lambda c: c.at)

    def windows(self) -> list[BudgetWindow]:
        with self._lock:
            return list(self._windows)
