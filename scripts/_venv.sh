# Sourced by the scripts: make .venv from a bare Python 3.11 and install the project into it.
# EXTRAS picks the optional dependencies (default: cli).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PY=${PYTHON:-python3.11}
command -v "$PY" >/dev/null 2>&1 || PY=python3
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
stamp=.venv/.installed-${EXTRAS:-cli}
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  .venv/bin/python -m pip install -q --disable-pip-version-check -e ".[${EXTRAS:-cli}]"
  touch "$stamp"
fi
