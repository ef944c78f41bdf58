"""The in-memory window store keeps the window store contract (tests/_window_contract.py):
refusal exactly at the cap, concurrent charges from threads, roll-over, rolling windows,
changed specs, two ledgers on one store."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from _window_contract import WindowStoreContract
from deniable.accounting import InMemoryWindowStore, WindowStore


class TestInMemoryWindowStore(WindowStoreContract):
    @pytest.fixture
    def make_store(self) -> Callable[[], WindowStore]:  # type: ignore[override]
        return InMemoryWindowStore
