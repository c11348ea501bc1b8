"""Tools as decorated Python functions. The JSON schema of the arguments
comes from the type hints and the docstring (``Args:`` section), the flags
(read-only, destructive, concurrency-safe, what an interrupt does) from the
decorator:

    @tool(read_only=True, concurrency_safe=True)
    def read_file(path: str, limit: int = 100) -> str:
        '''Reads a text file of the workspace.

        Args:
            path: the file, relative to the workspace.
            limit: at most this many lines.
        '''
"""

from __future__ import annotations

import asyncio
import enum
import inspect
import json
import re
import typing
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Literal, Optional, Sequence, Union

from agentruntime.events.v1 import control_pb2 as events_control_pb2
from agentruntime.events.v1 import permission_pb2 as events_permission_pb2

__all__ = ["tool", "Tool", "ToolResult", "ToolError", "ToolContext", "schema_of"]


class ToolError(Exception):
    """A call that failed with a category (``tool.failed{category}``):
    e.g. ``not_found``, ``invalid_arguments``, ``io_error``."""

    def __init__(self, category: str, message: str) -> None:
        super().__init__(message)
        self.category, self.message = category, message


@dataclass
class ToolResult:
    """What a call answers. ``truncated``: the tool had to cut ``output``
    (``bytes`` is the size before the cut)."""

    output: str
    truncated: bool = False
    bytes: int = 0


class ToolContext:
    """What a running call can ask of its turn. A tool gets it by declaring
    a parameter annotated ``ToolContext`` (not part of the schema).

    ``start_process`` runs a long-lived process for the turn: its start,
    output (redacted, spilled above the inline budget), stdin requests
    (``WriteProcessStdin``), terminate requests (``TerminateProcess``) and
    end are the Go worker's ``process.*`` facts; it is killed when the turn
    ends. ``wait_process`` waits for one (or all) and says how it ended."""

    session_id: str = ""
    thread_id: str = ""
    turn_id: str = ""
    step_id: str = ""
    tool_call_id: str = ""

    async def start_process(self, command: Union[str, Sequence[str]], *, cwd: Optional[str] = None) -> str:
        raise NotImplementedError

    async def wait_process(self, process_id: str = "", timeout: float = 30.0) -> str:
        raise NotImplementedError


_ACCESS = {"read": events_permission_pb2.ACCESS_READ, "write": events_permission_pb2.ACCESS_WRITE,
           "execute": events_permission_pb2.ACCESS_EXECUTE, "network": events_permission_pb2.ACCESS_NETWORK}


@dataclass
class Tool:
    name: str
    description: str
    fn: Callable[..., Any]
    schema: Dict[str, Any]
    read_only: bool = False
    destructive: bool = False
    concurrency_safe: bool = False
    interrupt: str = "cancel"
    #: read, write, execute or network: what the permission decision weighs.
    access: str = "execute"
    #: the argument names that are paths (sent to the permission decision).
    path_args: Sequence[str] = ()
    #: the parameter that receives the call's ToolContext, if any.
    context_arg: str = ""

    def spec(self) -> events_control_pb2.ToolSpec:
        return events_control_pb2.ToolSpec(
            name=self.name, description=self.description, input_schema_json=json.dumps(self.schema, sort_keys=True),
            read_only=self.read_only, destructive=self.destructive, concurrency_safe=self.concurrency_safe,
            interrupt_behavior=self.interrupt)

    def access_enum(self) -> int:
        return _ACCESS[self.access]

    def paths(self, args: Dict[str, Any]) -> List[str]:
        out: List[str] = []
        for n in self.path_args:
            v = args.get(n)
            if isinstance(v, str):
                out.append(v)
            elif isinstance(v, list):
                out.extend(x for x in v if isinstance(x, str))
        return out

    def bind(self, arguments_json: str) -> Dict[str, Any]:
        """Parses and checks the model's arguments against the schema's
        required names and types (ToolError invalid_arguments)."""
        try:
            args = json.loads(arguments_json or "{}")
        except ValueError as e:
            raise ToolError("invalid_arguments", f"the arguments are not JSON: {e}") from None
        if not isinstance(args, dict):
            raise ToolError("invalid_arguments", "the arguments must be a JSON object")
        props = self.schema.get("properties", {})
        for name in self.schema.get("required", []):
            if name not in args:
                raise ToolError("invalid_arguments", f"{name} is required")
        for name, value in args.items():
            if name not in props:
                raise ToolError("invalid_arguments", f"unknown argument {name}")
            want = props[name].get("type")
            if value is None and name not in self.schema.get("required", []):
                continue
            if want and not _is_type(value, want):
                raise ToolError("invalid_arguments", f"{name} must be {want}")
        return args

    async def call(self, args: Dict[str, Any], ctx: Optional[ToolContext] = None) -> ToolResult:
        if self.context_arg:
            args = dict(args, **{self.context_arg: ctx if ctx is not None else ToolContext()})
        if inspect.iscoroutinefunction(self.fn):
            out = await self.fn(**args)
        else:
            # Off the event loop: heartbeats and interrupts go on meanwhile.
            out = await asyncio.to_thread(self.fn, **args)
        if isinstance(out, ToolResult):
            return out
        text = out if isinstance(out, str) else json.dumps(out)
        return ToolResult(output=text, bytes=len(text.encode()))


def _is_type(v: Any, want: Union[str, List[str]]) -> bool:
    if isinstance(want, list):
        return any(_is_type(v, w) for w in want)
    return {
        "string": lambda: isinstance(v, str),
        "integer": lambda: isinstance(v, int) and not isinstance(v, bool),
        "number": lambda: isinstance(v, (int, float)) and not isinstance(v, bool),
        "boolean": lambda: isinstance(v, bool),
        "array": lambda: isinstance(v, list),
        "object": lambda: isinstance(v, dict),
        "null": lambda: v is None,
    }.get(want, lambda: True)()


def _json_type(tp: Any) -> Dict[str, Any]:
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if tp is str:
        return {"type": "string"}
    if tp is bool:
        return {"type": "boolean"}
    if tp is int:
        return {"type": "integer"}
    if tp is float:
        return {"type": "number"}
    if tp in (dict, Dict) or origin in (dict, Dict):
        return {"type": "object"}
    if tp in (list, List) or origin in (list, List, tuple, Sequence, typing.Sequence):
        item = _json_type(args[0]) if args else {}
        return {"type": "array", "items": item} if item else {"type": "array"}
    if origin is Literal:
        vals = list(args)
        kinds = {type(x) for x in vals}
        out: Dict[str, Any] = {"enum": vals}
        if kinds == {str}:
            out["type"] = "string"
        elif kinds == {int}:
            out["type"] = "integer"
        return out
    if origin is Union:
        non_none = [a for a in args if a is not type(None)]
        if len(non_none) == 1:
            return _json_type(non_none[0])
        return {"anyOf": [_json_type(a) for a in non_none]}
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return {"enum": [m.value for m in tp]}
    return {}


_ARGS_HEADER = re.compile(r"^\s*(Args|Arguments|Parameters):\s*$")
_ARG_LINE = re.compile(r"^\s*(\*{0,2}\w+)\s*(\([^)]*\))?\s*:\s*(.*)$")


def _parse_docstring(doc: str) -> (str, Dict[str, str]):
    lines = inspect.cleandoc(doc or "").splitlines()
    desc: List[str] = []
    params: Dict[str, str] = {}
    i = 0
    while i < len(lines) and not _ARGS_HEADER.match(lines[i]):
        desc.append(lines[i])
        i += 1
    if i < len(lines):
        i += 1
        indent = None
        current = None
        while i < len(lines):
            line = lines[i]
            if not line.strip():
                i += 1
                continue
            ind = len(line) - len(line.lstrip())
            if indent is None:
                indent = ind
            if ind < indent:
                break  # the next section
            m = _ARG_LINE.match(line)
            if ind == indent and m:
                current = m.group(1).lstrip("*")
                params[current] = m.group(3).strip()
            elif current:
                params[current] = (params[current] + " " + line.strip()).strip()
            i += 1
    text = "\n".join(desc).strip()
    return text, params


def schema_of(fn: Callable[..., Any]) -> (str, Dict[str, Any]):
    """The description and JSON schema (draft 2020-12 object) of a
    function's parameters, from its type hints, defaults and docstring."""
    description, docs = _parse_docstring(fn.__doc__ or "")
    hints = typing.get_type_hints(fn)
    props: Dict[str, Any] = {}
    required: List[str] = []
    for name, p in inspect.signature(fn).parameters.items():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        tp = hints.get(name, Any)
        if tp is ToolContext:
            continue
        s = dict(_json_type(tp))
        if name in docs and docs[name]:
            s["description"] = docs[name]
        optional = typing.get_origin(tp) is Union and type(None) in typing.get_args(tp)
        if p.default is not p.empty:
            if p.default is not None and isinstance(p.default, (str, int, float, bool, list, dict)):
                s["default"] = p.default
        elif not optional:
            required.append(name)
        props[name] = s
    schema: Dict[str, Any] = {"type": "object", "properties": props, "additionalProperties": False}
    if required:
        schema["required"] = required
    return description, schema


def tool(fn: Optional[Callable[..., Any]] = None, *, name: Optional[str] = None,
         description: Optional[str] = None, read_only: bool = False, destructive: bool = False,
         concurrency_safe: bool = False, interrupt: str = "cancel", access: Optional[str] = None,
         path_args: Sequence[str] = ("path", "paths")) -> Any:
    """Declares a tool. ``access`` defaults to ``read`` for a read-only
    tool, ``write`` for a destructive one, else ``execute``; ``path_args``
    name the arguments that are paths (the permission decision weighs
    them)."""
    if interrupt not in ("cancel", "block", "finish"):
        raise ValueError("interrupt: want cancel, block or finish")
    if read_only and destructive:
        raise ValueError("a tool cannot be read-only and destructive")

    def wrap(f: Callable[..., Any]) -> Tool:
        desc, schema = schema_of(f)
        acc = access or ("read" if read_only else "write" if destructive else "execute")
        if acc not in _ACCESS:
            raise ValueError(f"access: want one of {', '.join(_ACCESS)}")
        params = set(schema["properties"])
        hints = typing.get_type_hints(f)
        ctx_arg = next((n for n in inspect.signature(f).parameters if hints.get(n) is ToolContext), "")
        return Tool(context_arg=ctx_arg, name=name or f.__name__, description=description or desc, fn=f, schema=schema,
                    read_only=read_only, destructive=destructive, concurrency_safe=concurrency_safe,
                    interrupt=interrupt, access=acc, path_args=[a for a in path_args if a in params])

    return wrap(fn) if fn is not None else wrap
