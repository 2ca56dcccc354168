"""``review.routing``: a sync handler's answer built in its own thread, and otherwise the same answer
FastAPI's own route gives (the oracle: the same handlers on a plain ``APIRouter``)."""

from __future__ import annotations

import threading
from contextlib import ExitStack
from typing import Annotated

import pytest
from fastapi import APIRouter, Depends, FastAPI, Response
from fastapi.exceptions import ResponseValidationError
from fastapi.testclient import TestClient
from pydantic import BaseModel

from rescue_bench.review.routing import InThread, MadeInThread, make_router


class Item(BaseModel):
    name: str
    size: int = 0
    note: str | None = None


def _handlers(router: APIRouter) -> None:
    @router.get("/item")
    def item() -> Item:
        return Item(name="a", size=2)

    @router.get("/items")
    def items() -> list[Item]:
        return [Item(name="a"), Item(name="b", note="n")]

    @router.get("/unset", response_model_exclude_unset=True)
    def unset() -> Item:
        return Item.model_validate({"name": "only the name"})

    @router.post("/created", status_code=201)
    def created() -> Item:
        return Item(name="new")

    @router.get("/cookie")
    def cookie(response: Response) -> Item:
        response.set_cookie("k", "v", httponly=True)
        response.headers["X-Extra"] = "1"
        return Item(name="with a cookie")

    @router.get("/status")
    def status(response: Response) -> Item:
        response.status_code = 202
        return Item(name="accepted")

    @router.get("/dict", response_model=Item)
    def from_dict() -> dict:
        return {"name": "from a dict", "size": "3", "ignored": True}

    @router.get("/raw")
    def raw() -> Response:
        return Response("raw", media_type="text/plain")

    @router.get("/async")
    async def run_async() -> Item:
        return Item(name="async")

    @router.get("/wrong", response_model=Item)
    def wrong() -> dict:
        return {"size": "not a number"}


def _app(router: APIRouter) -> FastAPI:
    _handlers(router)
    app = FastAPI()
    app.include_router(router)
    return app


@pytest.fixture(scope="module")
def clients() -> tuple[TestClient, TestClient]:
    return TestClient(_app(make_router())), TestClient(_app(APIRouter()))


@pytest.mark.parametrize(("method", "path"), [("GET", "/item"), ("GET", "/items"), ("GET", "/unset"), ("POST", "/created"), ("GET", "/cookie"), ("GET", "/status"), ("GET", "/dict"), ("GET", "/raw"), ("GET", "/async")])
def test_the_answer_is_fastapis_answer(clients, method, path):
    ours, fastapis = (c.request(method, path) for c in clients)
    assert (ours.status_code, ours.content) == (fastapis.status_code, fastapis.content)
    assert ours.headers.get("content-type") == fastapis.headers.get("content-type")
    assert ours.headers.get_list("set-cookie") == fastapis.headers.get_list("set-cookie")
    assert ours.headers.get("x-extra") == fastapis.headers.get("x-extra")


def test_a_wrong_answer_is_refused_as_fastapi_refuses_it(clients):
    for client in clients:
        with pytest.raises(ResponseValidationError) as caught:
            client.get("/wrong")
        assert {e["loc"][-1] for e in caught.value.errors()} >= {"name", "size"}


def test_every_sync_handler_is_wrapped_and_async_ones_are_left_to_fastapi():
    router = make_router()
    _handlers(router)
    wrapped = {r.path for r in router.routes if isinstance(r, InThread) and hasattr(r.endpoint, "__wrapped__")}
    assert wrapped == {"/item", "/items", "/unset", "/created", "/cookie", "/status", "/dict", "/raw", "/wrong"}


_made: list[int] = []


class _Ident(MadeInThread):
    def make(self, stack: ExitStack) -> int:
        _made.append(threading.get_ident())
        stack.callback(_made.append, -threading.get_ident())  # closed in the same thread, after the handler
        return _made[-1]


async def _ident() -> int:
    return _Ident()  # type: ignore[return-value]


def test_a_value_made_in_thread_is_made_in_the_handlers_thread_before_it_runs():
    made = _made
    router = make_router()

    @router.get("/thread")
    def where(ident: Annotated[int, Depends(_ident)]) -> Item:
        return Item(name="thread", size=int(ident == threading.get_ident()))

    app = FastAPI()
    app.include_router(router)
    assert TestClient(app).get("/thread").json() == {"name": "thread", "size": 1, "note": None}
    assert len(made) == 2 and made[0] != threading.get_ident() and made[1] == -made[0]  # a worker thread, not the test's


def test_the_openapi_document_is_fastapis(clients):
    ours, fastapis = (c.app.openapi() for c in clients)
    assert ours == fastapis
    assert ours["paths"]["/items"]["get"]["responses"]["200"]["content"]["application/json"]["schema"]["items"] == {"$ref": "#/components/schemas/Item"}
