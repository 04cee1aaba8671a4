"""A local fake of an OpenAI-compatible server for tests: real HTTP, no network, no key.

Start it, point the real ``openai`` SDK at ``fake.base_url`` and script the replies::

    with FakeOpenAI(api_key="sk-test") as fake:
        fake.queue(Reply.error(429, retry_after="0.01"), Reply.ok("summary"))
        client = openai.OpenAI(base_url=fake.base_url, api_key="sk-test")
        ...
        assert len(fake.requests_to(CHAT)) == 2

Endpoints: ``POST /v1/chat/completions`` and ``POST /v1/responses``, JSON or server-sent
events when the body says ``"stream": true``. Every request is recorded (method, path,
headers, body and the raw bytes). ``Reply.malformed`` answers 200 with a body that is not
the API's JSON; ``Reply.hang`` says nothing (timeouts). When ``api_key`` is set, any other
``Authorization: Bearer`` key gets a 401 like the real API. The fake serves under ``/v1``
as the real servers do (vLLM, Ollama, llama.cpp, LM Studio).
"""

from __future__ import annotations

import json
import threading
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from fake_anthropic import RecordedRequest, default_count

CHAT = "/v1/chat/completions"
RESPONSES = "/v1/responses"

ERROR_TYPES = {
    400: "invalid_request_error",
    401: "invalid_request_error",
    404: "not_found_error",
    429: "rate_limit_exceeded",
    500: "server_error",
}


@dataclass(frozen=True, slots=True)
class Reply:
    """One scripted answer: ``Reply.ok``, ``Reply.error``, ``Reply.malformed``, ``Reply.hang``."""

    status: int = 200
    text: str = "summary"
    usage: dict[str, int] | None = None  # {"prompt", "completion", "cached"}; None: computed
    finish_reason: str = "stop"
    refusal: str = ""
    error_type: str = ""
    error_message: str = ""
    headers: tuple[tuple[str, str], ...] = ()
    hang_seconds: float = 0.0
    raw_body: str | None = None  # sent as is (malformed answers)

    @classmethod
    def ok(
        cls,
        text: str = "summary",
        *,
        usage: dict[str, int] | None = None,
        finish_reason: str = "stop",
        refusal: str = "",
    ) -> Reply:
        return cls(text=text, usage=usage, finish_reason=finish_reason, refusal=refusal)

    @classmethod
    def error(cls, status: int, *, message: str = "", retry_after: str | None = "0.01") -> Reply:
        # A short retry-after keeps the SDK's retries fast (it otherwise backs off 0.5 s → 8 s).
        extra = (("retry-after", retry_after),) if retry_after is not None else ()
        return cls(
            status=status,
            error_type=ERROR_TYPES.get(status, "server_error"),
            error_message=message or f"fake {status}",
            headers=extra,
        )

    @classmethod
    def malformed(cls, body: str = '{"choices": [{"message": ') -> Reply:
        return cls(raw_body=body)

    @classmethod
    def hang(cls, seconds: float = 30.0) -> Reply:
        return cls(hang_seconds=seconds)


@dataclass
class FakeOpenAI:
    """The server. ``queue`` scripts replies (both endpoints) in order; when the queue is
    empty every call gets ``default_reply``."""

    api_key: str | None = None
    default_reply: Reply = field(default_factory=Reply.ok)
    requests: list[RecordedRequest] = field(default_factory=list)
    raw_bodies: list[bytes] = field(default_factory=list)
    _replies: deque[Reply] = field(default_factory=deque)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _stop: threading.Event = field(default_factory=threading.Event)
    _server: ThreadingHTTPServer | None = None
    _thread: threading.Thread | None = None

    def start(self) -> FakeOpenAI:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _make_handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        assert self._server is not None, "start() the fake first"
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def queue(self, *replies: Reply) -> None:
        with self._lock:
            self._replies.extend(replies)

    def requests_to(self, path: str) -> list[RecordedRequest]:
        with self._lock:
            return [r for r in self.requests if r.path == path]

    def _record(self, request: RecordedRequest, raw: bytes) -> None:
        with self._lock:
            self.requests.append(request)
            self.raw_bodies.append(raw)

    def _next(self) -> Reply:
        with self._lock:
            return self._replies.popleft() if self._replies else self.default_reply


def _usage(reply: Reply, request: Any) -> tuple[int, int, int]:
    if reply.usage is not None:
        u = reply.usage
        return u.get("prompt", 0), u.get("completion", 0), u.get("cached", 0)
    parts = request.get("messages") or request.get("input") if isinstance(request, dict) else ""
    return default_count({"messages": parts}), max(1, len(reply.text) // 4), 0


def _chat_body(reply: Reply, request: Any) -> dict[str, Any]:
    prompt, completion, cached = _usage(reply, request)
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 0,
        "model": request.get("model", ""),
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": None if reply.refusal else reply.text,
                    "refusal": reply.refusal or None,
                },
                "finish_reason": reply.finish_reason,
            }
        ],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": cached},
        },
    }


def _chat_chunks(body: dict[str, Any], with_usage: bool) -> list[dict[str, Any]]:
    base = {k: body[k] for k in ("id", "created", "model")} | {"object": "chat.completion.chunk"}
    text = body["choices"][0]["message"]["content"] or ""
    chunks = [base | {"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}]
    for j in range(0, len(text), 16):
        delta = {"content": text[j : j + 16]}
        chunks.append(base | {"choices": [{"index": 0, "delta": delta}]})
    stop = {"index": 0, "delta": {}, "finish_reason": body["choices"][0]["finish_reason"]}
    chunks.append(base | {"choices": [stop]})
    if with_usage:
        chunks.append(base | {"choices": [], "usage": body["usage"]})
    return chunks


def _responses_body(reply: Reply, request: Any) -> dict[str, Any]:
    prompt, completion, cached = _usage(reply, request)
    part = (
        {"type": "refusal", "refusal": reply.refusal}
        if reply.refusal
        else {"type": "output_text", "text": reply.text, "annotations": []}
    )
    return {
        "id": "resp_fake",
        "object": "response",
        "created_at": 0,
        "status": "completed",
        "model": request.get("model", ""),
        "output": [
            {
                "type": "message",
                "id": "msg_fake",
                "status": "completed",
                "role": "assistant",
                "content": [part],
            }
        ],
        "usage": {
            "input_tokens": prompt,
            "output_tokens": completion,
            "total_tokens": prompt + completion,
            "input_tokens_details": {"cached_tokens": cached},
            "output_tokens_details": {"reasoning_tokens": 0},
        },
    }


def _responses_events(body: dict[str, Any]) -> list[dict[str, Any]]:
    start = dict(body, status="in_progress", output=[], usage=None)
    events: list[dict[str, Any]] = [{"type": "response.created", "response": start}]
    for part in body["output"][0]["content"]:
        text = part.get("text", "")
        for j in range(0, len(text), 16):
            events.append({"type": "response.output_text.delta", "item_id": "msg_fake",
                           "output_index": 0, "content_index": 0, "delta": text[j : j + 16]})  # fmt: skip
    events.append({"type": "response.completed", "response": body})
    return [dict(e, sequence_number=i) for i, e in enumerate(events)]


def _make_handler(fake: FakeOpenAI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            return

        def _send(
            self, status: int, data: bytes, ctype: str, headers: tuple[tuple[str, str], ...] = ()
        ) -> None:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            self.send_header("x-request-id", f"req_fake_{len(fake.requests)}")
            for name, value in headers:
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def _send_error(self, reply: Reply) -> None:
            payload = {"error": {"message": reply.error_message, "type": reply.error_type,
                                 "param": None, "code": None}}  # fmt: skip
            self._send(reply.status, json.dumps(payload).encode(), "application/json",
                       reply.headers)  # fmt: skip

        def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            text = raw.decode("utf-8", "replace")
            try:
                body: Any = json.loads(text) if text else None
            except ValueError:
                body = text
            path = self.path.split("?", 1)[0]
            headers = {k.lower(): v for k, v in self.headers.items()}
            recorded = RecordedRequest(method="POST", path=path, headers=headers, body=body)
            fake._record(recorded, raw)
            if fake.api_key is not None and recorded.api_key != fake.api_key:
                self._send_error(Reply.error(401, message="Incorrect API key", retry_after=None))
                return
            if path not in (CHAT, RESPONSES):
                self._send_error(Reply.error(404, message=f"no route {path}", retry_after=None))
                return
            reply = fake._next()
            if reply.hang_seconds:
                fake._stop.wait(reply.hang_seconds)
                self.close_connection = True
                return
            if reply.status != 200:
                self._send_error(reply)
                return
            if reply.raw_body is not None:
                self._send(200, reply.raw_body.encode(), "application/json")
                return
            body = body if isinstance(body, dict) else {}
            if path == CHAT:
                answer = _chat_body(reply, body)
                with_usage = bool((body.get("stream_options") or {}).get("include_usage"))
                events = _chat_chunks(answer, with_usage)
            else:
                answer = _responses_body(reply, body)
                events = _responses_events(answer)
            if not body.get("stream"):
                self._send(200, json.dumps(answer).encode(), "application/json")
                return
            lines = [f"data: {json.dumps(e)}\n\n" for e in events]
            if path == CHAT:
                lines.append("data: [DONE]\n\n")
            else:
                lines = [
                    f"event: {e['type']}\n{line}" for e, line in zip(events, lines, strict=True)
                ]
            self._send(200, "".join(lines).encode(), "text/event-stream")

        def handle_one_request(self) -> None:
            try:
                super().handle_one_request()
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True

    return Handler
