"""Codes people read out and type: race ids (also private races' join codes) and
tournament codes.

>>> code = new_code(8, taken=set())
>>> len(code), set(code) <= set(CODE_ALPHABET)
(8, True)
"""

from __future__ import annotations

import secrets
from collections.abc import Container

#: No 0/O and no 1/I/L, which people misread.
CODE_ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"


def new_code(length: int, taken: Container[str]) -> str:
    """A random code of ``length`` characters that is not in ``taken``."""
    while True:
        code = "".join(secrets.choice(CODE_ALPHABET) for _ in range(length))
        if code not in taken:
            return code
