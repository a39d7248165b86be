"""Turns the `key=value` lines of bench, floor, many_clients, large_results and the peer drivers
into the Markdown tables of docs/benchmarks.md, with the targets of issues 16 and 33 and their
status, and issue 36's for large results beside its figures.

usage: python3 table.py RESULTS_FILE

Every line carries `server=` (test: the project's test server; echo: bench/echo_server.c),
`mode=` (unpinned, or pinned to one core) and `round=`; each figure shown is the median over
the rounds. A line `impl=NAME error=TEXT` says a peer could not be installed or run; its column
then shows why. Ratios are mcpc over the floor (or over a peer) against the same server, in the
same mode.
"""

import statistics
import sys

PEERS = ["rmcp", "ts", "python"]
NAMES = {"mcpc": "mcpc", "floor": "floor", "rmcp": "rmcp (Rust)", "ts": "TypeScript SDK",
         "python": "Python mcp 2.3.0"}
SERVERS = {"echo": "minimal", "test": "test server"}
MODES = {"pinned": "Pinned: client and server on one core (taskset -c 0)",
         "unpinned": "Unpinned: both cores"}


def load(path):
    rounds, errors = {}, {}
    for line in open(path):
        fields = dict(f.split("=", 1) for f in line.split() if "=" in f)
        if "error" in fields:
            errors[fields.get("impl") or fields.get("mode")] = line.split("error=", 1)[1].strip()
            continue
        if "impl" not in fields:
            continue
        key = (fields["impl"], fields["case"], fields.get("server", "test"),
               fields.get("mode", "unpinned"))
        values = {k: float(v) for k, v in fields.items()
                  if k not in ("impl", "case", "server", "mode", "round")}
        rounds.setdefault(key, {}).setdefault(fields.get("round", "1"), {}).update(values)
    results = {}
    for key, by_round in rounds.items():
        names = {name for values in by_round.values() for name in values}
        results[key] = {name: statistics.median([v[name] for v in by_round.values() if name in v])
                        for name in names}
    return results, errors


def fmt(value, digits=0):
    if value is None:
        return "-"
    if value >= 1000 and digits == 0:
        return f"{value:,.0f}"
    return f"{value:.{digits}f}"


def ratio(a, b):
    return f"{a / b:.2f}x" if a is not None and b else "-"


class Tables:
    def __init__(self, results, errors):
        self.results, self.errors, self.out = results, errors, []

    def get(self, impl, case, server, mode, key):
        return self.results.get((impl, case, server, mode), {}).get(key)

    def triple(self, impl, case, server, mode, first="p50"):
        """`first / CPU / csw` per call, or why the peer did not run."""
        if impl in self.errors:
            return f"not run: {self.errors[impl]}"
        value = self.get(impl, case, server, mode, first)
        if value is None:
            return "-"
        return (f"{fmt(value)} / {fmt(self.get(impl, case, server, mode, 'cpu'), 1)} / "
                f"{fmt(self.get(impl, case, server, mode, 'csw'), 2)}")

    def emit(self, line=""):
        self.out.append(line)

    def sequential(self, mode):
        self.emit("#### Sequential round trip (p50 us / client CPU us per call / client context "
                  "switches per call; mcpc p99 apart)\n")
        self.emit("| case | server | mcpc | p99 | floor | mcpc/floor p50 | CPU | "
                  + " | ".join(NAMES[p] for p in PEERS) + " |")
        self.emit("|---" * (7 + len(PEERS)) + "|")
        rows = [("stdio ping", "stdio.ping", "stdio.ping", "echo"),
                ("stdio ping", "stdio.ping", "stdio.ping", "test"),
                ("stdio echo 1 KiB", "stdio.echo", "stdio.echo", "echo"),
                ("stdio echo 1 KiB", "stdio.echo", "stdio.echo", "test"),
                ("stdio echo 1 KiB, modern era", "stdio.modern.echo", "stdio.modern.echo",
                 "test"),
                ("HTTP ping (legacy)", "http.legacy.ping", "http.legacy.ping", "test"),
                ("HTTP echo 1 KiB (legacy)", "http.legacy.echo", "http.legacy.echo", "test"),
                ("HTTP echo 1 KiB (modern)", "http.modern.echo", "http.modern.echo", "test")]
        for label, case, floor_case, server in rows:
            g = lambda impl, c, key: self.get(impl, c, server, mode, key)
            peers = [self.triple(p, case, server, mode) for p in PEERS]
            self.emit(f"| {label} | {SERVERS[server]} | {self.triple('mcpc', case, server, mode)} | "
                      f"{fmt(g('mcpc', case, 'p99'))} | "
                      f"{self.triple('floor', floor_case, server, mode)} | "
                      f"{ratio(g('mcpc', case, 'p50'), g('floor', floor_case, 'p50'))} | "
                      f"{ratio(g('mcpc', case, 'cpu'), g('floor', floor_case, 'cpu'))} | "
                      + " | ".join(peers) + " |")
        self.emit()

    def throughput(self, mode):
        self.emit("#### Throughput, one client, 1 KiB echo (calls/s / client CPU us per call / "
                  "client context switches per call)\n")
        self.emit("| case | server | in flight | mcpc | floor | mcpc/floor | "
                  + " | ".join(NAMES[p] for p in PEERS) + " | mcpc/rmcp |")
        self.emit("|---" * (7 + len(PEERS)) + "|")
        # The completion rows are compared with the same floor and rmcp rows as the blocking
        # ones: the floor's N pipelined requests and rmcp's N tasks.
        for label, prefix, server, counts in [
                ("stdio", "stdio", "echo", (1, 8, 16)), ("stdio", "stdio", "test", (1, 8, 16)),
                ("stdio, completion API, one thread", "stdio.completion", "echo", (8, 16)),
                ("stdio, completion API, one thread", "stdio.completion", "test", (8, 16)),
                ("HTTP (legacy)", "http.legacy", "test", (1, 8, 16)),
                ("HTTP (modern)", "http.modern", "test", (1, 8, 16))]:
            for n in counts:
                case = f"{prefix}.tput{n}"
                blocking_case = case.replace(".completion", "")
                floor_case = blocking_case
                rate = self.get("mcpc", case, server, mode, "rate")
                floor = self.get("floor", floor_case, server, mode, "rate")
                rmcp = self.get("rmcp", blocking_case, server, mode, "rate")
                # Peers have no completion case: their cells stay on the blocking rows.
                peers = ([self.triple(p, case, server, mode, "rate") for p in PEERS]
                         if case == blocking_case else ["-"] * len(PEERS))
                self.emit(f"| {label} | {SERVERS[server]} | {n} | "
                          f"{self.triple('mcpc', case, server, mode, 'rate')} | "
                          f"{self.triple('floor', floor_case, server, mode, 'rate')} | "
                          f"{ratio(rate, floor)} | " + " | ".join(peers)
                          + f" | {ratio(rate, rmcp)} |")
        self.emit()

    def first_round_tables(self, modes):
        self.emit("### Cancellation (us, from the moment mcp_cancellation_cancel is called; "
                  "test server)\n")
        self.emit("| mode | transport | cancel returns p50 / p99 | caller returns p50 / p99 "
                  "| server hears of it p50 / p99 | rounds the server never saw |")
        self.emit("|---|---|---|---|---|---|")
        for mode in modes:
            for label, prefix in [("stdio (notice)", "stdio"),
                                  ("stdio, modern era (notice)", "stdio.modern"),
                                  ("HTTP modern (stream closed)", "http.modern")]:
                cells = []
                for what in ("cancel_return", "cancel_to_caller", "cancel_to_server"):
                    case = f"{prefix}.{what}"
                    digits = 1 if what == "cancel_return" else 0
                    cells.append(f"{fmt(self.get('mcpc', case, 'test', mode, 'p50'), digits)} / "
                                 f"{fmt(self.get('mcpc', case, 'test', mode, 'p99'), digits)}")
                case = f"{prefix}.cancel_unseen"
                cells.append(f"{fmt(self.get('mcpc', case, 'test', mode, 'count'))} of "
                             f"{fmt(self.get('mcpc', case, 'test', mode, 'of'))}")
                self.emit(f"| {mode} | {label} | " + " | ".join(cells) + " |")

        self.emit("\n### Cost (test server)\n")
        self.emit("| mode | transport | idle client: added RSS (KiB) | threads "
                  "| per call in flight: RSS (KiB) | threads |")
        self.emit("|---|---|---|---|---|---|")
        for mode in modes:
            for label, prefix in [("stdio", "stdio"), ("HTTP (legacy)", "http")]:
                g = lambda case, key: self.get("mcpc", case, "test", mode, key)
                idle, busy = f"{prefix}.idle", f"{prefix}.inflight"
                self.emit(f"| {mode} | {label} | {fmt(g(idle, 'rss_kib'))} | "
                          f"{fmt(g(idle, 'threads'))} | {fmt(g(busy, 'rss_kib'), 1)} | "
                          f"{fmt(g(busy, 'threads'), 2)} |")

        self.emit("\n### Connect (us; new client to connected, stdio includes starting the "
                  "server)\n")
        self.emit("| mode | transport | p50 | p99 |")
        self.emit("|---|---|---|---|")
        for mode in modes:
            for label, case in [("stdio, legacy (initialize)", "stdio.legacy.connect"),
                                ("stdio, modern (server/discover)", "stdio.modern.connect"),
                                ("HTTP, legacy", "http.legacy.connect"),
                                ("HTTP, modern", "http.modern.connect")]:
                g = lambda key: self.get("mcpc", case, "test", mode, key)
                self.emit(f"| {mode} | {label} | {fmt(g('p50'))} | {fmt(g('p99'))} |")
        self.emit()

    def targets(self, modes):
        """The targets of issue 16, each with its figure and whether it is met."""
        self.emit("### Against the targets of issue 16\n")
        self.emit("| target | mode | figure | status |")
        self.emit("|---|---|---|---|")

        def row(target, mode, figure, met):
            status = "-" if met is None else ("met" if met else "not met")
            self.emit(f"| {target} | {mode} | {figure} | {status} |")

        def vs(a, b, limit, at_least=False, what=""):
            if a is None or not b:
                return "not measured", None
            r = a / b
            return f"{r:.2f}x{what}", (r >= limit if at_least else r <= limit)

        for mode in [m for m in ("pinned", "unpinned") if m in modes]:
            g = lambda impl, case, key, server="echo": self.get(impl, case, server, mode, key)
            figure, met = vs(g("mcpc", "stdio.echo", "p50"), g("floor", "stdio.echo", "p50"), 1.3,
                             what=f" ({fmt(g('mcpc', 'stdio.echo', 'p50'))} us against "
                                  f"{fmt(g('floor', 'stdio.echo', 'p50'))})")
            row("minimal server: sequential echo p50 <= 1.3x the floor", mode, figure, met)
            figure, met = vs(g("mcpc", "stdio.echo", "cpu"), g("floor", "stdio.echo", "cpu"), 1.6,
                             what=f" ({fmt(g('mcpc', 'stdio.echo', 'cpu'), 1)} us against "
                                  f"{fmt(g('floor', 'stdio.echo', 'cpu'), 1)})")
            row("minimal server: sequential client CPU <= 1.6x the floor", mode, figure, met)
            for n in (8, 16):
                case = f"stdio.tput{n}"
                figure, met = vs(g("mcpc", case, "rate"), g("rmcp", case, "rate"), 1.5, True,
                                 what=f" ({fmt(g('mcpc', case, 'rate'))} against "
                                      f"{fmt(g('rmcp', case, 'rate'))} calls/s)")
                row(f"minimal server: {n} in flight, {n} host threads, >= 1.5x rmcp", mode,
                    figure, met)
            for n in (8, 16):
                case = f"stdio.completion.tput{n}"
                floor_case = f"stdio.tput{n}"
                figure, met = vs(g("mcpc", case, "rate"), g("floor", floor_case, "rate"), 0.5,
                                 True, what=f" ({fmt(g('mcpc', case, 'rate'))} against "
                                            f"{fmt(g('floor', floor_case, 'rate'))} calls/s)")
                row(f"minimal server: completion API, one thread, {n} in flight, >= 0.5x the "
                    "floor's pipelined throughput", mode, figure, met)
            for era in ("legacy", "modern"):
                case = f"http.{era}.echo"
                h = lambda impl, c, key: self.get(impl, c, "test", mode, key)
                # Each era against the floor that sends what that era sends (its session, or
                # its envelope and routing headers) to the same server in the same mode.
                figure, met = vs(h("mcpc", case, "p50"), h("floor", case, "p50"),
                                 1.5, what=f" ({fmt(h('mcpc', case, 'p50'))} us against "
                                           f"{fmt(h('floor', case, 'p50'))})")
                row(f"HTTP ({era}): sequential p50 <= 1.5x the kept-alive floor", mode, figure,
                    met)
                figure, met = vs(h("mcpc", case, "cpu"), h("floor", case, "cpu"), 3,
                                 what=f" ({fmt(h('mcpc', case, 'cpu'), 1)} us against "
                                      f"{fmt(h('floor', case, 'cpu'), 1)})")
                row(f"HTTP ({era}): client CPU <= 3x the floor", mode, figure, met)
            t = lambda case, key: self.get("mcpc", case, "test", mode, key)
            p50s = [t(f"{p}.cancel_return", "p50") for p in ("stdio", "stdio.modern", "http.modern")]
            p50s = [v for v in p50s if v is not None]
            row("cancel returns < 5 us p50", mode,
                " / ".join(fmt(v, 1) for v in p50s) + " us" if p50s else "not measured",
                all(v < 5 for v in p50s) if p50s else None)
            p99s = [t(f"{p}.cancel_to_caller", "p99") for p in ("stdio", "stdio.modern",
                                                                 "http.modern")]
            p99s = [v for v in p99s if v is not None]
            row("the caller returns < 100 us p99 after cancel", mode,
                " / ".join(fmt(v) for v in p99s) + " us" if p99s else "not measured",
                all(v < 100 for v in p99s) if p99s else None)
            rss, threads = t("stdio.idle", "rss_kib"), t("stdio.idle", "threads")
            row("idle stdio client <= 3 threads and < 3 MiB", mode,
                f"{fmt(threads)} threads, {fmt(rss)} KiB" if rss is not None else "not measured",
                (threads <= 3 and rss < 3072) if rss is not None else None)
        self.emit()


# The many-clients cases (bench/many_clients.c, the rmcp driver's `many` mode): what runs, and
# against which server.
MANY = [("stdio", "mcpc", "many.stdio", "echo"),
        ("stdio, closed in the background", "mcpc", "many.stdio-bg", "echo"),
        ("stdio", "rmcp", "many.stdio", "echo"),
        ("HTTP, handshake era (GET stream open)", "mcpc", "many.http-legacy", "test"),
        ("HTTP, modern era", "mcpc", "many.http-modern", "test"),
        ("HTTP, modern era, a started request waiting on its stream", "mcpc",
         "many.http-modern-waiting", "test"),
        ("HTTP+SSE (2024-11-05), event stream open", "mcpc", "many.http-sse", "test")]


def ms(seconds):
    return "-" if seconds is None else f"{seconds * 1e3:,.2f}"


def many_servers(t):
    """The "Many servers" tables: N idle clients in one process, then issue 33's targets."""
    counts = sorted({int(case.rsplit(".", 1)[1]) for (_, case, _, _) in t.results
                     if case.startswith("many.")})
    g = lambda impl, case, n, server, key: t.get(impl, f"{case}.{n}", server, "unpinned", key)
    t.emit("### Many servers: N idle clients in one process (unpinned)\n")
    t.emit("| N | transport | client | library threads (per client) | "
           "RSS per idle client (KiB) | heap per idle client (bytes) | "
           "descriptors per client | sockets per client | connect all (ms) | ping all (ms) | "
           "close all (ms) | all servers reaped (ms) |")
    t.emit("|---" * 12 + "|")
    for n in counts:
        for label, impl, case, server in MANY:
            if impl in t.errors:
                t.emit(f"| {n:,} | {label} | {NAMES[impl]} | not run: {t.errors[impl]} |")
                continue
            v = lambda key: g(impl, case, n, server, key)
            if v("threads") is None:
                continue
            t.emit(f"| {n:,} | {label} | {NAMES[impl]} | "
                   f"{fmt(v('threads'))} ({v('threads') / n:.2f}) | "
                   f"{fmt(v('rss_kib'))} | {fmt(v('heap_bytes'))} | {fmt(v('fds'), 2)} | {fmt(v('sockets'), 2)} | "
                   f"{ms(v('connect'))} | {ms(v('ping'))} | {ms(v('close'))} | {ms(v('reaped'))} |")
    t.emit()

    n = max(counts)
    t.emit(f"### Against the targets of issue 33 (N = {n:,})\n")
    t.emit("| target | figure | status |")
    t.emit("|---|---|---|")

    def row(target, value, limit, unit="", digits=0):
        met = "-" if value is None else ("met" if value <= limit else "not met")
        t.emit(f"| {target} | {fmt(value, digits)}{unit} | {met} |")

    def against_rmcp(target, key, share, case="many.stdio"):
        mine, theirs = g("mcpc", case, n, "echo", key), g("rmcp", "many.stdio", n, "echo", key)
        if mine is None or not theirs:
            t.emit(f"| {target} | not measured | - |")
            return
        met = "met" if mine <= theirs * share else "not met"
        t.emit(f"| {target} | {ms(mine)} ms against {ms(theirs)} ms | {met} |")

    s = lambda key: g("mcpc", "many.stdio", n, "echo", key)
    row("stdio: at most 8 library threads in all", s("threads"), 8)
    row("stdio: at most 24 KiB RSS per idle client", s("rss_kib"), 24, " KiB")
    row("stdio: at most 4 descriptors per idle client", s("fds"), 4, digits=2)
    against_rmcp("stdio: connect all no slower than rmcp", "connect", 1)
    against_rmcp("stdio: ping all no slower than rmcp", "ping", 1)
    against_rmcp("stdio: close all in at most half rmcp's time (close waits for each server)",
                 "close", 0.5)
    against_rmcp("stdio: close all in at most half rmcp's time (closed in the background)",
                 "close", 0.5, "many.stdio-bg")
    for label, case in [("HTTP, handshake era", "many.http-legacy"),
                        ("HTTP, modern era", "many.http-modern")]:
        h = lambda key: g("mcpc", case, n, "test", key)
        row(f"{label}: at most 8 library threads in all", h("threads"), 8)
        row(f"{label}: at most 48 KiB RSS per idle client", h("rss_kib"), 48, " KiB")
        row(f"{label}: one connection per client", h("sockets"), 1, " sockets", 2)
    t.emit()


# The large-result cases (bench/large_results.c): transport in the case name, and its label.
LARGE = [("stdio", "stdio"), ("http-legacy", "HTTP, handshake era, SSE"),
         ("http-json", "HTTP, handshake era, JSON body"), ("http-modern", "HTTP, modern era, SSE")]


def large_results(t):
    """"Memory per large result": the client's peak RSS growth for one result of S MiB."""
    sizes = sorted({int(case.rsplit(".", 1)[1]) for (_, case, _, _) in t.results
                    if case.startswith("large.")})
    g = lambda transport, mib, key: t.get("mcpc", f"large.{transport}.{mib}", "test",
                                          "unpinned", key)
    t.emit("### Memory per large result: peak RSS growth of the client for one result of S "
           "(target: at most about 2 S plus a constant)\n")
    t.emit("| transport | " + " | ".join(f"S = {mib} MiB" for mib in sizes)
           + " | most beyond 2 S |")
    t.emit("|---" * (len(sizes) + 2) + "|")
    for transport, label in LARGE:
        peaks = {mib: g(transport, mib, "peak_mib") for mib in sizes}
        if all(p is None for p in peaks.values()):
            continue
        cells = [f"{fmt(p, 1)} MiB ({p / mib:.2f} S)" if p is not None else "-"
                 for mib, p in peaks.items()]
        beyond = max(p - 2 * mib for mib, p in peaks.items() if p is not None)
        t.emit(f"| {label} | " + " | ".join(cells) + f" | {beyond:.1f} MiB |")
    t.emit()


def main():
    results, errors = load(sys.argv[1])
    many = {k: v for k, v in results.items() if k[1].startswith("many.")}
    large = {k: v for k, v in results.items() if k[1].startswith("large.")}
    single = {k: v for k, v in results.items() if k not in many and k not in large}
    modes = [m for m in ("pinned", "unpinned") if any(k[3] == m for k in single)]
    t = Tables(results, errors)
    if single:
        t.targets(modes)
        for mode in modes:
            t.emit(f"### {MODES[mode]}\n")
            t.sequential(mode)
            t.throughput(mode)
        t.first_round_tables(modes)
    if many:
        many_servers(t)
    if large:
        large_results(t)
    for impl, why in errors.items():
        t.emit(f"{NAMES.get(impl, impl)}: not run: {why}")
    print("\n".join(t.out))


if __name__ == "__main__":
    main()
