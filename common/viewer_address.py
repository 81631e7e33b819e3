"""Where a live Rerun viewer listens unless told otherwise: the Rerun SDK's own default
(`rr.connect_grpc()` without a url, and `rerun --connect`, in rerun-sdk 0.41), a viewer on this host.
Kept apart from common.rerun_entities so that a command line can name it without the SDK installed."""

from __future__ import annotations

import argparse

RERUN_DEFAULT_URL = "rerun+http://127.0.0.1:9876/proxy"


def add_rerun_argument(parser: argparse.ArgumentParser, what: str) -> None:
    """`--rerun [ADDR]`: stream `what` live to a running Rerun viewer (ADDR: the SDK's default)."""
    parser.add_argument(
        "--rerun",
        nargs="?",
        const=RERUN_DEFAULT_URL,
        default=None,
        metavar="ADDR",
        help=f"stream {what} live to a running Rerun viewer (default {RERUN_DEFAULT_URL}); "
        'needs the review extra (pip install "dronecats[review]")',
    )
