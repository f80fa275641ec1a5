#!/usr/bin/env python3
"""Run every query of cmax's Grafana dashboards against a live Prometheus.

Loads deploy/grafana/cmax-fleet.json and cmax-node.json (or the files given), takes every panel
target's `expr` and the template variables' `label_values(...)` queries, substitutes Grafana's
variables ($node from --node, $__rate_interval, $__interval, $__range, ...), and POSTs each to
PROMETHEUS/api/v1/query. Prints one line per query: ok, NO DATA or ERROR.

A query ending in a filter (`> 0`, `== 1`) that returns nothing is run again without it: it
counts as data when the series under the filter exist (no node down is not missing data).

Exit status: 0 every query ran (and, with --require-data, returned data); 1 a query errored (or,
with --require-data, returned nothing); 2 usage, unreadable dashboard, or Prometheus unreachable.

  tests/fleetview/dashboard_queries.py --prometheus http://127.0.0.1:9090 --node gpu-07 --require-data

--emit-rules FILE writes the substituted queries as a Prometheus rule file instead, so that
`promtool check rules FILE` parses them without a server.
"""

import argparse
import json
import pathlib
import re
import sys
import urllib.error
import urllib.parse
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parents[2]
DEFAULT_DASHBOARDS = [ROOT / "deploy/grafana/cmax-fleet.json", ROOT / "deploy/grafana/cmax-node.json"]
DURATION = re.compile(r"^[0-9]+(ms|s|m|h|d|w|y)$")
# Metric and recording-rule names in a query (label names inside {...} and by (...) are not
# followed by "{" or "[" and are dropped by the PROMQL_WORDS filter where they are keywords).
METRIC = re.compile(r"([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(?=\{)|(?<![\w.:\"-])([a-zA-Z_][a-zA-Z0-9_]*:[a-zA-Z0-9_:]+)")
PROMQL_WORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "offset"}
# A query that ends in a filter ("... > 0", "... == 1") is empty whenever nothing is wrong.
TRAILING_FILTER = re.compile(r"^(?P<base>.*\S)\s*(==|!=|>=|<=|>|<)\s*(bool\s+)?[-+]?[0-9.]+([eE][-+]?[0-9]+)?\s*$", re.S)


def seconds(duration):
    """Seconds in a Prometheus duration such as 90s, 5m, 1h (one unit)."""
    units = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800, "y": 31536000}
    unit = re.sub(r"^[0-9]+", "", duration)
    return int(duration[: -len(unit)]) * units[unit]


def substitute(expr, values):
    """Grafana's variable forms: $name, ${name}, ${name:format}, [[name]]; longest names first."""
    for name in sorted(values, key=len, reverse=True):
        value = values[name]
        expr = re.sub(r"\$\{" + re.escape(name) + r"(:[a-z]+)?\}", lambda _m: value, expr)
        expr = expr.replace("[[" + name + "]]", value)
        expr = re.sub(r"\$" + re.escape(name) + r"(?![A-Za-z0-9_])", lambda _m: value, expr)
    return expr


def label_values_query(definition):
    """label_values(selector, label) -> a PromQL query whose result carries that label."""
    m = re.fullmatch(r"\s*label_values\((.*),\s*([A-Za-z_][A-Za-z0-9_]*)\s*\)\s*", definition, re.S)
    if not m:
        return None
    return f"count by ({m.group(2)}) ({m.group(1)})"


def walk_panels(panels):
    for panel in panels:
        yield panel
        yield from walk_panels(panel.get("panels", []))


def collect(path):
    """(where, expr) for every target and query variable of one dashboard."""
    dash = json.loads(path.read_text())
    out = []
    for var in dash.get("templating", {}).get("list", []):
        if var.get("type") != "query":
            continue
        query = var.get("query")
        definition = query.get("query", "") if isinstance(query, dict) else (query or var.get("definition", ""))
        expr = label_values_query(definition)
        if expr:
            out.append((f"{path.name}: variable ${var['name']}", expr))
        elif definition:
            out.append((f"{path.name}: variable ${var['name']}", definition))
    for panel in walk_panels(dash.get("panels", [])):
        for target in panel.get("targets", []):
            if target.get("expr"):
                where = f"{path.name}: panel {panel.get('id')} \"{panel.get('title', '')}\" {target.get('refId', '')}"
                out.append((where, target["expr"]))
    return out


def query(base, expr, timeout):
    """Returns (result list, None) or (None, error text)."""
    data = urllib.parse.urlencode({"query": expr}).encode()
    req = urllib.request.Request(base.rstrip("/") + "/api/v1/query", data=data,
                                 headers={"Content-Type": "application/x-www-form-urlencoded"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            body = json.loads(resp.read())
    except urllib.error.HTTPError as e:  # 400/422: the query's error is in the body
        try:
            body = json.loads(e.read())
        except ValueError:
            return None, f"HTTP {e.code} {e.reason}"
    if body.get("status") != "success":
        return None, f"{body.get('errorType', 'error')}: {body.get('error', body)}"
    data = body.get("data", {})
    result = data.get("result", [])
    if data.get("resultType") == "scalar":
        result = [result]
    return result, None


def emit_rules(path, queries):
    lines = ["groups:", "  - name: cmax.dashboard.queries", "    rules:"]
    for i, (where, expr) in enumerate(queries):
        lines.append(f"      # {where}")
        lines.append(f"      - record: cmax_dashboard_query_{i}")
        lines.append("        expr: " + json.dumps(expr))
    pathlib.Path(path).write_text("\n".join(lines) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--prometheus", help="Prometheus base URL, e.g. http://127.0.0.1:9090")
    ap.add_argument("--node", help="value for $node (default: the first node cmaxd_build_info names)")
    ap.add_argument("dashboards", nargs="*", type=pathlib.Path,
                    help="dashboard JSON files (default: deploy/grafana/cmax-fleet.json and cmax-node.json)")
    ap.add_argument("--rate-interval", default="1m", help="value for $__rate_interval (default 1m)")
    ap.add_argument("--interval", default="5m", help="value for $__interval (default 5m)")
    ap.add_argument("--range", default="1h", help="value for $__range (default 1h)")
    ap.add_argument("--require-data", action="store_true", help="fail (exit 1) on a query that returns no data")
    ap.add_argument("--allow-empty", action="append", default=[], metavar="REGEX",
                    help="with --require-data, a query matching REGEX may return nothing (repeatable), e.g. "
                         "cmaxd_probe_ for agents run with every probe off")
    ap.add_argument("--timeout", type=float, default=30, help="seconds per query (default 30)")
    ap.add_argument("--emit-rules", metavar="FILE", help="write the queries as a rule file for promtool; no server")
    args = ap.parse_args()
    for name in ("rate_interval", "interval", "range"):
        if not DURATION.match(getattr(args, name)):
            ap.error(f"--{name.replace('_', '-')}: not a duration such as 1m: {getattr(args, name)}")
    if not args.emit_rules and not args.prometheus:
        ap.error("--prometheus URL is required (or --emit-rules FILE)")

    try:
        queries = [q for path in (args.dashboards or DEFAULT_DASHBOARDS) for q in collect(path)]
    except (OSError, ValueError) as e:
        print(f"dashboard_queries: cannot read a dashboard: {e}", file=sys.stderr)
        return 2

    if args.prometheus and not args.emit_rules and not _reachable(args.prometheus, args.timeout):
        print(f"dashboard_queries: cannot reach Prometheus at {args.prometheus}: is it running? --prometheus URL",
              file=sys.stderr)
        return 2
    node = args.node
    if node is None and not args.emit_rules:
        result, err = query(args.prometheus, 'count by (node) (cmaxd_build_info{job="cmaxd"})', args.timeout)
        names = sorted(r["metric"]["node"] for r in (result or []) if r["metric"].get("node"))
        if err or not names:
            print("dashboard_queries: no cmaxd_build_info{job=\"cmaxd\"} in Prometheus to take $node from: "
                  "pass --node NAME", file=sys.stderr)
            return 2
        node = names[0]
    node = node or "gpu-01"
    rng = args.range
    values = {
        "node": node,
        "__rate_interval": args.rate_interval,
        "__interval": args.interval,
        "__interval_ms": str(int(seconds(args.interval) * 1000)),
        "__range": rng,
        "__range_s": str(int(seconds(rng))),
        "__range_ms": str(int(seconds(rng) * 1000)),
    }
    queries = [(where, substitute(expr, values)) for where, expr in queries]

    if args.emit_rules:
        emit_rules(args.emit_rules, queries)
        print(f"dashboard_queries: wrote {len(queries)} queries to {args.emit_rules} ($node={node}); "
              f"check them with: promtool check rules {args.emit_rules}")
        return 0

    errors, empty = 0, 0
    for where, expr in queries:
        result, err = query(args.prometheus, expr, args.timeout)
        if err:
            errors += 1
            print(f"ERROR    {where}: {err}\n         {expr}")
        elif not result:
            # Nothing passed the query's own filter: see whether the series under it exist.
            m = TRAILING_FILTER.match(expr)
            base = query(args.prometheus, m.group("base"), args.timeout)[0] if m else None
            if base:
                print(f"ok       {where}: 0 series after its filter, {len(base)} before")
            else:
                missing = [name for name in sorted({a or b for a, b in METRIC.findall(expr)} - PROMQL_WORDS)
                           if not query(args.prometheus, f"count({{__name__={json.dumps(name)}}})", args.timeout)[0]]
                why = f" (no series of {', '.join(missing)} in Prometheus)" if missing else ""
                allowed = any(re.search(rx, expr) for rx in args.allow_empty)
                empty += 0 if allowed else 1
                print(f"NO DATA  {where}{why}{' (allowed by --allow-empty)' if allowed else ''}\n         {expr}")
        else:
            print(f"ok       {where}: {len(result)} series")
    print(f"dashboard_queries: {len(queries)} queries ($node={node}), {errors} errors, {empty} without data"
          + (" (--require-data: a failure)" if args.require_data and empty else ""))
    return 1 if errors or (args.require_data and empty) else 0


def _reachable(base, timeout):
    try:
        with urllib.request.urlopen(base.rstrip("/") + "/api/v1/status/buildinfo", timeout=timeout) as resp:
            return resp.status == 200
    except (urllib.error.URLError, OSError, ValueError):
        return False


if __name__ == "__main__":
    sys.exit(main())
