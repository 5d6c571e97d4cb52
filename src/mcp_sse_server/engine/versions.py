"""The protocol revisions: which exist, which this package serves, how they negotiate.

Rules, kept here and nowhere else:

1. A revision literal ("2025-06-18") appears in this module only. Every other
   module asks it: ``negotiate`` for ``initialize``, ``for_header`` for the
   HTTP ``MCP-Protocol-Version`` header, ``Revision.methods`` for what a
   session may call, ``Revision.at_least`` where behaviour differs.
2. ``initialize`` answers the client's revision when this package serves it,
   else the latest served one (the client then decides whether to go on).
3. A session's negotiated revision is fixed for its life; the methods it may
   call are that revision's table.

>>> negotiate("2025-06-18").name
'2025-06-18'
>>> negotiate("2025-11-25").name
'2025-11-25'
>>> negotiate("2024-11-05").name
'2024-11-05'
>>> negotiate("1999-01-01") is LATEST
True
>>> LATEST.name
'2025-11-25'
>>> REVISION_2025_11_25.icons, REVISION_2025_06_18.icons
(True, False)
>>> REVISION_2025_06_18.at_least("2025-03-26")
True
>>> [revision.name for revision in SESSION if revision.batches]
['2025-03-26']
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

__all__ = [
    "CLIENT_ACCEPTED",
    "CLIENT_OFFERS",
    "CLIENT_STATELESS",
    "HEADER_DEFAULT",
    "KNOWN_REVISIONS",
    "LATEST",
    "PROTOCOL_VERSION",
    "REVISION_2024_11_05",
    "REVISION_2025_03_26",
    "REVISION_2025_06_18",
    "REVISION_2025_11_25",
    "REVISION_2026_07_28",
    "SERVED",
    "SESSION",
    "STATELESS",
    "Revision",
    "client_accepts",
    "for_header",
    "is_known",
    "negotiate",
    "resumable_streams",
    "served",
    "served_names",
]

# Every revision published so far, oldest first. Dates compare as strings.
KNOWN_REVISIONS: Final = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28")

_MARCH_2025: Final = "2025-03-26"
_JUNE_2025: Final = "2025-06-18"
_NOVEMBER_2025: Final = "2025-11-25"

# Client-to-server requests of the session-based revisions (2024-11-05 to 2025-06-18 share them).
_BASE_METHODS: Final = frozenset(
    {
        "initialize",
        "ping",
        "tools/list",
        "tools/call",
        "resources/list",
        "resources/templates/list",
        "resources/read",
        "resources/subscribe",
        "resources/unsubscribe",
        "prompts/list",
        "prompts/get",
        "completion/complete",
        "logging/setLevel",
    }
)


@dataclass(frozen=True, slots=True)
class Revision:
    """One protocol revision as this package serves it.

    ``methods`` are the client-to-server requests of the protocol a session of
    this revision may call (an extension's are served at every revision:
    ``handlers.py``); ``handshake`` is True for the revisions that open a
    session with ``initialize``.
    """

    name: str
    methods: frozenset[str]
    handshake: bool = True

    def at_least(self, other: str) -> bool:
        """True when this revision is ``other`` or newer."""
        return self.name >= other

    # What differs between the served revisions, named so no other module needs a date. What a
    # session of an older revision sees without them is in ``downlevel.py``.

    @property
    def tool_annotations(self) -> bool:
        """Tools' ``annotations`` (readOnlyHint and the rest), audio content, the ``completions``
        capability and progress ``message``: new in 2025-03-26."""
        return self.name >= _MARCH_2025

    @property
    def batches(self) -> bool:
        """JSON-RPC batches (an array of messages in one POST or line): 2025-03-26 only; 2025-06-18
        removed them again."""
        return self.name == _MARCH_2025

    @property
    def structured_output(self) -> bool:
        """Tools' ``outputSchema`` and results' ``structuredContent``, and resource links among a
        result's content: new in 2025-06-18."""
        return self.name >= _JUNE_2025

    @property
    def titles(self) -> bool:
        """``title`` (a display name) on tools, prompts and their arguments, resources, templates
        and serverInfo: new in 2025-06-18."""
        return self.name >= _JUNE_2025

    @property
    def elicitation(self) -> bool:
        """elicitation/create (the server asking the user through the client): new in 2025-06-18."""
        return self.name >= _JUNE_2025

    @property
    def resumable_streams(self) -> bool:
        """SSE streams start with a priming event, every event has an id, and a stream can be
        resumed with GET + Last-Event-ID (SEP-1699)."""
        return self.name >= _NOVEMBER_2025

    @property
    def icons(self) -> bool:
        """Icons on tools, prompts, resources, templates, links and serverInfo (SEP-973), and
        serverInfo's ``description`` and ``websiteUrl``."""
        return self.name >= _NOVEMBER_2025

    @property
    def elicitation_modes(self) -> bool:
        """Elicitation ``mode`` (form and url, SEP-1036), multi-select enums (SEP-1330)."""
        return self.name >= _NOVEMBER_2025

    @property
    def sampling_tools(self) -> bool:
        """``tools``/``toolChoice`` in sampling/createMessage and tool-use content (SEP-1577)."""
        return self.name >= _NOVEMBER_2025

    @property
    def core_tasks(self) -> bool:
        """Tasks as the core protocol had them (SEP-1686): the ``tasks`` capability, a call's
        ``params.task``, tasks/get|result|list|cancel. 2026-07-28 moved them into the Tasks
        extension, with another wire format (``tasks.py``)."""
        return self.handshake and self.name >= _NOVEMBER_2025

    def __str__(self) -> str:
        return self.name


# 2024-11-05 (the HTTP+SSE transport's) and 2025-03-26 (Streamable HTTP's first) have the same
# requests as 2025-06-18; what their sessions see differs (the properties above).
REVISION_2024_11_05: Final = Revision("2024-11-05", _BASE_METHODS)
REVISION_2025_03_26: Final = Revision(_MARCH_2025, _BASE_METHODS)
REVISION_2025_06_18: Final = Revision(_JUNE_2025, _BASE_METHODS)
# 2025-11-25 adds the core tasks' requests (served by a server with task tools; -32601 otherwise).
REVISION_2025_11_25: Final = Revision(
    _NOVEMBER_2025, _BASE_METHODS | {"tasks/get", "tasks/result", "tasks/list", "tasks/cancel"}
)

# 2026-07-28, the stateless revision: no handshake and no session; every request carries its
# protocol version and client capabilities in params._meta. The package calls the two eras
# "stateless" and "session".
# server/discover and subscriptions/listen are new, and the Tasks extension's tasks/get, update
# and cancel; initialize, ping, logging/setLevel and resources/(un)subscribe are gone.
REVISION_2026_07_28: Final = Revision(
    "2026-07-28",
    (_BASE_METHODS - {"initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe"})
    | {"server/discover", "subscriptions/listen", "tasks/get", "tasks/update", "tasks/cancel"},
    handshake=False,
)

# What this package serves, oldest first. Session revisions are negotiated by initialize (the
# last is preferred, and answered to an unknown request); stateless ones are named per request.
SERVED: Final[tuple[Revision, ...]] = (
    REVISION_2024_11_05,
    REVISION_2025_03_26,
    REVISION_2025_06_18,
    REVISION_2025_11_25,
    REVISION_2026_07_28,
)
SESSION: Final = tuple(revision for revision in SERVED if revision.handshake)
STATELESS: Final = tuple(revision for revision in SERVED if not revision.handshake)
LATEST: Final = SESSION[-1]

# The latest revision this package serves (what a server built here answers by default).
# Clients offer ``CLIENT_OFFERS``.
PROTOCOL_VERSION: Final = LATEST.name

_BY_NAME: Final = {revision.name: revision for revision in SERVED}
_RESUMABLE: Final = frozenset(revision.name for revision in SERVED if revision.resumable_streams)

# MCP-Protocol-Version values accepted on a session's requests: every session revision (a
# request's header need not name the session's own: the official conformance suite's raw
# requests send 2025-03-26 on sessions negotiated at 2025-06-18).
_HEADER_ACCEPTED: Final = frozenset(revision.name.encode("ascii") for revision in SESSION)

# A request without MCP-Protocol-Version is read as this revision (the
# transport specification's backwards-compatibility rule).
HEADER_DEFAULT: Final = REVISION_2025_06_18


# The revision a client of this package offers in ``initialize``: the client
# side (SSE resumption, elicitation modes and defaults, sampling tools) speaks
# 2025-11-25 whatever this package serves.
CLIENT_OFFERS: Final = REVISION_2025_11_25.name

# What a client of this package accepts in an initialize answer: every
# session-based revision up to the one it offers (older servers answer older
# revisions; the legacy HTTP+SSE transport speaks 2024-11-05).
CLIENT_ACCEPTED: Final = tuple(name for name in KNOWN_REVISIONS if name <= CLIENT_OFFERS)


# The stateless revisions a client of this package speaks (it stamps every request with one),
# preferred last. A client probes for them first and falls back to the handshake (CLIENT_OFFERS).
CLIENT_STATELESS: Final = (REVISION_2026_07_28.name,)


def client_accepts(name: str) -> bool:
    """True when a client of this package can go on with a server that answered ``name``."""
    return name in CLIENT_ACCEPTED


def resumable_streams(name: str | None) -> bool:
    """True when sessions of revision ``name`` get resumable SSE streams."""
    return name in _RESUMABLE


def served(name: str) -> Revision | None:
    """The served revision called ``name``, or None."""
    return _BY_NAME.get(name)


def is_known(name: str) -> bool:
    """True for any published revision, served or not."""
    return name in KNOWN_REVISIONS


def negotiate(requested: str) -> Revision:
    """The revision to answer an ``initialize`` that asked for ``requested`` (a session revision)."""
    revision = _BY_NAME.get(requested)
    return revision if revision is not None and revision.handshake else LATEST


def for_header(value: bytes) -> bool:
    """True when an ``MCP-Protocol-Version`` header value may be served on a session."""
    return value in _HEADER_ACCEPTED


def served_names() -> str:
    """The revisions a session may use, as a human-readable list, for error messages."""
    return ", ".join(revision.name for revision in SESSION)
