# Sourced by the setup pieces that make a Python venv from a requirements file of exact pins.
#
#   pinned_venv LABEL VENV REQUIREMENTS PYTHON
#
# Makes VENV from PYTHON when it has no interpreter, then installs REQUIREMENTS unless every
# `name==version` line of it is installed already (so a second run only says so).
pinned_venv() {
  local label=$1 venv=$2 req=$3 python=$4
  if [ ! -x "$venv/bin/python" ]; then
    echo "$label: making $venv from $python"
    "$python" -m venv "$venv"
  fi
  local missing=0 line name want have
  while read -r line; do
    case "$line" in ''|\#*) continue ;; esac
    name=${line%%==*}
    want=${line#*==}
    have=$("$venv/bin/python" -m pip show "$name" 2>/dev/null | sed -n 's/^Version: //p' || true)
    [ "$have" = "$want" ] || missing=1
  done < "$req"
  if [ "$missing" = 1 ]; then
    echo "$label: installing $(grep -v '^#' "$req" | tr '\n' ' ')"
    "$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$req"
  else
    echo "$label: $venv has every pin of ${req#"$root"/}"
  fi
}
