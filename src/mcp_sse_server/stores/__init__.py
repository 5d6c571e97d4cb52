"""Where sessions and stream events are kept: the interfaces and the in-process default.

A store holds plain data only (``SessionRecord``, ``StoredEvent``), behind
async methods, so an implementation may live in another process (a shared
store for several workers adds a module here beside ``memory.py``).
"""

from .base import EventBus, EventLog, SessionStore, StoredEvent
from .memory import MemoryEventBus, MemoryEventLog, MemorySessionStore

__all__ = [
    "EventBus",
    "EventLog",
    "MemoryEventBus",
    "MemoryEventLog",
    "MemorySessionStore",
    "SessionStore",
    "StoredEvent",
]
