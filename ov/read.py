"""Reading files: binary detection, decoding, content hash.

(Interim version; replaced by the full reader.)
"""

from __future__ import annotations

import hashlib

BINARY_SNIFF = 8192


def is_binary(head: bytes) -> bool:
    """A NUL byte in the first 8 KiB marks a binary file (git's and ripgrep's rule)."""
    return b"\x00" in head[:BINARY_SNIFF]


def decode(data: bytes) -> str:
    """UTF-8 with a BOM stripped; invalid bytes become U+FFFD so offsets stay consistent."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    return data.decode("utf-8", errors="replace")


def content_hash(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()
