"""`deniable privacy`: the privacy-accounting commands, a group of `deniable`.

``compose``, ``convert`` (``_privacy_compose``), ``shuffle``, ``noise`` (``_privacy_noise``),
``explain``, ``audit`` and ``budget`` (``_privacy_people``); see ``docs/privacy-cli.md``.
Importing this module registers the subcommands on :data:`privacy_app`.
"""

from __future__ import annotations

from deniable.cli import _privacy_compose, _privacy_noise, _privacy_people
from deniable.cli._privacy_base import privacy_app

__all__ = ["COMMAND_MODULES", "privacy_app"]

#: The modules whose import registers the `deniable privacy` subcommands.
COMMAND_MODULES = (_privacy_compose, _privacy_noise, _privacy_people)
