"""Built-in servers and the base class for in-memory servers.

Names are imported on first use, so the plain data in ``servers.defaults`` can be
read without loading the server engine.
"""

from typing import TYPE_CHECKING

from ..engine._lazy import lazy_exports

if TYPE_CHECKING:
    from .defaults import DEFAULT_SERVERS as DEFAULT_SERVERS
    from .factory import MemoryServerFactory as MemoryServerFactory
    from .factory import UnknownServerError as UnknownServerError
    from .memory_server import MemoryServer as MemoryServer


__getattr__, __dir__ = lazy_exports(__name__, __file__)
