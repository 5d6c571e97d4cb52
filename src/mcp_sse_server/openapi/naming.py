"""Tool names for OpenAPI operations: readable, stable, unique, within the protocol's limits.

Rules, all decided when the spec is loaded:

1. A name given in ``names=`` (by operationId, or by ``"METHOD /path"``) is used as it is; one
   outside ``[A-Za-z0-9_-]{1,64}`` or given twice is an ``OpenApiError``.
2. Else the operationId, with the tail FastAPI generates (``_<path>_<method>``, the route's path
   with every non-word character as ``_``) removed when it matches the operation's route: the
   handler's own name is what stays (``read_item_items__item_id__get`` -> ``read_item``).
3. Else ``<method>_<path>`` (``get_items_item_id``).
4. Generated names are slugged to ``[A-Za-z0-9_-]`` (runs of other characters become one ``_``)
   and kept to 64 characters: a longer one is cut and ends with ``_`` and 8 hex digits of its
   SHA-256, so two long names that share a start stay apart.
5. A generated name already taken (by rule 1, or by an earlier operation in spec order) gets
   ``_2``, ``_3``... (cut to fit), with a warning naming both operations.
"""

from __future__ import annotations

import hashlib
import re
from typing import Final

from .schemas import OpenApiError

__all__ = ["MAX_NAME", "fastapi_tail", "generated_name", "slug", "unique_name"]

MAX_NAME: Final = 64
_NAME: Final = re.compile(r"[A-Za-z0-9_-]{1,64}")
_OTHER: Final = re.compile(r"[^A-Za-z0-9_-]+")
_NON_WORD: Final = re.compile(r"\W")


def slug(text: str) -> str:
    """``text`` in the name charset, at most 64 characters (rule 4).

    >>> slug("get /items/{id}"), len(slug("x" * 100)), slug("x" * 100) == slug("x" * 100)
    ('get_items_id', 64, True)
    """
    name = _OTHER.sub("_", text).strip("_") or "operation"
    if len(name) > MAX_NAME:
        digest = hashlib.sha256(name.encode()).hexdigest()[:8]
        name = name[: MAX_NAME - 9].rstrip("_") + "_" + digest
    return name


def fastapi_tail(method: str, path: str) -> str:
    """The suffix FastAPI's default operationId adds after the handler's name (rule 2)."""
    return _NON_WORD.sub("_", path) + "_" + method.lower()


def generated_name(operation_id: str | None, method: str, path: str) -> str:
    """Rules 2-4.

    >>> generated_name("read_item_items__item_id__get", "GET", "/items/{item_id}")
    'read_item'
    >>> generated_name(None, "DELETE", "/items/{item_id}")
    'delete_items_item_id'
    """
    if operation_id:
        tail = fastapi_tail(method, path)
        if operation_id.endswith(tail) and len(operation_id) > len(tail):
            return slug(operation_id[: -len(tail)])
        return slug(operation_id)
    return slug(f"{method.lower()}_{path.strip('/')}")


def checked_name(name: str, source: str) -> str:
    """A ``names=`` entry (rule 1)."""
    if not _NAME.fullmatch(name):
        raise OpenApiError(f"names[{source!r}] = {name!r}: a tool name here is 1-64 of A-Z a-z 0-9 _ -")
    return name


def unique_name(name: str, taken: set[str] | dict[str, str]) -> str:
    """``name``, or the first of ``name_2``, ``name_3``... not in ``taken`` (rule 5)."""
    if name not in taken:
        return name
    for number in range(2, len(taken) + 3):
        suffix = f"_{number}"
        candidate = name[: MAX_NAME - len(suffix)] + suffix
        if candidate not in taken:
            return candidate
    raise AssertionError("unreachable: more candidates than taken names")
