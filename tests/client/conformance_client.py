"""The client the official conformance suite launches for its client scenarios:

    node .../@modelcontextprotocol/conformance/dist/index.js client \\
        --command "<python> tests/client/conformance_client.py" --scenario sse-retry

The runner appends the server URL as the last argument and names the scenario
in ``MCP_CONFORMANCE_SCENARIO``. This script connects a StreamableHttpClient,
does what the scenario asks and exits 0 (1 with the error on stderr).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any

from mcp_sse_server.client import McpClient, SkillVerificationError, StreamableHttpClient
from mcp_sse_server.client.oauth import EnterpriseIdentity, HeadlessUserAgent, OAuth, OAuthSettings
from mcp_sse_server.engine.types import Root

# Bounds only a broken run reaches: the runner's own timeout is 30 s.
CALL_TIMEOUT = 20.0

# What the suite's authorization servers expect of a client: this metadata document URL as its
# client id (they never fetch it), and a redirect URI nothing listens on (they redirect at once).
CLIENT_METADATA_URL = "https://conformance-test.local/client-metadata.json"
REDIRECT_URI = "http://localhost:3000/callback"


def oauth_for(scenario: str, context: dict[str, Any]) -> OAuth:
    """The OAuth settings each auth scenario calls for, from the context the suite hands over."""
    name = scenario.removeprefix("auth/")
    settings = OAuthSettings(client_name="mcp-sse-server conformance client", client_metadata_url=CLIENT_METADATA_URL)
    if name == "pre-registration":
        settings = OAuthSettings(client_id=context["client_id"], client_secret=context["client_secret"])
    elif name == "client-credentials-basic":
        settings = OAuthSettings(
            grant="client_credentials", client_id=context["client_id"], client_secret=context["client_secret"]
        )
    elif name == "client-credentials-jwt":
        settings = OAuthSettings(
            grant="client_credentials",
            client_id=context["client_id"],
            private_key=context["private_key_pem"],
            signing_algorithm=context.get("signing_algorithm", "ES256"),
        )
    elif name in ("enterprise-managed-authorization", "cross-app-access-complete-flow"):
        identity = EnterpriseIdentity(
            token_endpoint=context["idp_token_endpoint"],
            client_id=context["idp_client_id"],
            id_token=context["idp_id_token"],
        )
        settings = OAuthSettings(
            grant="enterprise",
            client_id=context["client_id"],
            client_secret=context["client_secret"],
            identity=identity,
        )
    elif name == "wif-jwt-bearer":
        settings = OAuthSettings(grant="jwt_bearer", client_id=context["client_id"], assertion=context["valid_jwt"])
    elif name in ("dpop", "dpop-nonce"):
        settings = OAuthSettings(client_metadata_url=CLIENT_METADATA_URL, dpop=True)
    return OAuth(settings, user_agent=HeadlessUserAgent(REDIRECT_URI))


async def accept_defaults(params: dict[str, Any]) -> dict[str, Any]:
    """A user who accepts the form as presented: every field keeps its default."""
    return {"action": "accept", "content": {}}


async def sample(params: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": {"type": "text", "text": "ok"}, "model": "none", "stopReason": "endTurn"}


async def skills_scenario(client: McpClient, scenario: str) -> None:
    """The sep-2640-client-* scenarios: list the skills (and read nothing, no-prefetch); verify-*:
    load the first skill, SKILL.md first, every file checked against its entry; a file that fails
    stops the load (nothing more is read) and the client exits non-zero."""
    entries = await client.skills.list()
    if scenario == "sep-2640-client-no-prefetch" or not entries:
        return
    try:
        await client.skills.load(entries[0])
    except SkillVerificationError as error:
        raise SystemExit(f"refused skill {entries[0].uri}: {error}") from None


async def run(url: str, scenario: str) -> None:
    auth = None
    if scenario.startswith("auth/"):
        auth = oauth_for(scenario, json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}"))
    # The runner names the revision under test (MCP_CONFORMANCE_PROTOCOL_VERSION); the client
    # probes and must land on it by itself, so it stays in mode "auto". It declares every
    # capability it has a handler for (request-metadata checks each one's shape).
    # The skills mock answers both initialize and server/discover: the revision the runner names
    # picks the era (a session below 2026-07-28), so both are exercised.
    skills = scenario.startswith("sep-2640-client-")
    session = skills and (os.environ.get("MCP_CONFORMANCE_PROTOCOL_VERSION") or "2025-11-25") < "2026-07-28"
    client = StreamableHttpClient(
        url,
        mode="session" if session else "auto",
        elicitation_handler=accept_defaults,
        sampling_handler=sample,
        roots=[Root("file:///tmp", "tmp")],
        request_timeout=CALL_TIMEOUT,
        auth=auth,
    )
    async with client:
        expected = os.environ.get("MCP_CONFORMANCE_PROTOCOL_VERSION")
        if expected == "2026-07-28" and client.protocol_version != expected:
            raise SystemExit(f"negotiated {client.protocol_version}, the scenario runs at {expected}")
        if skills:  # (the skills mock serves no tools)
            await skills_scenario(client, scenario)
            return
        tools = {tool.name: tool for tool in await client.list_tools()}
        if scenario == "sse-retry":
            await client.call_tool("test_reconnection")
        elif scenario == "elicitation-sep1034-client-defaults":
            await client.call_tool("test_client_elicitation_defaults")
        elif scenario == "tools_call":
            await client.call_tool("add_numbers", {"a": 2, "b": 3})
        elif scenario.startswith("auth/"):
            await client.call_tool("test-tool", {})
        elif scenario == "http-custom-headers":  # the calls the scenario names
            context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
            for call in context.get("toolCalls", []):
                await client.call_tool(call["name"], call.get("arguments") or {})
        elif scenario == "http-invalid-tool-headers":  # every tool the client kept (it drops invalid ones)
            for name in tools:
                await client.call_tool(name, {})
        elif scenario == "json-schema-2020-12-preservation":  # the schema as the client holds it, sent back
            await client.call_tool("json_schema_echo", {"schema": tools["json_schema_2020_12_tool"].input_schema})
        elif scenario == "sep-2322-client-request-state":  # its MRTR tools at once (each round's state its own)
            await asyncio.gather(*(client.call_tool(name, {}) for name in tools))
        elif scenario == "http-standard-headers":  # every method the headers are checked on
            for name in tools:
                await client.call_tool(name, {})
            for resource in await client.list_resources():
                await client.read_resource(resource.uri)
            for prompt in await client.list_prompts():
                await client.get_prompt(prompt.name)
        elif scenario not in ("initialize", "request-metadata", "json-schema-ref-no-deref"):  # (listing is all)
            raise SystemExit(f"unknown scenario {scenario!r} (tools: {', '.join(tools)})")


def main() -> None:
    url = sys.argv[-1]
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    try:
        asyncio.run(run(url, scenario))
    except Exception as error:
        print(f"conformance client failed in {scenario}: {type(error).__name__}: {error}", file=sys.stderr)
        raise SystemExit(1) from None


if __name__ == "__main__":
    main()
