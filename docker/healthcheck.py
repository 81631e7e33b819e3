#!/usr/bin/env python3
"""The container's health check (Docker HEALTHCHECK): exit 0 when the pilot can answer.

- A local engine (DRONECATS_SERVE_PROFILE set): serve-model has written its ready file (the model
  is warm) and the engine answers GET /health with 200.
- A remote pilot (DRONECATS_PILOT=openai://HOST:PORT/v1...): GET /v1/models answers 200.
- The baseline pilot (no model): healthy.

Standard library only, so a check costs tens of milliseconds and cannot fail on an import.
"""

from __future__ import annotations

import os
import sys
import urllib.error
import urllib.request
from pathlib import Path

TIMEOUT_S = 5.0


def get_ok(url: str) -> str | None:
    """None when GET `url` answers 200, else what went wrong."""
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT_S) as response:
            return None if response.status == 200 else f"{url}: HTTP {response.status}"
    except urllib.error.HTTPError as exc:
        return f"{url}: HTTP {exc.code}"
    except (urllib.error.URLError, OSError) as exc:
        return f"{url}: {getattr(exc, 'reason', exc)}"


def check(env: dict[str, str]) -> str | None:
    """None when healthy, else the reason."""
    if env.get("DRONECATS_SERVE_PROFILE"):
        ready = Path(env.get("DRONECATS_READY_FILE", "/tmp/dronecats-model-ready.json"))
        if not ready.is_file():
            return f"model not warm yet ({ready} missing)"
        return get_ok(f"http://127.0.0.1:{env.get('DRONECATS_MODEL_PORT', '8000')}/health")
    pilot = env.get("DRONECATS_PILOT", "")
    for scheme, http in (("openai://", "http://"), ("openais://", "https://")):
        if pilot.startswith(scheme):
            base = pilot[len(scheme) :].split("?", 1)[0].rstrip("/")
            return get_ok(f"{http}{base}/models")
    return None


def main() -> int:
    problem = check(dict(os.environ))
    if problem is None:
        print("healthy")
        return 0
    print(f"unhealthy: {problem}")
    return 1


if __name__ == "__main__":
    sys.exit(main())
