#!/usr/bin/env bash
# Container entrypoint: optionally start and warm up the model engine, then fly with `dronecats onboard`.
#
# Configuration comes from the environment and a mounted config file:
#   DRONECATS_VEHICLE        vehicle URL (required), e.g. mavlink://udpin:0.0.0.0:14540, tello://192.168.10.1
#   DRONECATS_SERVE_PROFILE  a serving profile (dronecats serve-model --list); empty: no local engine
#   DRONECATS_PILOT          pilot URL; default: the local engine's (serve-model prints it), else baseline
#   DRONECATS_GS             ground-station link bind address, e.g. tcp://0.0.0.0:5600; secured with CURVE:
#     DRONECATS_KEYS (/keys)   the drone's keypair NAME.key_secret (DRONECATS_KEY_NAME, default drone), and
#                              the ground stations' public keys (every other *.key there) it obeys;
#                              without a drone keypair there, a fresh one is made for this session and its
#                              public key printed (give it to the ground station: `gs --keys`)
#     DRONECATS_GS_KEYS        comma-separated ground-station public keys (Z85 or files) instead of *.key
#     DRONECATS_INSECURE=1     no CURVE at all (bench tests only; recorded as link_security: insecure)
#   DRONECATS_CONFIG         RuntimeConfig YAML/TOML (default /config/onboard.yaml; used when present)
#   DRONECATS_INSTRUCTION, DRONECATS_CAMERA, DRONECATS_FLIGHT_PROFILE   optional onboard arguments
#   DRONECATS_WEIGHTS (/models), DRONECATS_MODEL_PORT (8000), DRONECATS_LOG_DIR (/runs),
#   DRONECATS_READY_TIMEOUT_S (1800), DRONECATS_ENGINE_COMMAND (replaces the engine's command line)
# Any arguments are passed on to `dronecats onboard` (e.g. --set safety.geofence_radius_m=80).
# With `serve-model ...` or `bench-model ...` as arguments, that subcommand runs instead.
set -euo pipefail

dronecats=(python3 -m dronecats --log-level "${DRONECATS_LOG_LEVEL:-INFO}")

case "${1:-}" in
    serve-model | bench-model | explain | parse | calibrate | episodes | keys)
        exec "${dronecats[@]}" "$@"
        ;;
esac

: "${DRONECATS_VEHICLE:?set DRONECATS_VEHICLE to the vehicle URL, e.g. mavlink://udpin:0.0.0.0:14540}"
weights="${DRONECATS_WEIGHTS:-/models}"
port="${DRONECATS_MODEL_PORT:-8000}"
ready_file="${DRONECATS_READY_FILE:-/tmp/dronecats-model-ready.json}"
pilot="${DRONECATS_PILOT:-}"

if [[ -n "${DRONECATS_SERVE_PROFILE:-}" ]]; then
    rm -f "$ready_file"
    serve=(serve-model "$DRONECATS_SERVE_PROFILE" --weights-dir "$weights" --host 127.0.0.1 --port "$port")
    serve+=(--ready-file "$ready_file")
    # another OpenAI-compatible engine command (placeholders as in `dronecats serve-model --help`)
    [[ -n "${DRONECATS_ENGINE_COMMAND:-}" ]] && serve+=(--command "$DRONECATS_ENGINE_COMMAND")
    "${dronecats[@]}" "${serve[@]}" &
    serve_pid=$!
    deadline=$((SECONDS + ${DRONECATS_READY_TIMEOUT_S:-1800}))
    until [[ -s "$ready_file" ]]; do
        if ! kill -0 "$serve_pid" 2>/dev/null; then
            echo "entrypoint: serve-model exited before the model was warm" >&2
            exit 1
        fi
        if ((SECONDS >= deadline)); then
            echo "entrypoint: the model was not warm after ${DRONECATS_READY_TIMEOUT_S:-1800} s" >&2
            exit 1
        fi
        sleep 2
    done
    if [[ -z "$pilot" ]]; then
        pilot="$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["pilot_url"])' "$ready_file")"
    fi
fi

args=(--vehicle "$DRONECATS_VEHICLE" --pilot "${pilot:-baseline}")
args+=(--log-dir "${DRONECATS_LOG_DIR:-/runs}/onboard-$(date -u +%Y%m%d-%H%M%S)")
if [[ -n "${DRONECATS_GS:-}" ]]; then
    if [[ "${DRONECATS_INSECURE:-0}" == 1 ]]; then
        args+=(--gs "$DRONECATS_GS" --insecure)
    else
        key_dir="${DRONECATS_KEYS:-/keys}"
        key_name="${DRONECATS_KEY_NAME:-drone}"
        secret="$key_dir/$key_name.key_secret"
        allowed=()
        IFS=, read -ra gs_keys <<<"${DRONECATS_GS_KEYS:-}"
        for key in "${gs_keys[@]}"; do
            [[ -n "$key" ]] && allowed+=(--link-allow "$key")
        done
        if ((${#allowed[@]} == 0)); then
            for key in "$key_dir"/*.key; do
                [[ -f "$key" && "$key" != "$key_dir/$key_name.key" ]] && allowed+=(--link-allow "$key")
            done
        fi
        if ((${#allowed[@]} == 0)); then
            echo "entrypoint: DRONECATS_GS needs a ground station's public key: put GS.key in $key_dir," \
                "or set DRONECATS_GS_KEYS (DRONECATS_INSECURE=1 runs the link without CURVE)" >&2
            exit 2
        fi
        if [[ ! -f "$secret" ]]; then
            session_keys="$(mktemp -d -t dronecats-keys-XXXXXX)"  # mode 0700, this session only
            "${dronecats[@]}" keys generate --out "$session_keys" --name "$key_name"
            secret="$session_keys/$key_name.key_secret"
        fi
        args+=(--gs "$DRONECATS_GS" --link-secret "$secret" "${allowed[@]}")
    fi
fi
[[ -f "${DRONECATS_CONFIG:-/config/onboard.yaml}" ]] && args+=(--config "${DRONECATS_CONFIG:-/config/onboard.yaml}")
[[ -n "${DRONECATS_INSTRUCTION:-}" ]] && args+=(--instruction "$DRONECATS_INSTRUCTION")
[[ -n "${DRONECATS_CAMERA:-}" ]] && args+=(--camera "$DRONECATS_CAMERA")
[[ -n "${DRONECATS_FLIGHT_PROFILE:-}" ]] && args+=(--profile "$DRONECATS_FLIGHT_PROFILE")

# exec: tini (PID 1) forwards SIGTERM straight to the runtime, which lands the drone.
exec "${dronecats[@]}" onboard "${args[@]}" "$@"
