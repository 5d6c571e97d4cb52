"""Does compiling the request path with mypyc pay? Builds a copy of src/ with the hot modules
compiled by mypyc (the machine's C compiler, mypy from the test environment), then counts and
times both trees with instructions.py.

    .venv/bin/python bench/mypyc_trial.py [--points quick,stateless] [--cpu 5] [--keep DIR]

The modules are those of the request path that mypyc compiles after two edits (made to the
copy only; src/ is never touched):

1. ``__slots__`` is dropped from their classes: mypyc refuses it on a class it compiles (a native
   class has a fixed layout of its own; one deriving from an interpreted class stays a Python
   class, now with a ``__dict__``).
2. ``engine/protocol.py`` names ``start_eagerly`` by a plain assignment: mypyc takes its
   ``if TYPE_CHECKING:`` stub as the branch that runs and compiles the others as unreachable.

Modules mypyc refuses as written (``engine/types.py``: a dataclass field order; ``engine/tools.py``
and ``transport/http/transport.py``: a compiled class deriving from an interpreted one with
``__slots__``; ``fast_protocol.py``: uvicorn's protocol as its base, attributes set on a method)
stay interpreted. Needs valgrind and gcc; about 10 minutes with ``--cpu 5``.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve()
BENCH = HERE.parent
sys.path.insert(0, str(BENCH))

from instructions import POINTS, compare  # noqa: E402
from run import ROOT, our_python  # noqa: E402

COMPILED = (
    "engine/context.py",
    "engine/protocol.py",
    "transport/http/body.py",
    "transport/http/directory.py",
    "transport/http/replies.py",
    "transport/http/request.py",
    "transport/http/router.py",
    "transport/http/security.py",
    "transport/http/session_endpoint.py",
    "transport/http/stateless.py",
    "transport/http/stateless_endpoint.py",
    "transport/http/stateless_transport.py",
    "transport/http/streams.py",
)
_SLOTS = re.compile(r"\n(\s*)__slots__(?:: [^=\n]+)? = \([^()]*\)\n")
_EAGER_STUB = re.compile(
    r"\nif TYPE_CHECKING:\n\n    def start_eagerly\(.*?\n    start_eagerly = asyncio\.Task\n", re.S
)


def compiled_tree(into: Path) -> Path:
    """A copy of src/ in `into` with COMPILED built by mypyc (edits 1 and 2 above); its src/ path."""
    src = into / "src"
    shutil.copytree(ROOT / "src", src, ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    package = src / "mcp_sse_server"
    for name in COMPILED:
        path = package / name
        text = _SLOTS.sub(r"\n\1pass\n", path.read_text())
        if name == "engine/protocol.py":
            text, found = _EAGER_STUB.subn("\nstart_eagerly: Any = asyncio.Task\n", text)
            if found != 1:
                raise SystemExit("engine/protocol.py: start_eagerly's definition changed; update edit 2")
        path.write_text(text)
    mypyc = Path(our_python()).with_name("mypyc")
    built = subprocess.run(
        [str(mypyc), *(f"mcp_sse_server/{name}" for name in COMPILED)], cwd=src, capture_output=True, text=True
    )
    if built.returncode != 0:
        raise SystemExit(f"mypyc failed:\n{built.stdout[-3000:]}{built.stderr[-3000:]}")
    missing = [name for name in COMPILED if not list((package / name).parent.glob(Path(name).stem + ".cpython-*.so"))]
    if missing:
        raise SystemExit(f"mypyc built no extension for {missing}")
    return src


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", default="quick,stateless")
    parser.add_argument("--cpu", type=int, default=5, metavar="ROUNDS")
    parser.add_argument("--keep", type=Path, help="build the compiled copy here and leave it")
    args = parser.parse_args()
    points = [p for p in args.points.split(",") if p]
    unknown = set(points) - set(POINTS)
    if unknown:
        parser.error(f"unknown points {sorted(unknown)}; choose from {', '.join(POINTS)}")
    with tempfile.TemporaryDirectory(prefix="mypyc-trial-") as scratch:
        into = args.keep or Path(scratch)
        into.mkdir(parents=True, exist_ok=True)
        print(f"compiling {len(COMPILED)} modules with mypyc in {into} ...", file=sys.stderr, flush=True)
        src = compiled_tree(into)
        compare({"mypyc": src, "interpreted": ROOT / "src"}, points, args.cpu)


if __name__ == "__main__":
    main()
