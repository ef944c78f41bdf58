# Sourced by the scripts: make a virtual environment from a bare Python and install the project
# into it (editable). EXTRAS picks the optional dependencies (default: cli); VENV the directory
# (default: .venv); PYTHON the interpreter that creates it (default: python3.11, else python3).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/_python.sh
VENV=${VENV:-.venv}
PY=${PYTHON:-$(find_python 3.11 || echo python3)}
if [ ! -x "$VENV/bin/python" ]; then
  "$PY" -m venv "$VENV"
fi
# Reinstall when pyproject.toml changed or the version did (the installed metadata holds it).
stamp=$VENV/.installed-${EXTRAS:-cli}
version=$(grep -m1 '^__version__' src/deniable/__init__.py)
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ] || [ "$(cat "$stamp")" != "$version" ]; then
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check -e ".[${EXTRAS:-cli}]"
  echo "$version" >"$stamp"
fi
