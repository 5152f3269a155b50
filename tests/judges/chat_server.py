"""A real chat-completions server on 127.0.0.1 with scripted replies, for the judge tests,
the runner benchmark and the docs' sweep.

It speaks the OpenAI-compatible protocol (``POST /v1/chat/completions``, HTTP/1.1 with
keep-alive) and answers each request by calling ``script(body, n)`` (``n`` counts the
requests, from 0) for an action: :func:`reply`, :func:`status`, :func:`slow` or
:func:`drop`.  It counts every request and keeps every body it received.

Run it by hand (the docs' sweep)::

    python -m tests.judges.chat_server --port 8765 --demo
"""

from __future__ import annotations

import argparse
import hashlib
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Action:
    kind: str  # "reply" | "status" | "slow" | "drop"
    text: str = ""
    code: int = 200
    headers: tuple[tuple[str, str], ...] = ()
    seconds: float = 0.0
    then: Action | None = None
    usage: tuple[int, int] | None = None


def reply(text: str, *, usage: tuple[int, int] | None = (50, 1)) -> Action:
    """A chat completion whose message is ``text`` and whose usage is (prompt, completion) tokens."""
    return Action("reply", text=text, usage=usage)


def status(code: int, *, retry_after: str | None = None, body: str = "") -> Action:
    """An HTTP error status (a 429 with ``Retry-After``, a 500 ...)."""
    headers = (("Retry-After", retry_after),) if retry_after is not None else ()
    return Action("status", code=code, headers=headers, text=body or json.dumps({"error": {"code": code}}))


def slow(seconds: float, then: Action) -> Action:
    """Wait ``seconds`` before ``then`` (past a client's timeout, the client gives up first)."""
    return Action("slow", seconds=seconds, then=then)


def drop() -> Action:
    """Close the connection without a response."""
    return Action("drop")


def completion(text: str, model: str, usage: tuple[int, int] | None, n: int) -> bytes:
    doc: dict[str, Any] = {"id": f"chatcmpl-{n}", "object": "chat.completion", "created": int(time.time()),
                           "model": model,
                           "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                        "finish_reason": "stop"}]}
    if usage is not None:
        doc["usage"] = {"prompt_tokens": usage[0], "completion_tokens": usage[1],
                        "total_tokens": usage[0] + usage[1]}
    return json.dumps(doc).encode()


class _Server(ThreadingHTTPServer):
    request_queue_size = 256  # the default backlog of 5 resets connections beyond it
    daemon_threads = True


@dataclass
class ChatServer:
    """The server; a context manager that starts it on an ephemeral port of 127.0.0.1."""

    script: Callable[[dict[str, Any], int], Action]
    port: int = 0
    bodies: list[dict[str, Any]] = field(default_factory=list)
    calls: int = 0
    in_flight: int = 0
    authorizations: list[str | None] = field(default_factory=list)
    max_in_flight: int = 0

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True

            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                with server._lock:
                    n = server.calls
                    server.calls += 1
                    server.bodies.append(body)
                    server.authorizations.append(self.headers.get("Authorization"))
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                try:
                    self._answer(body, n)
                finally:
                    with server._lock:
                        server.in_flight -= 1

            def _answer(self, body: dict[str, Any], n: int) -> None:
                if self.path.rstrip("/") != "/v1/chat/completions":
                    return self._send(404, b'{"error": "not found"}', ())
                action = server.script(body, n)
                while action.kind == "slow":
                    time.sleep(action.seconds)
                    assert action.then is not None
                    action = action.then
                if action.kind == "drop":
                    self.close_connection = True
                    return None
                if action.kind == "status":
                    return self._send(action.code, action.text.encode(), action.headers)
                return self._send(200, completion(action.text, str(body.get("model")), action.usage, n), ())

            def _send(self, code: int, data: bytes, headers: tuple[tuple[str, str], ...]) -> None:
                try:
                    self.send_response(code)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for k, v in headers:
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (a timeout)
                    self.close_connection = True

        self._httpd = _Server(("127.0.0.1", self.port), Handler)
        self._httpd.daemon_threads = True
        self.port = self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> ChatServer:
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def serve_forever(self) -> None:
        self._httpd.serve_forever()


# --------------------------------------------------------------------------- the docs' demo judges


def _user_text(body: dict[str, Any]) -> str:
    return "\n".join(str(m.get("content", "")) for m in body.get("messages", []) if m.get("role") == "user")


_FAILURE_WORDS = ("failed", "not ", "awaiting", "error", "home screen", "keyboard open", "new message")


def demo_script(body: dict[str, Any], n: int) -> Action:
    """Four x_task judges told apart by the model name, each a rule over the final screen the
    prompt shows (never a label: the server sees only what the judge is asked):

    * ``screen-rules``: "no" when the final screen reads as a failure, else "yes"; 40 ms.
    * ``optimist``: always "yes" (it passes every canary); 5 ms.
    * ``hedger``: as screen-rules, but "cannot tell" on a third of the prompts; 15 ms.
    * ``rambler``: as screen-rules, wrapped in prose half the time (unreadable); 10 ms.
    """
    model = str(body.get("model"))
    text = _user_text(body)
    screen = next((ln.split(":", 1)[1] for ln in text.splitlines() if ln.startswith("Final screen:")), "")
    verdict = "no" if any(w in screen.lower() for w in _FAILURE_WORDS) else "yes"
    h = int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)
    tokens = (len(text) // 4, 2)
    if model == "optimist":
        return slow(0.005, reply("yes", usage=tokens))
    if model == "hedger":
        return slow(0.015, reply("cannot tell" if h % 3 == 0 else verdict, usage=tokens))
    if model == "rambler":
        word = f"Looking at the screen, I would say the answer is {verdict}." if h % 2 else verdict
        return slow(0.010, reply(word, usage=(tokens[0], 14)))
    return slow(0.040, reply(verdict, usage=tokens))


async def serve_fixed_latency(port: int, seconds: float) -> None:
    """The benchmark's server: asyncio, HTTP/1.1 keep-alive, every request answered "yes"
    after ``seconds`` (no thread per connection, so the server is not the bottleneck)."""
    import asyncio

    count = [0]

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n")[1:]:
                    k, _, v = line.partition(b":")
                    if k.strip().lower() == b"content-length":
                        length = int(v)
                body = json.loads(await reader.readexactly(length)) if length else {}
                n = count[0]
                count[0] += 1
                if seconds > 0:
                    await asyncio.sleep(seconds)
                data = completion("yes", str(body.get("model")), (50, 1), n)
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
                             + str(len(data)).encode() + b"\r\n\r\n" + data)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", port, backlog=512)
    print(f"serving http://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1", flush=True)
    async with server:
        await server.serve_forever()


def main() -> None:
    ap = argparse.ArgumentParser(description="A local chat-completions server with scripted replies.")
    ap.add_argument("--port", type=int, default=8765)
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--demo", action="store_true", help="the docs' four x_task judges (demo_script)")
    g.add_argument("--latency-ms", type=float, help="answer 'yes' to everything after this many ms")
    args = ap.parse_args()
    if not args.demo:
        import asyncio

        try:
            asyncio.run(serve_fixed_latency(args.port, args.latency_ms / 1000.0))
        except KeyboardInterrupt:
            pass
        return
    server = ChatServer(demo_script, port=args.port)
    print(f"serving {server.base_url}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
