"""No module but ``_transports/_private_access.py`` touches a private attribute of httpx, httpcore, httpx2 or
aiohttp (issue 46): a minor release may rename any of them, and that module's test names what changed.

The private names of those libraries are read from their installed source (every ``self._x`` they assign,
every ``_x`` their classes define). A use of such a name on anything but ``self``/``cls`` (``obj._x``, or
``getattr(obj, "_x")``) fails here. Some of these names are also holysheep's own attributes (``_transport``,
``_content``, ...): each such use on another object is listed in ``OWN`` with the holysheep class it reads."""

from __future__ import annotations

import ast
import importlib.util
from collections.abc import Iterator
from functools import cache
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "holysheep"
LIBRARIES = ("httpx", "httpcore", "httpx2", "httpcore2", "aiohttp")
ISOLATED = "_transports/_private_access.py"

# (file, name): holysheep's own attribute, read on another holysheep object (reviewed: not the library's).
OWN = {
    ("_clients/base_client.py", "_backend"): "the copy's Client._backend",
    ("_clients/chat_stream.py", "_transport"): "ChatCompletion._transport",
    ("_clients/chat_stream.py", "_state"): "ChatStream._state",
    ("_clients/resources/responses.py", "_transport"): "Response._transport",
    ("_clients/resources/responses.py", "_final"): "Stream._final",
    ("_core/bridge_stream.py", "_events"): "StreamState._events",
    ("_core/wire/responses_bridge.py", "_transport"): "ChatCompletion._transport",
    ("_clients/stream_body.py", "_state"): "a stream's _state",
    ("_engine/client_limits.py", "_state"): "a stream's _state (its StreamState, settled when it ends)",
    ("_core/hook_events.py", "_first"): "StreamState._first",
    ("_core/network.py", "_cache"): "NetworkSettings._cache",
    ("_core/structured.py", "_transport"): "ChatCompletion._transport",
    ("_transports/tls.py", "_cache"): "NetworkSettings._cache",
    ("cache/_sqlite.py", "_lock"): "SQLiteCache._lock",
    ("cli/_output.py", "_stream"): "_ScrubbedStream._stream",
}


def _private_names(root: Path) -> set[str]:
    """The single-underscore attribute names the code under ``root`` defines (``self._x = ...``, class bodies)."""
    names: set[str] = set()
    for path in root.rglob("*.py"):
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError):
            continue
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store)
                    and isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
                names.add(node.attr)
            elif isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        names.add(item.name)
                    elif isinstance(item, ast.Assign):
                        names.update(t.id for t in item.targets if isinstance(t, ast.Name))
                    elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                        names.add(item.target.id)
    return {n for n in names if n.startswith("_") and not n.startswith("__")}


@cache
def _library_names() -> frozenset[str]:
    names: set[str] = set()
    for library in LIBRARIES:
        spec = importlib.util.find_spec(library)
        if spec is not None and spec.submodule_search_locations:
            names |= _private_names(Path(next(iter(spec.submodule_search_locations))))
    return frozenset(names)


def _uses(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """``(line, name)`` of every private attribute read or written on an object other than ``self``/``cls``."""
    for node in ast.walk(tree):
        target: ast.expr | None = None
        name = None
        if isinstance(node, ast.Attribute):
            target, name = node.value, node.attr
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
              and node.func.id in ("getattr", "setattr", "hasattr", "delattr") and len(node.args) >= 2
              and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)):
            target, name = node.args[0], node.args[1].value
        if name is None or not name.startswith("_") or name.startswith("__"):
            continue
        if isinstance(target, ast.Name) and target.id in ("self", "cls"):
            continue
        yield node.lineno, name


def offenders(src: Path = SRC) -> list[str]:
    library = _library_names()
    found = []
    for path in sorted(src.rglob("*.py")):
        rel = path.relative_to(src).as_posix()
        if rel == ISOLATED:
            continue
        for line, name in _uses(ast.parse(path.read_text(encoding="utf-8"))):
            if name in library and (rel, name) not in OWN:
                found.append(f"{rel}:{line}: .{name}")
    return found


def test_the_library_names_are_read() -> None:
    names = _library_names()
    assert {"_transport", "_pool", "_network_backend", "_content", "_limit", "_acquired"} <= names


def test_no_module_but_the_isolated_one_touches_a_private_attribute_of_the_http_libraries() -> None:
    found = offenders()
    assert not found, ("private attributes of httpx/httpcore/httpx2/aiohttp outside " + ISOLATED + " (use a "
                       "public API, or move the access there with a check in problems()):\n" + "\n".join(found))


def test_the_scan_finds_what_it_should(tmp_path: Path) -> None:
    """The accesses issue 46 removed are caught, in both spellings; ``self._x`` is not."""
    (tmp_path / "mod.py").write_text(
        "def f(http, response, pool, connector):\n"
        "    t = http._transport\n"
        "    response._content = b''\n"
        "    pool._network_backend = None\n"
        "    getattr(connector, '_acquired', ())\n"
        "class C:\n"
        "    def g(self):\n"
        "        return self._transport\n")
    assert offenders(tmp_path) == ["mod.py:2: ._transport", "mod.py:3: ._content", "mod.py:4: ._network_backend",
                                   "mod.py:5: ._acquired"]


def test_every_own_entry_is_still_needed() -> None:
    used = set()
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        used |= {(rel, name) for _, name in _uses(ast.parse(path.read_text(encoding="utf-8")))}
    assert set(OWN) <= used, f"stale OWN entries: {sorted(set(OWN) - used)}"
