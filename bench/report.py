"""Turn a run's results (plain dicts, as saved in results/latest.json) into
Markdown tables with ratios against our server, and check the targets: the
"must hold" list of the issue "The request path in one pass" (must_hold, with
issue 19's bearer-token row: ours-jwt against ours), and issue 6's (targets)."""

from __future__ import annotations

import re
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mcp_http import MODERN_REVISIONS, PROTOCOL_VERSION, is_modern

OURS = "ours"
BARE = "bare-asgi"  # the ceiling: reads each request's body (as every MCP server must), answers one SSE event
BARE_NOREAD = "bare-asgi-noread"  # the same app answering without reading the body (the ceiling until now)
# Ours serving with bearer tokens (ours.py --jwt): point 1 and the pairs only, compared with ours.
OURS_JWT = "ours-jwt"
# Issue 41: ours on the ASGI path (bind with fast_path=False; McpHttpApp mounted in Starlette under plain
# uvicorn), and Python's ceiling for one HTTP exchange (raw_protocol.py: an asyncio.Protocol on httptools).
OURS_ASGI, OURS_STARLETTE, RAW = "ours-asgi", "ours-starlette", "raw-protocol"
BEARER_CPU = 1.10  # must hold: server CPU per request with a token verified before ≤ this times ours' without
LABELS = {
    OURS: "mcp-sse-server (ours)",
    OURS_JWT: "mcp-sse-server, bearer tokens (`ours-jwt`)",
    OURS_ASGI: "ours, ASGI path (`fast_path=False`)",
    OURS_STARLETTE: "ours mounted in Starlette (uvicorn)",
    RAW: "raw asyncio.Protocol + httptools (Python's ceiling)",
    "official": "official Python SDK",
    "fastmcp": "fastmcp",
    "typescript": "TypeScript SDK",
    BARE: "bare ASGI, body read (ceiling)",
    BARE_NOREAD: "bare ASGI, body not read",
}
START, END = "<!-- results:start -->", "<!-- results:end -->"
DISTURBED_NOTE = ("† other work on this shared machine took part of that server's core in every try, so its "
                  "requests/s and latency are low")

# Ours' 16-connection point on one session, on each protocol revision: without
# resumable streams, then with them (priming event, event ids, stream log).
REVISIONS = (PROTOCOL_VERSION, "2025-11-25")
QUICK, STREAMED = "quick", "streamed"
CALLS = {QUICK: "quick reply", STREAMED: "streamed: progress, then the reply"}


def markdown_grid(corner: str, columns: list[str], rows: dict[str, list[str]]) -> str:
    """A Markdown table: ``corner`` heads the first column, ``columns`` (right-aligned) the others,
    one row per name with its cells (the stand-alone scripts' tables: fast_path.py, instructions.py)."""
    lines = [f"| {corner} | " + " | ".join(columns) + " |", "|---|" + "---:|" * len(columns)]
    lines += [f"| {name} | " + " | ".join(cells) + " |" for name, cells in rows.items()]
    return "\n".join(lines)


def revision_key(call: str, revision: str) -> str:
    """Where a revision point is kept in results["http"][name]: quick replies on a
    2025-06-18 session are the SSE table's point, "sse"."""
    return "sse" if (call, revision) == (QUICK, REVISIONS[0]) else f"{call}-{revision}"


REVISION_POINTS: dict[str, tuple[str, str]] = {revision_key(c, r): (c, r) for c in CALLS for r in REVISIONS}
# The same call at the stateless revision (no initialize, no session), on every server that speaks
# MCP (all but the bare ASGI app); a server that does not serve it gets "not served" rows.
MODERN = MODERN_REVISIONS[0]
MODERN_KEY = revision_key(QUICK, MODERN)
# Every 16-connection point: key -> (call, revision).
POINTS16: dict[str, tuple[str, str]] = {**REVISION_POINTS, MODERN_KEY: (QUICK, MODERN)}

# The Redis-store points (results["redis"], run.py's `--servers ours-redis`): point 1's call on ours
# with the in-process store and with the Redis store, one worker; then 1 and 2 workers on Redis.
MEMORY_STORE, STORES_ALONE, REDIS_STORE = "memory-store", "redis-stores-alone", "redis-store"
STORES = {MEMORY_STORE: "in-process store (`serve`)",
          STORES_ALONE: "Redis session store and event log alone (`bind(session_store=, event_log=)`)",
          REDIS_STORE: "Redis (`serve --redis-url URL --workers 1`: the stores, router and event bus)"}
WORKERS = (1, 2)
REDIS_CPU_TARGET = 2.0  # the Redis path costs at most this many times the in-process path's CPU per request
REDIS_STREAMED_TARGET = 2.5  # ... and for streamed calls on a 2025-11-25 session (resumable streams, logged)
REDIS_P99_TARGET = 2.0  # its p99 at 16 connections at most this many times the in-process p99
WORKERS_TARGET = 1.7  # 2 workers on Redis serve at least this many times the requests/s of 1 (capped workers)
WORKER_SHARE = 0.4  # of a core, each capped worker: 2 of them leave more than a core to wrk and redis-server
STREAMED_REVISION = "2025-11-25"


def workers_key(workers: int) -> str:
    return f"workers{workers}"


CAPPED_ROUNDS = "capped-rounds"  # results["redis"]: the capped workers' interleaved rounds


def capped_ratio(points: dict[str, Any]) -> float | None:
    """Requests/s of 2 capped workers over 1's in one round (None if either point is invalid)."""
    one, two = (_load(points.get(capped_key(n))) for n in WORKERS)
    return two["rps"] / one["rps"] if one and two and one["rps"] else None


def median_capped_round(rounds: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The round whose ratio is the median of the valid rounds' (the lower middle of an even count)."""
    valid = sorted((ratio, i) for i, points in enumerate(rounds) if (ratio := capped_ratio(points)) is not None)
    return rounds[valid[(len(valid) - 1) // 2][1]] if valid else None


def capped_key(workers: int) -> str:
    """The point of `workers` workers held to WORKER_SHARE of a core each."""
    return f"workers{workers}-capped"


def streamed_key(store: str) -> str:
    """The streamed-calls point (progress, then the reply, on a 2025-11-25 session) of a store's server."""
    return f"{store}/{revision_key(STREAMED, STREAMED_REVISION)}"


def redis_point_call(key: str) -> str:
    """The POINTS16 key a point drives: a Redis point's part after "/" (none: quick calls, 2025-06-18),
    a POINTS16 key itself (a revision, streamed or stateless point), else "sse" ("json", "workers1")."""
    _, slash, call = key.partition("/")
    if slash:
        return call
    return key if key in POINTS16 else "sse"


def point_label(call: str, revision: str) -> str:
    """What a 16-connection point drives: e.g. quick calls on a 2025-06-18 session, or at 2026-07-28 (no session)."""
    if is_modern(revision):
        return f"{call} calls at {revision} (no session)"
    return f"{call} calls on a {revision} session"


def is_bare(name: str) -> bool:
    """Either bare ASGI app, or the raw protocol (no MCP: no sessions, no revisions)."""
    return name in (BARE, BARE_NOREAD, RAW)


def is_ours(name: str) -> bool:
    """Ours, or ours from an older commit (`ours@REF`, run.py's --baseline)."""
    return name == OURS or name.startswith(OURS + "@")


def on_every_revision(name: str) -> bool:
    """Measured on each revision, quick and streamed calls (run.py's "-revisions" server): ours and its
    baselines, and ours on the ASGI path (`ours-asgi`, `ours-starlette`: the same code, another server side)."""
    return is_ours(name) or name in (OURS_ASGI, OURS_STARLETTE)


def ref_suffix(name: str) -> str:
    """'@REF' for `ours@REF`, '' for ours: what tells a baseline's in-process and CLI rows apart."""
    return name[len(OURS):] if is_ours(name) else ""


def server_label(name: str) -> str:
    return LABELS.get(name) or f"`{name}` (baseline)"


def _num(x: float, digits: int = 0) -> str:
    return f"{x:,.{digits}f}"


def _ms(us: float) -> str:
    return f"{us / 1000:.2f}"


def _times(x: float, name: str = "") -> str:
    """A ratio; two decimals against a baseline of ours or ours-jwt, where the differences are small."""
    if is_ours(name) or name == OURS_JWT:
        return f"{x:.2f}x"
    return f"{x:.1f}x" if x < 100 else f"{x:,.0f}x"


def _cpu(point: dict[str, Any]) -> str:
    if point.get("server_cpu") is None or point.get("wrk_cpu") is None:
        return "—"
    mark = " †" if point.get("disturbed") else ""
    return f"{100 * point['server_cpu']:.0f}%{mark} / {100 * point['wrk_cpu']:.0f}%"


def _load(point: dict[str, Any] | None) -> dict[str, Any] | None:
    return point if point and point.get("invalid") is None and point.get("rps") else None


def _why(point: dict[str, Any] | None, skip: str | None) -> str:
    if skip:
        return f"skipped: {skip}"
    if point is None:
        return "not run"
    if point.get("not_served"):
        return f"not served ({point['not_served']})"
    if point.get("not_offered"):
        return f"not offered ({point['not_offered']})"
    return f"invalid: {point.get('invalid')}"


def rps_ratio(ours: dict[str, Any], peer: dict[str, Any]) -> tuple[float, bool]:
    """ours / peer throughput, and whether it is CPU-normalised: when other work
    took part of either server's core, requests per server CPU-second compare
    fairly where raw requests/s would not."""
    if (ours.get("disturbed") or peer.get("disturbed")) and ours.get("server_cpu") and peer.get("server_cpu"):
        return (ours["rps"] / ours["server_cpu"]) / (peer["rps"] / peer["server_cpu"]), True
    return ours["rps"] / peer["rps"], False


def _throughput_ratio(name: str, ours: dict[str, Any] | None, peer: dict[str, Any] | None) -> str:
    if name == OURS:
        return "—"
    if ours is None or peer is None:
        return "n/a"
    ratio, normalised = rps_ratio(ours, peer)
    mark = " †" if normalised else ""
    if is_bare(name):
        return f"ours at {100 * ratio:.0f}%{mark}"
    return _times(ratio, name) + mark


def http_table(results: dict[str, Any], key: str, title: str, names: list[str] | None = None) -> list[str]:
    """One HTTP load table: rps, p50, p99 and how many times ours is faster; a row for each
    of `names` (every server by default)."""
    http = results.get("http", {})
    ours = _load(http.get(OURS, {}).get(key))
    # Where ours has no JSON reply mode (bind's json_response), JSON points are compared with our SSE figure.
    ours_ref = ours or (_load(http.get(OURS, {}).get("sse")) if key == "json" else None)
    lines = [f"**{title}**", "", "| server | requests/s | p50 ms | p99 ms | ours faster by | CPU: server / wrk |"
             " requests per server CPU-second |", "|---|---:|---:|---:|---:|---:|---:|"]
    for name in names or results["order"]:
        entry = http.get(name, {})
        if key == "json" and not entry.get("json_offered", True) and not (entry.get(key) or {}).get("not_offered"):
            continue
        if key in ("sessions100", "gen_check") and name == BARE_NOREAD:
            continue  # measured on the ceiling only
        if name == OURS_JWT and key not in ("sse", "json"):
            continue  # point 1 only
        point = _load(entry.get(key))
        if point is None:
            lines.append(f"| {server_label(name)} | {_why(entry.get(key), entry.get('skip'))} | | | | | |")
            continue
        per_cpu = _num(point["rps"] / point["server_cpu"]) if point.get("server_cpu") else "—"
        lines.append(f"| {server_label(name)} | {_num(point['rps'])} | {_ms(point['p50_us'])} | "
                     f"{_ms(point['p99_us'])} | {_throughput_ratio(name, ours_ref, point)} | {_cpu(point)} | "
                     f"{per_cpu} |")
    if any((_load(http.get(n, {}).get(key)) or {}).get("disturbed") for n in results["order"]):
        lines += ["", DISTURBED_NOTE + "; ratios involving it compare requests per server CPU-second instead."]
    return lines


def _per_cpu(point: dict[str, Any]) -> float | None:
    return point["rps"] / point["server_cpu"] if point.get("server_cpu") else None


def _rss_mb(point: dict[str, Any]) -> str:
    return _num(point["rss_kb"] / 1024, 1) if point.get("rss_kb") is not None else "—"


def revisions_table(results: dict[str, Any]) -> list[str]:
    """Ours (its baselines, and ours on the ASGI path) on each revision, quick and streamed calls: one row per
    point."""
    http = results.get("http", {})
    lines = ["**HTTP `tools/call` on each protocol revision, 16 connections on one session (ours, on the fast "
             "path and on the ASGI path; quick replies on 2025-06-18 are the SSE table's point)**", "",
             "| server | call | requests/s | p50 ms | p99 ms | CPU: server / wrk | requests per server CPU-second | "
             "server RSS after MB | reply on the wire |", "|---|---|---:|---:|---:|---:|---:|---:|---|"]
    disturbed = False
    for name in (n for n in results["order"] if on_every_revision(n)):
        entry = http.get(name, {})
        for key, (call, revision) in REVISION_POINTS.items():
            label = f"{server_label(name)}, {revision} session | {call}"
            point = _load(entry.get(key))
            if point is None:
                lines.append(f"| {label} | {_why(entry.get(key), entry.get('skip'))} | | | | | | |")
                continue
            disturbed = disturbed or point.get("disturbed", False)
            per_cpu = _per_cpu(point)
            lines.append(f"| {label} | {_num(point['rps'])} | {_ms(point['p50_us'])} | {_ms(point['p99_us'])} | "
                         f"{_cpu(point)} | {_num(per_cpu) if per_cpu else '—'} | {_rss_mb(point)} | "
                         f"{point.get('reply', '—')} |")
    if disturbed:
        lines += ["", DISTURBED_NOTE + "; its requests per server CPU-second still compare."]
    return lines


def _versus(a_raw: dict[str, Any] | None, b_raw: dict[str, Any] | None, skip: str | None) -> tuple[str, bool]:
    """Five cells putting point b beside point a: requests/s and requests per server
    CPU-second as ratios b over a, p50, p99 and RSS after as a → b; or why not (the
    point missing). And whether either point was disturbed (its ratio marked †)."""
    a, b = _load(a_raw), _load(b_raw)
    if a is None or b is None:
        return f"{_why(a_raw if a is None else b_raw, skip)} | | | |", False
    disturbed = bool(a.get("disturbed") or b.get("disturbed"))
    cpu_a, cpu_b = _per_cpu(a), _per_cpu(b)
    per_cpu = f"{cpu_b / cpu_a:.2f}x" if cpu_a and cpu_b else "n/a"
    return (f"{b['rps'] / a['rps']:.2f}x{' †' if disturbed else ''} | {per_cpu} | "
            f"{_ms(a['p50_us'])} → {_ms(b['p50_us'])} | {_ms(a['p99_us'])} → {_ms(b['p99_us'])} | "
            f"{_rss_mb(a)} → {_rss_mb(b)}"), disturbed


VERSUS_NOTE = ("† other work on this shared machine took part of the server's core in one of the two points: "
               "read the requests per server CPU-second column.")


def resumable_cost_table(results: dict[str, Any]) -> list[str]:
    """The same point on a 2025-11-25 session against a 2025-06-18 one: what event ids,
    priming events and stream logs cost, for quick and for streamed calls."""
    http = results.get("http", {})
    old, new = REVISIONS
    lines = [f"**Cost of resumable streams: {new} session vs {old} session, same call (ratios {new} over {old}, "
             f"below 1.00x the newer revision is slower; latency and RSS read {old} → {new})**", "",
             "| server | call | requests/s | requests per server CPU-second | p50 ms | p99 ms | server RSS after MB |",
             "|---|---|---:|---:|---:|---:|---:|"]
    disturbed = False
    for name in (n for n in results["order"] if on_every_revision(n)):
        entry = http.get(name, {})
        for call, what in CALLS.items():
            cells, marked = _versus(*(entry.get(revision_key(call, r)) for r in REVISIONS), entry.get("skip"))
            disturbed = disturbed or marked
            lines.append(f"| {server_label(name)} | {what} | {cells} |")
    if disturbed:
        lines += ["", VERSUS_NOTE]
    return lines


def mcp_servers(results: dict[str, Any]) -> list[str]:
    """Every server that speaks MCP: all but the bare ASGI app (the modern point's rows); not
    ours-jwt either, measured at point 1 only."""
    return [name for name in results["order"] if not is_bare(name) and name != OURS_JWT]


def modern_replies(results: dict[str, Any]) -> list[str]:
    """How each server's reply to a modern call travelled (recorded before its point)."""
    http = results.get("http", {})
    shown = [f"{server_label(n)}: {http[n][MODERN_KEY]['reply']}" for n in mcp_servers(results)
             if (http.get(n, {}).get(MODERN_KEY) or {}).get("reply")]
    return ["", "Reply on the wire: " + "; ".join(shown) + "."] if shown else []


def modern_vs_legacy_table(results: dict[str, Any]) -> list[str]:
    """Ours at the stateless revision against ours on a 2025-06-18 session (quick calls, the
    SSE table's point), and ours against each peer, both at the stateless revision."""
    http = results.get("http", {})
    old = REVISIONS[0]
    lines = [f"**{MODERN} vs legacy: `tools/call add`, 16 connections (ratios the first named over the second, "
             f"above 1.00x the first is faster; latency and RSS read second → first)**", "",
             "| comparison | requests/s | requests per server CPU-second | p50 ms | p99 ms | server RSS after MB |",
             "|---|---:|---:|---:|---:|---:|"]
    # (comparison, the second named's point, the first named's point, why a server was skipped)
    rows = []
    for name in (n for n in results["order"] if is_ours(n)):
        entry = http.get(name, {})
        rows.append((f"{server_label(name)}: {MODERN} (no session) vs a {old} session, quick calls",
                     entry.get(revision_key(QUICK, old)), entry.get(MODERN_KEY), entry.get("skip")))
    ours = http.get(OURS, {})
    rows += [(f"ours vs {server_label(n)}, both at {MODERN}", http.get(n, {}).get(MODERN_KEY), ours.get(MODERN_KEY),
              ours.get("skip") or http.get(n, {}).get("skip"))
             for n in mcp_servers(results) if not is_ours(n) and OURS in results["order"]]
    if not rows:
        return []
    disturbed = False
    for label, a_raw, b_raw, skip in rows:
        cells, marked = _versus(a_raw, b_raw, skip)
        disturbed = disturbed or marked
        lines.append(f"| {label} | {cells} |")
    if disturbed:
        lines += ["", VERSUS_NOTE]
    return lines


def _per_session(m: dict[str, Any]) -> float | None:
    """KB per idle session at the largest point measured."""
    points = sorted(int(k.rsplit("_", 1)[1]) for k in m if k.startswith("per_kb_"))
    return m[f"per_kb_{points[-1]}"] if points else None


def _hundred_k_mb(m: dict[str, Any]) -> tuple[float, bool] | None:
    """Resident MB with 100,000 idle sessions: (value, measured), else extrapolated."""
    if m.get("rss_kb_100000") is not None:
        return m["rss_kb_100000"] / 1024, True
    per = _per_session(m)
    if per is None or m.get("empty_kb") is None:
        return None
    return (m["empty_kb"] + 100_000 * per) / 1024, False


def memory_table(results: dict[str, Any]) -> list[str]:
    mem = results.get("memory", {})
    counts = sorted({int(k.rsplit("_", 1)[1]) for m in mem.values() for k in m
                     if k.startswith(("per_kb_", "error_"))}) or [1000]
    lines = ["**Memory: resident size of an empty server, growth per idle session**", "",
             "| server | empty RSS MB | " + " | ".join(f"KB/session at {n:,}" for n in counts)
             + " | ours smaller by | 100,000 sessions MB |",
             "|---|---:|" + "---:|" * len(counts) + "---:|---:|"]
    ours_per = _per_session(mem.get(OURS, {}))
    for name in results["order"]:
        if name not in mem and name in (BARE_NOREAD, OURS_JWT):
            continue  # one process for both bare rows: measured as the ceiling's; ours-jwt: point 1 only
        m = mem.get(name, {})
        if m.get("skip") or m.get("empty_kb") is None:
            why = f"skipped: {m['skip']}" if m.get("skip") else m.get("error", "not run")
            lines.append(f"| {server_label(name)} | {why} |" + " |" * (len(counts) + 2))
            continue
        cells = [_num(m["empty_kb"] / 1024, 1)]
        for n in counts:
            per = m.get(f"per_kb_{n}")
            cells.append(_num(per, 1) if per is not None else (m.get(f"error_{n}") or "—"))
        per = _per_session(m)
        if is_bare(name):
            cells += ["(no sessions)", "—"]
        else:
            cells.append("—" if name == OURS else (_times(per / ours_per, name) if per and ours_per else "n/a"))
            big = _hundred_k_mb(m)
            cells.append("n/a" if big is None else _num(big[0]) + ("" if big[1] else " (extrapolated)"))
        lines.append(f"| {server_label(name)} | " + " | ".join(cells) + " |")
    return lines


def inmemory_table(results: dict[str, Any]) -> list[str]:
    rows = results.get("inmemory", {})
    official = rows.get("official-sdk", {}).get("median_us")
    lines = ["**In-process `tools/call` round trip (server core on CPU 0, plain asyncio loop; ours and its "
             "baselines take turns, several rounds each, and the round with the lowest median is shown)**", "",
             "| client | median µs | p99 µs | ours faster by | each round's median µs |", "|---|---:|---:|---:|---|"]
    ours = [name for name in results["order"] if is_ours(name)] or [OURS]  # run.py runs ours' rows in any case
    names = {f"{way}{ref_suffix(name)}": f"{name}: {what}"
             for way, what in (("inmemory-client", "`InMemoryClient.call_tool`"),
                               ("memory-transport", "raw request through `MemoryTransport`")) for name in ours}
    names["official-sdk"] = "official Python SDK: in-memory `Client`"
    for key, label in names.items():
        r = rows.get(key, {})
        if r.get("median_us") is None:
            why = f"skipped: {r['skipped']}" if r.get("skipped") else f"invalid: {r.get('invalid', 'not run')}"
            lines.append(f"| {label} | {why} | | | |")
            continue
        ratio = "—" if key == "official-sdk" else (_times(official / r["median_us"]) if official else "n/a")
        p99 = _num(r["p99_us"], 1) if r.get("p99_us") is not None else "—"
        rounds = ", ".join(_num(m, 1) for m in r.get("medians", [])) or "—"
        lines.append(f"| {label} | {_num(r['median_us'], 1)} | {p99} | {ratio} | {rounds} |")
    return lines


def startup_table(results: dict[str, Any]) -> list[str]:
    imports = results.get("imports", {})
    starts = results.get("startup", {})
    lines = ["**Start-up: import time (wall and CPU time over a bare interpreter, median of runs) and time from "
             "spawning the server to its first answered `initialize` (median of this run's starts)**", "",
             "| server | spawn → first answer ms | import | import ms | import CPU ms |", "|---|---:|---|---:|---:|"]
    for name in (n for n in results["order"] if n != OURS_JWT):  # (its start makes an RSA key: not a start-up)
        s = starts.get(name) or []
        spawn = _num(statistics.median(s) * 1000) if s else "—"
        rows = imports.get(name) or [{}]
        for i, imp in enumerate(rows):
            code = f"`{imp['code']}`" if imp.get("code") else "—"
            ms = _num(imp["ms"], 1) if imp.get("ms") is not None else imp.get("error", "—")
            cpu = _num(imp["cpu_ms"], 1) if imp.get("cpu_ms") is not None else "—"
            lines.append(f"| {server_label(name) if i == 0 else ''} | {spawn if i == 0 else ''} | {code} | {ms} | "
                         f"{cpu} |")
    for name, cli in results.get("cli", {}).items():
        ms = _cli_ms(cli)
        cell = _num(ms) if ms is not None else (
            f"skipped: {cli['skip']}" if cli.get("skip") else f"invalid: {cli.get('error', 'not run')}")
        lines.append(f"| `mcp-sse-server serve` (CLI, demo server){ref_suffix(name) and f' of `{name}`'} | {cell} "
                     "| | | |")
    return lines


def _cli_ms(cli: dict[str, Any]) -> float | None:
    return statistics.median(cli["seconds"]) * 1000 if cli.get("seconds") else None


def _ms_or_none(us: float | None) -> float | None:
    return us / 1000 if us is not None else None


def _mb_or_none(kb: float | None) -> float | None:
    return kb / 1024 if kb is not None else None


def _change(ratio: float, better: str, worse: str) -> str:
    """How ours compares with a baseline, from `ratio` = how many times better ours is."""
    if f"{ratio:.2f}" == "1.00":
        return "same"
    return f"{ratio:.2f}x {better}" if ratio > 1 else f"{1 / ratio:.2f}x {worse}"


def before_after_table(results: dict[str, Any], base: str) -> list[str]:
    """Ours against `ours@REF` (the same measurements of the same run), one row per figure."""
    http, mem, inm = results.get("http", {}), results.get("memory", {}), results.get("inmemory", {})
    imports, starts = results.get("imports", {}), results.get("startup", {})
    lines = [f"**Before/after: ours (this tree) vs `{base}`, same run**", "",
             f"| measure | `{base}` | ours | ours vs `{base}` |", "|---|---:|---:|---:|"]
    normalised = False

    def row(measure: str, before: float | None, after: float | None, digits: int, *, higher_better: bool = False,
            words: tuple[str, str] = ("faster", "slower")) -> None:
        if not before or not after:
            change = "n/a"
        else:
            change = _change(after / before if higher_better else before / after, *words)
        shown = [_num(v, digits) if v is not None else "—" for v in (before, after)]
        lines.append(f"| {measure} | {shown[0]} | {shown[1]} | {change} |")

    points = {"sse": "16 connections on one session", "json": "JSON replies, 16 connections on one session",
              "sessions100": "100 sessions"}
    points.update((key, f"{point_label(call, revision)}, 16 connections") for key, (call, revision)
                  in POINTS16.items() if key != "sse")
    for key, what in points.items():
        raw_b = http.get(base, {}).get(key) or {}
        if raw_b.get("not_served") or raw_b.get("not_offered"):
            a = _load(http.get(OURS, {}).get(key)) or {}
            why = "not served" if raw_b.get("not_served") else "not offered"
            lines.append(f"| HTTP tools/call, {what}: requests/s | {why} | {_num(a['rps']) if a else '—'} | n/a |")
            continue
        b, a = _load(raw_b) or {}, _load(http.get(OURS, {}).get(key)) or {}
        if a and b and rps_ratio(a, b)[1]:  # compared per server CPU-second, as rps_ratio does
            normalised = True
            row(f"HTTP tools/call, {what}: requests per server CPU-second †", b["rps"] / b["server_cpu"],
                a["rps"] / a["server_cpu"], 0, higher_better=True)
        else:
            row(f"HTTP tools/call, {what}: requests/s", b.get("rps"), a.get("rps"), 0, higher_better=True)
        for p in ("p50", "p99"):
            row(f"HTTP tools/call, {what}: {p} ms", _ms_or_none(b.get(f"{p}_us")), _ms_or_none(a.get(f"{p}_us")), 2)
    mb, ma = mem.get(base, {}), mem.get(OURS, {})
    smaller = ("smaller", "larger")
    row("empty server RSS MB", _mb_or_none(mb.get("empty_kb")), _mb_or_none(ma.get("empty_kb")), 1, words=smaller)
    for n in sorted({int(k.rsplit("_", 1)[1]) for k in (*mb, *ma) if k.startswith("per_kb_")}):
        row(f"KB per idle session at {n:,} sessions", mb.get(f"per_kb_{n}"), ma.get(f"per_kb_{n}"), 1, words=smaller)
    for way, what in (("inmemory-client", "`InMemoryClient.call_tool`"),
                      ("memory-transport", "raw request through `MemoryTransport`")):
        for stat in ("median", "p99"):
            row(f"in-process round trip, {what}: {stat} µs", inm.get(way + ref_suffix(base), {}).get(f"{stat}_us"),
                inm.get(way, {}).get(f"{stat}_us"), 1)
    spawn_b, spawn_a = (statistics.median(starts[n]) * 1000 if starts.get(n) else None for n in (base, OURS))
    row("spawn → first answered initialize, ms", spawn_b, spawn_a, 0)
    for b_imp, a_imp in zip(imports.get(base, []), imports.get(OURS, []), strict=False):
        row(f"`{a_imp.get('code')}`: import CPU ms", b_imp.get("cpu_ms"), a_imp.get("cpu_ms"), 1)
    cli = results.get("cli", {})
    row("`mcp-sse-server serve` → first answered initialize, ms", _cli_ms(cli.get(base, {})),
        _cli_ms(cli.get(OURS, {})), 0)
    if normalised:
        lines += ["", "† other work on this shared machine took part of a server's core in that point, so the row "
                  "compares requests per server CPU-second instead of requests/s."]
    return lines


def _redis_cpu(point: dict[str, Any]) -> float | None:
    """Share of a core the redis-server used during a point."""
    c = point.get("counters") or {}
    return c["redis_cpu_s"] / c["seconds"] if c.get("seconds") and "redis_cpu_s" in c else None


def _requests_in_window(point: dict[str, Any]) -> float:
    """Requests served during the counters' window (wrk's rate times the window's length)."""
    return point["rps"] * (point.get("counters") or {}).get("seconds", 0.0)


def _per_request(point: dict[str, Any]) -> dict[str, float]:
    """Commands per request, by command (INFO commandstats counts a script's own commands besides its EVALSHA)."""
    c, n = point.get("counters") or {}, _requests_in_window(point)
    per = {k.split(":", 1)[1]: v / n for k, v in c.items() if k.startswith("calls:") and v > 0} if n else {}
    return dict(sorted(per.items(), key=lambda kv: (-kv[1], kv[0])))


def _cpu3(point: dict[str, Any]) -> str:
    """Shares of a core: the server, the redis-server, wrk, and the rest of the machine's busy time (other work)."""
    redis, c = _redis_cpu(point), point.get("counters") or {}
    if point.get("server_cpu") is None or point.get("wrk_cpu") is None or redis is None:
        return "—"
    mark = " †" if point.get("disturbed") else ""
    ours = point["server_cpu"] + redis + point["wrk_cpu"]
    other = f" / {100 * max(0.0, c['busy_cpu_s'] / c['seconds'] - ours):.0f}%" if "busy_cpu_s" in c else ""
    return f"{100 * point['server_cpu']:.0f}%{mark} / {100 * redis:.0f}% / {100 * point['wrk_cpu']:.0f}%{other}"


def _per_cpu_with_redis(point: dict[str, Any]) -> float | None:
    redis = _redis_cpu(point)
    return point["rps"] / (point["server_cpu"] + redis) if point.get("server_cpu") and redis is not None else None


def redis_capacity(point: dict[str, Any]) -> tuple[float, float] | None:
    """(commands per redis-server CPU-second, requests per redis-server CPU-second) during a point:
    what one Redis core would carry of this load at 100%."""
    redis, n = _redis_cpu(point), _requests_in_window(point)
    if not redis or not n:
        return None
    commands = sum(_per_request(point).values()) * point["rps"]
    return commands / redis, point["rps"] / redis


def _workers_rows(r: dict[str, Any], key: Callable[[int], str], *, with_capacity: bool) -> list[str]:
    """One row per number of workers of the points `key` names, requests/s against 1 worker's."""
    rows: list[str] = []
    one = _load(r.get(key(1)))
    for n in WORKERS:
        point = _load(r.get(key(n)))
        if point is None:
            rows.append(f"| {n} | {_why(r.get(key(n)), None)} | | | | | |" + (" |" if with_capacity else ""))
            continue
        vs = f"{point['rps'] / one['rps']:.2f}x" if one else "n/a"
        row = (f"| {n} | {_num(point['rps'])} | {_ms(point['p50_us'])} | {_ms(point['p99_us'])} | "
               f"{_cpu3(point)} | {_num(_per_cpu_with_redis(point) or 0)} | {vs} |")
        if with_capacity:
            cap = redis_capacity(point)
            row += f" {_num(cap[1])} requests/s ({_num(cap[0])} commands/s) |" if cap else " — |"
        rows.append(row)
    return rows


def redis_tables(results: dict[str, Any]) -> list[str]:
    """The Redis-store tables: store against store, 1 and 2 workers, Redis memory per idle session."""
    r = results.get("redis") or {}
    if r.get("skip") or (r.get("error") and not any(k in r for k in STORES)):
        return [f"**Redis store**: {'skipped: ' + r['skip'] if r.get('skip') else 'failed: ' + r.get('error', '')}"]
    lines = [f"**Sessions in Redis vs in process: `tools/call`, 16 connections on one session, one worker "
             f"(server on CPU 0; redis-server {r.get('version', '')} and wrk on CPU 1)**", "",
             "| store | requests/s | p50 ms | p99 ms | CPU: server / redis-server / wrk / other work | "
             "requests per server CPU-second | requests per (server + redis-server) CPU-second | "
             "Redis commands per request |",
             "|---|---:|---:|---:|---:|---:|---:|---|"]
    rows = [(key, label) for key, label in STORES.items()]
    rows += [(streamed_key(key), f"{label}, streamed calls on a {STREAMED_REVISION} session")
             for key, label in STORES.items() if key != STORES_ALONE]
    for key, label in rows:
        point = _load(r.get(key))
        if point is None:
            lines.append(f"| {label} | {_why(r.get(key), None)} | | | | | | |")
            continue
        per = _per_request(point)
        commands = (f"{sum(per.values()):.2f}: " + ", ".join(f"{k} {v:.2f}" for k, v in per.items() if v >= 0.005)
                    if per else "none")
        lines.append(f"| {label} | {_num(point['rps'])} | {_ms(point['p50_us'])} | {_ms(point['p99_us'])} | "
                     f"{_cpu3(point)} | {_num(_per_cpu(point) or 0)} | {_num(_per_cpu_with_redis(point) or 0)} | "
                     f"{commands} |")
    cost, alone = redis_cpu_cost(results), redis_cpu_cost(results, STORES_ALONE)
    streamed = redis_cpu_cost(results, streamed_key(REDIS_STORE), streamed_key(MEMORY_STORE))
    if streamed:
        lines += ["", f"Streamed calls on a {STREAMED_REVISION} session (a progress notification, then the reply, "
                  f"on a resumable stream: both logged): CPU per request {streamed[1]:.2f}x the in-process store's "
                  f"counting the redis-server, {streamed[0]:.2f}x the server alone."]
    if cost:
        lines += ["", f"CPU per request, `serve --redis-url` over the in-process store: {cost[1]:.2f}x counting the "
                  f"server and the redis-server, {cost[0]:.2f}x the server alone"
                  + (f" (the stores alone: {alone[1]:.2f}x and {alone[0]:.2f}x)" if alone else "")
                  + ". Commands per request are INFO "
                  "commandstats' calls over the requests of the point: they count the commands a Lua script runs "
                  "besides its EVALSHA, and those of a MULTI/EXEC or pipeline each, so they are not round trips."]
    lines += ["", "**`serve --redis-url URL --workers N`: `tools/call`, 16 connections on one session (workers, "
              "redis-server and wrk all free on both CPUs: on two cores no pinning leaves a worker a core of its "
              "own)**", "",
              "| workers | requests/s | p50 ms | p99 ms | CPU: workers / redis-server / wrk / other work | "
              "requests per (workers + redis-server) CPU-second | requests/s vs 1 worker | "
              "one Redis core's capacity at this mix |",
              "|---:|---:|---:|---:|---:|---:|---:|---:|"]
    lines += _workers_rows(r, workers_key, with_capacity=True)
    lines += ["", f"**The same, each worker held to {WORKER_SHARE:g} of a core (a cgroup's cpu quota): "
              f"{len(WORKERS)} workers need {WORKERS[-1] * WORKER_SHARE:g} of the 2 cores, so wrk and redis-server "
              "are not what limits them; both servers alive, taking turns for a few rounds: the round of the "
              "median ratio**", "",
              "| workers | requests/s | p50 ms | p99 ms | CPU: workers / redis-server / wrk / other work | "
              "requests per (workers + redis-server) CPU-second | requests/s vs 1 worker |",
              "|---:|---:|---:|---:|---:|---:|---:|"]
    lines += _workers_rows(r, capped_key, with_capacity=False)
    lines += ["", "Other work: the machine's busy CPU time during the point less the server's, the redis-server's "
              "and wrk's (this machine is shared; 200% is both cores). "
              "A core's capacity: requests (and Redis commands) per redis-server CPU-second during the point, "
              "i.e. what one redis-server core would carry of this call at 100% (a lower bound: Redis batches "
              "more per wake-up when busier)."]
    m = r.get("memory") or {}
    lines += ["", "**Redis memory per idle session (INFO memory `used_memory` before and after opening idle sessions "
              "on one worker; initialize + initialized, nothing else)**", "",
              "| idle sessions | keys added | used_memory before MB | after MB | bytes per session | server RSS "
              "growth KB per session |", "|---:|---:|---:|---:|---:|---:|"]
    if m.get("bytes_per_session") is not None:
        rss = (m["rss_kb_after"] - m["rss_kb_before"]) / m["opened"]
        lines.append(f"| {_num(m['opened'])} | {_num(m['keys'])} | {_num(m['used_before'] / 2**20, 1)} | "
                     f"{_num(m['used_after'] / 2**20, 1)} | {_num(m['bytes_per_session'])} | {rss:.1f} |")
    else:
        lines.append(f"| {m.get('error') or 'not measured'} | | | | | |")
    if m.get("error") and m.get("bytes_per_session") is not None:
        lines += ["", f"Opening sessions stopped early: {m['error']}"]
    return lines


def redis_cpu_cost(results: dict[str, Any], key: str = REDIS_STORE,
                   base: str = MEMORY_STORE) -> tuple[float, float] | None:
    """CPU per request of point `key` (on Redis) over the in-process store's point `base`:
    (server alone, server + redis-server)."""
    r = results.get("redis") or {}
    mem, red = _load(r.get(base)), _load(r.get(key))
    if not mem or not red or not _per_cpu(mem) or not _per_cpu(red):
        return None
    both_mem, both_red = _per_cpu_with_redis(mem) or _per_cpu(mem), _per_cpu_with_redis(red)
    return _per_cpu(mem) / _per_cpu(red), (both_mem / both_red if both_mem and both_red else 0.0)  # type: ignore[operator]


def redis_targets(results: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(target, measured, verdict) for the Redis store's targets."""
    r = results.get("redis") or {}
    cost = redis_cpu_cost(results)
    out = [(f"`serve --redis-url`: CPU per request ≤ {REDIS_CPU_TARGET:g}x the in-process store's "
            "(server + redis-server)",
            f"{cost[1]:.2f}x (server alone {cost[0]:.2f}x)" if cost else "missing",
            ("met" if cost[1] <= REDIS_CPU_TARGET else "MISSED") if cost else "not measured")]
    streamed = redis_cpu_cost(results, streamed_key(REDIS_STORE), streamed_key(MEMORY_STORE))
    out.append((f"streamed calls on a {STREAMED_REVISION} session: CPU per request ≤ {REDIS_STREAMED_TARGET:g}x "
                "the in-process store's (server + redis-server)",
                f"{streamed[1]:.2f}x (server alone {streamed[0]:.2f}x)" if streamed else "missing",
                ("met" if streamed[1] <= REDIS_STREAMED_TARGET else "MISSED") if streamed else "not measured"))
    mem, red = _load(r.get(MEMORY_STORE)), _load(r.get(REDIS_STORE))
    p99 = red["p99_us"] / mem["p99_us"] if mem and red and mem["p99_us"] else None
    out.append((f"p99 at 16 connections ≤ {REDIS_P99_TARGET:g}x the in-process store's",
                f"{p99:.2f}x ({_ms(red['p99_us'])} against {_ms(mem['p99_us'])} ms)" if p99 and mem and red
                else "missing", ("met" if p99 <= REDIS_P99_TARGET else "MISSED") if p99 else "not measured"))
    ratio = capped_ratio(r)  # (the median round's points, when the rounds were interleaved)
    rounds = [x for points in r.get(CAPPED_ROUNDS) or () if (x := capped_ratio(points)) is not None]
    listed = ", ".join(f"{x:.2f}x" for x in rounds)
    how = f" (the median of {len(rounds)} interleaved rounds: {listed})" if rounds else ""
    out.append((f"2 workers on Redis serve ≥ {WORKERS_TARGET:g}x the requests/s of 1 (each held to "
                f"{WORKER_SHARE:g} of a core, so wrk is not the limit)",
                f"{ratio:.2f}x{how}" if ratio else _why(r.get(capped_key(2)), None),
                ("met" if ratio >= WORKERS_TARGET else "MISSED") if ratio else "not measured"))
    keys = (*STORES, *(streamed_key(k) for k in STORES if k != STORES_ALONE), *map(workers_key, WORKERS),
            *map(capped_key, WORKERS))
    invalid = [key for key in keys if (r.get(key) or {}).get("invalid")]
    out.append(("no error reply in any Redis point", "invalid: " + ", ".join(invalid) if invalid else "none",
                "MISSED" if invalid else "met"))
    return out


# The "must hold" list of the issue "The request path in one pass": the baselines it names.
SPEED_REF, INPROCESS_REF = "540ab25", "6e30da1"
CEILING_SHARE, SPEED_GAIN, JSON_GAIN, FAIRNESS, IDLE_KB = 0.75, 1.05, 1.1, 5.0, 2.0


def baseline_of(results: dict[str, Any], ref: str) -> str | None:
    """The run's `ours@REF` for git ref (or commit) `ref`, None when the run has none."""
    for name, commit in results.get("meta", {}).get("baselines", {}).items():
        if name == f"{OURS}@{ref}" or commit.startswith(ref) or ref.startswith(commit):
            return name
    return None


def _why_not(results: dict[str, Any], name: str | None, key: str, ref: str = "") -> str:
    """Why point `key` of server `name` has no figure (for a must-hold row)."""
    if name is None:
        return f"no `--baseline {ref}` in this run"
    entry = results.get("http", {}).get(name)
    if entry is None:
        return f"{name} not in this run (--servers)"
    return f"{name}: {_why(entry.get(key), entry.get('skip'))}"


def _verdict(ok: bool | None) -> str:
    return "not measured" if ok is None else "met" if ok else "MISSED"


def pair_key(name: str, key: str) -> str:
    """Where run.py keeps a server's point of the interleaved must-hold pairs (results["pairs"]["points"])."""
    return f"{name}:{key}"


def pair_summary(results: dict[str, Any], name: str | None, key: str) -> dict[str, Any] | None:
    """The median over the rounds of the interleaved must-hold pairs: requests per server
    CPU-second, p50 and p99; None when the pairs did not measure that point or a round was invalid."""
    rounds = (results.get("pairs") or {}).get("points", {}).get(pair_key(name, key)) if name else None
    if not rounds or any(_load(r) is None or not _per_cpu(r) for r in rounds):
        return None
    per = [_per_cpu(r) or 0.0 for r in rounds]
    return {"per_cpu": statistics.median(per), "rounds": per, "rps": statistics.median(r["rps"] for r in rounds),
            "server_cpu": statistics.median(r["server_cpu"] for r in rounds),
            "p50_us": statistics.median(r["p50_us"] for r in rounds),
            "p99_us": statistics.median(r["p99_us"] for r in rounds),
            "disturbed": sum(r["server_cpu"] < 0.9 for r in rounds) > len(rounds) // 2}


def pairs_table(results: dict[str, Any]) -> list[str]:
    """The interleaved must-hold pairs, one row per point, a column per round."""
    pairs = results.get("pairs") or {}
    points = pairs.get("points") or {}
    if not points:
        return []
    rounds = pairs.get("rounds", 0)
    lines = [f"**Must-hold pairs, interleaved: the points the must-hold ratios compare, measured again on servers "
             f"alive side by side, one {pairs.get('seconds', 0):g} s point each in turn, {rounds} rounds (16 "
             "connections; quick `tools/call`; requests per server CPU-second, and the share of its core the server "
             "got)**", "",
             "| server | call | " + " | ".join(f"round {i + 1}" for i in range(rounds)) + " | median | p50 / p99 ms "
             "(medians) |", "|---|---|" + "---:|" * rounds + "---:|---:|"]
    calls = {"sse": "2025-06-18 session, SSE", MODERN_KEY: f"{MODERN}, no session", "json": "2025-06-18 session, JSON",
             revision_key(STREAMED, REVISIONS[0]): "2025-06-18 session, streamed (progress, then the reply)"}
    for key, loads in points.items():
        name, _, call = key.rpartition(":")
        cells = []
        for load in loads:
            point = _load(load)
            cells.append(f"{_num(_per_cpu(point) or 0)} ({100 * point['server_cpu']:.0f}%)" if point and
                         point.get("server_cpu") else f"invalid: {(load or {}).get('invalid')}")
        cells += [""] * (rounds - len(cells))
        summary = pair_summary(results, name, call)
        tail = (f"{_num(summary['per_cpu'])} | {_ms(summary['p50_us'])} / {_ms(summary['p99_us'])}" if summary
                else "— | —")
        lines.append(f"| {server_label(name)} | {calls.get(call, call)} | " + " | ".join(cells) + f" | {tail} |")
    if pairs.get("error"):
        lines += ["", f"The pairs stopped early: {pairs['error']}"]
    return lines


CLEAN_SHARE = 0.9  # a round of the pairs is clean when both servers got at least this share of their core


def bearer_ratios(results: dict[str, Any], key: str) -> list[tuple[float, bool]]:
    """(ours-jwt's server CPU per request over ours', clean) for each round of the pairs where both
    points of `key` ("sse" or "json") are valid; clean: both servers got ≥ CLEAN_SHARE of their core
    (in a round where one did not, other work ran during its turn only, and the ratio says more of
    the machine than of the servers). [] without such rounds."""
    points = (results.get("pairs") or {}).get("points") or {}
    ratios = []
    for a, b in zip(points.get(pair_key(OURS, key)) or [], points.get(pair_key(OURS_JWT, key)) or [], strict=False):
        if _load(a) and _load(b) and _per_cpu(a) and _per_cpu(b):
            clean = min(a["server_cpu"], b["server_cpu"]) >= CLEAN_SHARE
            ratios.append(((_per_cpu(a) or 0.0) / (_per_cpu(b) or 1.0), clean))
    return ratios


def bearer_figure(results: dict[str, Any], key: str) -> tuple[float, str] | None:
    """The pairs' CPU-per-request ratio ours-jwt over ours: the median over the clean rounds, else over
    every round (marked †); and how it was taken."""
    ratios = bearer_ratios(results, key)
    if not ratios:
        return None
    clean = [r for r, ok in ratios if ok]
    if clean:
        return statistics.median(clean), f"median of the {len(clean)} clean rounds of {len(ratios)}"
    return statistics.median(r for r, _ in ratios), f"median of all {len(ratios)} rounds, none clean †"


def _rounds_list(ratios: list[tuple[float, bool]]) -> str:
    return ", ".join(f"{r:.2f}x{'' if ok else ' †'}" for r, ok in ratios)


def _main_figure(point: dict[str, Any] | None) -> dict[str, Any] | None:
    """A main point's figures in pair_summary's shape (None when it has none)."""
    point = _load(point)
    if point is None or not _per_cpu(point):
        return None
    return {"per_cpu": _per_cpu(point), "rps": point["rps"], "server_cpu": point["server_cpu"],
            "p50_us": point["p50_us"], "p99_us": point["p99_us"], "disturbed": point.get("disturbed", False)}


def bearer_table(results: dict[str, Any]) -> list[str]:
    """Ours and ours-jwt at point 1, SSE and JSON replies: the interleaved pairs' medians (what the
    must-hold row reads) and the main points, with server CPU per request as ours-jwt over ours."""
    if OURS_JWT not in results["order"]:
        return []
    http = results.get("http", {})
    points = (results.get("pairs") or {}).get("points") or {}
    lines = ["**Bearer tokens: `tools/call add`, 16 connections on one 2025-06-18 session, ours without "
             "authorization and `ours-jwt` (`bind(..., auth=ResourceServer(...))` with a `JwtVerifier` holding a "
             "local RS256 key; every request, initialize included, carries `Authorization: Bearer` and one JWT "
             "access token, verified once, then a `VerifiedTokens` hit). CPU per request: server CPU-seconds per "
             f"request, `ours-jwt` over ours (from the pairs: the median of the clean rounds' own ratios); must "
             f"hold: ≤ {BEARER_CPU:.2f}x**", "",
             "| server | replies | figures | requests/s | p50 ms | p99 ms | server CPU | requests per server "
             "CPU-second | CPU per request vs ours | each round's ratio |",
             "|---|---|---|---:|---:|---:|---:|---:|---:|---|"]

    def row(name: str, replies: str, how: str, fig: dict[str, Any] | None, ref: dict[str, Any] | None,
            why: str, rounds: str = "", ratio: str = "") -> str:
        if fig is None:
            return f"| {server_label(name)} | {replies} | {how} | {why} | | | | | | |"
        ratio = ratio or ("—" if name == OURS else f"{ref['per_cpu'] / fig['per_cpu']:.2f}x" if ref else "n/a")
        cpu = f"{100 * fig['server_cpu']:.0f}%{' †' if fig.get('disturbed') else ''}"
        return (f"| {server_label(name)} | {replies} | {how} | {_num(fig['rps'])} | {_ms(fig['p50_us'])} | "
                f"{_ms(fig['p99_us'])} | {cpu} | {_num(fig['per_cpu'])} | {ratio} | {rounds} |")

    for key, replies in (("sse", "SSE"), ("json", "JSON")):
        paired = {name: pair_summary(results, name, key) for name in (OURS, OURS_JWT)}
        if any(pair_key(name, key) in points for name in (OURS, OURS_JWT)):
            a = points.get(pair_key(OURS, key)) or []
            ratios, figure = _rounds_list(bearer_ratios(results, key)), bearer_figure(results, key)
            how = f"pairs ({len(a)} rounds, medians)"
            for name in (OURS, OURS_JWT):
                why = "a round invalid (see the pairs)" if pair_key(name, key) in points else "not in the pairs"
                ratio = f"{figure[0]:.2f}x ({figure[1]})" if name == OURS_JWT and figure else ""
                lines.append(row(name, replies, how, paired[name], paired[OURS], why,
                                 ratios if name == OURS_JWT else "", ratio))
        main = {name: _main_figure(http.get(name, {}).get(key)) for name in (OURS, OURS_JWT)}
        for name in (OURS, OURS_JWT):
            entry = http.get(name, {})
            lines.append(row(name, replies, "main point", main[name], main[OURS], _why(entry.get(key),
                                                                                    entry.get("skip"))))
    lines += ["", "The token is verified once (an RS256 signature check by PyJWT) when the harness's readiness "
              "`initialize` reaches a fresh server, before any measured second; the verifier has the key set in "
              "hand (`keys=`), so no JWKS is fetched. A point then measures requests whose token was verified "
              "before: the bearer check, the cache lookup by the token's SHA-256, the session bound to the "
              "token's principal, the scopes of the tool named. Each round's ratio compares the two servers' "
              f"points of that round, measured back to back; a round is clean when both got at least "
              f"{100 * CLEAN_SHARE:.0f}% of their core (else marked †: other work ran during one turn), and the "
              "median of the clean rounds' ratios (of every round's when none is) is the pairs' figure, the one "
              "the must-hold row reads. The other columns are each server's medians over the rounds."]
    return lines


def must_hold(results: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(target, measured, verdict) for each item of the issue's "must hold" list, every
    throughput compared per server CPU-second (requests/s over the server's share of its core).
    The throughput ratios come from the interleaved pairs (the median of their rounds) where
    the run measured them, else from the main points."""
    http, out = results.get("http", {}), []

    def point(name: str | None, key: str) -> dict[str, Any] | None:
        return _load(http.get(name, {}).get(key)) if name else None

    def figure(name: str | None, key: str) -> dict[str, Any] | None:
        """{"per_cpu", "p50_us", "p99_us", "disturbed", "how"} of a point: the pairs' median, else the main point."""
        paired = pair_summary(results, name, key)
        if paired:
            return {**paired, "how": "pairs"}
        main = point(name, key)
        if main is None or not _per_cpu(main):
            return None
        return {"per_cpu": _per_cpu(main), "p50_us": main["p50_us"], "p99_us": main["p99_us"],
                "disturbed": main.get("disturbed", False), "how": "main"}

    def per_cpu(f: dict[str, Any]) -> str:
        return f"{_num(f['per_cpu'])}/CPU-s"

    def mark(*figures: dict[str, Any]) -> str:
        how = {f["how"] for f in figures}
        source = " (pairs' medians)" if how == {"pairs"} else " (main points)" if how == {"main"} else " (mixed)"
        return source + (" †" if any(f.get("disturbed") for f in figures) else "")

    ours, bare, noread = figure(OURS, "sse"), figure(BARE, "sse"), point(BARE_NOREAD, "sse")
    call = "quick `tools/call` on a 2025-06-18 session (SSE, 16 connections)"
    # 1. against the body-reading ceiling, and against ours@540ab25
    target = (f"{call} ≥ {100 * CEILING_SHARE:.0f}% of the bare ASGI app that reads the body, per server "
              "CPU-second")
    if ours and bare:
        share = ours["per_cpu"] / bare["per_cpu"]
        main_ours, main_bare = point(OURS, "sse"), point(BARE, "sse")
        also = ""
        if main_ours and main_bare and noread and _per_cpu(main_bare) and _per_cpu(noread):
            mine = _per_cpu(main_ours) or 0.0
            also = (f"; main points: {100 * mine / _per_cpu(main_bare):.0f}% of the ceiling, " if ours["how"] == "pairs"  # type: ignore[operator]
                    else "; ") + f"{100 * mine / _per_cpu(noread):.0f}% of the app not reading the body"  # type: ignore[operator]
        out.append((target, f"{100 * share:.0f}%{mark(ours, bare)}: ours {per_cpu(ours)}, ceiling {per_cpu(bare)}"
                    f"{also}", _verdict(share >= CEILING_SHARE)))
    else:
        out.append((target, _why_not(results, OURS if not ours else BARE, "sse"), _verdict(None)))
    speed_base = baseline_of(results, SPEED_REF)
    base = figure(speed_base, "sse")
    target = f"the same ≥ {SPEED_GAIN:g}x `ours@{SPEED_REF}`, per server CPU-second"
    if ours and base:
        gain = ours["per_cpu"] / base["per_cpu"]
        out.append((target, f"{gain:.2f}x{mark(ours, base)}: ours {per_cpu(ours)}, `{speed_base}` {per_cpu(base)}",
                    _verdict(gain >= SPEED_GAIN)))
    else:
        out.append((target, _why_not(results, OURS if not ours else speed_base, "sse", SPEED_REF), _verdict(None)))
    # 2. the stateless revision against a session
    modern = figure(OURS, MODERN_KEY)
    target = f"quick `tools/call` at {MODERN} (stateless) ≥ 1.00x the 2025-06-18 session's, per server CPU-second"
    if ours and modern:
        ratio = modern["per_cpu"] / ours["per_cpu"]
        out.append((target, f"{ratio:.2f}x{mark(ours, modern)}: {MODERN} {per_cpu(modern)}, session "
                    f"{per_cpu(ours)}", _verdict(ratio >= 1.0)))
    else:
        out.append((target, _why_not(results, OURS, "sse" if not ours else MODERN_KEY), _verdict(None)))
    # 3. JSON replies against SSE replies
    json_ = figure(OURS, "json")
    target_cpu = f"JSON replies (`json_response=True`) ≥ {JSON_GAIN:g}x SSE replies, per server CPU-second"
    target_p99 = "JSON replies: p99 no worse than SSE replies'"
    if ours and json_:
        ratio = json_["per_cpu"] / ours["per_cpu"]
        out.append((target_cpu, f"{ratio:.2f}x{mark(ours, json_)}: JSON {per_cpu(json_)}, SSE {per_cpu(ours)}",
                    _verdict(ratio >= JSON_GAIN)))
        out.append((target_p99, f"JSON {_ms(json_['p99_us'])} ms, SSE {_ms(ours['p99_us'])} ms{mark(ours, json_)}",
                    _verdict(json_["p99_us"] <= ours["p99_us"])))
    else:
        missing = _why_not(results, OURS, "sse" if not ours else "json")
        out += [(target_cpu, missing, _verdict(None)), (target_p99, missing, _verdict(None))]
    # 3b. bearer tokens (issue 19): ours-jwt against ours, SSE (JSON replies' ratio beside it). A paired
    # comparison: the median of the rounds' own ratios (each round's two points ran back to back).
    target = (f"a `tools/call` carrying a JWT access token verified before (`ours-jwt`: RS256, a `VerifiedTokens` "
              f"hit; SSE, 16 connections, one session) costs ≤ {BEARER_CPU:.2f}x the server CPU per request of "
              "ours without authorization (issue 19)")
    paired, jwt = bearer_figure(results, "sse"), figure(OURS_JWT, "sse")
    main_ours, main_jwt = point(OURS, "sse"), point(OURS_JWT, "sse")
    main_ratio = ((_per_cpu(main_ours) or 0.0) / (_per_cpu(main_jwt) or 1.0)
                  if main_ours and main_jwt and _per_cpu(main_ours) and _per_cpu(main_jwt) else None)
    if paired:
        ratio = paired[0]
        shown = f"{ratio:.2f}x (pairs, {paired[1]}; every round: {_rounds_list(bearer_ratios(results, 'sse'))})"
        if ours and jwt and jwt["how"] == "pairs":
            shown += (f"; the medians' ratio {ours['per_cpu'] / jwt['per_cpu']:.2f}x{mark(ours, jwt)} (`ours-jwt` "
                      f"{per_cpu(jwt)}, ours {per_cpu(ours)})")
    elif main_ratio is not None:
        ratio = main_ratio
        shown = f"{ratio:.2f}x (main points)"
    else:
        ratio, shown = None, _why_not(results, OURS if not point(OURS, "sse") else OURS_JWT, "sse")
    if ratio is not None:
        if paired and main_ratio is not None:
            shown += f"; main points {main_ratio:.2f}x"
        json_paired = bearer_figure(results, "json")
        if json_paired:
            shown += f"; JSON replies {json_paired[0]:.2f}x ({json_paired[1]})"
    out.append((target, shown, _verdict(None if ratio is None else ratio <= BEARER_CPU)))
    # 4. fairness at point 4
    many, bare_many = point(OURS, "sessions100"), point(BARE, "sessions100")
    target = f"100 sessions, 1 request each in flight: p99 ≤ {FAIRNESS:g}x p50"
    if many and many.get("p50_us"):
        ratio = many["p99_us"] / many["p50_us"]
        ceiling = (f"; the ceiling {bare_many['p99_us'] / bare_many['p50_us']:.1f}x ({_ms(bare_many['p50_us'])} → "
                   f"{_ms(bare_many['p99_us'])} ms)" if bare_many and bare_many.get("p50_us") else "")
        out.append((target, f"{ratio:.1f}x{' †' if many.get('disturbed') else ''}: p50 {_ms(many['p50_us'])} ms, "
                    f"p99 {_ms(many['p99_us'])} ms"
                    f"{ceiling}", _verdict(ratio <= FAIRNESS)))
    else:
        out.append((target, _why_not(results, OURS, "sessions100"), _verdict(None)))
    # 5. idle session, and the in-process round trips against ours@6e30da1
    mem = results.get("memory", {}).get(OURS, {})
    per = _per_session(mem)
    shared = mem.get("shared_server")
    how = "one server for every session" if shared else "a server per session!" if shared is False else "?"
    target = f"idle session ≤ {IDLE_KB:g} KB with a shared server"
    out.append((target, f"{per:.2f} KB ({how}, at {max(_points(mem)):,} sessions)" if per is not None else
                (mem.get("skip") or mem.get("error") or "not run"), _verdict(None if per is None else per <= IDLE_KB)))
    inm, inproc = results.get("inmemory", {}), baseline_of(results, INPROCESS_REF)
    for way, what in (("inmemory-client", "`InMemoryClient.call_tool`"),
                      ("memory-transport", "raw request through `MemoryTransport`")):
        target = f"in-process round trip, {what}: median no slower than `ours@{INPROCESS_REF}`"
        a = inm.get(way, {}).get("median_us")
        b = inm.get(way + ref_suffix(inproc), {}).get("median_us") if inproc else None
        if a is None or b is None:
            why = (f"no `--baseline {INPROCESS_REF}` in this run" if inproc is None else
                   "; ".join(f"{k}: {inm.get(k, {}).get('invalid') or inm.get(k, {}).get('skipped') or 'not run'}"
                             for k in (way, way + ref_suffix(inproc)) if inm.get(k, {}).get("median_us") is None))
            out.append((target, why, _verdict(None)))
            continue
        out.append((target, f"{a / b:.2f}x the time: ours {a:.2f} µs, `{inproc}` {b:.2f} µs (best round's medians)",
                    _verdict(a <= b)))
    return out


def _points(m: dict[str, Any]) -> list[int]:
    return sorted(int(k.rsplit("_", 1)[1]) for k in m if k.startswith("per_kb_")) or [0]


def targets(results: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(target, measured, verdict) for each of issue 6's targets."""
    http = results.get("http", {})
    mem = results.get("memory", {}).get(OURS, {})
    inm = results.get("inmemory", {})
    ours = _load(http.get(OURS, {}).get("sse"))

    def ratio(name: str) -> tuple[float, bool] | None:
        peer = _load(http.get(name, {}).get("sse"))
        return rps_ratio(ours, peer) if ours and peer else None

    out: list[tuple[str, str, str]] = []

    def check(target: str, value: float | None, ok: bool, shown: str) -> None:
        out.append((target, shown if value is not None else "missing", ("met" if ok else "MISSED")
                    if value is not None else "not measured"))

    for name, want, label in (("official", 10.0, "official Python SDK"), ("typescript", 2.5, "TypeScript SDK"),
                              (BARE, 0.6, "bare-ASGI ceiling (body read)")):
        got = ratio(name)
        r = got[0] if got else None
        mark = " †" if got and got[1] else ""
        shown = (f"{100 * r:.0f}%" if name == BARE else _times(r)) + mark if r is not None else ""
        noread = ratio(BARE_NOREAD) if name == BARE else None
        if noread and r is not None:
            shown += f" ({100 * noread[0]:.0f}%{' †' if noread[1] else ''} of the app not reading the body)"
        target = "≥ 60% of the" if name == BARE else f"≥ {want:g}x the"
        check(f"HTTP tools/call {target} {label}", r, r is not None and r >= want, shown)
    p99 = ours["p99_us"] / 1000 if ours else None
    check("p99 < 5 ms at 16 connections", p99, p99 is not None and p99 < 5, f"{p99:.2f} ms" if p99 else "")
    per = _per_session(mem)
    check("idle session ≤ 4 KB", per, per is not None and per <= 4, f"{per:.1f} KB" if per is not None else "")
    hundred = _hundred_k_mb(mem)
    big = hundred[0] if hundred else None
    check("100,000 idle sessions < 1 GB", big, big is not None and big < 1024,
          f"{big:,.0f} MB" + ("" if hundred and hundred[1] else " (extrapolated)") if big is not None else "")
    invalid = [f"{server_label(name)} {key}" for name, entry in http.items()
               for key in ("json", "sessions100", *POINTS16)
               if isinstance(entry.get(key), dict) and entry[key].get("invalid")]
    invalid += [key for key, row in inm.items() if row.get("invalid")]
    out.append(("no error reply in any point", "invalid: " + ", ".join(invalid) if invalid else "none",
                "MISSED" if invalid else "met"))
    for key, want, label in (("inmemory-client", 10, "`InMemoryClient`"),
                             ("memory-transport", 30, "`MemoryTransport`")):
        med = inm.get(key, {}).get("median_us")
        check(f"in-memory round trip median ≤ {want} µs through {label}", med, med is not None and med <= want,
              f"{med:.1f} µs" if med is not None else "")
    return out


FAST_REF = "a3542c1"  # issue 41's baseline: before the fast path
FAST_GAIN, FAST_STREAMED_GAIN, FAST_FAIRNESS = 1.8, 1.5, 3.0
STREAMED_KEY = revision_key(STREAMED, REVISIONS[0])


def _figure(results: dict[str, Any], name: str | None, key: str) -> dict[str, Any] | None:
    """A point's {"per_cpu", "p50_us", "p99_us", "disturbed", "how"}: the pairs' median, else the main point."""
    paired = pair_summary(results, name, key)
    if paired:
        return {**paired, "how": "pairs"}
    main = _load(results.get("http", {}).get(name, {}).get(key)) if name else None
    if main is None or not _per_cpu(main):
        return None
    return {"per_cpu": _per_cpu(main), "p50_us": main["p50_us"], "p99_us": main["p99_us"],
            "disturbed": main.get("disturbed", False), "how": "main"}


def fast_path_table(results: dict[str, Any]) -> list[str]:
    """Issue 41's rows side by side: the raw protocol, ours on the fast path, on the ASGI path (bind
    with fast_path=False, and mounted in Starlette), the bare ASGI app and ours@a3542c1; quick calls
    per server CPU-second (the pairs' medians where measured), with ratios to ours and to the raw
    protocol; then each point of the main tables (SSE, JSON, stateless, 100 sessions p50/p99)."""
    base = baseline_of(results, FAST_REF)
    names = [n for n in (RAW, OURS, OURS_ASGI, OURS_STARLETTE, BARE, base) if n and n in results.get("http", {})]
    if OURS not in names or len(names) < 2:
        return []
    ours = _figure(results, OURS, "sse")
    raw = _figure(results, RAW, "sse")
    lines = ["**The fast path (issue 41): quick `tools/call` on a 2025-06-18 session, SSE, 16 connections, "
             "requests per server CPU-second; the interleaved pairs' medians (p) where measured, else the main "
             "point (m)**", "",
             "| server | per server CPU-s | ours (fast path) vs it | share of the raw protocol |",
             "|---|---:|---:|---:|"]
    for name in names:
        f = _figure(results, name, "sse")
        if f is None:
            lines.append(f"| {server_label(name)} | {_why_not(results, name, 'sse')} | | |")
            continue
        vs = "—" if name == OURS or not ours else f"{ours['per_cpu'] / f['per_cpu']:.2f}x"
        share = f"{100 * f['per_cpu'] / raw['per_cpu']:.0f}%" if raw else "—"
        mark = " (p)" if f["how"] == "pairs" else " (m)"
        lines.append(f"| {server_label(name)} | {_num(f['per_cpu'])}{mark}{' †' if f.get('disturbed') else ''} | "
                     f"{vs} | {share} |")
    http = results.get("http", {})
    points = (("sse", "SSE"), ("json", "JSON"), (MODERN_KEY, f"{MODERN} stateless"), (STREAMED_KEY, "streamed"))
    lines += ["", "**The same servers, every main point: requests per server CPU-second (p50 / p99 ms); "
              "100 sessions with one request each in flight: p50 / p99 ms and their ratio**", "",
              "| server | " + " | ".join(label for _, label in points) + " | 100 sessions |",
              "|---|" + "---:|" * (len(points) + 1)]
    for name in names:
        entry, cells = http.get(name, {}), []
        for key, _ in points:
            pt = _load(entry.get(key))
            cells.append(f"{_num(_per_cpu(pt) or 0)} ({_ms(pt['p50_us'])} / {_ms(pt['p99_us'])})"
                         if pt and _per_cpu(pt) else "—")
        many = _load(entry.get("sessions100"))
        cells.append(f"{_ms(many['p50_us'])} / {_ms(many['p99_us'])} ({many['p99_us'] / many['p50_us']:.1f}x)"
                     if many and many.get("p50_us") else "—")
        lines.append(f"| {server_label(name)} | " + " | ".join(cells) + " |")
    return lines


def fast_path_must_hold(results: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(target, measured, verdict) for issue 41's "must hold" list that one run.py run measures
    (bench/redteam.py's checks run apart: bench/README.md's fast-path section)."""
    base = baseline_of(results, FAST_REF)
    out: list[tuple[str, str, str]] = []

    def fig(name: str | None, key: str) -> dict[str, Any] | None:
        return _figure(results, name, key)

    def shown(f: dict[str, Any]) -> str:
        return f"{_num(f['per_cpu'])}/CPU-s{' (pairs)' if f['how'] == 'pairs' else ' (main)'}" + (
            " †" if f.get("disturbed") else "")

    def versus(target: str, a: dict[str, Any] | None, b: dict[str, Any] | None, want: float, what: tuple[str, str],
               missing: tuple[str | None, str], extra: str = "") -> None:
        if a and b:
            ratio = a["per_cpu"] / b["per_cpu"]
            out.append((target, f"{ratio:.2f}x: {what[0]} {shown(a)}, {what[1]} {shown(b)}{extra}",
                        _verdict(ratio >= want)))
        else:
            out.append((target, _why_not(results, missing[0], missing[1], FAST_REF), _verdict(None)))

    ours, bare = fig(OURS, "sse"), fig(BARE, "sse")
    extra = f"; the bare ASGI app {shown(bare)} ({ours['per_cpu'] / bare['per_cpu']:.2f}x)" if ours and bare else ""
    versus(f"session quick call ≥ {FAST_GAIN:g}x `ours@{FAST_REF}`, per server CPU-second (fast path)", ours,
           fig(base, "sse"), FAST_GAIN, ("ours", f"`{base}`"), (OURS if not ours else base, "sse"), extra)
    versus(f"stateless {MODERN} call ≥ the session call", fig(OURS, MODERN_KEY), ours, 1.0,
           (MODERN, "session"), (OURS, MODERN_KEY))
    versus("JSON replies ≥ SSE replies", fig(OURS, "json"), ours, 1.0, ("JSON", "SSE"), (OURS, "json"))
    versus(f"streamed calls (progress, then the reply) ≥ {FAST_STREAMED_GAIN:g}x `ours@{FAST_REF}`",
           fig(OURS, STREAMED_KEY), fig(base, STREAMED_KEY), FAST_STREAMED_GAIN, ("ours", f"`{base}`"),
           (OURS if not fig(OURS, STREAMED_KEY) else base, STREAMED_KEY))
    http = results.get("http", {})
    for name in (OURS, OURS_ASGI):
        many = _load(http.get(name, {}).get("sessions100"))
        target = f"100 sessions, one request each in flight: p99 ≤ {FAST_FAIRNESS:g}x p50 ({server_label(name)})"
        if many and many.get("p50_us"):
            ratio = many["p99_us"] / many["p50_us"]
            waited = (f"; the server waited {_num(many['run_delay_ms'])} ms for its core (other work)"
                      if many.get("run_delay_ms") is not None else "")
            out.append((target, f"{ratio:.1f}x: p50 {_ms(many['p50_us'])} ms, p99 {_ms(many['p99_us'])} ms"
                        f"{' †' if many.get('disturbed') else ''}{waited}", _verdict(ratio <= FAST_FAIRNESS)))
        elif name in http:
            out.append((target, _why_not(results, name, "sessions100"), _verdict(None)))
    mem = results.get("memory", {})
    a, b = _per_session(mem.get(OURS, {})), _per_session(mem.get(base, {})) if base else None
    target = f"idle session memory no larger than `ours@{FAST_REF}`'s"
    at = max(_points(mem.get(OURS, {})) or [0])
    out.append((target, f"ours {a:.2f} KB, `{base}` {b:.2f} KB (at {at:,} sessions)" if a is not None and b is not None
                else f"no figure (ours {a}, `ours@{FAST_REF}` {b})", _verdict(None if a is None or b is None
                                                                         else a <= b)))
    inm = results.get("inmemory", {})
    for way, what in (("inmemory-client", "`InMemoryClient.call_tool`"),
                      ("memory-transport", "raw request through `MemoryTransport`")):
        target = f"in-process round trip, {what}: median no slower than `ours@{FAST_REF}`"
        x = inm.get(way, {}).get("median_us")
        y = inm.get(way + ref_suffix(base), {}).get("median_us") if base else None
        out.append((target, f"{x / y:.2f}x the time: ours {x:.2f} µs, `{base}` {y:.2f} µs (best round's medians)"
                    if x and y else "not measured", _verdict(None if not x or not y else x <= y)))
    return out


def server_tables(results: dict[str, Any]) -> list[str]:
    """The tables of the servers side by side: HTTP points, revisions, memory."""
    lines = http_table(results, "sse", "HTTP `tools/call`, 16 connections on one session, SSE replies")
    lines.append("")
    lines += http_table(results, "json", "HTTP `tools/call`, 16 connections on one session, JSON replies "
                        "(the peers' `--json`; ours: `bind(..., json_response=True)` where the code measured has "
                        "it, else our SSE figure is the reference)")
    lines.append("")
    lines += http_table(results, "sessions100", "HTTP `tools/call`, 100 sessions with 1 request each in flight "
                        "(SSE replies; one wrk thread and connection per session)")
    check = _load(results.get("http", {}).get(BARE, {}).get("gen_check"))
    many = _load(results.get("http", {}).get(BARE, {}).get("sessions100"))
    if check and many:
        lines += ["", f"Load generator check: against the bare ASGI app, the same 100 connections from one "
                  f"wrk thread give {_num(check['rps'])} requests/s (p99 {_ms(check['p99_us'])} ms, CPU "
                  f"{_cpu(check)}), one thread per session {_num(many['rps'])} (p99 {_ms(many['p99_us'])} ms, "
                  f"CPU {_cpu(many)})."]
    if mcp_servers(results):
        lines += ["", *http_table(results, MODERN_KEY, f"HTTP `tools/call` at {MODERN} (stateless: no initialize, no "
                                  "session; the `_meta` envelope and `Mcp-Method` / `Mcp-Name` headers on every call), "
                                  "16 connections", mcp_servers(results)), *modern_replies(results)]
        versus = modern_vs_legacy_table(results)
        lines += ["", *versus] if versus else []
    if any(on_every_revision(name) for name in results["order"]):
        lines += ["", *revisions_table(results), "", *resumable_cost_table(results)]
    lines.append("")
    lines += memory_table(results)
    lines.append("")
    return lines


def render(results: dict[str, Any]) -> str:
    meta = results["meta"]
    baselines = "".join(f"; {name} at {commit}" for name, commit in meta.get("baselines", {}).items())
    lines = [f"Run of {meta['date']} on {meta['machine']}; ours at {meta.get('tree', 'an unknown commit')}"
             f"{baselines}; {meta['mode']}. Server on CPU 0, "
             f"load generator on CPU 1. Versions: {meta['versions']}. Load average (1 min) "
             f"{meta.get('load_before', 0):.2f} at the start, {meta.get('load_after', 0):.2f} at the end "
             "(other work on this shared machine shows here).", ""]
    if results["order"]:  # none with `--servers ours-redis` alone
        lines += server_tables(results)
    lines += inmemory_table(results)
    lines.append("")
    lines += startup_table(results)
    for name in results["order"]:
        if ref_suffix(name):
            lines += ["", *before_after_table(results, name)]
    if results.get("redis"):
        lines += ["", *redis_tables(results)]
    pairs = pairs_table(results)
    lines += ["", *pairs] if pairs else []
    bearer = bearer_table(results)
    lines += ["", *bearer] if bearer else []
    fast = fast_path_table(results)
    if fast:
        lines += ["", *fast, "", f"**Must hold (issue 41, the fast path; `--baseline {FAST_REF}`)**", "",
                  "| must hold | measured | |", "|---|---|---|"]
        lines += [f"| {t} | {m} | {v} |" for t, m, v in fast_path_must_hold(results)]
    lines += ["", '**Must hold (issue "The request path in one pass", and issue 19\'s bearer tokens; every '
              'throughput per server CPU-second, i.e. requests/s over the share of its core the server used)**', "",
              "| must hold | measured | |", "|---|---|---|"]
    lines += [f"| {t} | {m} | {v} |" for t, m, v in must_hold(results)]
    lines += ["", "Pairs' medians: the interleaved pairs above (run.py measures them after every server's points); "
              "main points: the tables' own points, measured minutes apart."]
    if any("†" in m for _, m, _ in must_hold(results)):
        lines += ["† other work on this shared machine took part of that server's core in most tries: read the "
                  "per-CPU-second figures (the ratios are of them)."]
    lines += ["", "**Targets from issue 6**", "", "| target | measured | |", "|---|---:|---|"]
    lines += [f"| {t} | {m} | {v} |" for t, m, v in targets(results)]
    if results.get("redis") and not results["redis"].get("skip"):
        lines += ["", "**Targets for the Redis store**", "", "| target | measured | |", "|---|---:|---|"]
        lines += [f"| {t} | {m} | {v} |" for t, m, v in redis_targets(results)]
    return "\n".join(lines) + "\n"


def splice_readme(readme: Path, table: str) -> None:
    """Replace the results section of the README (between the markers)."""
    text = readme.read_text()
    pattern = re.compile(re.escape(START) + r".*?" + re.escape(END), re.S)
    if not pattern.search(text):
        raise ValueError(f"{readme} has no {START} ... {END} section")
    readme.write_text(pattern.sub(lambda _: f"{START}\n{table}{END}", text))
