"""The six-part server: a typed tool, a model tool, an async tool with progress and logs,
a fixed resource, a resource template and a prompt."""

import asyncio

from pydantic import BaseModel

from mcp_sse_server import McpServer, RequestContext

server = McpServer("six-parts")


class User(BaseModel):
    name: str
    age: int


@server.tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@server.tool
def greet(user: User) -> str:
    """Greet a user."""
    return f"Hello, {user.name} ({user.age})!"


@server.tool
async def count(steps: int, context: RequestContext) -> str:
    """Count, reporting progress and logging each step."""
    for step in range(1, steps + 1):
        await context.report_progress(step, total=steps)
        await context.log("info", f"step {step}")
        await asyncio.sleep(0.01)
    return f"Counted to {steps}."


@server.resource("config://app")
def config() -> dict[str, str]:
    """The app's configuration."""
    return {"theme": "dark"}


@server.resource("users://{user_id}/profile")
def profile(user_id: int) -> dict[str, int]:
    """A user's profile."""
    return {"id": user_id}


@server.prompt
def review(code: str) -> str:
    """Ask for a code review."""
    return f"Please review this code:\n\n{code}"


if __name__ == "__main__":
    server.run()
