"""The arguments of `advisor mcp`'s tools: each bounded and of its schema's JSON type, and a call whose arguments
break the schema refused before any work with a JSON-RPC error -32602 naming the argument, in the agent's language.

``bounded`` declares the limits in each tool's input schema (so the agent sees them); ``arguments_guard`` is the SDK
middleware that refuses a tools/call naming no tool or with a bad argument (``mcp.wire`` installs both).
"""

from __future__ import annotations

import json
import reprlib
from collections.abc import Mapping
from typing import Annotated, Any, Optional

import mcp_types
from mcp.server.mcpserver.tools import Tool
from mcp.shared.exceptions import MCPError
from pydantic import BeforeValidator, Field, Strict, ValidationError

from opprof_advisor.core.i18n import LANGS, M_, N_, current_lang, normalise_lang
from opprof_advisor.mcp.server import MAX_ITEMS, MAX_TEXT, MAX_TOP, BadArgument, minimum_top, said_in

#: No NUL in any text argument: no path, query or id holds one (and ``open`` fails on it).
NO_NUL = r"^[^\x00]*$"

def call_language(lang: str | None) -> str:
    """The language of a call: ``lang``, or the server's own (the guard refused a language advisor does not speak)."""
    return (normalise_lang(lang) or current_lang()) if isinstance(lang, str) else current_lang()


def bounded(tool: str, name: str, annotation: Any) -> Any:
    """``annotation`` with the bounds of an argument: text and lists no longer than they may be, ``top`` in range,
    and a whole number or a truth value of the JSON type the input schema says (no true for 1, no "3" for 3)."""
    text = Annotated[str, Field(max_length=MAX_TEXT, pattern=NO_NUL)]
    if annotation is bool:
        return Annotated[bool, Strict()]
    if annotation is int:
        bounds = Field(ge=minimum_top(tool), le=MAX_TOP) if name == "top" else Field()
        return Annotated[int, Strict(), bounds, BeforeValidator(_whole_float)]  # (bounds first: the schema's own)
    if annotation is str:
        return text
    if annotation == Optional[str]:
        return Optional[text]
    if annotation == list[str]:
        return Annotated[list[text], Field(max_length=MAX_ITEMS)]
    if annotation == Optional[list[str]]:
        return Optional[Annotated[list[text], Field(max_length=MAX_ITEMS)]]
    return annotation


def _whole_float(value: Any) -> Any:
    """3.0 as 3: JSON has one kind of number, and the JSON Schema type "integer" takes any number without a fraction."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


def arguments_guard(tools: dict[str, Tool]):
    """The middleware that refuses a tools/call naming no tool, or whose arguments break the input schema, before
    any work: a JSON-RPC error -32602 (Invalid params) whose message is the one line of ours (in the call's
    language) and whose ``data`` names what is wrong (``_refused``).

    The SDK would refuse bad arguments too, with the validator's text over several lines, as a tool result; it
    answers an unknown tool with a tool result; it ignores an argument the tool does not take, where the agent
    should hear that it misspelt one; and it refuses arguments that are no object with no word of why.
    """

    async def guard(ctx: Any, call_next: Any) -> Any:
        params = ctx.params
        if ctx.method == "tools/call" and (params is None or isinstance(params, Mapping)):
            refusal = _call_refusal(tools, params or {})
            if refusal is not None:
                raise refusal
        return await call_next(ctx)

    return guard


def _call_refusal(tools: dict[str, Tool], params: Mapping[str, Any]) -> MCPError | None:
    """The error refusing the tools/call ``params`` (None when the tool exists and its arguments are good)."""
    name, arguments = params.get("name"), params.get("arguments")
    lang = arguments.get("lang") if isinstance(arguments, Mapping) else None
    lang = lang if isinstance(lang, str) and "\x00" not in lang and normalise_lang(lang) else None
    tool = tools.get(name) if isinstance(name, str) else None
    if tool is None:
        return _refused(lang, BadArgument(M_("tools/call: {name} is not the name of a tool", name=_shown(name)),
                                          hint=M_("the tools are {names}", names=", ".join(tools))),
                        {"param": "name"})
    data = {"param": "arguments", "tool": tool.name}
    if arguments is not None and not isinstance(arguments, Mapping):
        return _refused(lang, BadArgument(M_("{tool}: {input} is not an object of named arguments", tool=tool.name,
                                             input=_shown(arguments))), data)
    problem = _argument_problem(tool, dict(arguments or {}))
    if problem is None:
        return None
    where, exc = problem
    return _refused(lang, exc, {**data, **where})


def _refused(lang: str | None, exc: BadArgument, data: dict[str, Any]) -> MCPError:
    """The JSON-RPC error -32602 (Invalid params) refusing a call: ``exc``'s one line in ``lang``, and ``data``."""
    return MCPError(code=mcp_types.INVALID_PARAMS, message=said_in(lang, exc), data=data)


def _argument_problem(tool: Tool, arguments: dict[str, Any]) -> tuple[dict[str, Any], BadArgument] | None:
    """Where the first problem of ``arguments`` of ``tool`` is (``{"argument": name}``, with ``"index"`` for an item of
    a list) and the error saying it, or None when they are good."""
    fields = tool.fn_metadata.arg_model.model_fields
    names = [field.alias or name for name, field in fields.items()]
    unknown = [key for key in arguments if key not in names]
    if unknown:
        return {"argument": unknown[0]}, BadArgument(
            M_("{tool}: {name} is not an argument of this tool", tool=tool.name, name=_shown(unknown[0])),
            hint=M_("it takes {names}", names=", ".join(names)))
    try:
        tool.fn_metadata.validate_arguments(arguments)
    except ValidationError as exc:
        error = exc.errors()[0]
        location = list(error.get("loc") or ())
        where: dict[str, Any] = {"argument": str(location[0]) if location else None}
        if len(location) > 1 and isinstance(location[1], int):
            where["index"] = location[1]
        return where, _bad_argument(tool.name, error)
    lang = arguments.get("lang")
    if isinstance(lang, str) and normalise_lang(lang) is None:
        return {"argument": "lang"}, BadArgument(M_("{tool}: argument {name}: {problem}", tool=tool.name, name="lang",
                                                    problem=M_("{input} is not one of {langs}", input=_shown(lang),
                                                               langs=", ".join(LANGS))))
    return None


#: A validation error in our words, by its type (the words of the command line's bad option values).
_WORDS = {
    "int_parsing": N_("{input} is not a whole number"),
    "int_type": N_("{input} is not a whole number"),
    "int_from_float": N_("{input} is not a whole number"),
    "finite_number": N_("{input} is not a finite number"),
    "greater_than_equal": N_("{input} is too small: it must be at least {ge}"),
    "less_than_equal": N_("{input} is too large: it must be at most {le}"),
    "string_type": N_("{input} is not text"),
    "list_type": N_("{input} is not a list of texts"),
    "bool_type": N_("{input} is not true or false"),
    "bool_parsing": N_("{input} is not true or false"),
}


def _bad_argument(tool: str, error: Mapping[str, Any]) -> BadArgument:
    location = [str(part) for part in error.get("loc") or ()]
    name = (location[0] + "".join(f"[{part}]" for part in location[1:])) if location else "arguments"
    kind = error.get("type")
    context = error.get("ctx") or {}
    value = error.get("input")
    if kind == "missing":
        problem = M_("required, and not given")
    elif kind == "string_too_long":
        problem = M_("{length} characters, more than the {limit} it may have", length=len(value),
                     limit=context.get("max_length"))
    elif kind == "too_long":
        problem = M_("{count} items, more than the {limit} it may have", count=context.get("actual_length"),
                     limit=context.get("max_length"))
    elif kind == "string_pattern_mismatch":
        problem = M_("a NUL character, which no path, query or id holds")
    elif kind in _WORDS:
        problem = M_(_WORDS[kind], input=_shown(value), ge=context.get("ge"), le=context.get("le"))
    else:
        problem = M_("{input}: {reason}", input=_shown(value), reason=error.get("msg"))
    return BadArgument(M_("{tool}: argument {name}: {problem}", tool=tool, name=name, problem=problem))


def _shown(value: Any, limit: int = 60) -> str:
    """``value`` as the agent wrote it, cut to about ``limit`` characters (whatever its size and depth)."""
    if value is None or isinstance(value, bool):
        return json.dumps(value)  # true, false, null: as JSON says them
    shown = _REPR.repr(value)
    return shown if len(shown) <= limit else shown[:limit - 1] + "…"


_REPR = reprlib.Repr()
_REPR.maxlevel, _REPR.maxstring, _REPR.maxother, _REPR.maxlong = 2, 60, 60, 40
_REPR.maxlist = _REPR.maxdict = _REPR.maxtuple = 4
