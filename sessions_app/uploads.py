"""Upload handlers: a size limit, and temporary files that are never left behind.

``SizeLimitUploadHandler`` sits first in the chain, so the bytes beyond the limit are never
buffered in memory or written to a temp file: the parser skips the rest of that part and
the view reports it. ``UploadTempFileHandler`` (``FILE_UPLOAD_HANDLERS``) spools a big
upload to an unnamed file in ctxlab's own temp directory; ``sweep_temp_files`` runs at
server start.
"""

from __future__ import annotations

import logging
import os
import re
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.files.uploadedfile import TemporaryUploadedFile, UploadedFile
from django.core.files.uploadhandler import (
    FileUploadHandler,
    SkipFile,
    TemporaryFileUploadHandler,
)

log = logging.getLogger(__name__)


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


# Temporary upload files: ctxlab's own, in its own directory, never left behind

TEMP_PREFIX = "ctxlab-upload-"


def temp_dir() -> Path:
    """Where uploads over ``FILE_UPLOAD_MAX_MEMORY_SIZE`` are spooled (created on demand)."""
    path = Path(settings.CTXLAB_UPLOAD_TEMP_DIR)
    path.mkdir(parents=True, exist_ok=True)
    return path


class UploadTempFile(TemporaryUploadedFile):
    """An upload spooled to disk with no name: the file is created as
    ``ctxlab-upload-<pid>-…`` and unlinked at once, so a killed server, a client that went
    away or a view that forgot to close it leaves no file behind (the kernel frees the
    space when the descriptor is closed, at the latest when the process ends). Between
    creating and unlinking (microseconds) the name says which process owns it, for
    ``sweep_temp_files``."""

    def __init__(
        self,
        name: str,
        content_type: str,
        size: int,
        charset: str | None,
        content_type_extra: dict[str, Any] | None = None,
    ) -> None:
        handle = tempfile.NamedTemporaryFile(  # noqa: SIM115 (closed by close())
            prefix=f"{TEMP_PREFIX}{os.getpid()}-", dir=temp_dir(), delete=False
        )
        os.unlink(handle.name)
        UploadedFile.__init__(self, handle, name, content_type, size, charset, content_type_extra)

    def temporary_file_path(self) -> str:
        raise NotImplementedError("an unnamed temporary file has no path")

    def close(self) -> None:
        if self.file is not None:
            self.file.close()


class UploadTempFileHandler(TemporaryFileUploadHandler):
    """Django's stream-to-disk handler, writing ``UploadTempFile``s."""

    def new_file(self, *args: Any, **kwargs: Any) -> None:
        FileUploadHandler.new_file(self, *args, **kwargs)
        self.file = UploadTempFile(
            self.file_name or "upload", self.content_type or "", 0, self.charset,
            self.content_type_extra,
        )  # fmt: skip

    def upload_interrupted(self) -> None:
        if hasattr(self, "file"):
            self.file.close()


def close_uploads(files: Iterable[Any]) -> None:
    """Close every uploaded file of a request now (the view is done with them), not when
    the request object is collected: a view that ends early (an error, a client that went
    away) must not keep a 200 MB file open."""
    for uploaded in files:
        try:
            uploaded.close()
        except OSError:
            log.warning("could not close the temporary upload %s", uploaded.name)


def sweep_temp_files(directory: Path | None = None) -> list[Path]:
    """Remove ``ctxlab-upload-<pid>-…`` files in ctxlab's upload temp directory whose
    process is gone (a server killed between creating and unlinking one, or an older
    version's named files); run at server start. Other files, and files of a live
    process, are left alone. Returns what was removed."""
    folder = directory if directory is not None else Path(settings.CTXLAB_UPLOAD_TEMP_DIR)
    removed: list[Path] = []
    if not folder.is_dir():
        return removed
    for path in folder.iterdir():
        match = _OWNED.fullmatch(path.name)
        if match is None or not path.is_file() or _alive(int(match.group(1))):
            continue
        try:
            path.unlink()
        except FileNotFoundError:
            continue
        removed.append(path)
    if removed:
        log.info("removed %d temporary upload file(s) left by stopped servers", len(removed))
    return removed


_OWNED = re.compile(re.escape(TEMP_PREFIX) + r"(\d+)-[A-Za-z0-9_]+")


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        return True
    return True
