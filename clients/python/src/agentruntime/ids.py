"""Ids the way the runtime makes them: ``<prefix>_<ULID>`` (sortable,
subject-safe), strictly increasing within one process."""

from __future__ import annotations

import os
import re
import threading
import time

__all__ = ["new_id", "ID_PATTERN"]

ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$")
_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_lock = threading.Lock()
_last = (0, 0)


def _ulid() -> str:
    global _last
    with _lock:
        ms = time.time_ns() // 1_000_000
        last_ms, last_rand = _last
        if ms <= last_ms:  # same millisecond (or a clock step back): increment
            ms, rand = last_ms, (last_rand + 1) & ((1 << 80) - 1)
        else:
            rand = int.from_bytes(os.urandom(10), "big")
        _last = (ms, rand)
    n = (ms << 80) | rand
    out = []
    for _ in range(26):
        out.append(_ALPHABET[n & 31])
        n >>= 5
    return "".join(reversed(out))


def new_id(prefix: str) -> str:
    """A new id, e.g. ``new_id("step")`` -> ``step_01JCX3Q8Z5V1T2N7R4W9K6M0PA``."""
    return f"{prefix}_{_ulid()}"
