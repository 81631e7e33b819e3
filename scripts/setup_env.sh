#!/usr/bin/env bash
# Creates (or refreshes) the project's own virtual environment in .venv and installs the project
# with what the demo and the tests need. Idempotent: a stamp of the install inputs skips work that
# is already done. Usage: scripts/setup_env.sh [--dev]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
dev=0
[[ "${1:-}" == "--dev" ]] && dev=1

py="${PYTHON:-python3}"
if ! "$py" -c 'import sys; sys.exit(sys.version_info < (3, 10))'; then
    echo "dronecats needs Python >= 3.10 (found $("$py" --version 2>&1))" >&2
    exit 1
fi
[[ -x .venv/bin/python ]] || "$py" -m venv .venv
pip=(.venv/bin/python -m pip --disable-pip-version-check -q)

stamp=".venv/.dronecats-stamp-$dev"
want="$(cat pyproject.toml scripts/setup_env.sh | sha256sum | cut -c1-16)"
# A dev install holds everything the plain one does: `scripts/demo.sh` after `scripts/test.sh` (or
# in the tests) must not reinstall, least of all from another directory that sees this .venv.
for done_stamp in "$stamp" ".venv/.dronecats-stamp-1"; do
    if [[ -f "$done_stamp" && "$(cat "$done_stamp")" == "$want" ]]; then
        exit 0
    fi
done

extras="sim,airsim,vehicles,plots,gui"
[[ $dev == 1 ]] && extras="$extras,dev"
echo "setting up .venv (extras: $extras) ..." >&2
"${pip[@]}" install --upgrade pip setuptools wheel
"${pip[@]}" install numpy rpc-msgpack
# airsim 1.8.1's sdist imports numpy and msgpackrpc in setup.py, and its declared dependency pins
# msgpack<1 (which would break our msgpack 1.x wire codec): build it without isolation or deps.
.venv/bin/python -c 'import airsim' 2>/dev/null ||
    "${pip[@]}" install --no-deps --no-build-isolation airsim==1.8.1
# djitellopy asks for opencv-python, which would clobber the headless cv2 build.
.venv/bin/python -c 'import djitellopy' 2>/dev/null || "${pip[@]}" install --no-deps djitellopy==2.5.0
# MAVProxy (dev: a third-party ground station in the tests) asks for opencv-python, vtk, matplotlib
# and wx-era extras; its console with the mode/arm/cmdlong/param modules needs only pymavlink and
# pyserial (the dev extra).
[[ $dev == 1 ]] && { .venv/bin/python -c 'import MAVProxy' 2>/dev/null ||
    "${pip[@]}" install --no-deps MAVProxy==1.8.75; }
"${pip[@]}" install -e ".[$extras]"
echo "$want" > "$stamp"
