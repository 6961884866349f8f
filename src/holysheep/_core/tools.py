"""Typed tools, sans I/O: strict function tools from pydantic models and from plain functions, the set of
tools a request carries, and tool-call arguments validated into model instances.

A tool made here is a ``dict`` (the wire ``{"type": "function", "function": {...}}``), so it goes anywhere
a raw tool dict goes; it also remembers its model (``tool.model``) and its handler (``tool.handler``).
"""

from __future__ import annotations

import functools
import inspect
import re
import types
import typing
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from pydantic import BaseModel, Field, ValidationError, create_model

from holysheep._core.schema import ResponseFormat, response_format_for
from holysheep._exceptions import InvalidRequestError

__all__ = ["FunctionTool", "ToolSet", "error_lines", "function_tool", "pydantic_function_tool", "tool_set"]

_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_ARG_LINE = re.compile(r"^\s+(\*{0,2}\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")
_SECTION = re.compile(r"^(Args|Arguments|Parameters|Returns|Raises|Yields|Examples?|Notes?):\s*$")


class FunctionTool(dict[str, Any]):
    """A strict function tool: the wire dict plus ``model`` (the arguments' pydantic model), ``handler``
    (what runs it in ``run_tools``, or None) and ``name``. Made by `pydantic_function_tool` or
    `function_tool`."""

    model: type[BaseModel]
    handler: Callable[..., object] | None
    name: str
    call_with_fields: bool  # function_tool: the handler takes the fields as keyword arguments

    @property
    def format(self) -> ResponseFormat[Any]:
        """How the arguments are validated (the same code ``response_format`` uses)."""
        return response_format_for(self.model)

    def validate_arguments(self, arguments: str) -> BaseModel:
        """The arguments (a JSON string; ``""`` counts as ``{}``) as a ``model`` instance. Raises pydantic's
        `ValidationError` (or `ValueError`)."""
        value: BaseModel = self.format.validate(arguments if arguments.strip() else "{}")
        return value

    def invoke(self, value: BaseModel) -> Any:
        """Call the handler with validated arguments (fields as keywords for `function_tool`)."""
        if self.handler is None:
            raise TypeError(f"tool {self.name!r} has no handler")
        if self.call_with_fields:
            return self.handler(**{name: getattr(value, name) for name in type(value).model_fields})
        return self.handler(value)


def _check_name(name: str, where: str) -> str:
    if not _NAME.match(name):
        raise InvalidRequestError(f"{where}: the tool name {name!r} must be 1-64 letters, digits, '_' or '-'.",
                                  field="tools")
    return name


def _make(model: type[BaseModel], name: str, description: str | None, handler: Callable[..., object] | None,
          call_with_fields: bool) -> FunctionTool:
    fmt = response_format_for(model)
    schema = fmt.param["json_schema"]["schema"]
    if fmt.wrapped:  # pragma: no cover - a BaseModel's schema is an object
        raise InvalidRequestError(f"the arguments of tool {name!r} must be an object.", field="tools")
    function: dict[str, object] = {"name": name}
    if description:
        function["description"] = description
    function["parameters"] = schema
    function["strict"] = True
    tool = FunctionTool({"type": "function", "function": function})
    tool.model, tool.handler, tool.name, tool.call_with_fields = model, handler, name, call_with_fields
    return tool


def pydantic_function_tool(model: type[BaseModel], *, name: str | None = None, description: str | None = None,
                           handler: Callable[[Any], Any] | None = None) -> FunctionTool:
    """A strict function tool whose arguments are ``model``.

    The schema is the one ``response_format`` sends (``strict: true``, every property required, optional
    fields as unions with ``null``, ``additionalProperties: false``). ``name`` defaults to the model's class
    name, ``description`` to its docstring. ``handler(instance)`` runs it in ``run_tools`` and agent batches.
    ``parse(..., tools=[tool])`` fills ``tool_calls[i].function.parsed_arguments`` with a ``model``.
    """
    if not (isinstance(model, type) and issubclass(model, BaseModel)):
        raise InvalidRequestError(f"pydantic_function_tool needs a pydantic model class, got {model!r}. For a "
                                  "function use function_tool(fn).", field="tools")
    tool_name = _check_name(name or model.__name__, "pydantic_function_tool")
    doc = description if description is not None else inspect.getdoc(model)
    if doc and model.__doc__ is None and description is None:  # BaseModel's own docstring
        doc = None
    return _make(model, tool_name, doc, handler, False)


def _doc_parts(fn: Callable[..., object]) -> tuple[str | None, dict[str, str]]:
    """The summary of a docstring (the text before its sections) and the descriptions under ``Args:``."""
    summary: list[str] = []
    args: dict[str, str] = {}
    section: str | None = None
    current, indent = None, 0
    for line in (inspect.getdoc(fn) or "").splitlines():
        head = _SECTION.match(line)
        if head:
            section, current = head.group(1), None
            continue
        if section is None:
            summary.append(line)
            continue
        if section not in ("Args", "Arguments", "Parameters") or not line.strip():
            continue
        width = len(line) - len(line.lstrip())
        match = _ARG_LINE.match(line)
        if match and (current is None or width <= indent):
            current, indent = match.group(1).lstrip("*"), width
            args[current] = match.group(2).strip()
        elif current is not None:
            args[current] = f"{args[current]} {line.strip()}".strip()
    text = " ".join(" ".join(summary).split())
    return text or None, args


@functools.lru_cache(maxsize=256)
def _arguments_model(fn: Callable[..., object], name: str) -> type[BaseModel]:
    annotations = {k: v for k, v in getattr(fn, "__annotations__", {}).items() if k != "return"}
    shim = types.SimpleNamespace(__annotations__=annotations, __globals__=getattr(fn, "__globals__", {}))
    hints = typing.get_type_hints(shim, include_extras=True)  # the return type is never needed
    _, descriptions = _doc_parts(fn)
    fields: dict[str, Any] = {}
    for param in inspect.signature(fn).parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD, param.POSITIONAL_ONLY):
            raise InvalidRequestError(f"function_tool({fn.__qualname__}): parameter {param.name!r} is "
                                      f"{param.kind.description}; a tool takes named arguments only.", field="tools")
        if param.name not in hints:
            raise InvalidRequestError(f"function_tool({fn.__qualname__}): parameter {param.name!r} has no type "
                                      "hint; annotate it (e.g. city: str).", field="tools")
        default = ... if param.default is param.empty else param.default
        fields[param.name] = (hints[param.name], Field(default, description=descriptions.get(param.name)))
    model: type[BaseModel] = create_model(name, **fields)
    return model


def function_tool(fn: Callable[..., object], *, name: str | None = None, description: str | None = None
                  ) -> FunctionTool:
    """A strict function tool from a plain or async function: the parameters from its type hints, the
    description from its docstring (the text before ``Args:``; each ``name: text`` under ``Args:`` describes
    that parameter). ``run_tools`` calls ``fn(**arguments)``. Raises `InvalidRequestError` for a parameter
    without a type hint, ``*args``/``**kwargs``, or a type pydantic cannot describe."""
    if not callable(fn):
        raise InvalidRequestError(f"function_tool needs a function, got {fn!r}.", field="tools")
    tool_name = _check_name(name or str(getattr(fn, "__name__", "")), f"function_tool({fn!r})")
    summary, _ = _doc_parts(fn)
    try:
        model = _arguments_model(fn, tool_name)
    except InvalidRequestError:
        raise
    except Exception as exc:
        raise InvalidRequestError(f"function_tool({tool_name}): cannot describe its parameters ({exc}).",
                                  field="tools") from exc
    return _make(model, tool_name, description if description is not None else summary, fn, True)


def as_tool(value: object, index: int) -> Mapping[str, object]:
    """A ``tools=[...]`` entry as a wire dict: a `FunctionTool` as is, a callable through `function_tool`, a
    pydantic model class through `pydantic_function_tool`, a raw dict as is."""
    if isinstance(value, Mapping):
        return value
    if isinstance(value, type) and issubclass(value, BaseModel):
        return pydantic_function_tool(value)
    if callable(value):
        return function_tool(value)
    raise InvalidRequestError(f"tools[{index}] must be a tool dict, a pydantic model, or a function; got "
                              f"{type(value).__name__}.", field=f"tools[{index}]")


class ToolSet:
    """The tools of one request by name: the wire dicts to send and the typed tools to validate and run."""

    def __init__(self, tools: Iterable[object]) -> None:
        if isinstance(tools, (str, bytes, Mapping)) or not isinstance(tools, Iterable):
            raise InvalidRequestError(f"tools must be a list of tools, got {type(tools).__name__}.", field="tools")
        self.params: list[Mapping[str, object]] = []
        self.by_name: dict[str, Mapping[str, object]] = {}
        for i, value in enumerate(tools):
            tool = as_tool(value, i)
            fn = tool.get("function")
            name = fn.get("name") if isinstance(fn, Mapping) else tool.get("name")  # chat's, or the Responses API's
            if isinstance(name, str):
                if name in self.by_name:
                    raise InvalidRequestError(f"tools: two tools are named {name!r}; tool names must be unique.",
                                              field=f"tools[{i}]")
                self.by_name[name] = tool
            self.params.append(tool)

    def typed(self, name: str | None) -> FunctionTool | None:
        """The typed tool called ``name`` (None for an unknown name or a raw dict)."""
        tool = self.by_name.get(name or "")
        return tool if isinstance(tool, FunctionTool) else None

    @property
    def any_typed(self) -> bool:
        """Whether some tool validates its arguments."""
        return any(isinstance(t, FunctionTool) for t in self.params)

    @property
    def runnable(self) -> bool:
        """Whether some tool has a handler (the request runs a tool loop)."""
        return any(isinstance(t, FunctionTool) and t.handler is not None for t in self.params)

    @property
    def names(self) -> list[str]:
        """The tool names, in order."""
        return list(self.by_name)


def tool_set(tools: Iterable[object] | ToolSet) -> ToolSet:
    """``tools`` as a `ToolSet` (checked before any I/O)."""
    return tools if isinstance(tools, ToolSet) else ToolSet(tools)


def error_lines(error: ValidationError | ValueError, limit: int = 20) -> list[tuple[str, str]]:
    """``(field, message)`` per validation error (``"(root)"`` for the whole value)."""
    if isinstance(error, ValidationError):
        return [(".".join(str(p) for p in item["loc"]) or "(root)", item["msg"])
                for item in error.errors(include_url=False)[:limit]]
    errors = getattr(error, "errors", None)
    if isinstance(errors, list):
        return [(loc or "(root)", msg) for loc, msg in errors[:limit]]
    return [("(root)", str(error))]
