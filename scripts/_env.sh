# Shared set-up for scripts/demo and scripts/test: create .venv if needed and install ncuroof
# (editable) with its test extras. Sourced, not executed.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${NCUROOF_VENV:-$ROOT/.venv}"
PY="${PYTHON:-python3}"
if [ ! -x "$VENV/bin/python" ]; then
  echo "creating $VENV" >&2
  if ! "$PY" -m venv "$VENV"; then
    rm -rf "$VENV"
    echo "cannot create a virtual environment with $PY: on Debian/Ubuntu install python3-venv (apt install python3-venv)" >&2
    exit 2
  fi
fi
# Re-install only when pyproject.toml changed since the last install.
STAMP="$VENV/.ncuroof-installed"
if [ ! -f "$STAMP" ] || [ "$ROOT/pyproject.toml" -nt "$STAMP" ]; then
  echo "installing ncuroof and its dependencies into $VENV" >&2
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade pip >&2
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -e "$ROOT[test]" >&2
  touch "$STAMP"
fi
export PATH="$VENV/bin:$PATH"
