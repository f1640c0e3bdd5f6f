"""Upstream's DB hash: sha256 of ``json.dumps(model_dump(), sort_keys=True, default=str)``."""

from __future__ import annotations

import hashlib
import json
from typing import Any

SORTED_ENCODER = json.JSONEncoder(sort_keys=True, default=str)
"""json.dumps(..., sort_keys=True, default=str) as one shared encoder (building one per call costs)."""


def upstream_hash(value: Any) -> str:
    """The hex sha256 upstream computes over a DB's dump (keys sorted at every level, default separators,
    ASCII escaping, Python float repr)."""
    return hashlib.sha256(SORTED_ENCODER.encode(value).encode()).hexdigest()
