"""UriTemplate: the {var} / {+var} subset of RFC 6570, and nothing else."""

from __future__ import annotations

import pytest

from mcp_sse_server import UriTemplate


def test_simple_variable_matches_one_segment() -> None:
    template = UriTemplate("users/{id}/posts/{post}")
    assert template.variables == ["id", "post"]
    assert template.match("users/42/posts/7") == {"id": "42", "post": "7"}
    assert template.match("users/4/2/posts/7") is None
    assert template.match("users//posts/7") is None  # a variable is never empty
    assert template.match("users/42/posts/7/extra") is None
    assert template.match("prefix/users/42/posts/7") is None


def test_reserved_variable_spans_slashes() -> None:
    template = UriTemplate("file:///{+path}")
    assert template.match("file:///src/pkg/app.py") == {"path": "src/pkg/app.py"}
    assert template.match("file:///a") == {"path": "a"}
    assert template.match("file:///") is None
    assert template.match("http:///a") is None


def test_simple_and_reserved_differ_only_in_slashes() -> None:
    assert UriTemplate("x://{v}").match("x://a/b") is None
    assert UriTemplate("x://{+v}").match("x://a/b") == {"v": "a/b"}


def test_mixed_variables_and_literal_suffix() -> None:
    template = UriTemplate("repo://{owner}/{+path}.md")
    assert template.match("repo://me/docs/intro.md") == {"owner": "me", "path": "docs/intro"}
    assert template.match("repo://me/docs/intro.txt") is None


def test_match_percent_decodes() -> None:
    assert UriTemplate("q://{term}").match("q://hello%20world") == {"term": "hello world"}
    assert UriTemplate("q://{term}").match("q://a%2Fb") == {"term": "a/b"}


def test_literal_regex_characters_are_literal() -> None:
    template = UriTemplate("a.b://(x)/{id}?q=1")
    assert template.match("a.b://(x)/5?q=1") == {"id": "5"}
    assert template.match("aXb://(x)/5?q=1") is None


def test_no_variables_matches_exactly() -> None:
    template = UriTemplate("config://app")
    assert template.variables == []
    assert template.match("config://app") == {}
    assert template.match("config://app2") is None


def test_expand() -> None:
    assert UriTemplate("users/{id}/posts").expand({"id": "42"}) == "users/42/posts"
    assert UriTemplate("q://{term}").expand({"term": "a b/c"}) == "q://a%20b%2Fc"
    assert UriTemplate("file:///{+path}").expand({"path": "src/a b.py"}) == "file:///src/a%20b.py"
    assert UriTemplate("file:///{+path}").expand({"path": "a/b?c#d"}) == "file:///a/b?c#d"
    assert UriTemplate("x://{missing}").expand({}) == "x://"


def test_expand_then_match_round_trips() -> None:
    template = UriTemplate("notes://{folder}/{+rest}")
    values = {"folder": "my notes", "rest": "2025/june/day 1"}
    assert template.match(template.expand(values)) == values


@pytest.mark.parametrize(
    "template",
    [
        "search{?q}",
        "search{?q,lang}",
        "page{#section}",
        "x://{a,b}",
        "x://{var:3}",
        "x://{list*}",
        "x://{/path}",
        "x://{.ext}",
        "x://{;params}",
        "x://{&more}",
        "x://{=eq}",
        "x://{!bang}",
        "x://{@at}",
        "x://{|pipe}",
        "x://{+a,b}",
        "x://{+a:2}",
        "x://{}",
        "x://{+}",
        "x://{a-b}",
        "x://{ a }",
        "x://{open",
        "x://close}",
        "x://}{",
        "x://{{a}}",
        "x://{a}/{a}",
    ],
)
def test_other_forms_are_refused_in_the_constructor(template: str) -> None:
    with pytest.raises(ValueError):
        UriTemplate(template)


def test_equality_and_repr() -> None:
    assert UriTemplate("a://{x}") == UriTemplate("a://{x}")
    assert UriTemplate("a://{x}") != UriTemplate("a://{y}")
    assert len({UriTemplate("a://{x}"), UriTemplate("a://{x}")}) == 1
    assert repr(UriTemplate("a://{x}")) == "UriTemplate('a://{x}')"
