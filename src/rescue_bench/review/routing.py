"""The review app's routers: a sync handler's answer is validated and serialised in the handler's own
worker thread, not in a second one.

FastAPI runs a sync handler in the thread pool and then, for a handler that returns a model, waits
for a *second* pool thread to validate and serialise it, while the handler's session is still open
(the function-scoped dependencies close after the answer is built). A write session holds SQLite's
writer lock until then: with every pool thread running a handler that waits for that lock, the
lock's holder waited for a thread that never came, and the server stopped answering for good
(measured: 50 simultaneous comments, 1 answered, 49 timed out). PostgreSQL's capped pool has the
same shape with connections. Built in the handler's thread, the answer needs no thread while a
session is open; and each request makes one trip fewer (122 us of CPU each on the 2-CPU benchmark
machine).

The check is the one FastAPI makes: the route's response model (declared, or the return
annotation), through pydantic's :class:`~pydantic.TypeAdapter`, from attributes as FastAPI does,
with the route's ``response_model_exclude_unset`` and the like, a failure raised as FastAPI's
:class:`~fastapi.exceptions.ResponseValidationError`. Headers and a
status a handler sets on an injected :class:`~fastapi.Response` are kept, as FastAPI keeps them.
Async handlers, handlers that return a ``Response`` themselves and routes with no model are left to
FastAPI unchanged.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, get_type_hints

from fastapi import APIRouter, Response
from fastapi.datastructures import DefaultPlaceholder
from fastapi.exceptions import ResponseValidationError
from fastapi.routing import APIRoute
from pydantic import BaseModel, TypeAdapter, ValidationError

_DUMP_OPTIONS = ("include", "exclude", "exclude_unset", "exclude_defaults", "exclude_none")
"""The route's ``response_model_*`` options, passed to the serialiser as FastAPI passes them."""


def _model_of(endpoint: Callable[..., Any], declared: Any) -> Any:
    """The route's response model: the declared one, else the handler's return annotation."""
    if not isinstance(declared, DefaultPlaceholder):
        return declared
    return get_type_hints(endpoint).get("return")


def _is_model(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def _answers_a_model(annotation: Any) -> bool:
    """A pydantic model or a list of one (what this app's routes return)."""
    args = getattr(annotation, "__args__", None)
    return _is_model(annotation) or (getattr(annotation, "__origin__", None) is list and args is not None and len(args) == 1 and _is_model(args[0]))


class AnswerInThread(APIRoute):
    """An :class:`~fastapi.routing.APIRoute` whose sync handler also builds its JSON answer (see the
    module docstring for why)."""

    def __init__(self, path: str, endpoint: Callable[..., Any], **kwargs: Any):
        model = _model_of(endpoint, kwargs.get("response_model", DefaultPlaceholder(None)))
        answer: _Answer | None = None
        if not inspect.iscoroutinefunction(endpoint) and _answers_a_model(model):
            options = {name: kwargs[f"response_model_{name}"] for name in _DUMP_OPTIONS if kwargs.get(f"response_model_{name}") is not None}
            answer = _Answer(endpoint, model, options)
            endpoint = answer.wrapped()
        super().__init__(path, endpoint, **kwargs)
        if answer is not None:
            answer.status_code = self.status_code or 200


class _Answer:
    """Calls the handler, then validates and serialises what it returns, in the same thread."""

    def __init__(self, endpoint: Callable[..., Any], model: Any, options: dict[str, Any]):
        self.endpoint = endpoint
        self.adapter: TypeAdapter[Any] = TypeAdapter(model)
        self.options = options
        hints = get_type_hints(endpoint)
        self.injected = [name for name in inspect.signature(endpoint).parameters if _is_response_type(hints.get(name))]
        self.status_code = 200

    def wrapped(self) -> Callable[..., Any]:
        @functools.wraps(self.endpoint)  # FastAPI reads the parameters and globals through __wrapped__
        def answered(*args: Any, **kwargs: Any) -> Any:
            return self.answer(self.endpoint(*args, **kwargs), kwargs)

        return answered

    def answer(self, result: Any, kwargs: dict[str, Any]) -> Any:
        if isinstance(result, Response):
            return result
        try:
            body = self.adapter.dump_json(self.adapter.validate_python(result, from_attributes=True), by_alias=True, **self.options)
        except ValidationError as exc:
            raise ResponseValidationError(errors=exc.errors(include_url=False), body=result) from None
        response = Response(content=body, media_type="application/json", status_code=self.status_code)
        for name in self.injected:  # what the handler set on an injected Response, kept as FastAPI keeps it
            sub = kwargs.get(name)
            if isinstance(sub, Response):
                if sub.status_code:
                    response.status_code = sub.status_code
                response.headers.raw.extend(sub.headers.raw)
        return response


def _is_response_type(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, Response)


def make_router(**kwargs: Any) -> APIRouter:
    """An ``APIRouter`` whose routes are :class:`AnswerInThread` (every router of the app is one)."""
    return APIRouter(route_class=AnswerInThread, **kwargs)
