"""The guard of every file that drives djitellopy in the test process.

djitellopy binds UDP 0.0.0.0:8889/8890 for its whole process (its first Tello() does, without
SO_REUSEADDR), so one process on the host can use it at a time: tests/conftest.py keeps these files on
one xdist worker, and a file that finds the ports held by another process skips, saying so.
Use: `from tests.support.djitellopy_ports import djitellopy_ports  # noqa: F401` (an autouse fixture).
"""

from __future__ import annotations

import socket
import sys

import pytest


def port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.bind(("", port))
            return True
        except OSError:
            return False


@pytest.fixture(scope="module", autouse=True)
def djitellopy_ports():
    import djitellopy.tello as dt

    # djitellopy's global sockets are created by the first Tello() of the process; if another process
    # holds the ports, nothing in the file can run
    if not dt.threads_initialized and not (port_free(8889) and port_free(8890)):
        pytest.skip("UDP 8889/8890 are taken by another djitellopy process on this host")
    yield


def free_for_a_child_process() -> None:
    """Before a test starts a process that drives djitellopy (an onboard, a documented script): skip
    when another process on the host holds the ports; fail when this one does, for that is the order
    of the tests going wrong (tests/conftest.py runs the child-process tests first)."""
    dt = sys.modules.get("djitellopy.tello")
    if dt is not None and dt.threads_initialized:
        raise AssertionError(
            "this test process's djitellopy holds UDP 8889/8890, so no child can bind them: "
            "tests/conftest.py's DJITELLOPY_CHILD_FILES must run first"
        )
    if not (port_free(8889) and port_free(8890)):
        pytest.skip("UDP 8889/8890 are taken by another djitellopy process on this host")
