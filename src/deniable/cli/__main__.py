"""``python -m deniable.cli``: the same as the ``deniable`` command."""

from __future__ import annotations

from deniable.cli import main

if __name__ == "__main__":
    main()
