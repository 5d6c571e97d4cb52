"""The built-in middleware: request logging, rate limiting, response caching, result size limits
and exception mapping. Each is one module, imported on first use (``engine/_lazy.py``), and each
goes in ``McpServer(..., middleware=[...])``; the hooks themselves are ``engine/middleware.py``'s.
"""

from typing import TYPE_CHECKING

from ..engine._lazy import lazy_exports

if TYPE_CHECKING:
    from .cache import CacheStore as CacheStore
    from .cache import MemoryCache as MemoryCache
    from .cache import ResponseCache as ResponseCache
    from .error_policy import ErrorAs as ErrorAs
    from .error_policy import ErrorPolicy as ErrorPolicy
    from .error_policy import ToolErrorAs as ToolErrorAs
    from .json_lines import JsonLines as JsonLines
    from .rate_limit import RATE_LIMITED as RATE_LIMITED
    from .rate_limit import Buckets as Buckets
    from .rate_limit import MemoryBuckets as MemoryBuckets
    from .rate_limit import RateLimit as RateLimit
    from .redis_buckets import RedisBuckets as RedisBuckets
    from .redis_cache import RedisCache as RedisCache
    from .request_log import RequestLog as RequestLog
    from .result_limit import ResultLimit as ResultLimit


__getattr__, __dir__ = lazy_exports(__name__, __file__)
