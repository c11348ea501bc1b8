"""The spec's words for the API's enum values.

Read models carry statuses as proto enums (``status_pb2.TURN_STATUS_WAITING_PERMISSION``);
the spec, event payloads and human output use the word: the value's name
without its enum's prefix, in lowercase (``"waiting_permission"``)."""

from __future__ import annotations

import re
from typing import Any

__all__ = ["enum_word", "enum_value"]


def _prefix(enum: Any) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", enum.DESCRIPTOR.name).upper() + "_"


def enum_word(enum: Any, value: int) -> str:
    """The word of ``value`` of the generated ``enum`` (``status_pb2.TurnStatus``):
    ``"unspecified"`` for 0, the number for a value this build does not know."""
    try:
        name = enum.Name(value)
    except ValueError:
        return str(value)
    prefix = _prefix(enum)
    return (name[len(prefix):] if name.startswith(prefix) else name).lower()


def enum_value(enum: Any, word: str) -> int:
    """The value of ``enum`` whose word is ``word``; ValueError when none is."""
    return enum.Value(_prefix(enum) + word.upper())
