"""NONE: the bytes are ignored; only valid when no columns are declared for that part."""

from __future__ import annotations

from ..errors import StatementError
from .. import types
from .base import Decoded, Format


class NoneFormat(Format):
    name = "NONE"

    def validate(self, fields, role, kind):
        if fields:
            cols = ", ".join(f"`{f.name}` {types.display(f.type)}{' KEY' if role == 'key' else ''}" for f in fields)
            raise StatementError(
                f"The 'NONE' format can only be used when no columns are defined. Got: [{cols}]"
            )

    def decode(self, raw, fields, spec, role):
        return Decoded([])

    def encode(self, values, fields, spec, role):
        return None
