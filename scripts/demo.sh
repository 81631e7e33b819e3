#!/usr/bin/env bash
# The main job: installs what it needs into .venv, then runs the demo on the built-in simulator.
#   bash scripts/demo.sh            one drone, onboard runtime + baseline pilot, verifier's verdict (~10 s)
#   bash scripts/demo.sh --fleet    four onboard processes + the ground station (GUI with a display)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash scripts/setup_env.sh
if [[ "${1:-}" == "--fleet" ]]; then
    shift
    [[ -z "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ]] && set -- --headless "$@"
    exec .venv/bin/dronecats demo-fleet "$@"
fi
exec .venv/bin/dronecats demo "$@"
