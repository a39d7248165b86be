"""Turns the `key=value` lines of bench, floor and the peer drivers into one Markdown table.

usage: python3 table.py RESULTS_FILE

A line `impl=NAME error=TEXT` says a peer could not be installed or run; its column then shows
why. Ratios are mcpc over the floor (or over a peer) from the same run.
"""

import sys

PEERS = ["rmcp", "ts", "python"]
PEER_NAMES = {"rmcp": "rmcp (Rust)", "ts": "TypeScript SDK", "python": "Python mcp 2.3.0"}


def load(path):
    results, errors = {}, {}
    for line in open(path):
        fields = dict(f.split("=", 1) for f in line.split() if "=" in f)
        if "impl" not in fields:
            continue
        if "error" in fields:
            errors[fields["impl"]] = line.split("error=", 1)[1].strip()
            continue
        results.setdefault((fields["impl"], fields["case"]), {}).update(
            {k: float(v) for k, v in fields.items() if k not in ("impl", "case")}
        )
    return results, errors


def fmt(value, digits=0):
    if value is None:
        return "-"
    if value >= 1000 and digits == 0:
        return f"{value:,.0f}"
    return f"{value:.{digits}f}"


def ratio(a, b):
    return f"{a / b:.2f}x" if a is not None and b else "-"


def main():
    results, errors = load(sys.argv[1])
    get = lambda impl, case, key: results.get((impl, case), {}).get(key)
    peer_cell = lambda impl, value: f"not run: {errors[impl]}" if impl in errors else value
    out = []

    out.append("### Sequential round trip (us; mcpc p50 / p99 / max, others p50)\n")
    out.append("| case | mcpc p50 | p99 | max | first call | floor p50 | mcpc/floor | "
               + " | ".join(f"{PEER_NAMES[p]} p50" for p in PEERS) + " |")
    out.append("|---" * (7 + len(PEERS)) + "|")
    rows = [
        ("stdio ping", "stdio.ping", "stdio.ping"),
        ("stdio echo 1 KiB", "stdio.echo", "stdio.echo"),
        ("stdio echo 1 KiB, modern era", "stdio.modern.echo", "stdio.echo"),
        ("HTTP ping (legacy)", "http.legacy.ping", "http.legacy.ping"),
        ("HTTP echo 1 KiB (legacy)", "http.legacy.echo", "http.legacy.echo"),
        ("HTTP echo 1 KiB (modern)", "http.modern.echo", "http.legacy.echo"),
    ]
    for label, case, floor_case in rows:
        p50 = get("mcpc", case, "p50")
        floor = get("floor", floor_case, "p50")
        peers = [peer_cell(p, fmt(get(p, case, "p50"))) for p in PEERS]
        out.append(f"| {label} | {fmt(p50)} | {fmt(get('mcpc', case, 'p99'))} | "
                   f"{fmt(get('mcpc', case, 'max'))} | {fmt(get('mcpc', case, 'first'))} | "
                   f"{fmt(floor)} | {ratio(p50, floor)} | "
                   + " | ".join(peers) + " |")

    out.append("\n### Client CPU per sequential echo call (us, user + system, whole process)\n")
    out.append("| transport | mcpc | floor | mcpc/floor | "
               + " | ".join(PEER_NAMES[p] for p in PEERS) + " |")
    out.append("|---" * (4 + len(PEERS)) + "|")
    for label, case, floor_case in [("stdio", "stdio.echo", "stdio.echo"),
                                    ("stdio, modern era", "stdio.modern.echo", "stdio.echo"),
                                    ("HTTP (legacy)", "http.legacy.echo", "http.legacy.echo"),
                                    ("HTTP (modern)", "http.modern.echo", "http.legacy.echo")]:
        cpu = get("mcpc", case, "cpu")
        floor = get("floor", floor_case, "cpu")
        peers = [peer_cell(p, fmt(get(p, case, "cpu"))) for p in PEERS]
        out.append(f"| {label} | {fmt(cpu)} | {fmt(floor)} | {ratio(cpu, floor)} | "
                   + " | ".join(peers) + " |")

    out.append("\n### Throughput, one client (calls/s; 1 KiB echo)\n")
    out.append("| case | in flight | mcpc | floor | mcpc/floor | "
               + " | ".join(PEER_NAMES[p] for p in PEERS) + " | mcpc/rmcp |")
    out.append("|---" * (6 + len(PEERS)) + "|")
    for label, prefix in [("stdio", "stdio"), ("HTTP (legacy)", "http.legacy"),
                          ("HTTP (modern)", "http.modern")]:
        for n in (1, 4, 16):
            case = f"{prefix}.tput{n}"
            floor_case = case.replace("modern", "legacy")
            rate = get("mcpc", case, "rate")
            floor = get("floor", floor_case, "rate")
            peers = [peer_cell(p, fmt(get(p, case, "rate"))) for p in PEERS]
            out.append(f"| {label} | {n} | {fmt(rate)} | {fmt(floor)} | {ratio(rate, floor)} | "
                       + " | ".join(peers) + f" | {ratio(rate, get('rmcp', case, 'rate'))} |")

    out.append("\n### Cancellation (us, from the moment mcp_cancellation_cancel is called)\n")
    out.append("| transport | cancel returns p50 / p99 | caller returns p50 / p99 "
               "| server hears of it p50 / p99 | rounds the server never saw |")
    out.append("|---|---|---|---|---|")
    for label, prefix in [("stdio (notice)", "stdio"), ("stdio, modern era (notice)", "stdio.modern"),
                          ("HTTP modern (stream closed)", "http.modern")]:
        cells = []
        for what in ("cancel_return", "cancel_to_caller", "cancel_to_server"):
            case = f"{prefix}.{what}"
            digits = 1 if what == "cancel_return" else 0
            cells.append(f"{fmt(get('mcpc', case, 'p50'), digits)} / "
                         f"{fmt(get('mcpc', case, 'p99'), digits)}")
        unseen = results.get(("mcpc", f"{prefix}.cancel_unseen"), {})
        cells.append(f"{fmt(unseen.get('count'))} of {fmt(unseen.get('of'))}")
        out.append(f"| {label} | " + " | ".join(cells) + " |")

    out.append("\n### Cost\n")
    out.append("| transport | idle client: added RSS (KiB) | threads | per call in flight: RSS (KiB) "
               "| threads |")
    out.append("|---|---|---|---|---|")
    for label, prefix in [("stdio", "stdio"), ("HTTP (legacy)", "http")]:
        idle, busy = f"{prefix}.idle", f"{prefix}.inflight"
        out.append(f"| {label} | {fmt(get('mcpc', idle, 'rss_kib'))} | "
                   f"{fmt(get('mcpc', idle, 'threads'))} | {fmt(get('mcpc', busy, 'rss_kib'), 1)} | "
                   f"{fmt(get('mcpc', busy, 'threads'), 2)} |")

    out.append("\n### Connect (us; new client to connected, stdio includes starting the server)\n")
    out.append("| transport | p50 | p99 |")
    out.append("|---|---|---|")
    for label, case in [("stdio, legacy (initialize)", "stdio.legacy.connect"),
                        ("stdio, modern (server/discover)", "stdio.modern.connect"),
                        ("HTTP, legacy", "http.legacy.connect"),
                        ("HTTP, modern", "http.modern.connect")]:
        out.append(f"| {label} | {fmt(get('mcpc', case, 'p50'))} | {fmt(get('mcpc', case, 'p99'))} |")

    for impl, why in errors.items():
        out.append(f"\n{PEER_NAMES.get(impl, impl)}: not run: {why}")
    print("\n".join(out))


if __name__ == "__main__":
    main()
