# Sourced by the scripts: find_python X.Y prints the path of a working Python X.Y: pythonX.Y on
# the PATH if it runs (a pyenv shim for a version that is not selected does not), else the
# newest pyenv-installed X.Y.Z. Returns 1 when there is none.
find_python() {
  local version=$1 exe
  if exe=$(command -v "python$version") && "$exe" -c "" >/dev/null 2>&1; then
    echo "$exe"
    return 0
  fi
  while read -r exe; do
    if [ -x "$exe" ] && "$exe" -c "" >/dev/null 2>&1; then
      echo "$exe"
      return 0
    fi
  done < <(ls -d "${PYENV_ROOT:-$HOME/.pyenv}/versions/$version".*/bin/"python$version" \
    2>/dev/null | sort -rV)
  return 1
}
