"""mcp_sse_server.engine.typed: schemas, conversions and results from typed functions."""

from __future__ import annotations

import dataclasses
import datetime
import enum
import typing
import uuid
from collections.abc import Callable
from typing import Annotated, Any, Literal

import pydantic
import pytest
from pydantic import Field
from typing_extensions import TypedDict

from fixtures.sessions import Connect
from mcp_sse_server import McpServer, RequestContext, Tool
from mcp_sse_server.engine.schema import SchemaValidator
from mcp_sse_server.engine.typed import (
    ArgumentError,
    PromptSignature,
    ResourceSignature,
    SignatureError,
    ToolSignature,
    docstring_parts,
)
from mcp_sse_server.engine.types import (
    BlobResourceContents,
    CallToolResult,
    GetPromptResult,
    ImageContent,
    PromptArgument,
    PromptMessage,
    ReadResourceResult,
    TextContent,
    TextResourceContents,
)

CONTEXT: Any = object()  # the context is only passed through: any object stands in for it


class Role(enum.Enum):
    ADMIN = "admin"
    MEMBER = "member"


class User(pydantic.BaseModel):
    """A member of a team."""

    name: str
    role: Role = Role.MEMBER


class Team(pydantic.BaseModel):
    name: str
    members: list[User]


class Node(pydantic.BaseModel):
    value: int
    children: list[Node] = []


@dataclasses.dataclass
class Point:
    x: int
    y: int = 0


class Movie(TypedDict):
    title: str
    year: int


NO_RETURN: Any = object()


def taking(annotation: Any, returns: Any = NO_RETURN) -> Callable[..., Any]:
    """A tool ``(value) -> value`` whose parameter has ``annotation`` (and its return ``returns``, when given)."""

    def tool(value):  # type: ignore[no-untyped-def]
        return value

    tool.__annotations__ = {"value": annotation} if returns is NO_RETURN else {"value": annotation, "return": returns}
    return tool


def validator(signature: ToolSignature) -> SchemaValidator:
    return SchemaValidator(signature.input_schema)


# --- docstrings ------------------------------------------------------------------------------


def google(a: int, b: str) -> None:
    """Summary line.

    A body paragraph
    over two lines.

    Args:
        a: the first,
            continued here.
        b (str): the second.

    Returns:
        Nothing at all.

    Raises:
        ValueError: never.

    Examples:
        >>> google(1, "x")
    """


def numpy(a: int, b: str) -> None:
    """Summary line.

    Parameters
    ----------
    a : int
        the first,
        continued here.
    b
        the second.

    Returns
    -------
    None
        nothing.
    """


def sphinx(a: int, b: str) -> None:
    """Summary line.

    :param a: the first,
        continued here.
    :param str b: the second.
    :type a: int
    :returns: nothing.
    :raises ValueError: never.
    """


@pytest.mark.parametrize("function", [google, numpy, sphinx])
def test_docstring_styles_give_the_description_and_each_parameter(function: Callable[..., Any]) -> None:
    description, parameters = docstring_parts(function)
    assert parameters == {"a": "the first, continued here.", "b": "the second."}
    expected = "Summary line.\n\nA body paragraph\nover two lines." if function is google else "Summary line."
    assert description == expected


def test_docstring_other_headers_and_text_after_a_section() -> None:
    def f(x: int, y: int) -> None:
        """Does it.

        Arguments:
            x: an x.

        Keep this.

        Parameters:
            y: a y.
        Note:
            dropped.
        """

    assert docstring_parts(f) == ("Does it.\n\nKeep this.", {"x": "an x.", "y": "a y."})


def test_no_docstring() -> None:
    assert docstring_parts(lambda: None) == (None, {})


# --- input schemas and conversion, one type family at a time ------------------------------

FAMILIES = [
    # annotation, valid JSON, what the function receives, invalid JSON
    (int, 3, 3, "3"),
    (float, 1.5, 1.5, "1.5"),
    (str, "a", "a", 1),
    (bool, True, True, "yes"),
    (Literal["a", "b"], "b", "b", "c"),
    (Role, "admin", Role.ADMIN, "king"),
    (int | None, None, None, "x"),
    (typing.Optional[str], "s", "s", 2),  # noqa: UP045 - the typing spelling is supported too
    (int | str, "x", "x", [1]),
    (list[int], [1, 2], [1, 2], [1, "a"]),
    (dict[str, int], {"a": 1}, {"a": 1}, {"a": "x"}),
    (tuple[int, str], [1, "a"], (1, "a"), [1]),
    (set[int], [1, 2], {1, 2}, [1, 1]),
    (Point, {"x": 1}, Point(1, 0), {"y": 1}),
    (Movie, {"title": "Up", "year": 2009}, {"title": "Up", "year": 2009}, {"title": "Up"}),
    (User, {"name": "ann"}, User(name="ann"), {"name": "ann", "role": "king"}),
    (Team, {"name": "t", "members": [{"name": "a"}]}, Team(name="t", members=[User(name="a")]), {"name": "t"}),
    (datetime.date, "2024-05-06", datetime.date(2024, 5, 6), 20240506),
    (uuid.UUID, "12345678-1234-5678-1234-567812345678", uuid.UUID("12345678-1234-5678-1234-567812345678"), 5),
    (Any, {"any": ["thing"]}, {"any": ["thing"]}, None),
]


@pytest.mark.parametrize(("annotation", "good", "converted", "bad"), FAMILIES)
def test_each_type_family_compiles_validates_and_converts(annotation: Any, good: Any, converted: Any, bad: Any) -> None:
    signature = ToolSignature.of(taking(annotation))
    schema = validator(signature)
    assert signature.input_schema["type"] == "object"
    assert signature.input_schema["required"] == ["value"]
    assert schema.first_error({"value": good}) is None
    if annotation is not Any:
        assert schema.first_error({"value": bad}) is not None
    arguments = signature.call_arguments({"value": good}, CONTEXT)
    assert arguments == {"value": converted}
    assert type(arguments["value"]) is type(converted)


def test_enum_and_literal_errors_name_the_field_the_engine_way() -> None:
    signature = ToolSignature.of(taking(Team))
    problem = validator(signature).first_error({"value": {"name": "t", "members": [{"name": "a", "role": "king"}]}})
    assert problem == 'argument "value.members[0].role": "king" is not one of "admin" or "member"'


def test_nested_models_are_defs_at_the_root_referenced_by_ref() -> None:
    schema = ToolSignature.of(taking(Team)).input_schema
    assert schema["properties"]["value"] == {"$ref": "#/$defs/Team"}
    assert set(schema["$defs"]) == {"Team", "User", "Role"}
    assert schema["$defs"]["User"]["properties"]["role"] == {"$ref": "#/$defs/Role", "default": "member"}
    assert schema["$defs"]["User"]["description"] == "A member of a team."


def test_schemas_carry_no_generated_titles() -> None:
    def f(a: int, b: Annotated[str, Field(title="Bee")], user: User) -> None: ...

    schema = ToolSignature.of(f).input_schema
    assert "title" not in schema
    assert schema["properties"]["a"] == {"type": "integer"}
    assert schema["properties"]["b"] == {"type": "string", "title": "Bee"}
    assert "title" not in schema["$defs"]["User"]["properties"]["name"]


def test_a_format_the_validator_does_not_check_is_a_conversion_error_naming_the_field() -> None:
    signature = ToolSignature.of(taking(uuid.UUID))
    assert validator(signature).first_error({"value": "not-a-uuid"}) is None  # format is an annotation only
    with pytest.raises(ArgumentError) as caught:
        signature.call_arguments({"value": "not-a-uuid"}, CONTEXT)
    assert caught.value.field == "value"
    assert str(caught.value).startswith('argument "value": Input should be a valid UUID')


class Checked(pydantic.BaseModel):
    role: str

    @pydantic.field_validator("role")
    @classmethod
    def known(cls, role: str) -> str:
        if role not in ("admin", "member"):
            raise ValueError(f"{role!r} is not a role")
        return role


def test_a_validator_only_pydantic_runs_fails_with_the_dotted_path() -> None:
    def f(user: Checked) -> None: ...

    with pytest.raises(ArgumentError) as caught:
        ToolSignature.of(f).call_arguments({"user": {"role": "king"}}, CONTEXT)
    assert (caught.value.field, caught.value.message) == ("user.role", "Value error, 'king' is not a role")
    assert str(caught.value) == "argument \"user.role\": Value error, 'king' is not a role"


# --- Annotated, Field, defaults, descriptions ----------------------------------------------------


def search(
    query: Annotated[str, Field(description="What to look for.", min_length=1)],
    limit: Annotated[int, Field(ge=1, le=50)] = 10,
    role: Role = Role.MEMBER,
    since: datetime.datetime | None = None,
    opaque: object = object(),
) -> list[str]:
    """Search the index.

    Args:
        query: overridden by the Field's description.
        limit: at most this many hits.
    """
    return [query] * limit


def test_annotated_field_defaults_and_descriptions() -> None:
    signature = ToolSignature.of(search)
    assert signature.description == "Search the index."
    assert signature.input_schema["required"] == ["query"]
    properties = signature.input_schema["properties"]
    assert properties["query"] == {"type": "string", "minLength": 1, "description": "What to look for."}
    assert properties["limit"] == {
        "type": "integer",
        "minimum": 1,
        "maximum": 50,
        "default": 10,
        "description": "at most this many hits.",
    }
    assert properties["role"] == {"$ref": "#/$defs/Role", "default": "member"}
    assert properties["since"]["default"] is None
    assert "default" not in properties["opaque"]
    schema = validator(signature)
    assert schema.first_error({"query": "x", "limit": 5}) is None
    assert schema.first_error({"query": "x", "limit": 0}) == 'argument "limit": 0 is less than the minimum of 1'
    assert schema.first_error({"query": ""}) is not None
    assert schema.first_error({}) == 'missing required argument "query"'


def test_defaults_are_the_functions_own() -> None:
    signature = ToolSignature.of(search)
    arguments = signature.call_arguments({"query": "x"}, CONTEXT)
    assert arguments == {"query": "x"}
    assert search(**arguments) == ["x"] * 10


def test_parameter_names_pydantic_reserves_keep_their_names() -> None:
    def f(schema: str, model_config: int, _private: bool = False, json: list[int] | None = None) -> None: ...

    signature = ToolSignature.of(f)
    assert list(signature.input_schema["properties"]) == ["schema", "model_config", "_private", "json"]
    arguments = {"schema": "s", "model_config": 1, "_private": True, "json": [1]}
    assert signature.call_arguments(arguments, CONTEXT) == arguments


def test_primitive_parameters_pass_through_without_pydantic() -> None:
    def f(  # type: ignore[no-untyped-def]
        a: int, b: float | None, c: str, d: bool, e: Any, g, h: Annotated[int, Field(ge=0)], i: list[int]
    ) -> None: ...

    signature = ToolSignature.of(f)
    converters = signature._converters
    assert [name for name, adapter in converters.items() if adapter is None] == list("abcdegh")
    payload = {"x": [1]}
    assert signature.call_arguments({"e": payload}, CONTEXT)["e"] is payload
    assert signature.call_arguments({"a": 1, "unknown": 2}, CONTEXT) == {"a": 1}  # (the schema refuses it first)


# --- the context -------------------------------------------------------------------------------


def test_the_context_parameter_is_injected_under_its_own_name() -> None:
    def f(x: int, where: RequestContext) -> None: ...

    def g(ctx: RequestContext | None = None) -> None: ...

    signature = ToolSignature.of(f)
    assert signature.context_parameter == "where"
    assert list(signature.input_schema["properties"]) == ["x"]
    assert signature.call_arguments({"x": 1}, CONTEXT) == {"x": 1, "where": CONTEXT}
    assert ToolSignature.of(g).context_parameter == "ctx"
    assert ToolSignature.of(g).input_schema == {"type": "object", "properties": {}, "additionalProperties": False}


# --- signatures that cannot be served ------------------------------------------------------------


def star_args(*values: int) -> None: ...


def star_kwargs(a: int, **options: int) -> None: ...


def positional(a: int, /) -> None: ...


def field_default(a: int = Field(3)) -> None: ...


def two_contexts(a: RequestContext, b: RequestContext) -> None: ...


def unresolvable(a: int, b: Missing) -> None: ...  # type: ignore[name-defined]  # noqa: F821


class Opaque:
    pass


def arbitrary(thing: Opaque) -> None: ...


class OldMovie(typing.TypedDict):
    title: str


def old_typed_dict(movie: OldMovie) -> None: ...


def bad_return() -> Opaque:
    return Opaque()


@pytest.mark.parametrize(
    ("function", "fragment"),
    [
        (star_args, "star_args: parameter 'values': *args and **kwargs"),
        (star_kwargs, "star_kwargs: parameter 'options'"),
        (positional, "positional: parameter 'a': positional-only"),
        (field_default, "field_default: parameter 'a': write Annotated[T, Field(...)] = default"),
        (two_contexts, "two_contexts: parameter 'b': a second RequestContext"),
        (unresolvable, "unresolvable: cannot resolve its annotations: name 'Missing' is not defined"),
        (arbitrary, "arbitrary: parameter 'thing': Unable to generate pydantic-core schema"),
        (old_typed_dict, "old_typed_dict: parameter 'movie': Please use `typing_extensions.TypedDict`"),
        (bad_return, "bad_return: return annotation: Unable to generate pydantic-core schema"),
    ],
)
def test_signature_errors_name_the_function_and_parameter(function: Callable[..., Any], fragment: str) -> None:
    with pytest.raises(SignatureError) as caught:
        ToolSignature.of(function)
    assert fragment in str(caught.value)


def test_a_type_json_schema_cannot_describe_is_a_signature_error() -> None:
    with pytest.raises(SignatureError, match="its parameters cannot be described"):
        ToolSignature.of(taking(Callable[[int], int]))


# --- results ----------------------------------------------------------------------------------


def returning(annotation: Any) -> ToolSignature:
    return ToolSignature.of(taking(Any, annotation))


def test_an_int_result_is_wrapped() -> None:
    signature = returning(int)
    assert signature.output_schema == {
        "type": "object",
        "properties": {"result": {"type": "integer"}},
        "required": ["result"],
    }
    assert signature.wraps_result
    result = signature.to_result(5)
    assert result.to_dict() == {"content": [{"type": "text", "text": "5"}], "structuredContent": {"result": 5}}


def test_a_model_result_is_its_own_schema() -> None:
    signature = returning(User)
    assert signature.output_schema is not None and not signature.wraps_result
    assert signature.output_schema["type"] == "object"
    assert signature.output_schema["required"] == ["name"]
    assert signature.output_schema["$defs"] == {
        "Role": {"enum": ["admin", "member"], "title": "Role", "type": "string"}
    }
    result = signature.to_result(User(name="ann", role=Role.ADMIN))
    assert result.structured_content == {"name": "ann", "role": "admin"}
    assert [block.text for block in result.content if isinstance(block, TextContent)] == [
        '{"name":"ann","role":"admin"}'
    ]


OUTPUTS = [
    # return annotation, value, structuredContent, wrapped
    (User, User(name="a"), {"name": "a", "role": "member"}, False),
    (Point, Point(1, 2), {"x": 1, "y": 2}, False),
    (Movie, {"title": "Up", "year": 2009}, {"title": "Up", "year": 2009}, False),
    (dict[str, int], {"a": 1}, {"a": 1}, False),
    (Node, Node(value=1, children=[Node(value=2)]), {"value": 1, "children": [{"value": 2, "children": []}]}, False),
    (float, 1.5, {"result": 1.5}, True),
    (bool, False, {"result": False}, True),
    (list[int], [1, 2], {"result": [1, 2]}, True),
    (list[User], [User(name="a")], {"result": [{"name": "a", "role": "member"}]}, True),
    (User | None, None, {"result": None}, True),
    (int | str, "x", {"result": "x"}, True),
    (Literal["on", "off"], "on", {"result": "on"}, True),
    (Role, Role.ADMIN, {"result": "admin"}, True),
    (datetime.date, datetime.date(2024, 5, 6), {"result": "2024-05-06"}, True),
    (tuple[int, int], (1, 2), {"result": [1, 2]}, True),
]


@pytest.mark.parametrize(("annotation", "value", "structured", "wrapped"), OUTPUTS)
def test_output_schemas_compile_and_describe_the_result(
    annotation: Any, value: Any, structured: dict[str, Any], wrapped: bool
) -> None:
    signature = returning(annotation)
    assert signature.output_schema is not None
    assert signature.output_schema["type"] == "object"
    assert signature.wraps_result is wrapped
    result = signature.to_result(value)
    assert result.structured_content == structured
    assert SchemaValidator(signature.output_schema).first_error(structured, noun="field") is None
    assert len(result.content) == 1 and isinstance(result.content[0], TextContent)


def test_a_wrapped_schema_hoists_defs_to_its_root() -> None:
    schema = returning(list[Team]).output_schema
    assert schema is not None
    assert schema["properties"]["result"] == {"type": "array", "items": {"$ref": "#/$defs/Team"}}
    assert set(schema["$defs"]) == {"Team", "User", "Role"}
    assert SchemaValidator(schema).first_error({"result": [{"name": "t", "members": []}]}) is None
    assert SchemaValidator(schema).first_error({"result": [{"name": "t"}]}) is not None


@pytest.mark.parametrize(
    "annotation",
    [NO_RETURN, str, None, Any, CallToolResult, TextContent, list[TextContent], TextContent | ImageContent],
)
def test_results_without_an_output_schema(annotation: Any) -> None:
    assert returning(annotation).output_schema is None


def test_text_none_and_content_results() -> None:
    assert returning(str).to_result("hi").to_dict() == {"content": [{"type": "text", "text": "hi"}]}
    assert returning(None).to_result(None).to_dict() == {"content": []}
    image = ImageContent("aGk=", "image/png")
    assert returning(ImageContent).to_result(image).content == [image]
    assert returning(list[TextContent | ImageContent]).to_result([TextContent("a"), image]).content == [
        TextContent("a"),
        image,
    ]
    assert returning(list[ImageContent]).to_result((image, image)).content == [image, image]
    passed = CallToolResult.error("no")
    assert returning(CallToolResult).to_result(passed) is passed


def test_unannotated_results_are_serialised_by_what_they_are() -> None:
    signature = ToolSignature.of(taking(Any))
    assert signature.to_result("hi").to_dict() == {"content": [{"type": "text", "text": "hi"}]}
    assert signature.to_result({"a": 1}).structured_content == {"a": 1}
    assert signature.to_result(User(name="a")).structured_content == {"name": "a", "role": "member"}
    assert signature.to_result([1, 2]).to_dict() == {"content": [{"type": "text", "text": "[1,2]"}]}
    assert signature.to_result(7).to_dict() == {"content": [{"type": "text", "text": "7"}]}


def test_output_schema_given_or_refused() -> None:
    given = {"type": "object", "properties": {"n": {"type": "integer"}}}
    signature = ToolSignature.of(taking(Any, dict[str, int]), output_schema=given)
    assert (signature.output_schema, signature.wraps_result) == (given, False)
    assert signature.to_result({"n": 1}).structured_content == {"n": 1}
    none = ToolSignature.of(taking(Any, int), output_schema=None)
    assert none.output_schema is None
    assert none.to_result(5).to_dict() == {"content": [{"type": "text", "text": "5"}]}


@pytest.mark.parametrize(
    ("annotation", "value"),
    [(int, "5"), (User, {"name": "a"}), (list[int], [1, "a"]), (None, 3), (str, 3), (CallToolResult, 5)],
)
def test_a_result_its_annotation_does_not_describe_is_a_type_error(annotation: Any, value: Any) -> None:
    with pytest.raises(TypeError, match=r"tool taking\.<locals>\.tool returned"):
        returning(annotation).to_result(value)


def test_a_non_json_value_without_annotation_is_a_type_error() -> None:
    with pytest.raises(TypeError):
        ToolSignature.of(taking(Any)).to_result(Opaque())


# --- async tools and the engine ---------------------------------------------------------------


async def scale(point: Point, factor: Annotated[float, Field(gt=0)], context: RequestContext) -> Point:
    """Scale a point."""
    assert isinstance(context, RequestContext)
    return Point(int(point.x * factor), int(point.y * factor))


async def test_a_typed_tool_served_by_the_engine(server: McpServer, connect: Connect) -> None:
    signature = ToolSignature.of(scale)
    assert signature.is_async and not ToolSignature.of(search).is_async

    async def handler(arguments: dict[str, Any], context: RequestContext) -> CallToolResult:
        return signature.to_result(await scale(**signature.call_arguments(arguments, context)))

    server.add_tool(
        Tool(
            "scale",
            signature.input_schema,
            handler,
            description=signature.description,
            output_schema=signature.output_schema,
        )
    )
    client = await connect(server)
    listed = (await client.result("tools/list"))["tools"][0]
    assert listed["inputSchema"] == signature.input_schema and listed["description"] == "Scale a point."
    result = await client.result("tools/call", {"name": "scale", "arguments": {"point": {"x": 1, "y": 2}, "factor": 3}})
    assert result == {"content": [{"type": "text", "text": '{"x":3,"y":6}'}], "structuredContent": {"x": 3, "y": 6}}
    refused = await client.result("tools/call", {"name": "scale", "arguments": {"point": {"x": 1}, "factor": 0}})
    assert refused["isError"] is True
    assert refused["content"][0]["text"].startswith('Invalid arguments for tool scale: argument "factor": 0 is')


# --- prompts ----------------------------------------------------------------------------------


def review(
    code: str,
    language: Annotated[Literal["python", "rust"], Field(description="The language.", title="Language")] = "python",
    depth: int = 1,
    tags: list[str] | None = None,
    context: RequestContext | None = None,
) -> str:
    """Review some code.

    Args:
        code: the code to review.
        language: overridden by the Field.
    """
    return f"{language}:{depth}:{tags}:{code}"


def test_prompt_arguments_from_parameters() -> None:
    signature = PromptSignature.of(review)
    assert signature.description == "Review some code."
    assert signature.context_parameter == "context"
    assert signature.arguments == [
        PromptArgument("code", "the code to review.", required=True),
        PromptArgument("language", "The language.", title="Language"),
        PromptArgument("depth"),
        PromptArgument("tags"),
    ]


def test_prompt_arguments_are_converted_from_strings() -> None:
    signature = PromptSignature.of(review)
    arguments = signature.call_arguments({"code": "x", "depth": "3", "tags": '["a", "b"]', "other": "?"}, CONTEXT)
    assert arguments == {"code": "x", "depth": 3, "tags": ["a", "b"], "context": CONTEXT}
    assert review(**arguments) == "python:3:['a', 'b']:x"


def test_prompt_argument_errors_name_the_argument() -> None:
    signature = PromptSignature.of(review)
    with pytest.raises(ArgumentError) as caught:
        signature.call_arguments({"code": "x", "depth": "deep"}, CONTEXT)
    assert caught.value.field == "depth"
    assert (
        str(caught.value) == 'argument "depth": Input should be a valid integer, unable to parse string as an integer'
    )
    with pytest.raises(ArgumentError, match="language"):
        signature.call_arguments({"code": "x", "language": "cobol"}, CONTEXT)
    with pytest.raises(ArgumentError) as missing:
        signature.call_arguments({}, CONTEXT)
    assert str(missing.value) == 'argument "code": Field required'


def prompt_returning(value: Any) -> GetPromptResult:
    def prompt() -> Any:
        """A prompt."""

    return PromptSignature.of(prompt).to_result(value)


def test_prompt_results_in_every_shape() -> None:
    user, assistant = PromptMessage.user("hi"), PromptMessage.assistant("hello")
    assert prompt_returning("hi") == GetPromptResult([user], "A prompt.")
    assert prompt_returning(user) == GetPromptResult([user], "A prompt.")
    assert prompt_returning([user, assistant]) == GetPromptResult([user, assistant], "A prompt.")
    mixed = prompt_returning(
        [
            "hi",
            {"role": "assistant", "content": "hello"},
            {"role": "user", "content": {"type": "image", "data": "aGk=", "mimeType": "image/png"}},
            ImageContent("aGk=", "image/png"),
        ]
    )
    image = PromptMessage.user(ImageContent("aGk=", "image/png"))
    assert mixed.messages == [user, assistant, image, image]
    given = GetPromptResult([user])
    assert prompt_returning(given) is given and given.description == "A prompt."
    assert prompt_returning(GetPromptResult([user], "Own.")).description == "Own."


@pytest.mark.parametrize("value", [5, [5], {"role": "system", "content": "x"}, [{"role": "user", "content": {}}]])
def test_a_prompt_result_of_another_shape_is_a_type_error(value: Any) -> None:
    with pytest.raises(TypeError):
        prompt_returning(value)


def test_async_prompts() -> None:
    async def prompt(topic: str) -> str:
        return topic

    assert PromptSignature.of(prompt).is_async
    assert PromptSignature.of(review).is_async is False


# --- resources --------------------------------------------------------------------------------


def read_post(user_id: int, post: uuid.UUID, ctx: RequestContext, version: int = 1) -> dict[str, Any]:
    """A user's post."""
    return {"user": user_id, "post": str(post), "version": version}


def test_resource_variables_are_converted() -> None:
    signature = ResourceSignature.of(read_post, ["user_id", "post"])
    assert (signature.variables, signature.description, signature.context_parameter) == (
        ("user_id", "post"),
        "A user's post.",
        "ctx",
    )
    post = "12345678-1234-5678-1234-567812345678"
    arguments = signature.call_arguments({"user_id": "42", "post": post}, CONTEXT)
    assert arguments == {"user_id": 42, "post": uuid.UUID(post), "ctx": CONTEXT}
    with pytest.raises(ArgumentError) as caught:
        signature.call_arguments({"user_id": "me", "post": post}, CONTEXT)
    assert caught.value.field == "user_id"
    assert str(caught.value).startswith('variable "user_id": Input should be a valid integer')


def test_resource_signature_mismatches() -> None:
    with pytest.raises(SignatureError, match=r"read_post: URI template variable 'slug' has no parameter"):
        ResourceSignature.of(read_post, ["user_id", "post", "slug"])
    with pytest.raises(SignatureError, match=r"read_post: parameter 'post' is not a URI template variable"):
        ResourceSignature.of(read_post, ["user_id"])


def resource_returning(value: Any, mime_type: str | None = None) -> ReadResourceResult:
    return ResourceSignature.of(lambda: None, []).to_result("res://x", value, mime_type)


def test_resource_results_in_every_shape() -> None:
    uri = "res://x"
    assert resource_returning("hi").contents == [TextResourceContents(uri, "hi", "text/plain")]
    assert resource_returning("# hi", "text/markdown").contents == [TextResourceContents(uri, "# hi", "text/markdown")]
    assert resource_returning(b"hi").contents == [BlobResourceContents(uri, "aGk=", "application/octet-stream")]
    assert resource_returning(b"hi", "image/png").contents == [BlobResourceContents(uri, "aGk=", "image/png")]
    assert resource_returning({"a": [1]}).contents == [TextResourceContents(uri, '{"a":[1]}', "application/json")]
    assert resource_returning([1, 2]).contents == [TextResourceContents(uri, "[1,2]", "application/json")]
    assert resource_returning(User(name="a")).contents[0] == TextResourceContents(
        uri, '{"name":"a","role":"member"}', "application/json"
    )
    assert resource_returning(Point(1, 2)).contents[0] == TextResourceContents(uri, '{"x":1,"y":2}', "application/json")
    given = ReadResourceResult([TextResourceContents(uri, "t")])
    assert resource_returning(given) is given
    blob = BlobResourceContents(uri, "aGk=")
    assert resource_returning(blob).contents == [blob]
    assert resource_returning([blob, TextResourceContents(uri, "t")]).contents == [blob, TextResourceContents(uri, "t")]


def test_a_resource_value_json_cannot_hold_is_a_type_error() -> None:
    with pytest.raises(TypeError):
        resource_returning(Opaque())
