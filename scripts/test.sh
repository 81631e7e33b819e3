#!/usr/bin/env bash
# The test command: installs what the tests need into .venv, then runs the whole suite.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash scripts/setup_env.sh --dev
# System packages the tests use: tesseract reads the simulator's licence plates (legibility test).
if ! command -v tesseract >/dev/null 2>&1; then
    if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null 2>&1; then
        echo "installing tesseract-ocr (Debian package) for the plate legibility test ..." >&2
        apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq tesseract-ocr >/dev/null
    else
        echo "note: tesseract is not installed and cannot be installed here; the legibility test will skip" >&2
    fi
fi
export QT_QPA_PLATFORM="${QT_QPA_PLATFORM:-offscreen}"
# Most tests wait on processes and sockets rather than compute, so four workers on two cores finish
# in about a third of the serial time. Tests that share a fixed resource (djitellopy's UDP ports) are
# kept on one worker by tests/conftest.py (xdist groups: a file at a time). `-n 0` (or DRONECATS_TEST_WORKERS=0) runs serially.
exec .venv/bin/python -m pytest -n "${DRONECATS_TEST_WORKERS:-4}" --dist loadgroup "$@"
