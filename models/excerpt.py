"""A model reply as logs and the link carry it: never more than its first 2 KB.

A reply the runtime cannot use (or one longer than 2 KB) is logged as an excerpt that still
identifies it: its first 2 KB (whole characters), then its length and sha256, so a 50 MB reply costs
the log a line, and can still be matched against the server's own record of what it sent.
"""

from __future__ import annotations

import hashlib

EXCERPT_BYTES = 2048


def reply_excerpt(raw: str) -> str:
    """`raw`'s first EXCERPT_BYTES (UTF-8, cut at a character), its length in bytes and sha256."""
    if not raw:
        return ""
    data = raw.encode("utf-8", "surrogatepass")
    head = data[:EXCERPT_BYTES].decode("utf-8", "ignore")
    return f"{head} [excerpt: {len(data)} bytes, sha256 {hashlib.sha256(data).hexdigest()}]"


def logged_reply(raw: str, usable: bool) -> str:
    """A usable reply of up to EXCERPT_BYTES as it came (a parsed action, short by its schema);
    anything else as its excerpt."""
    if usable and len(raw) <= EXCERPT_BYTES and len(raw.encode("utf-8", "surrogatepass")) <= EXCERPT_BYTES:
        return raw
    return reply_excerpt(raw)
