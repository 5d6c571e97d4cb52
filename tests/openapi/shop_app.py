"""A small real FastAPI app for the OpenAPI tests: path, query, header and body parameters, an
enum, nested and recursive models, a union, a list response, a 204, a 404, a redirect to another
origin, and an API-key check.

``build_app()`` makes a fresh one (its state is its own); ``seen`` records the headers each call
carried, so tests can tell what reached the API.
"""

from __future__ import annotations

import asyncio
from enum import StrEnum
from typing import Annotated, Any

from fastapi import FastAPI, Header, HTTPException, Query, Request, Response
from fastapi.responses import RedirectResponse
from pydantic import BaseModel

API_KEY = "shop-key-123"


class Colour(StrEnum):
    red = "red"
    green = "green"
    blue = "blue"


class Dimensions(BaseModel):
    width: float
    height: float


class Item(BaseModel):
    name: str
    price: float
    colour: Colour = Colour.red
    size: Dimensions | None = None
    tags: list[str] = []


class StoredItem(Item):
    id: int


class Category(BaseModel):
    name: str
    children: list[Category] = []


class Note(BaseModel):
    text: str


class Link(BaseModel):
    url: str


class Slow:
    """What the ``/slow`` route saw: that it started, and that it was cancelled."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.cancelled = asyncio.Event()


def build_app(slow: Slow | None = None) -> tuple[FastAPI, list[dict[str, str]]]:
    """A fresh app and the list of the headers of each request it served."""
    app = FastAPI(title="Shop", version="1.0")
    gate = slow or Slow()
    items: dict[int, StoredItem] = {1: StoredItem(id=1, name="kettle", price=20.0, colour=Colour.blue)}
    seen: list[dict[str, str]] = []

    @app.middleware("http")
    async def record(request: Request, call_next: Any) -> Any:
        seen.append({name.lower(): value for name, value in request.headers.items()})
        return await call_next(request)

    @app.get("/items", summary="List items")
    def list_items(colour: Colour | None = None, limit: Annotated[int, Query(ge=1, le=100)] = 10) -> list[StoredItem]:
        found = [item for item in items.values() if colour is None or item.colour == colour]
        return found[:limit]

    @app.get("/items/{item_id}", summary="Get one item")
    def read_item(item_id: int) -> StoredItem:
        if item_id not in items:
            raise HTTPException(404, f"no item {item_id}")
        return items[item_id]

    @app.post("/items", status_code=201)
    def create_item(item: Item) -> StoredItem:
        stored = StoredItem(id=max(items) + 1, **item.model_dump())
        items[stored.id] = stored
        return stored

    @app.delete("/items/{item_id}", status_code=204)
    def delete_item(item_id: int) -> Response:
        if items.pop(item_id, None) is None:
            raise HTTPException(404, f"no item {item_id}")
        return Response(status_code=204)

    @app.get("/categories/root")
    def category_tree() -> Category:
        return Category(name="all", children=[Category(name="kitchen", children=[Category(name="kettles")])])

    @app.post("/attachments")
    def attach(body: Note | Link) -> dict[str, str]:
        return {"kind": "note" if isinstance(body, Note) else "link"}

    @app.get("/count")
    def count() -> int:
        return len(items)

    @app.get("/echo/{name}")
    def echo(name: str, x_trace: Annotated[str | None, Header()] = None) -> dict[str, Any]:
        return {"name": name, "trace": x_trace}

    @app.get("/private")
    def private(x_api_key: Annotated[str | None, Header()] = None) -> dict[str, bool]:
        if x_api_key != API_KEY:
            raise HTTPException(401, "bad api key")
        return {"ok": True}

    @app.get("/fail")
    def fail() -> dict[str, str]:
        raise HTTPException(500, "<html><body><h1>Broken</h1>" + "x" * 5000 + "</body></html>")

    @app.get("/slow")
    async def slow_route() -> dict[str, str]:
        gate.started.set()
        try:
            await asyncio.sleep(60)  # bounded: the test cancels it long before
        except asyncio.CancelledError:
            gate.cancelled.set()
            raise
        return {"done": "late"}

    @app.get("/moved")
    def moved() -> RedirectResponse:
        return RedirectResponse("http://127.0.0.2:9/elsewhere", status_code=307)

    return app, seen
