"""examples/six_parts.py, the six-part server of the README's comparison, through InMemoryClient."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

from mcp_sse_server.client import InMemoryClient

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "six_parts.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("six_parts", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


async def test_each_of_the_six_parts_answers() -> None:
    progress: list[float] = []
    logs: list[str] = []
    async with InMemoryClient(_load().server, on_log=lambda params: logs.append(str(params["data"]))) as client:
        assert (await client.call_tool("add", {"a": 2, "b": 3})).structured_content == {"result": 5}
        greeted = await client.call_tool("greet", {"user": {"name": "Ann", "age": 7}})
        assert greeted.content[0].text == "Hello, Ann (7)!"  # type: ignore[union-attr]
        counted = await client.call_tool("count", {"steps": 2}, on_progress=lambda done, *_: progress.append(done))
        assert counted.content[0].text == "Counted to 2."  # type: ignore[union-attr]
        assert progress == [1, 2] and logs == ["step 1", "step 2"]
        config = await client.read_resource("config://app")
        assert config.contents[0].text == '{"theme":"dark"}'  # type: ignore[union-attr]
        profile = await client.read_resource("users://7/profile")
        assert profile.contents[0].text == '{"id":7}'  # type: ignore[union-attr]
        prompt = await client.get_prompt("review", {"code": "x = 1"})
        assert prompt.messages[0].content.text == "Please review this code:\n\nx = 1"  # type: ignore[union-attr]
