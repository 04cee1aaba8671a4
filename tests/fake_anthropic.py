"""A local fake of Anthropic's Messages API for tests: real HTTP, no network, no key.

Start it, point the real ``anthropic`` SDK at ``fake.base_url`` and script the replies::

    with FakeAnthropic() as fake:
        fake.queue(Reply.error(429, retry_after="0.01"), Reply.ok("summary"))
        client = anthropic.Anthropic(base_url=fake.base_url, api_key="sk-test")
        ...
        assert len(fake.requests_to("/v1/messages")) == 2

Endpoints: ``POST /v1/messages`` (JSON, or SSE when the body says ``"stream": true``) and
``POST /v1/messages/count_tokens``. Every request is recorded (method, path, headers, body).
The API key is accepted from ``x-api-key`` or ``Authorization: Bearer`` (SDK 2.x sends the
latter); when ``api_key`` is set, any other key gets a 401 like the real API.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MESSAGES = "/v1/messages"
COUNT_TOKENS = "/v1/messages/count_tokens"

ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    404: "not_found_error",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


@dataclass(frozen=True, slots=True)
class Reply:
    """One scripted answer. Build with ``Reply.ok``, ``Reply.error`` or ``Reply.hang``."""

    status: int = 200
    text: str = "summary"
    usage: dict[str, int] | None = None  # None → computed from the request
    stop_reason: str = "end_turn"
    error_type: str = ""
    error_message: str = ""
    headers: tuple[tuple[str, str], ...] = ()
    hang_seconds: float = 0.0  # wait this long before answering (timeouts)
    content: tuple[dict[str, Any], ...] | None = None  # raw content blocks override `text`

    @classmethod
    def ok(
        cls,
        text: str = "summary",
        *,
        usage: dict[str, int] | None = None,
        stop_reason: str = "end_turn",
        content: tuple[dict[str, Any], ...] | None = None,
    ) -> Reply:
        return cls(text=text, usage=usage, stop_reason=stop_reason, content=content)

    @classmethod
    def error(
        cls,
        status: int,
        *,
        error_type: str = "",
        message: str = "",
        retry_after: str | None = "0.01",
        headers: tuple[tuple[str, str], ...] = (),
    ) -> Reply:
        # A short retry-after keeps the SDK's retries fast (it otherwise backs off 0.5 s → 8 s).
        extra = (("retry-after", retry_after),) if retry_after is not None else ()
        return cls(
            status=status,
            error_type=error_type or ERROR_TYPES.get(status, "api_error"),
            error_message=message or f"fake {status}",
            headers=headers + extra,
        )

    @classmethod
    def hang(cls, seconds: float = 30.0) -> Reply:
        """Accept the request, then say nothing for ``seconds`` (the client should time out)."""
        return cls(hang_seconds=seconds)


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]  # lower-cased names
    body: Any  # parsed JSON (or the raw text when it was not JSON)

    @property
    def api_key(self) -> str:
        auth = self.headers.get("authorization", "")
        if auth.lower().startswith("bearer "):
            return auth[7:]
        return self.headers.get("x-api-key", "")


def default_count(body: Any) -> int:
    """A deterministic stand-in for the real tokenizer: ~4 characters per token of the
    request's system + messages + tools JSON."""
    parts = {k: body.get(k) for k in ("system", "messages", "tools") if isinstance(body, dict)}
    return max(1, len(json.dumps(parts, ensure_ascii=False, sort_keys=True)) // 4)


@dataclass
class FakeAnthropic:
    """The server. ``queue`` scripts /v1/messages replies in order; when the queue is empty
    every call gets ``default_reply``. ``count_reply`` scripts /v1/messages/count_tokens
    likewise (``None`` entries mean "count with ``counter``")."""

    api_key: str | None = None
    default_reply: Reply = field(default_factory=Reply.ok)
    counter: Callable[[Any], int] = default_count
    requests: list[RecordedRequest] = field(default_factory=list)
    _replies: deque[Reply] = field(default_factory=deque)
    _count_replies: deque[Reply | None] = field(default_factory=deque)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _stop: threading.Event = field(default_factory=threading.Event)
    _server: ThreadingHTTPServer | None = None
    _thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> FakeAnthropic:
        handler = _make_handler(self)
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()  # release hanging handlers
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> FakeAnthropic:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        assert self._server is not None, "start() the fake first"
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    # -- scripting ---------------------------------------------------------------------------
    def queue(self, *replies: Reply) -> None:
        with self._lock:
            self._replies.extend(replies)

    def queue_count(self, *replies: Reply | None) -> None:
        with self._lock:
            self._count_replies.extend(replies)

    def requests_to(self, path: str) -> list[RecordedRequest]:
        with self._lock:
            return [r for r in self.requests if r.path == path]

    # -- internals ---------------------------------------------------------------------------
    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)

    def _next(self, path: str) -> Reply | None:
        with self._lock:
            if path == COUNT_TOKENS:
                return self._count_replies.popleft() if self._count_replies else None
            return self._replies.popleft() if self._replies else self.default_reply


def _message_body(reply: Reply, request: Any) -> dict[str, Any]:
    model = request.get("model", "") if isinstance(request, dict) else ""
    usage = reply.usage or {
        "input_tokens": default_count(request),
        "output_tokens": max(1, len(reply.text) // 4),
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }
    content = (
        list(reply.content) if reply.content is not None else [{"type": "text", "text": reply.text}]
    )
    return {
        "id": "msg_fake",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": reply.stop_reason,
        "stop_sequence": None,
        "usage": usage,
    }


def _sse_events(body: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    usage = body["usage"]
    start = dict(body, content=[], stop_reason=None, usage=dict(usage, output_tokens=1))
    events: list[tuple[str, dict[str, Any]]] = [
        ("message_start", {"type": "message_start", "message": start})
    ]
    for i, block in enumerate(body["content"]):
        text = block.get("text", "")
        events.append(
            (
                "content_block_start",
                {"type": "content_block_start", "index": i, "content_block": dict(block, text="")},
            )
        )
        for j in range(0, len(text), 16):
            delta = {"type": "text_delta", "text": text[j : j + 16]}
            events.append(
                ("content_block_delta", {"type": "content_block_delta", "index": i, "delta": delta})
            )
        events.append(("content_block_stop", {"type": "content_block_stop", "index": i}))
    events.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": body["stop_reason"], "stop_sequence": None},
                "usage": {"output_tokens": usage["output_tokens"]},
            },
        )
    )
    events.append(("message_stop", {"type": "message_stop"}))
    return events


def _make_handler(fake: FakeAnthropic) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
            return

        def _send_json(
            self, status: int, payload: Any, headers: tuple[tuple[str, str], ...] = ()
        ) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("request-id", f"req_fake_{len(fake.requests)}")
            for name, value in headers:
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def _send_error(self, reply: Reply) -> None:
            payload = {
                "type": "error",
                "error": {"type": reply.error_type, "message": reply.error_message},
            }
            self._send_json(reply.status, payload, reply.headers)

        def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length).decode("utf-8", "replace")
            try:
                body: Any = json.loads(raw) if raw else None
            except ValueError:
                body = raw
            path = self.path.split("?", 1)[0]
            recorded = RecordedRequest(
                method="POST",
                path=path,
                headers={k.lower(): v for k, v in self.headers.items()},
                body=body,
            )
            fake._record(recorded)
            if fake.api_key is not None and recorded.api_key != fake.api_key:
                self._send_error(Reply.error(401, message="invalid x-api-key", retry_after=None))
                return
            if path not in (MESSAGES, COUNT_TOKENS):
                self._send_error(Reply.error(404, message=f"no route {path}", retry_after=None))
                return
            reply = fake._next(path)
            if reply is not None and reply.hang_seconds:
                fake._stop.wait(reply.hang_seconds)
                self.close_connection = True
                return
            if reply is not None and reply.status != 200:
                self._send_error(reply)
                return
            if path == COUNT_TOKENS:
                self._send_json(200, {"input_tokens": fake.counter(body)})
                return
            assert reply is not None
            message = _message_body(reply, body)
            if isinstance(body, dict) and body.get("stream"):
                self._send_sse(message)
            else:
                self._send_json(200, message, reply.headers)

        def _send_sse(self, message: dict[str, Any]) -> None:
            chunks = [
                f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()
                for name, data in _sse_events(message)
            ]
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Content-Length", str(sum(len(c) for c in chunks)))
            self.end_headers()
            for chunk in chunks:
                self.wfile.write(chunk)

        def handle_one_request(self) -> None:
            try:
                super().handle_one_request()
            except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeouts)
                self.close_connection = True

    return Handler
