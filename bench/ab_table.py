"""The table of bench/ab.sh: each figure of the base and of the working tree, the median over
the rounds, and how much worse the tree is (latencies and CPU: higher is worse; rates: lower
is worse). Past 10 % is marked, the bound of issue 33's one-client target.

usage: python3 ab_table.py RESULTS_FILE BASE_NAME
"""

import statistics
import sys

# (case, value): what the table shows, in this order; latencies in microseconds.
FIGURES = [
    ("stdio.ping", "p50"), ("stdio.ping", "cpu"),
    ("stdio.echo", "p50"), ("stdio.echo", "cpu"),
    ("stdio.tput1", "rate"), ("stdio.tput8", "rate"), ("stdio.tput16", "rate"),
    ("stdio.completion.tput8", "rate"), ("stdio.completion.tput16", "rate"),
    ("stdio.cancel_return", "p50"), ("stdio.cancel_to_caller", "p50"),
    ("stdio.cancel_to_server", "p50"),
    ("stdio.modern.cancel_return", "p50"), ("stdio.modern.cancel_to_caller", "p50"),
    ("stdio.modern.cancel_to_server", "p50"),
    ("http.modern.cancel_return", "p50"), ("http.modern.cancel_to_caller", "p50"),
    ("http.modern.cancel_return", "p99"), ("http.modern.cancel_to_caller", "p99"),
    ("stdio.legacy.connect", "p50"), ("stdio.modern.connect", "p50"),
    ("http.legacy.connect", "p50"), ("http.modern.connect", "p50"),
]


def load(path):
    """{(which, case, value): [one figure per round]}"""
    figures = {}
    for line in open(path):
        fields = dict(f.split("=", 1) for f in line.split() if "=" in f)
        if fields.get("impl") != "mcpc" or "case" not in fields:
            continue
        for name, value in fields.items():
            if name in ("impl", "case", "which", "round"):
                continue
            try:
                figures.setdefault((fields["which"], fields["case"], name), []).append(float(value))
            except ValueError:
                pass
    return figures


def main():
    path, base = sys.argv[1], sys.argv[2]
    figures = load(path)
    rounds = max((len(v) for v in figures.values()), default=0)
    print(f"| figure (median of {rounds} rounds) | `{base}` | tree | worse by |")
    print("|---|---|---|---|")
    for case, value in FIGURES:
        before = figures.get(("base", case, value))
        after = figures.get(("tree", case, value))
        if not before or not after:
            continue
        b, a = statistics.median(before), statistics.median(after)
        worse = (b - a) / b if value == "rate" else (a - b) / b
        mark = " **past 10 %**" if worse > 0.10 else ""
        digits = 0 if value == "rate" else 1
        print(f"| {case} {value} | {b:,.{digits}f} | {a:,.{digits}f} | {worse * 100:.1f} %{mark} |")


if __name__ == "__main__":
    main()
