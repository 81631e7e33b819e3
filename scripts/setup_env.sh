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
# review (episodes export: mcap, rerun-sdk) comes with dev: the tests read the exports back with the
# same SDKs. Measured on the 2-core dev machine: about 10 s to install, cold pip cache or warm.
[[ $dev == 1 ]] && extras="$extras,dev,review"
echo "setting up .venv (extras: $extras) ..." >&2
"${pip[@]}" install --upgrade pip setuptools wheel
"${pip[@]}" install numpy rpc-msgpack
# airsim 1.8.1's sdist imports numpy and msgpackrpc in setup.py, and its declared dependency pins
# msgpack<1 (which would break our msgpack 1.x wire codec): build it without isolation or deps.
.venv/bin/python -c 'import airsim' 2>/dev/null ||
    "${pip[@]}" install --no-deps --no-build-isolation airsim==1.8.1
# djitellopy 2.5.0's metadata asks for opencv-python (plus numpy, av, pillow), whose cv2 would
# overwrite the headless one; its code imports only av and numpy, which the vehicles extra and the
# core dependencies bring. So it goes in without its declared dependencies, and is named in no extra.
.venv/bin/python -c 'import djitellopy' 2>/dev/null || "${pip[@]}" install --no-deps djitellopy==2.5.0
# MAVProxy (dev: a third-party ground station in the tests): 1.8.75's metadata asks, on CPython
# Linux, for opencv-python>=4.10, vtk, quantized-mesh-tile and matplotlib (its map and 3-D modules)
# besides pymavlink, pyserial, numpy, defusedxml and pynmeagps; its console with the
# mode/arm/cmdlong/param modules needs only pymavlink and pyserial (the dev extra). Named in no extra,
# so pip never resolves those requirements.
[[ $dev == 1 ]] && { .venv/bin/python -c 'import MAVProxy' 2>/dev/null ||
    "${pip[@]}" install --no-deps MAVProxy==1.8.75; }
"${pip[@]}" install -e ".[$extras]"
# One OpenCV wheel: the headless build. opencv-python and the contrib builds unpack into the same
# cv2 directory (the last one installed wins, with a Qt plugin set that has no `offscreen`), and a
# .venv made while djitellopy was in the vehicles extra holds opencv-python too. Removing one
# removes the files they share, so the headless wheel is laid down again, at the version it had.
others=(opencv-python opencv-contrib-python opencv-contrib-python-headless)
if "${pip[@]}" show "${others[@]}" >/dev/null 2>&1; then
    echo "removing the OpenCV wheels other than opencv-python-headless ..." >&2
    "${pip[@]}" uninstall -y "${others[@]}" 2>/dev/null  # quiet about the ones that are absent
    headless="$(.venv/bin/python -c 'import importlib.metadata as m; print(m.version("opencv-python-headless"))')"
    "${pip[@]}" install --no-deps --force-reinstall "opencv-python-headless==$headless"
fi
echo "$want" > "$stamp"
