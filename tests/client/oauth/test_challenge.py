"""``WWW-Authenticate`` parsing (RFC 9110 §11.6.1; the digest's CL-1 and §6 wire examples)."""

from __future__ import annotations

import random
import string

import pytest

from mcp_sse_server.client.oauth.challenge import Challenge, parse_www_authenticate, token_challenge

PRM = "https://host/.well-known/oauth-protected-resource/path/mcp"


def parsed(*values: str) -> list[tuple[str, dict[str, str]]]:
    return [(c.scheme, dict(c.params)) for c in parse_www_authenticate(values)]


GRAMMAR = [
    pytest.param(['Bearer scope="a, b", error=x'], [("bearer", {"scope": "a, b", "error": "x"})], id="quoted-comma"),
    pytest.param(
        [r'Bearer error_description="say \"hi\" \\ back"'],
        [("bearer", {"error_description": 'say "hi" \\ back'})],
        id="escapes",
    ),
    pytest.param([r'Bearer realm="\a\,\ "'], [("bearer", {"realm": "a, "})], id="any-char-escaped"),
    pytest.param([r'Bearer realm="a\"", scope="b"'], [("bearer", {"realm": 'a"', "scope": "b"})], id="quote-at-end"),
    pytest.param(
        ['Basic realm="x", Bearer error="invalid_token"'],
        [("basic", {"realm": "x"}), ("bearer", {"error": "invalid_token"})],
        id="basic-then-bearer",
    ),
    pytest.param(
        ['Newauth realm="apps", type=1, title="Login to \\"apps\\"", Basic realm="simple"'],
        [("newauth", {"realm": "apps", "type": "1", "title": 'Login to "apps"'}), ("basic", {"realm": "simple"})],
        id="rfc9110-example",
    ),
    pytest.param(
        ['Basic realm="x"', 'Bearer scope="s"', "DPoP algs=ES256"],
        [("basic", {"realm": "x"}), ("bearer", {"scope": "s"}), ("dpop", {"algs": "ES256"})],
        id="repeated-values",
    ),
    pytest.param(
        ['Bearer scope="s"', "error=invalid_token"],
        [("bearer", {"scope": "s"})],
        id="params-do-not-continue-into-the-next-value",
    ),
    pytest.param(
        ['Bearer error="e", scope="s", resource_metadata="m"', 'Bearer resource_metadata="m", scope="s", error="e"'],
        [("bearer", {"error": "e", "scope": "s", "resource_metadata": "m"})] * 2,
        id="order",
    ),
    pytest.param(
        ['BEARER Error="Invalid_Token", SCOPE=MCP:Tools'],
        [("bearer", {"error": "Invalid_Token", "scope": "MCP:Tools"})],
        id="names-case-insensitive-values-kept",
    ),
    pytest.param(
        ['DPoP algs="ES256 PS256", error="use_dpop_nonce"'],
        [("dpop", {"algs": "ES256 PS256", "error": "use_dpop_nonce"})],
        id="dpop",
    ),
    pytest.param(['Bearer realm = \t"x" ,scope =y'], [("bearer", {"realm": "x", "scope": "y"})], id="bws-and-ows"),
    pytest.param([" ,Bearer ,, a=b , ,c=d,"], [("bearer", {"a": "b", "c": "d"})], id="empty-elements"),
    pytest.param(["Bearer"], [("bearer", {})], id="bare-scheme"),
    pytest.param(["Bearer, Basic"], [("bearer", {}), ("basic", {})], id="two-bare-schemes"),
    pytest.param(['Bearer realm=""'], [("bearer", {"realm": ""})], id="empty-quoted-value"),
    pytest.param(['Bearer scope="a", scope="b"'], [("bearer", {"scope": "a"})], id="repeated-param-first-wins"),
    pytest.param(["Basic dXNlcjpwYXNz"], [("basic", {})], id="token68"),
    pytest.param(["Negotiate abc/+.~_-==, Bearer x=y"], [("negotiate", {}), ("bearer", {"x": "y"})], id="token68-list"),
    pytest.param(["Negotiate abc=, x=y"], [("negotiate", {})], id="token68-takes-no-params"),
    pytest.param(['Bearer x="ü é ☃"'], [("bearer", {"x": "ü é ☃"})], id="non-ascii-kept"),
    pytest.param(
        ["Bearer resource_metadata=https://host/.well-known/x?a=b, scope=mcp:tools"],
        [("bearer", {"resource_metadata": "https://host/.well-known/x?a=b", "scope": "mcp:tools"})],
        id="unquoted-non-token-values-tolerated",
    ),
]


@pytest.mark.parametrize(("values", "expected"), GRAMMAR)
def test_grammar(values: list[str], expected: list[tuple[str, dict[str, str]]]) -> None:
    assert parsed(*values) == expected


MALFORMED = [
    pytest.param([], [], id="no-values"),
    pytest.param([""], [], id="empty"),
    pytest.param(["   ", ",", " , ,\t"], [], id="blank"),
    pytest.param(['"quoted"', "=x", "@@@", "\x00"], [], id="garbage"),
    pytest.param(["a=b, c=d"], [], id="orphan-params"),
    pytest.param(['Bearer error="unterminated'], [("bearer", {})], id="unterminated-quote"),
    pytest.param(['Bearer error="unterminated, scope="s"'], [("bearer", {})], id="quote-closed-by-the-next-one"),
    pytest.param(['Bearer error="x\\'], [("bearer", {})], id="dangling-backslash"),
    pytest.param(["Bearer a=b junk, c=d"], [("bearer", {"c": "d"})], id="junk-after-value"),
    pytest.param(["Bearer x=y, a=, c=d"], [("bearer", {"x": "y", "c": "d"})], id="empty-unquoted-value"),
    pytest.param(["Bearer a=, c=d"], [("bearer", {})], id="first-item-a=-is-a-token68"),
    pytest.param(['Bearer x=y, a=b"c", d=e'], [("bearer", {"x": "y", "d": "e"})], id="quote-inside-unquoted"),
    pytest.param(['Bearer a="x"y, c=d'], [("bearer", {"c": "d"})], id="junk-after-quote"),
    pytest.param(["Bearer @@@, error=x"], [("bearer", {"error": "x"})], id="junk-after-scheme"),
    pytest.param(
        ['Bearer error="x", @@@ oops, scope="lost", Basic realm="r"'],
        [("bearer", {"error": "x"}), ("basic", {"realm": "r"})],
        id="garbage-element-closes-the-challenge",
    ),
    pytest.param(['B@sic realm="x", Bearer e=f'], [("bearer", {"e": "f"})], id="bad-scheme"),
    pytest.param(['Bearer="x", Basic'], [("basic", {})], id="scheme-with-equals"),
    pytest.param(['Bearer a="b" "c", d=e'], [("bearer", {"d": "e"})], id="two-quoted"),
    pytest.param(['Bearer realm="a,b" junk, c=d'], [("bearer", {"c": "d"})], id="junk-comma-in-quotes"),
    pytest.param(['Bearer realm="x\\", junk", c=d'], [("bearer", {"realm": 'x", junk', "c": "d"})], id="escaped-comma"),
]


@pytest.mark.parametrize(("values", "expected"), MALFORMED)
def test_malformed_parts_are_skipped(values: list[str], expected: list[tuple[str, dict[str, str]]]) -> None:
    assert parsed(*values) == expected


# The digest's §6.1 and §6.2, as our server and the conformance and TS servers send them.
WIRE = [
    pytest.param(
        f'Bearer resource_metadata="{PRM}", scope="mcp:tools"',
        {"resource_metadata": PRM, "scope": "mcp:tools"},
        id="ours-401-no-token",
    ),
    pytest.param(
        'Bearer error="invalid_token", error_description="Missing Authorization header", '
        'resource_metadata="http://localhost:44609/custom/metadata/location.json"',
        {
            "error": "invalid_token",
            "error_description": "Missing Authorization header",
            "resource_metadata": "http://localhost:44609/custom/metadata/location.json",
        },
        id="ts-sdk-401-no-token",
    ),
    pytest.param(
        f'Bearer error="invalid_token", error_description="token expired", resource_metadata="{PRM}", '
        'scope="mcp:tools"',
        {
            "error": "invalid_token",
            "error_description": "token expired",
            "resource_metadata": PRM,
            "scope": "mcp:tools",
        },
        id="ours-401-bad-token",
    ),
    pytest.param(
        f'Bearer error="insufficient_scope", scope="mcp:tools files:write", resource_metadata="{PRM}", '
        'error_description="files:write needed for write_file"',
        {
            "error": "insufficient_scope",
            "scope": "mcp:tools files:write",
            "resource_metadata": PRM,
            "error_description": "files:write needed for write_file",
        },
        id="ours-403",
    ),
    pytest.param(
        'Bearer scope="mcp:write", resource_metadata="http://localhost:5/.well-known/oauth-protected-resource/mcp", '
        'error="insufficient_scope"',
        {
            "scope": "mcp:write",
            "resource_metadata": "http://localhost:5/.well-known/oauth-protected-resource/mcp",
            "error": "insufficient_scope",
        },
        id="conformance-step-up-403",
    ),
]


@pytest.mark.parametrize(("header", "params"), WIRE)
def test_wire_examples(header: str, params: dict[str, str]) -> None:
    challenge = token_challenge([header])
    assert challenge == Challenge("bearer", params)
    assert challenge.error == params.get("error")
    assert challenge.scope == params.get("scope")
    assert challenge.resource_metadata == params.get("resource_metadata")
    assert challenge.error_description == params.get("error_description")


def test_dpop_wire_examples() -> None:
    rm = "http://localhost:5/.well-known/oauth-protected-resource/mcp"
    assert token_challenge([f'DPoP resource_metadata="{rm}"']) == Challenge("dpop", {"resource_metadata": rm})
    nonce = token_challenge(['DPoP error="use_dpop_nonce", error_description="Resource server requires nonce"'])
    assert nonce is not None and nonce.scheme == "dpop" and nonce.error == "use_dpop_nonce"


@pytest.mark.parametrize(
    ("values", "scheme", "params"),
    [
        (['Basic realm="x", Bearer error="invalid_token"'], "bearer", {"error": "invalid_token"}),
        (['Basic realm="x"', "DPoP algs=ES256", "Bearer a=b"], "dpop", {"algs": "ES256"}),
        (["Bearer a=b, DPoP c=d"], "bearer", {"a": "b"}),
        (["bearer"], "bearer", {}),
    ],
)
def test_token_challenge_is_the_first_bearer_or_dpop(values: list[str], scheme: str, params: dict[str, str]) -> None:
    assert token_challenge(values) == Challenge(scheme, params)


@pytest.mark.parametrize(
    ("values", "params"),
    [
        # RFC 9449 §7.1: a server taking both schemes sends both challenges; the metadata URL and
        # the scope were lost when they were on the second one only.
        (
            ['DPoP algs="ES256", Bearer resource_metadata="https://h/prm", scope="mcp:tools"'],
            {"algs": "ES256", "resource_metadata": "https://h/prm", "scope": "mcp:tools"},
        ),
        (
            ['Bearer realm="r"', 'DPoP algs="ES256", error="insufficient_scope", scope="mcp:admin"'],
            {"realm": "r", "error": "insufficient_scope", "scope": "mcp:admin"},
        ),
        # The first challenge's own values win; other parameters stay where they are.
        (['Bearer scope="a", DPoP scope="b", algs="ES256"'], {"scope": "a"}),
    ],
)
def test_a_token_challenge_lacking_what_a_later_one_names_takes_it(values: list[str], params: dict[str, str]) -> None:
    challenge = token_challenge(values)
    assert challenge is not None and dict(challenge.params) == params


@pytest.mark.parametrize("values", [[], [""], ['Basic realm="x"'], ["Negotiate abc=="], ["garbage @@@"]])
def test_no_token_challenge(values: list[str]) -> None:
    assert token_challenge(values) is None


def test_properties_absent() -> None:
    challenge = Challenge("bearer", {})
    assert (challenge.error, challenge.scope, challenge.resource_metadata, challenge.error_description) == (None,) * 4


def test_accepts_any_iterable() -> None:
    assert [c.scheme for c in parse_www_authenticate(iter(["Bearer", "Basic"]))] == ["bearer", "basic"]


# ------------------------------------------------------------------------------------------
# Property-style: generated challenges, rendered with random (valid) spelling, parse back.

TCHARS = "!#$%&'*+-.^_`|~" + string.ascii_letters + string.digits
VALUE_CHARS = string.ascii_letters + string.digits + ' ,;="\\=:/.\t' + "éü☃" + TCHARS


def _token(rng: random.Random, length: int = 8) -> str:
    return "".join(rng.choice(TCHARS) for _ in range(rng.randint(1, length)))


def _recase(rng: random.Random, text: str) -> str:
    return "".join(c.upper() if rng.random() < 0.5 else c.lower() for c in text)


def _render_value(rng: random.Random, value: str) -> str:
    if value and all(c in TCHARS for c in value) and rng.random() < 0.5:
        return value
    # Escape what must be, and sometimes what need not be: "\x" is "x" either way.
    body = "".join("\\" + c if c in '"\\' or rng.random() < 0.1 else c for c in value)
    return f'"{body}"'


def _ows(rng: random.Random) -> str:
    return rng.choice(["", "", " ", "  ", "\t", " \t"])


def _render(rng: random.Random, scheme: str, params: dict[str, str]) -> str:
    items = [
        f"{_recase(rng, name)}{_ows(rng)}={_ows(rng)}{_render_value(rng, value)}" for name, value in params.items()
    ]
    if not items:
        return _recase(rng, scheme)
    joined = items[0] + "".join(rng.choice([",", ", ", " ,", ", , ", ",\t"]) + item for item in items[1:])
    return f"{_recase(rng, scheme)}{rng.choice([' ', '  '])}{joined}"


def _generate(rng: random.Random) -> list[tuple[str, dict[str, str]]]:
    challenges = []
    for _ in range(rng.randint(1, 4)):
        params: dict[str, str] = {}
        for _ in range(rng.randint(0, 5)):
            name = _token(rng).lower()
            params.setdefault(name, "".join(rng.choice(VALUE_CHARS) for _ in range(rng.randint(0, 12))))
        challenges.append((_token(rng).lower(), params))
    return challenges


@pytest.mark.parametrize("seed", range(20))
def test_generated_challenges_round_trip(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(50):
        challenges = _generate(rng)
        rendered = [_render(rng, scheme, params) for scheme, params in challenges]
        # Some challenges share a header value, others come in repeated values.
        values: list[str] = []
        for text in rendered:
            if values and rng.random() < 0.5:
                values[-1] += rng.choice([", ", ",", " , "]) + text
            else:
                values.append(_ows(rng) + text + _ows(rng))
        assert parsed(*values) == challenges, values
        # A parse, rendered and parsed again, gives the same parameters.
        again = [_render(rng, c.scheme, dict(c.params)) for c in parse_www_authenticate(values)]
        assert parsed(", ".join(again)) == challenges


@pytest.mark.parametrize("seed", range(5))
def test_random_text_never_raises(seed: int) -> None:
    rng = random.Random(seed)
    alphabet = 'Bearer DPoP="\\,= \t\x00é' + string.ascii_letters
    for _ in range(500):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        for challenge in parse_www_authenticate([text]):
            assert challenge.scheme and challenge.scheme == challenge.scheme.lower()
            assert all(name == name.lower() for name in challenge.params)
