"""The domain rule: a run's domain read from its task prompt (seed 002, "Scope of a trace")."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

# --------------------------------------------------------------------------- domain rule

#: The default rule's keyword table, in priority order for ties.  The domain is the
#: one whose keyword occurs earliest in the task prompt (whole words, any case).
DEFAULT_DOMAIN_KEYWORDS: dict[str, tuple[str, ...]] = {
    "shopping": ("buy", "purchase", "order", "cart", "checkout", "shop", "store", "market",
                 "price"),
    "email": ("email", "e-mail", "inbox", "mail"),
    "messaging": ("message", "text", "chat", "sms", "whatsapp"),
    "calendar": ("calendar", "meeting", "schedule", "appointment", "event", "reminder"),
    "travel": ("flight", "hotel", "trip", "train", "airport", "itinerary"),
    "payments": ("pay", "payment", "transfer", "invoice", "bank", "bill"),
    "maps": ("directions", "navigate", "route", "map"),
    "social": ("post", "tweet", "follow", "share"),
    "files": ("file", "folder", "document", "upload", "download"),
    "media": ("play", "song", "playlist", "music", "video", "podcast"),
    "settings": ("settings", "wifi", "wi-fi", "bluetooth", "brightness", "notifications"),
}
#: What a rule returns when nothing in the prompt names a domain.
UNKNOWN_DOMAIN = "unknown"
_TAG = re.compile(r"^\s*\[([A-Za-z][\w \-/]*)\]")


class KeywordDomainRule:
    """Read a run's domain from its task prompt.

    1. A leading tag in square brackets names it: ``"[travel] Book a flight"`` is
       ``travel`` (lower-cased, trimmed).
    2. Otherwise the domain whose keyword occurs earliest in the prompt (whole words,
       case-insensitive); for a tie at one position, the domain listed first wins.
    3. Otherwise ``default`` (:data:`UNKNOWN_DOMAIN`).

    Parameters
    ----------
    keywords : mapping of str to sequence of str, optional
        Domain -> keywords, in priority order (default :data:`DEFAULT_DOMAIN_KEYWORDS`).
    default : str
        The domain when nothing matches.

    Examples
    --------
    >>> rule = KeywordDomainRule({"food": ["pizza", "restaurant"]}, default="other")
    >>> rule("Order a pizza"), rule("[Travel] anything"), rule("Call mum")
    ('food', 'travel', 'other')
    """

    def __init__(self, keywords: Mapping[str, Sequence[str]] | None = None, *,
                 default: str = UNKNOWN_DOMAIN) -> None:
        kw = DEFAULT_DOMAIN_KEYWORDS if keywords is None else keywords
        if not isinstance(default, str) or not default:
            raise TypeError(f"`default` must be a non-empty str; got {default!r}.")
        self.keywords: dict[str, Sequence[str]] = {str(d): tuple(str(k) for k in ks) for d, ks in kw.items()}
        self.default = default
        alts = []
        self._names: dict[str, str] = {}
        for i, (dom, words) in enumerate(self.keywords.items()):
            if not words:
                continue
            g = f"d{i}"
            self._names[g] = dom
            words = sorted(words, key=len, reverse=True)
            alts.append(f"(?P<{g}>" + "|".join(re.escape(w) for w in words) + ")")
        self._pattern = re.compile(r"\b(?:" + "|".join(alts) + r")\b", re.IGNORECASE) if alts else None

    def __call__(self, task: str) -> str:
        m = _TAG.match(task)
        if m:
            return m.group(1).strip().lower()
        if self._pattern is not None:
            m = self._pattern.search(task)
            if m:
                return self._names[m.lastgroup]  # type: ignore[index]
        return self.default

    def __repr__(self) -> str:
        return f"KeywordDomainRule({len(self.keywords)} domains, default={self.default!r})"


_DEFAULT_RULE = KeywordDomainRule()


def domain_from_task(task: str) -> str:
    """The default domain rule (:class:`KeywordDomainRule` with the default table).

    Examples
    --------
    >>> domain_from_task("Buy a red mug and email the receipt to Bob")
    'shopping'
    >>> domain_from_task("Send an email to Bob about the order")
    'email'
    >>> domain_from_task("What's the weather?")
    'unknown'
    """
    return _DEFAULT_RULE(task)


def _resolve_rule(domain_rule: Any) -> Callable[[str], Any]:
    if domain_rule is None:
        return _DEFAULT_RULE
    if isinstance(domain_rule, Mapping):
        return KeywordDomainRule(domain_rule)
    if callable(domain_rule):
        return domain_rule
    raise TypeError(f"`domain_rule` must be a callable (task -> domain), a mapping of domain to "
                    f"keywords, or None; got {type(domain_rule).__name__}.")


def _apply_rule(rule: Callable[[str], Any], tasks: Sequence[str]) -> list[str]:
    out = []
    for t in tasks:
        d = rule(t)
        if d is None or d == "":
            d = UNKNOWN_DOMAIN
        if not isinstance(d, str):
            raise TypeError(f"`domain_rule` must return a str (or None); it returned "
                            f"{type(d).__name__} {d!r} for the task {t!r}.")
        out.append(d)
    return out
