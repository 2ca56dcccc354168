"""The review app's routers: everything a sync handler's request does with the database happens in
the handler's one worker thread.

FastAPI runs each sync dependency in a pool thread, the handler in another, and, for a handler
that returns a model, the validation of its answer in a third, while the handler's session is
still open (function-scoped dependencies close after the answer is built). Two things went wrong:

- **a hang.** A write session holds SQLite's writer lock until the answer is built. With every pool
  thread running a handler that waited for that lock, the lock's holder waited for a thread that
  never came: 50 simultaneous comments, 1 answered, 49 timed out, and the server never answered
  again. A dependency that loads the user in the handler's session has the same shape with
  PostgreSQL's capped pool: it holds a connection while it queues for the handler's thread;
- **the cost.** Each trip to the pool cost 122 us of CPU on the 2-CPU benchmark machine, and the
  dependencies had taken a row read from 1 trip to 5.

So a dependency that needs the database returns a :class:`MadeInThread` (``review/deps.py``: the
sessions and the logged-in user), made here, in the handler's thread, just before the handler
runs; the answer is validated and serialised here too, after it, and the sessions close here before
it leaves. A request is one trip again, and nothing that holds a connection or the lock ever waits
for a thread.

The answer's check is the one FastAPI makes: the route's response model (declared, or the return
annotation), through pydantic's :class:`~pydantic.TypeAdapter`, from attributes as FastAPI does,
with the route's ``response_model_exclude_unset`` and the like, a failure raised as FastAPI's
:class:`~fastapi.exceptions.ResponseValidationError`. Headers and a status a handler sets on an
injected :class:`~fastapi.Response` are kept, as FastAPI keeps them. A handler that returns a
``Response`` itself passes it through; async handlers are left to FastAPI (they cannot take a
:class:`MadeInThread`: nothing would make it).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from contextlib import ExitStack
from typing import Any, get_args, get_origin, get_type_hints

from fastapi import APIRouter, Response
from fastapi.datastructures import DefaultPlaceholder
from fastapi.exceptions import ResponseValidationError
from fastapi.routing import APIRoute
from pydantic import BaseModel, TypeAdapter, ValidationError

_DUMP_OPTIONS = ("include", "exclude", "exclude_unset", "exclude_defaults", "exclude_none")
"""The route's ``response_model_*`` options, passed to the serialiser as FastAPI passes them."""


def _model_of(hints: dict[str, Any], declared: Any) -> Any:
    """The route's response model: the declared one, else the handler's return annotation."""
    if not isinstance(declared, DefaultPlaceholder):
        return declared
    return hints.get("return")


def _is_model(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def _answers_a_model(annotation: Any) -> bool:
    """A pydantic model or a list of one (what this app's routes return)."""
    args = get_args(annotation)
    return _is_model(annotation) or (get_origin(annotation) is list and len(args) == 1 and _is_model(args[0]))


class MadeInThread:
    """A dependency's value that needs the database: FastAPI's dependency returns this, and the route
    makes the real value in the handler's own thread, just before the handler runs, under the
    request's :class:`~contextlib.ExitStack` (closed, in that thread, once the answer is built).

    Made once per request: :meth:`value` is what another value made in the thread asks for (the
    user asks for the read session it is loaded in)."""

    _unmade = object()

    def __init__(self) -> None:
        self._value: Any = self._unmade

    def value(self, stack: ExitStack) -> Any:
        if self._value is self._unmade:
            self._value = self.make(stack)
        return self._value

    def make(self, stack: ExitStack) -> Any:
        """The value; a context it needs (a session) is entered on ``stack``."""
        raise NotImplementedError


class InThread(APIRoute):
    """An :class:`~fastapi.routing.APIRoute` whose sync handler also makes its :class:`MadeInThread`
    arguments and builds its JSON answer, in its own thread (see the module docstring for why)."""

    def __init__(self, path: str, endpoint: Callable[..., Any], **kwargs: Any):
        work: _Work | None = None
        if not inspect.iscoroutinefunction(endpoint):
            hints = get_type_hints(endpoint)
            model = _model_of(hints, kwargs.get("response_model", DefaultPlaceholder(None)))
            options = {name: kwargs[f"response_model_{name}"] for name in _DUMP_OPTIONS if kwargs.get(f"response_model_{name}") is not None}
            work = _Work(endpoint, hints, model if _answers_a_model(model) else None, options)
            endpoint = work.wrapped()
        super().__init__(path, endpoint, **kwargs)
        if work is not None:
            work.status_code = self.status_code or 200


class _Work:
    """Makes the handler's :class:`MadeInThread` arguments, calls it, validates and serialises what it
    returns and closes what the arguments opened (a session commits, or rolls back if anything
    raised), all in the calling (worker) thread, before the answer leaves."""

    def __init__(self, endpoint: Callable[..., Any], hints: dict[str, Any], model: Any, options: dict[str, Any]):
        self.endpoint = endpoint
        self.adapter: TypeAdapter[Any] | None = TypeAdapter(model) if model is not None else None
        self.options = options
        self.injected = [name for name in inspect.signature(endpoint).parameters if _is_response_type(hints.get(name))]
        self.status_code = 200

    def wrapped(self) -> Callable[..., Any]:
        @functools.wraps(self.endpoint)  # FastAPI reads the parameters and globals through __wrapped__
        def in_thread(*args: Any, **kwargs: Any) -> Any:
            with ExitStack() as stack:
                for name, value in kwargs.items():
                    if isinstance(value, MadeInThread):
                        kwargs[name] = value.value(stack)
                result = self.endpoint(*args, **kwargs)
                return result if self.adapter is None else self.answer(self.adapter, result, kwargs)

        return in_thread

    def answer(self, adapter: TypeAdapter[Any], result: Any, kwargs: dict[str, Any]) -> Any:
        if isinstance(result, Response):
            return result
        try:
            body = adapter.dump_json(adapter.validate_python(result, from_attributes=True), by_alias=True, **self.options)
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
    """An ``APIRouter`` whose routes are :class:`InThread` (every router of the app is one)."""
    return APIRouter(route_class=InThread, **kwargs)
