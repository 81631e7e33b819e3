"""StrEnum: an enum whose members are their value strings, for categories that travel as text.

Python 3.11's `enum.StrEnum`, written here for the 3.10 floor. A member is a `str` equal to its value,
so msgspec and json encode it as that string and decode it from the same string; str() and format()
give the value too (a plain `(str, Enum)` formats as "Class.MEMBER" from Python 3.12 on), so a log line
or a message built from a member reads exactly as one built from the string did.
"""

from __future__ import annotations

from enum import Enum


class StrEnum(str, Enum):
    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, format_spec: str) -> str:
        return format(str(self.value), format_spec)

    @classmethod
    def values(cls) -> tuple[str, ...]:
        """The accepted strings, in declaration order (for error messages and CLI choices)."""
        return tuple(str(member.value) for member in cls)
