#!/usr/bin/env bash
# in-swift-root.sh COMMAND [ARG...]: runs COMMAND inside the Swift root that
# scripts/install-swift.sh made, in the current directory, with the repository mounted at its
# own path (so every path means the same inside and out) and /proc and /dev from the host.
# Only the variables named in MCPC_SWIFT_PASS (space-separated) go in, besides PATH and HOME.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
root="${MCPC_SWIFT_ROOT:-/var/cache/mcpc-swift-root}"
# (MCPC_SWIFT_INSTALLING: install-swift.sh itself, before the root is ready.)
if [ ! -f "$root/.mcpc-swift-ready" ] && [ -z "${MCPC_SWIFT_INSTALLING:-}" ]; then
  echo "no Swift root: run scripts/install-swift.sh" >&2
  exit 1
fi

mounts=()
unmount() {
  local i pid
  # Nothing may outlive the run inside the root (a test that hung and was killed leaves its
  # children, which `swift test` starts in groups of their own).
  for pid in /proc/[0-9]*; do
    [ "$(readlink "$pid/root" 2>/dev/null)" = "$root" ] && kill -9 "${pid#/proc/}" 2>/dev/null
  done
  for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do umount "${mounts[$i]}" 2>/dev/null || umount -l "${mounts[$i]}"; done
}
trap unmount EXIT
trap 'exit 143' INT TERM
bind() { # bind HOST_PATH: the same path inside the root
  mkdir -p "$root$1"
  mount --bind "$1" "$root$1"
  mounts+=("$root$1")
}
bind /proc
bind /dev
[ -d /dev/pts ] && bind /dev/pts
bind "$repo"

env=(PATH=/usr/local/bin:/usr/bin:/bin HOME=/root)
for name in ${MCPC_SWIFT_PASS:-}; do env+=("$name=${!name}"); done
quoted="$(printf '%q ' "$@")"
chroot "$root" /usr/bin/env -i "${env[@]}" /bin/bash -c "cd $(printf '%q' "$PWD") && $quoted"
