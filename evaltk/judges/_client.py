"""The judge's backend: a small chat protocol and its default, OpenAI-compatible chat completions over HTTP.

OpenAI, vLLM, llama.cpp's server, Ollama and most hosted APIs serve
``POST {base_url}/chat/completions``; :class:`OpenAIChatClient` speaks it with httpx.  Any
object with an async ``complete(messages, *, model, decoding)`` returning a
:class:`ChatReply` (and raising :class:`CallFailed`) can stand in for it
(:class:`ChatClient`): the runner does the retries, the timing, the cache and the costs.
"""

from __future__ import annotations

import email.utils
import math
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from ._rubric import require

#: The HTTP statuses worth a retry: rate limited, and the server's transient failures.
RETRYABLE_STATUSES: frozenset[int] = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
DEFAULT_BASE_URL = "https://api.openai.com/v1"
#: Connections per httpx pool.  httpcore's pool scans every connection for every queued
#: request on each event (quadratic in the calls in flight: at 64 it spent about 3 ms of
#: CPU per call in benchmarks/judge_runner.py), so the client spreads its connections over
#: small pools and sends each call through the least busy one.
HTTP_POOL_SIZE = 8


@dataclass(frozen=True)
class ChatReply:
    """One chat-completion reply: its text and the token usage the server reported (None
    where it reported none; never guessed)."""

    text: str | None
    input_tokens: int | None = None
    output_tokens: int | None = None
    served_model: str | None = None


class CallFailed(Exception):
    """A call that produced no reply.  ``retryable`` says whether another attempt may help;
    ``retry_after`` is the wait (seconds) the server asked for, if any."""

    def __init__(self, reason: str, *, retryable: bool, retry_after: float | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retryable = retryable
        self.retry_after = retry_after


@runtime_checkable
class ChatClient(Protocol):
    """What the runner needs of a backend: one async call per prompt."""

    async def complete(self, messages: Sequence[Mapping[str, str]], *, model: str,
                       decoding: Mapping[str, Any]) -> ChatReply:
        """Send ``messages``; return the reply or raise :class:`CallFailed`."""
        ...


@dataclass(frozen=True)
class Price:
    """A declared price: US dollars per million input and output tokens.

    The cost of a call is computed from the reply's reported usage; a reply without
    usage has no cost (missing, never 0).

    Examples
    --------
    >>> Price(input_per_million=2.5, output_per_million=10).cost(1000, 2)
    0.00252
    """

    input_per_million: float
    output_per_million: float

    def __post_init__(self) -> None:
        for k in ("input_per_million", "output_per_million"):
            v = getattr(self, k)
            if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) or v < 0:
                raise ValueError(f"`{k}` must be a finite number >= 0 (US dollars per million tokens); got {v!r}.")

    def cost(self, input_tokens: int | None, output_tokens: int | None) -> float:
        """Dollars for one call; NaN when the usage is unknown."""
        if input_tokens is None or output_tokens is None:
            return math.nan
        return round((input_tokens * self.input_per_million + output_tokens * self.output_per_million) / 1e6, 12)


def _env(*names: str) -> str | None:
    for n in names:
        v = os.environ.get(n)
        if v:
            return v
    return None


def retry_after_seconds(value: str | None, *, now: float | None = None) -> float | None:
    """The wait a ``Retry-After`` header asks for: seconds, or an HTTP date; None when absent
    or unreadable.

    Examples
    --------
    >>> retry_after_seconds("3"), retry_after_seconds(None), retry_after_seconds("soon")
    (3.0, None, None)
    """
    if value is None:
        return None
    v = value.strip()
    try:
        s = float(v)
        return s if math.isfinite(s) and s >= 0 else None
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(v)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


class OpenAIChatClient:
    """Chat completions over HTTP with httpx (the default backend).

    Parameters
    ----------
    base_url : str, optional
        The API root, ``/chat/completions`` appended (``http://127.0.0.1:8000/v1``).
        Default: ``EVALTK_JUDGE_BASE_URL``, then ``OPENAI_BASE_URL``, then OpenAI's.
    api_key : str, optional
        Sent as a bearer token.  Default: ``EVALTK_JUDGE_API_KEY``, then
        ``OPENAI_API_KEY``; none for a local server.  Never recorded.
    timeout : float
        Seconds per attempt (connect, read, write and pool alike).
    max_connections : int
        The connection pool's size (the runner bounds concurrency itself).
    """

    def __init__(self, base_url: str | None = None, *, api_key: str | None = None,
                 timeout: float = 60.0, max_connections: int = 64) -> None:
        self.base_url = (base_url or _env("EVALTK_JUDGE_BASE_URL", "OPENAI_BASE_URL")
                         or DEFAULT_BASE_URL).rstrip("/")
        self._key = api_key if api_key is not None else _env("EVALTK_JUDGE_API_KEY", "OPENAI_API_KEY")
        if not (isinstance(timeout, int | float) and timeout > 0):
            raise ValueError(f"`timeout` must be a number of seconds > 0; got {timeout!r}.")
        self.timeout = float(timeout)
        self.max_connections = int(max_connections)
        self._pools: list[Any] = []
        self._busy: list[int] = []
        self._loop: Any = None

    def __repr__(self) -> str:  # the key is never shown
        return f"OpenAIChatClient({self.base_url!r}, timeout={self.timeout})"

    def _pool(self) -> int:
        """The least busy pool (the pools are made for this event loop on first use)."""
        import asyncio

        httpx = require("httpx")
        loop = asyncio.get_running_loop()
        if not self._pools or self._loop is not loop:
            headers = {"Authorization": f"Bearer {self._key}"} if self._key else {}
            n = max(1, -(-self.max_connections // HTTP_POOL_SIZE))
            size = -(-self.max_connections // n)
            self._pools = [httpx.AsyncClient(base_url=self.base_url, headers=headers,
                                             timeout=httpx.Timeout(self.timeout),
                                             limits=httpx.Limits(max_connections=size,
                                                                 max_keepalive_connections=size))
                           for _ in range(n)]
            self._busy = [0] * n
            self._loop = loop
        return min(range(len(self._busy)), key=self._busy.__getitem__)

    async def aclose(self) -> None:
        """Close the connection pools (the runner calls it at the end of a run)."""
        for c in self._pools:
            await c.aclose()
        self._pools, self._busy, self._loop = [], [], None

    async def complete(self, messages: Sequence[Mapping[str, str]], *, model: str,
                       decoding: Mapping[str, Any]) -> ChatReply:
        httpx = require("httpx")
        body = {**decoding, "model": model, "messages": list(messages)}
        k = self._pool()
        self._busy[k] += 1
        try:
            r = await self._pools[k].post("/chat/completions", json=body)
        except httpx.TimeoutException:
            raise CallFailed(f"timed out after {self.timeout:g} s", retryable=True) from None
        except httpx.TransportError as e:  # connection refused, reset, dropped mid-reply
            raise CallFailed(f"connection failed ({type(e).__name__}: {e or 'no detail'})",
                             retryable=True) from None
        finally:
            self._busy[k] -= 1
        if r.status_code != 200:
            detail = r.text.strip().replace("\n", " ")[:120]
            raise CallFailed(f"HTTP {r.status_code}" + (f": {detail}" if detail else ""),
                             retryable=r.status_code in RETRYABLE_STATUSES,
                             retry_after=retry_after_seconds(r.headers.get("retry-after")))
        return _parse_completion(r.content)


def _parse_completion(raw: bytes) -> ChatReply:
    """The text and usage of a chat-completion body; :class:`CallFailed` for a body that
    is not one (a reply the server never finished is not a judge's answer)."""
    import json

    try:
        doc = json.loads(raw)
        msg = doc["choices"][0]["message"]
        text = msg.get("content")
    except (ValueError, KeyError, IndexError, TypeError, AttributeError):
        raise CallFailed("the response body is not a chat completion", retryable=False) from None
    usage = doc.get("usage") if isinstance(doc, dict) else None
    usage = usage if isinstance(usage, dict) else {}

    def tokens(k: str) -> int | None:
        v = usage.get(k)
        return v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else None

    model = doc.get("model")
    return ChatReply(text if isinstance(text, str) else None, tokens("prompt_tokens"),
                     tokens("completion_tokens"), model if isinstance(model, str) else None)


__all__ = ["ChatClient", "ChatReply", "CallFailed", "OpenAIChatClient", "Price", "RETRYABLE_STATUSES", "HTTP_POOL_SIZE",
           "retry_after_seconds"]
