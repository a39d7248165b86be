#!/usr/bin/env bash
# One client, before and after: bench/bench.c built against the libmcpc.a of an older commit
# (BASE) and of the working tree, run alternately on one core, each figure's median over the
# rounds, and how much worse the working tree is. This is how issue 33's one-client target
# (no figure more than 10 % worse than at 5f7b771) is checked on a machine whose absolute
# figures differ from those in docs/benchmarks.md.
#
#   bash bench/ab.sh BASE [ROUNDS]     e.g. bash bench/ab.sh 5f7b771 6
#
# Each round runs the stdio section against the minimal server (bench/echo_server.c) and the
# cancellation section against the test server, base and tree in turn; the order is switched
# every round (the second to run is a few percent faster). With root (or CAP_SYS_NICE) the runs
# get a real-time priority, so other work on the machine does not preempt them; otherwise they
# are only pinned, and want a quiet machine. MCPC_AB_SECTIONS (default "stdio cancel"; "connect" too) picks
# the sections. Results go to .cache/ab/results.txt; the table to standard output.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
base=${1:?usage: bash bench/ab.sh BASE [ROUNDS]}
rounds=${2:-6}
sections=${MCPC_AB_SECTIONS:-stdio cancel}
out="$root/.cache/ab"
mkdir -p "$out"

echo "== building the working tree (release)" >&2
cargo build --release --quiet --lib --bin mcpc-test-server
target="${CARGO_TARGET_DIR:-$root/target}"
case "$target" in /*) ;; *) target="$root/$target" ;; esac

echo "== building $base (release, in $out/base)" >&2
rev=$(git rev-parse --verify "$base^{commit}")
if [ "$(git -C "$out/base" rev-parse HEAD 2>/dev/null || true)" != "$rev" ]; then
  git worktree remove --force "$out/base" 2>/dev/null || rm -rf "$out/base"
  git worktree prune
  git worktree add --quiet --detach "$out/base" "$rev"
fi
(cd "$out/base" && CARGO_TARGET_DIR="$out/base-target" cargo build --release --quiet --lib)

# The tree's harness against both libraries: the base lacks only what was added since, which
# the harness does not call (the link would say so).
cflags=(-O2 -g -Wall -Wextra -Werror -std=c11 -I include)
cc "${cflags[@]}" -o "$out/bench-base" bench/bench.c "$out/base-target/release/libmcpc.a" \
  -lpthread -ldl -lm
cc "${cflags[@]}" -o "$out/bench-tree" bench/bench.c "$target/release/libmcpc.a" \
  -lpthread -ldl -lm
cc -O2 -Wall -Wextra -Werror -std=c11 -o "$out/echo_server" bench/echo_server.c

run=(taskset -c 0)
if chrt -f 10 true 2>/dev/null; then
  run=(chrt -f 10 taskset -c 0)
else
  echo "== no real-time priority here: the runs are only pinned (want a quiet machine)" >&2
fi

results="$out/results.txt"
: >"$results"
for round in $(seq 1 "$rounds"); do
  order=(base tree)
  [ $((round % 2)) = 0 ] && order=(tree base)
  echo "== round $round of $rounds (${order[*]})" >&2
  for which in "${order[@]}"; do
    for section in $sections; do
      server="$target/release/mcpc-test-server"
      [ "$section" = stdio ] && server="$out/echo_server"
      MCPC_BENCH_SECTIONS=$section "${run[@]}" "$out/bench-$which" "$server" 3000 1.5 1000 \
        | sed "s/^/which=$which round=$round /" >>"$results"
    done
  done
done
python3 bench/ab_table.py "$results" "$base"
