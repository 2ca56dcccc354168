#!/usr/bin/env bash
# The dependency floors, tested: a fresh environment with every runtime dependency of the package
# and its review and annotate extras pinned to the floor pyproject.toml declares (`name>=X` installs
# exactly X), then the quick lane (python -m pytest -n auto -m "not slow"). A floor that no longer holds
# (the code uses something newer) fails here, so the floors stay true. BERTScore is left out (it
# needs PyTorch; its tests skip without it).
#
#   bash .ci/floors.sh
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=.venv-floors
rm -rf "$VENV"
python3 -m venv "$VENV"
# one constraint per runtime requirement of the core and the review/annotate extras: its floor, exactly
"$VENV/bin/python" - > "$VENV/floors.txt" <<'PY'
import re, tomllib
project = tomllib.load(open("pyproject.toml", "rb"))["project"]
extras = project["optional-dependencies"]
for requirement in project["dependencies"] + extras["review"] + extras["annotate"]:
    spec = requirement.split(";")[0]
    name, floor = re.fullmatch(r"\s*([A-Za-z0-9_.-]+)(?:\[[^\]]*\])?\s*>=\s*([0-9][0-9A-Za-z.]*)\s*", spec).groups()
    print(f"{name}=={floor}")
PY
echo "floors: $(tr '\n' ' ' < "$VENV/floors.txt")" >&2
. "$VENV/bin/activate"
pip install -q -c "$VENV/floors.txt" -e '.[test,all]'
python -m pytest -q -n auto -m "not slow" -p no:cacheprovider
