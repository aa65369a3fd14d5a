#!/bin/bash
# Build environment.yml's pip section and postBuild into a fresh virtual environment, the way conda/mamba and
# Binder do, for a machine without conda: Python 3.11 stands in for conda's `python=3.11`, then, as mamba's
# `env update` does, the pip section is written to a temporary requirements file beside environment.yml and
# installed with `python -m pip install -r FILE --no-input -U` from that folder (so `-c constraints.txt` and
# `-e .` resolve there), then postBuild runs with the environment first on PATH.
#   tools/envyml_in_venv.sh PREFIX            e.g. tools/envyml_in_venv.sh /tmp/icml26-env
# Where PyTorch's CPU index cannot be reached, PIP_RETRIES=0 makes pip give up on it at once instead of
# retrying for every package (pip then takes torch from whatever else it is configured with).
set -euo pipefail
prefix=${1:?usage: tools/envyml_in_venv.sh PREFIX}
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
test ! -e "$prefix" || { echo "$prefix exists: give a fresh prefix" >&2; exit 2; }
${PYTHON:-python3.11} -m venv "$prefix"
"$prefix/bin/python" -m pip install --quiet --upgrade pip
requirements=$(mktemp "$repo/mambafXXXXXX")
trap 'rm -f "$requirements"' EXIT
${PYTHON:-python3.11} - "$requirements" <<'PY'  # conda reads the YAML itself; any Python with PyYAML does here
import sys, yaml
env = yaml.safe_load(open("environment.yml"))
assert any(str(d).startswith("python=3.11") for d in env["dependencies"]), "environment.yml asks another Python"
section = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d)
open(sys.argv[1], "w").write("".join(line + "\n" for line in section))
PY
"$prefix/bin/python" -m pip install -r "$requirements" --no-input -U
PATH="$prefix/bin:$PATH" ./postBuild
echo "built $prefix from environment.yml and postBuild"
