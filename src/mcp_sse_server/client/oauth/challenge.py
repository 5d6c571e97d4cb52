"""``WWW-Authenticate`` parsing: what a 401 or 403 asks of the client (pure).

Rules (RFC 9110 §11.6.1 and §11.2; the digest's CL-1):

1. A header value is a comma-separated list of challenges, and a response may
   repeat the header: every value is read, in order, as one list.
2. A challenge is an auth-scheme (a token, compared case-insensitively, kept in
   lower case) followed either by nothing, by one token68 (tolerated, not
   kept: MCP servers never send one) or by comma-separated auth-params.
3. An auth-param is ``name = value`` with optional whitespace around ``=``; the
   name is a token, kept in lower case; the value is a token or a
   quoted-string, whose backslash escapes are undone (so ``\\"`` is ``"``) and
   whose commas belong to the value. Parameters come in any order. An
   unquoted value runs to the next whitespace or comma even when it holds
   characters a token may not (``scope=mcp:tools``, a bare URL): servers send
   them, and nothing else could be meant.
4. A list element that starts with ``name=`` belongs to the open challenge; any
   other element that starts with a token starts a new challenge. Empty
   elements (``,,``) are allowed.
5. Malformed parts are skipped, never raised: an element that is neither a
   parameter nor a challenge is dropped, and so are the parameters after it
   until the next challenge (they cannot be attributed); a malformed
   parameter is dropped and its challenge kept. A repeated parameter keeps
   its first value (RFC 9110 allows each name once).
6. An MCP server challenges with ``Bearer`` (or ``DPoP``, RFC 9449):
   ``token_challenge`` picks the first such challenge. A server taking both sends
   both (RFC 9449 §7.1), and may name the metadata, scope and error on one of them
   only (``DPoP algs="ES256", Bearer resource_metadata=...``): what the first lacks
   of ``resource_metadata``, ``scope``, ``error`` and ``error_description`` is taken
   from the later ones, so the metadata URL and the scope asked are never lost.

>>> [challenge] = parse_www_authenticate(['Bearer scope="mcp:write", error="insufficient_scope"'])
>>> challenge.scheme, challenge.scope, challenge.error
('bearer', 'mcp:write', 'insufficient_scope')
>>> [c.scheme for c in parse_www_authenticate(['Basic realm="a, b", DPoP algs="ES256"', "Bearer"])]
['basic', 'dpop', 'bearer']
>>> token_challenge(['Basic realm="x", Bearer error="invalid_token"']).error
'invalid_token'
"""

from __future__ import annotations

import string
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final

__all__ = ["Challenge", "parse_www_authenticate", "token_challenge"]

_TCHAR: Final = frozenset("!#$%&'*+-.^_`|~" + string.ascii_letters + string.digits)
_TOKEN68: Final = frozenset("-._~+/" + string.ascii_letters + string.digits)
_WS: Final = " \t"
_NOT_BARE: Final = frozenset(' \t,"')
_TOKEN_SCHEMES: Final = ("bearer", "dpop")
_SHARED: Final = ("resource_metadata", "scope", "error", "error_description")  # rule 6


@dataclass(frozen=True, slots=True)
class Challenge:
    """One challenge: its scheme in lower case, and its parameters (names in lower case,
    values unquoted and unescaped)."""

    scheme: str
    params: Mapping[str, str]

    @property
    def error(self) -> str | None:
        """``error`` (RFC 6750 §3): ``invalid_token``, ``insufficient_scope``, ..."""
        return self.params.get("error")

    @property
    def scope(self) -> str | None:
        """``scope``: the raw space-separated string."""
        return self.params.get("scope")

    @property
    def resource_metadata(self) -> str | None:
        """``resource_metadata`` (RFC 9728 §5.1): where the protected-resource metadata is."""
        return self.params.get("resource_metadata")

    @property
    def error_description(self) -> str | None:
        """``error_description``: text for a developer, never for the user."""
        return self.params.get("error_description")


def parse_www_authenticate(values: Iterable[str]) -> list[Challenge]:
    """Every challenge in every ``WWW-Authenticate`` value, in order (rules 1 to 5).

    >>> parse_www_authenticate(['Newauth realm="apps", type=1, title="Login to \\\\"apps\\\\"", Basic realm="simple"'])
    [Challenge(scheme='newauth', params={'realm': 'apps', 'type': '1', 'title': 'Login to "apps"'}), \
Challenge(scheme='basic', params={'realm': 'simple'})]
    >>> parse_www_authenticate(["", " ,, ", '"quoted"', "=value"])
    []
    """
    challenges: list[Challenge] = []
    for value in values:
        # Each value is parsed alone: a challenge does not continue into the next header line.
        _Parser(value, challenges).run()
    return challenges


def token_challenge(values: Iterable[str]) -> Challenge | None:
    """The first ``Bearer`` or ``DPoP`` challenge (what an MCP server sends), else None, with
    what it lacks of ``_SHARED`` taken from the later ones (rule 6).

    >>> token_challenge(['DPoP algs="ES256", Bearer resource_metadata="https://h/prm", scope="s"']).params
    {'algs': 'ES256', 'resource_metadata': 'https://h/prm', 'scope': 's'}
    """
    found = [challenge for challenge in parse_www_authenticate(values) if challenge.scheme in _TOKEN_SCHEMES]
    if not found:
        return None
    first = found[0]
    params = dict(first.params)
    for later in found[1:]:
        for name in _SHARED:
            if name not in params and name in later.params:
                params[name] = later.params[name]
    return first if len(params) == len(first.params) else Challenge(first.scheme, params)


class _Parser:
    """One header value, scanned left to right; challenges are appended to ``out``."""

    __slots__ = ("out", "text")

    def __init__(self, text: str, out: list[Challenge]) -> None:
        self.text = text
        self.out = out

    def run(self) -> None:
        text, end = self.text, len(self.text)
        params: dict[str, str] | None = None  # the open challenge's, while parameters may follow
        i = 0
        while True:
            i = self._skip(i, _WS + ",")
            if i >= end:
                return
            if params is not None:
                param = self._param(i)
                if param is not None:
                    params.setdefault(param[0], param[1])
                    i = param[2]
                    continue
            name_end = self._token(i)
            if name_end > i and (name_end == end or text[name_end] in _WS + ","):
                params = {}
                self.out.append(Challenge(text[i:name_end].lower(), params))
                i = self._skip(name_end, _WS)
                if i >= end or text[i] == ",":
                    continue
                param = self._param(i)
                if param is not None:
                    params[param[0]] = param[1]
                    i = param[2]
                    continue
                token68_end = self._token68(i)
                if token68_end is not None:
                    params = None  # a token68 challenge has no parameters
                    i = token68_end
                    continue
                i = self._element_end(i)  # junk after the scheme: the challenge stays, bare
                continue
            if not self._looks_like_param(i):
                params = None  # an element that is no challenge: what follows cannot be attributed
            i = self._element_end(i)

    def _param(self, i: int) -> tuple[str, str, int] | None:
        """``(name, value, index after it)`` for a whole list element ``name=value`` at ``i``, else None."""
        text, end = self.text, len(self.text)
        name_end = self._token(i)
        if name_end == i:
            return None
        j = self._skip(name_end, _WS)
        if j >= end or text[j] != "=":
            return None
        j = self._skip(j + 1, _WS)
        if j < end and text[j] == '"':
            quoted = self._quoted(j)
            if quoted is None:
                return None
            value, j = quoted
        else:
            value_end = self._bare(j)
            if value_end == j:
                return None
            value, j = text[j:value_end], value_end
        j = self._skip(j, _WS)
        if j < end and text[j] != ",":
            return None  # something after the value: the element is malformed
        return text[i:name_end].lower(), value, j

    def _looks_like_param(self, i: int) -> bool:
        """True when the element at ``i`` starts like a parameter (``name =``), well-formed or not."""
        name_end = self._token(i)
        j = self._skip(name_end, _WS)
        return name_end > i and j < len(self.text) and self.text[j] == "="

    def _quoted(self, i: int) -> tuple[str, int] | None:
        """The unescaped content of the quoted-string opening at ``i`` and the index after it;
        None when it never closes."""
        text, end = self.text, len(self.text)
        chars: list[str] = []
        j = i + 1
        while j < end:
            char = text[j]
            if char == '"':
                return "".join(chars), j + 1
            if char == "\\":
                if j + 1 == end:
                    return None
                chars.append(text[j + 1])
                j += 2
            else:
                chars.append(char)
                j += 1
        return None

    def _token68(self, i: int) -> int | None:
        """The index after a token68 filling the element at ``i``, else None."""
        text, end = self.text, len(self.text)
        j = i
        while j < end and text[j] in _TOKEN68:
            j += 1
        if j == i:
            return None
        while j < end and text[j] == "=":
            j += 1
        j = self._skip(j, _WS)
        return j if j >= end or text[j] == "," else None

    def _token(self, i: int) -> int:
        """The index after the token at ``i`` (``i`` itself when there is none)."""
        text, end = self.text, len(self.text)
        while i < end and text[i] in _TCHAR:
            i += 1
        return i

    def _bare(self, i: int) -> int:
        """The index after the unquoted value at ``i`` (rule 3); ``i`` itself when there is none.
        It may not start with ``=``: ``abc==`` is a token68, not ``abc`` set to ``=``."""
        text, end = self.text, len(self.text)
        if i < end and text[i] == "=":
            return i
        while i < end and text[i] not in _NOT_BARE:
            i += 1
        return i

    def _skip(self, i: int, chars: str) -> int:
        text, end = self.text, len(self.text)
        while i < end and text[i] in chars:
            i += 1
        return i

    def _element_end(self, i: int) -> int:
        """The index of the comma ending the element at ``i`` (outside quoted-strings), or the end."""
        text, end = self.text, len(self.text)
        quoted = False
        while i < end:
            char = text[i]
            if quoted:
                if char == "\\":
                    i += 1
                elif char == '"':
                    quoted = False
            elif char == '"':
                quoted = True
            elif char == ",":
                return i
            i += 1
        return end
