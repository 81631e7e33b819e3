"""The test suite. A package so that `tests.support` is a real import (pytest runs in importlib mode)."""
