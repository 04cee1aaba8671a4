"""An upload handler that refuses a file once it passes the size limit.

It sits first in the chain, so the bytes beyond the limit are never buffered in memory or
written to a temp file: the parser skips the rest of that part and the view reports it.
"""

from __future__ import annotations

from typing import Any

from django.core.files.uploadhandler import FileUploadHandler, SkipFile


class SizeLimitUploadHandler(FileUploadHandler):
    def __init__(self, request: Any = None, *, limit: int) -> None:
        super().__init__(request)
        self.limit = limit
        self.refused: list[tuple[str, int]] = []  # (file name, bytes seen when refused)

    def new_file(
        self,
        field_name: str,
        file_name: str,
        content_type: str,
        content_length: int | None,
        *args: Any,
        **kwargs: Any,
    ) -> None:
        super().new_file(field_name, file_name, content_type, content_length, *args, **kwargs)
        # A part may announce its length: refuse before reading a byte of it.
        if content_length is not None and content_length > self.limit:
            self.refused.append((file_name, int(content_length)))
            raise SkipFile

    def receive_data_chunk(self, raw_data: bytes, start: int) -> bytes:
        seen = start + len(raw_data)
        if seen > self.limit:
            self.refused.append((self.file_name or "", seen))
            raise SkipFile
        return raw_data

    def file_complete(self, file_size: int) -> None:
        return None
