"""Real, tiny image files for media tests: a valid PNG made with zlib (no image library)."""

from __future__ import annotations

import base64
import struct
import zlib


def tiny_png(width: int = 2, height: int = 2, rgb: tuple[int, int, int] = (200, 30, 60)) -> bytes:
    """A valid truecolour PNG of one colour."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        crc = zlib.crc32(kind + body) & 0xFFFFFFFF
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", crc)

    row = b"\x00" + bytes(rgb) * width  # filter byte 0, then the pixels
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(row * height))
        + chunk(b"IEND", b"")
    )


PNG = tiny_png()
PNG_B64 = base64.b64encode(PNG).decode("ascii")
SVG_B64 = base64.b64encode(
    b'<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"><script>alert(2)</script></svg>'
).decode("ascii")
