"""What the bytes are, before any format is sniffed.

Archives and compressed files are named as such (not "binary" or "unrecognised"); a UTF-8
byte order mark is set aside (a BOM + CRLF JSONL file is valid); UTF-16 text is decoded to
the UTF-8 the importers read. Errors raised on the bytes the importers saw are mapped back,
so a byte offset always points at the real byte of the original file.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..core.model import ImportWarning, TranscriptError

UTF8_BOM = b"\xef\xbb\xbf"
_PACKED = (
    ((b"PK\x03\x04", b"PK\x05\x06", b"PK\x07\x08"), "a ZIP archive", "unzip it"),
    ((b"\x1f\x8b",), "a gzip-compressed file", "gunzip it"),
    ((b"BZh",), "a bzip2-compressed file", "bunzip2 it"),
    ((b"\xfd7zXZ\x00",), "an xz-compressed file", "unxz it"),
    ((b"\x28\xb5\x2f\xfd",), "a zstd-compressed file", "unzstd it"),
)


@dataclass(frozen=True, slots=True)
class Source:
    data: bytes  # the UTF-8 bytes importers read
    skipped: int = 0  # bytes of byte order mark before ``data`` in the original
    encoding: str = ""  # "utf-16-le" / "utf-16-be" when the original was UTF-16

    @property
    def warnings(self) -> tuple[ImportWarning, ...]:
        if not self.encoding:
            return ()
        return (
            ImportWarning(
                f"the file is {self.encoding.upper()} text; decoded", code="utf16-decoded"
            ),
        )

    def original_offset(self, offset: int) -> int:
        if not self.encoding:
            return self.skipped + offset
        prefix = self.data[:offset].decode("utf-8", "ignore")
        return self.skipped + len(prefix.encode(self.encoding, "surrogatepass"))

    def locate(self, exc: TranscriptError) -> TranscriptError:
        """``exc`` with its byte offset in the original file."""
        if exc.offset is None or (not self.skipped and not self.encoding):
            return exc
        return TranscriptError(
            exc.reason,
            file=exc.file,
            line=exc.line,
            offset=self.original_offset(exc.offset),
            expected=exc.expected,
        )


def read_source(data: bytes, name: str) -> Source:
    for magics, what, how in _PACKED:
        if data.startswith(magics):
            raise TranscriptError(
                f"this is {what}, not a transcript",
                file=name,
                offset=0,
                expected=f"the transcript file itself ({how} and upload the files inside)",
            )
    if data.startswith(UTF8_BOM):
        return Source(data[len(UTF8_BOM) :], skipped=len(UTF8_BOM))
    encoding, skipped = _utf16(data)
    if not encoding:
        return Source(data)
    try:
        text = data[skipped:].decode(encoding)
    except UnicodeDecodeError as exc:
        raise TranscriptError(
            f"invalid {encoding.upper()} text",
            file=name,
            offset=skipped + exc.start,
            expected=f"{encoding.upper()} text (or UTF-8)",
        ) from None
    return Source(text.encode("utf-8"), skipped=skipped, encoding=encoding)


def _utf16(data: bytes) -> tuple[str, int]:
    """``(encoding, bom length)`` for UTF-16 text (with a BOM, or ASCII-heavy without)."""
    if data.startswith(b"\xff\xfe"):
        return "utf-16-le", 2
    if data.startswith(b"\xfe\xff"):
        return "utf-16-be", 2
    head = data[:512]
    if len(head) < 4 or len(head) % 2:
        head = head[: len(head) - len(head) % 2]
    if len(head) < 4:
        return "", 0
    even, odd = head[0::2], head[1::2]
    # Text made mostly of ASCII has a NUL in every other byte in UTF-16, and none in UTF-8;
    # the other bytes must then read as printable text (binary data can look the same).
    if odd.count(0) >= 0.9 * len(odd) and even.count(0) <= 0.1 * len(even):
        return ("utf-16-le", 0) if _printable(even) else ("", 0)
    if even.count(0) >= 0.9 * len(even) and odd.count(0) <= 0.1 * len(odd):
        return ("utf-16-be", 0) if _printable(odd) else ("", 0)
    return "", 0


def _printable(low_bytes: bytes) -> bool:
    control = sum(1 for b in low_bytes if b < 32 and b not in (9, 10, 13))
    return control <= 0.02 * len(low_bytes)
