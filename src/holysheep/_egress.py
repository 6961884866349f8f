"""The one egress scrubber: every text the SDK writes or exports passes `scrub` on its way out.

The keys of this process's live clients are remembered (`remember`: called by `SecretKey`, by a config for a
key-carrying header in ``default_headers`` and by a call for one in ``extra_headers``), each for as long as an
object that holds it lives (counted per owner, released by a weakref finalizer: no fixed-size memory that forty
tenants could push a live key out of; keys no owner holds are dropped in batches), so a sink needs no key handed
to it: exceptions (every attribute, as it is set), JSONL result lines, span and metric attributes and span
events, log records, CLI output, progress lines, tool results sent to the model, cache rows, and reply bodies as
they enter the SDK (`scrub_body`). One regex of every key's prefixes (a trie) tells whether any may occur, so the
cost of a scan does not grow with the number of keys. A key of 16 or more characters is masked wherever it
appears, also glued inside a longer token (``chatcmpl-<key>``); a shorter one (8 to 15 characters) only where it
stands as a whole token, so placeholder keys do not mangle a server's text. A key spelled with JSON escapes
(``\\/``, ``\\u0041``) is matched too. Anything shaped like a HolySheep key (``hs_`` and 16+ key characters, not
glued behind a letter or digit) is masked too. The bottom layer: it imports nothing of the SDK, so
`_exceptions` can use it.
"""

from __future__ import annotations

import json
import re
import threading
import weakref
from collections.abc import Mapping
from typing import Any, overload

__all__ = ["KEY_HEADERS", "MIN_SECRET_LEN", "header_secret", "live_keys", "mask_key", "remember", "remember_headers",
           "scrub", "scrub_body", "scrub_escaped", "scrub_json"]

MIN_SECRET_LEN = 8  # shorter keys ("EMPTY", "ollama", "none", "db") are placeholders, not secrets
GLUED_SECRET_LEN = 16  # a key this long is masked even inside a longer token
KEY_HEADERS = frozenset({"authorization", "api-key", "x-api-key", "proxy-authorization"})  # headers carrying a key
_TOKEN_CHARS = r"A-Za-z0-9_\-"
# ``hs_`` + 16 key characters, after no letter or digit, or after a JSON escape (``\\n``, ``\\u2026``) in JSON text
_KEY_SHAPE = re.compile(r"(?:(?<![A-Za-z0-9])|(?<=\\[nrtbf])|(?<=\\u[0-9A-Fa-f]{4}))hs_[A-Za-z0-9_-]{16,}")
_KEY_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")


def _escape_scan(chars: frozenset[str]) -> tuple[re.Pattern[bytes], re.Pattern[str]]:
    """A JSON ``\\u00XX`` escape of one of ``chars`` (which could spell a key out); ``\\u003c`` for ``<``, as
    Go's encoder writes it, is not one."""
    by_first: dict[str, set[str]] = {}
    for c in chars:
        if ord(c) < 0x100:
            code = f"{ord(c):02x}"
            by_first.setdefault(code[0], set()).update((code[1], code[1].upper()))
    branches = "|".join(f"[{d}{d.upper()}][{''.join(sorted(seconds))}]" for d, seconds in sorted(by_first.items()))
    return re.compile(rf"\\u00(?:{branches})".encode()), re.compile(rf"\\u00(?:{branches})")


_escape_bytes, _escape_text = _escape_scan(_KEY_CHARS)


_SHAPE_SCAN = re.compile(rb"hs_[A-Za-z0-9_-]{16}")  # what might be an hs_ key ("months_" is not)
_SHAPE_SCAN_TEXT = re.compile(r"hs_[A-Za-z0-9_-]{16}")

_lock = threading.Lock()
_secrets: dict[str, int] = {}  # the remembered keys: how many live owners hold each (_PINNED: the process's life)
_PINNED = 1 << 62
_released: list[str] = []  # keys whose owner died: dropped by the next `remember` (a finalizer takes no lock)
# Each key as it appears in text, and as it appears inside JSON text when it holds a quote or a backslash:
# (form, its UTF-8 bytes, its whole-token pattern or None when it is matched anywhere, what replaces it).
_needles: tuple[tuple[str, bytes, re.Pattern[str] | None, str], ...] = ()
_NOTHING_BYTES = re.compile(rb"(?!)")
# One search (of the UTF-8 bytes: one pattern to compile) finds whether any remembered form may occur (a trie of
# their prefixes: one pass, whatever the number of keys): every form for `scrub`, and for `scrub_body` the forms a
# scan for "hs_" does not already find.
_any_bytes: re.Pattern[bytes] = _NOTHING_BYTES
_scanned_bytes: re.Pattern[bytes] = _NOTHING_BYTES


_PREFIX = 12  # characters of each key form the prefilter search looks for (a short regex compiles fast)
_Node = dict[str, "_Node"]  # a trie node: next character -> node ("" marks a word's end)


def _trie(words: list[str]) -> str:
    """A regex matching any of ``words``, their common prefixes factored (a single chain is one literal, so the
    nesting is as deep as the branch points, not the words' length)."""
    root: _Node = {}
    for word in words:
        node = root
        for ch in word:
            node = node.setdefault(ch, {})
        node[""] = {}
    return _emit(root) if root else "(?!)"


def _emit(node: _Node) -> str:
    """A trie node as a regex: its chain of single children as one literal, then its branches as a group
    (optional when a word ends there)."""
    chain = []
    while len(node) == 1 and "" not in node:
        ((ch, node),) = node.items()
        chain.append(ch)
    head = re.escape("".join(chain))
    branches = sorted(ch for ch in node if ch)
    if not branches:
        return head
    alternatives = "|".join(re.escape(ch) + _emit(node[ch]) for ch in branches)
    return head + "(?:" + alternatives + ")" + ("?" if "" in node else "")


def mask_key(key: str | None) -> str:
    """Return the most of ``key`` that may ever be shown: ``hs_…`` plus the last 4 characters."""
    if not key:
        return "<none>"
    if key.startswith("hs_") and len(key) > 8:
        return "hs_…" + key[-4:]
    return "…" + key[-4:] if len(key) > 8 else "<redacted>"


def header_secret(name: str, value: str | None) -> str | None:
    """The key a header carries (``Authorization: Bearer <key>``, ``Api-Key: <key>``), or None for another header."""
    if not value or name.lower() not in KEY_HEADERS:
        return None
    scheme, _, rest = value.partition(" ")
    return rest if rest and scheme.isalpha() else value


def remember(secret: str | None, owner: object = None) -> None:
    """Add ``secret`` to the keys every sink masks (a no-op for placeholders under `MIN_SECRET_LEN`): for as long
    as ``owner`` (any object that takes a weak reference: a `SecretKey`, a config, a call) or another owner of the
    same key lives; without an owner, for the life of the process."""
    if not isinstance(secret, str) or len(secret) < MIN_SECRET_LEN:
        return
    with _lock:
        known = secret in _secrets  # also a key no owner holds any more, not yet dropped: no rebuild
        _secrets[secret] = _PINNED if owner is None else _secrets.get(secret, 0) + 1
        if owner is not None:
            weakref.finalize(owner, _released.append, secret)
        if _drop_released() or not known:
            _rebuild()


def remember_headers(headers: Mapping[str, str | None], owner: object) -> None:
    """`remember` every key that ``headers`` carry (see `header_secret`), for as long as ``owner`` lives."""
    for name, value in headers.items():
        secret = header_secret(name, value)
        if secret is not None:
            remember(secret, owner)


def live_keys() -> int:
    """How many keys a live owner holds now (keys no owner holds any more are masked until they are dropped)."""
    with _lock:
        if _drop_released():
            _rebuild()
        return sum(1 for count in _secrets.values() if count > 0)


_IDLE_SLACK = 64  # keys no owner holds that stay masked before they are dropped (more, if more are live)


def _drop_released() -> bool:
    """Count down the keys whose owners died (under ``_lock``); True when the keys no owner holds any more
    outnumbered the live ones and `_IDLE_SLACK` and were dropped. Keeping them a while costs nothing but makes a
    key that comes and goes with each call (``extra_headers``) cost no rebuild each time."""
    while _released:
        secret = _released.pop()
        if secret in _secrets:
            _secrets[secret] -= 1
    idle = [secret for secret, count in _secrets.items() if count <= 0]
    if len(idle) <= max(_IDLE_SLACK, len(_secrets) - len(idle)):
        return False
    for secret in idle:
        del _secrets[secret]
    return True


def _rebuild() -> None:
    """The needles of the remembered keys (under ``_lock``)."""
    global _needles, _escape_bytes, _escape_text
    needles = []
    for key in _secrets:
        shown = mask_key(key).replace('"', "*").replace("\\", "*")  # safe inside JSON text too
        # as written, as inside JSON text (a quote or a backslash escaped), and with "/" as "\/" (PHP's JSON)
        for form in dict.fromkeys((key, json.dumps(key)[1:-1], json.dumps(key)[1:-1].replace("/", "\\/"))):
            pattern = (None if len(key) >= GLUED_SECRET_LEN else
                       re.compile(rf"(?<![{_TOKEN_CHARS}]){re.escape(form)}(?![{_TOKEN_CHARS}])"))
            needles.append((form, form.encode("utf-8", "replace"), pattern, shown))
    global _any_bytes, _scanned_bytes
    _needles = tuple(needles)
    # The one search is a prefilter: each form's first `_PREFIX` characters (false hits only cost the exact scan)
    forms = sorted({form[:_PREFIX] for form, _, _, _ in _needles})
    scanned = sorted({form[:_PREFIX] for form, _, _, _ in _needles if not _SHAPE_SCAN_TEXT.search(form)})
    every = (_trie(forms) if forms else "(?!)").encode("utf-8", "surrogatepass")
    only = (_trie(scanned) if scanned else "(?!)").encode("utf-8", "surrogatepass")
    _any_bytes, _scanned_bytes = re.compile(every), re.compile(only)  # the same string twice: compiled once
    _escape_bytes, _escape_text = _escape_scan(_KEY_CHARS.union(*_secrets))


def scrub(text: str) -> str:
    """``text`` with every remembered key and anything shaped like an ``hs_`` key masked."""
    if _any_bytes.search(text.encode("utf-8", "surrogatepass")) is None:
        needles: tuple[tuple[str, bytes, re.Pattern[str] | None, str], ...] = ()
    else:
        needles = _needles
    for secret, _, pattern, shown in needles:
        if secret in text:
            text = text.replace(secret, shown) if pattern is None else pattern.sub(shown, text)
    if "hs_" in text:
        text = _KEY_SHAPE.sub(lambda m: mask_key(m.group(0)), text)
    return text


_JSON_ESCAPE = re.compile(r"\\u([0-9A-Fa-f]{4})|\\(/)")


def scrub_escaped(text: str) -> str:
    """`scrub`, and where ``text`` spells a key with JSON escapes (``\\u0041``, ``\\/``) outside a JSON value
    that decodes (a cut-off body, an error page quoting JSON), the text with those escapes decoded and masked."""
    clean = scrub(text)
    if "\\" not in clean:
        return clean
    decoded = _JSON_ESCAPE.sub(lambda m: m.group(2) or chr(int(m.group(1), 16)), clean)
    masked = scrub(decoded)
    return clean if masked == decoded else masked


def scrub_json(value: object) -> Any:
    """`scrub` applied to every string (keys too) inside a JSON-like value, however deep (no recursion).
    Dicts and lists are copied; a tuple becomes a list; anything else is returned as it is."""
    return _scrub_tree(value)[0]


def _scrub_tree(value: object) -> tuple[object, bool]:
    """`scrub_json`'s value, and whether any string in it changed."""
    if isinstance(value, str):
        clean = scrub(value)
        return clean, clean != value
    if not isinstance(value, dict | list | tuple):
        return value, False
    changed = False
    holder: list[object] = [value]
    stack: list[tuple[Any, object, object]] = [(holder, 0, value)]
    while stack:
        parent, slot, item = stack.pop()
        if isinstance(item, str):
            clean = scrub(item)
            if clean != item:
                parent[slot], changed = clean, True
        elif isinstance(item, dict):
            new: dict[object, object] = {}
            parent[slot] = new
            for k, v in item.items():
                if isinstance(k, str):
                    clean = scrub(k)
                    changed, k = changed or clean != k, clean
                new[k] = v
                stack.append((new, k, v))
        elif isinstance(item, list | tuple):
            copy = list(item)
            parent[slot] = copy
            stack.extend((copy, i, v) for i, v in enumerate(copy))
    return holder[0], changed


def _might_hold_secret(raw: bytes | str) -> bool:
    """Whether ``raw`` may hold a key: plain substring scans, a pattern only where one finds something."""
    if isinstance(raw, str):
        return (("hs_" in raw and _SHAPE_SCAN_TEXT.search(raw) is not None)
                or _scanned_bytes.search(raw.encode("utf-8", "surrogatepass")) is not None
                or ("\\u00" in raw and _escape_text.search(raw) is not None))
    return ((b"hs_" in raw and _SHAPE_SCAN.search(raw) is not None)
            or _scanned_bytes.search(raw) is not None
            or (b"\\u00" in raw and _escape_bytes.search(raw) is not None))


@overload
def scrub_body(raw: bytes) -> bytes: ...
@overload
def scrub_body(raw: str) -> str: ...
def scrub_body(raw: bytes | str) -> bytes | str:
    """A reply body (JSON, or an SSE event's data) with every remembered key masked in every string, as it
    enters the SDK. Unchanged (the same object, at the cost of a few scans) when it holds no remembered key,
    nothing shaped like an ``hs_`` key and no ``\\u`` escape of a key character (which could spell one out)."""
    if not _might_hold_secret(raw):
        return raw
    text = raw if isinstance(raw, str) else raw.decode("utf-8", "replace")
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):  # not JSON (the parser reports it), or too deep to decode here
        clean = scrub_escaped(text)
    else:
        clean_value, changed = _scrub_tree(value)
        if not changed:
            return raw
        try:
            clean = json.dumps(clean_value, ensure_ascii=False, separators=(",", ":"))
        except RecursionError:  # pragma: no cover - what json.loads decoded, json.dumps encodes
            clean = scrub(text)
    if clean == text:
        return raw
    return clean if isinstance(raw, str) else clean.encode()
