#!/usr/bin/env bash
# The main job: installs what it needs into .venv, then runs the demo on the built-in simulator.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash scripts/setup_env.sh
exec .venv/bin/dronecats demo "$@"
