#!/usr/bin/env bash
# Makes Swift available for the Swift binding's tests (bindings/swift/test.sh). Debian 12, this
# project's build machine, packages no Swift compiler, and no other toolchain can be fetched
# here; Debian 13 packages Swift 6.0 (`swiftlang`). So this builds a minimal Debian 13 root
# with debootstrap, from the Debian archive this machine's apt uses, and installs swiftlang in
# it: about 2.6 GB on disk, a minute or two the first time, nothing after. Then
# `scripts/in-swift-root.sh CMD` runs a command inside it. Needs root (debootstrap, chroot, mount).
#
# Where: $MCPC_SWIFT_ROOT, else /var/cache/mcpc-swift-root (outside the repository, which is
# mounted inside it).
#
# `install-swift.sh remove` deletes the root, after unmounting whatever is still mounted in it
# (a run killed before its clean-up leaves the repository mounted there: a plain `rm -rf`
# would go through that mount and delete the repository).
set -euo pipefail
root="${MCPC_SWIFT_ROOT:-/var/cache/mcpc-swift-root}"
ready="$root/.mcpc-swift-ready"

mounts_inside() { # the mount points under the root, deepest first
  awk -v root="$root/" 'index($2, root) == 1 { print $2 }' /proc/self/mounts | sort -r
}
remove_root() {
  local point
  for point in $(mounts_inside); do umount "$point" 2>/dev/null || umount -l "$point"; done
  if [ -n "$(mounts_inside)" ]; then
    echo "install-swift: still mounted under $root, not removing it:" $(mounts_inside) >&2
    exit 1
  fi
  rm -rf "$root" "$root.log"
}
if [ "${1:-}" = remove ]; then
  [ -e "$root" ] && remove_root
  exit 0
fi
if [ -f "$ready" ]; then
  echo "swift root ready in $root: $(cat "$ready")"
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "install-swift: needs root (debootstrap, chroot)" >&2
  exit 1
fi
command -v debootstrap >/dev/null || {
  apt-get update -q >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q debootstrap >/dev/null
}
# The Debian archive this machine's apt already uses (no host name is written here): the
# first URI of its own sources that serves the system's release, from a deb822 .sources file
# or a one-line sources.list entry.
debian_mirror() {
  local codename file
  codename="$(. /etc/os-release && echo "${VERSION_CODENAME:-}")"
  for file in /etc/apt/sources.list.d/*.sources; do
    [ -f "$file" ] || continue
    awk -v codename="$codename" '
      function flush() {
        if (types ~ /(^| )deb( |$)/ && uri != "" && suites ~ ("(^| )" codename "( |$)")) { print uri; found = 1; exit }
        types = ""; uri = ""; suites = ""
      }
      /^[[:space:]]*$/ { flush(); next }
      /^Types:/ { sub(/^Types:[[:space:]]*/, ""); types = $0 }
      /^URIs:/ { uri = $2 }
      /^Suites:/ { sub(/^Suites:[[:space:]]*/, ""); suites = $0 }
      END { if (!found) flush() }' "$file"
  done
  for file in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -f "$file" ] || continue
    # deb [options] URI SUITE COMPONENTS...
    sed -E 's/\[[^]]*\]//' "$file" | awk -v codename="$codename" '$1 == "deb" && $3 == codename { print $2 }'
  done
}
mirror="$(debian_mirror | head -n 1)"
if [ -z "$mirror" ]; then
  echo "install-swift: no Debian archive for this release in the apt sources (/etc/apt/sources.list, /etc/apt/sources.list.d/)" >&2
  exit 1
fi
[ -e "$root" ] && remove_root
echo "installing a Debian 13 root with swiftlang into $root (from this machine's apt archive)"
debootstrap --variant=minbase trixie "$root" "$mirror" >"$root.log" 2>&1 || {
  tail -n 20 "$root.log"
  exit 1
}
cp /etc/resolv.conf "$root/etc/resolv.conf"
# Inside the root as every later use sees it (/proc mounted: the swift driver finds itself
# through /proc/self/exe).
here="$(cd "$(dirname "$0")" && pwd)"
inside() { (cd / && MCPC_SWIFT_INSTALLING=1 bash "$here/in-swift-root.sh" "$@"); }
inside /bin/sh -c 'apt-get update -q >/dev/null &&
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
    swiftlang libc6-dev pkg-config >/dev/null && apt-get clean'
version="$(inside swift --version 2>&1 | head -1)"
case "$version" in
Swift*) echo "$version" >"$ready" ;;
*)
  echo "install-swift: swift does not run in $root: $version" >&2
  exit 1
  ;;
esac
echo "swift root ready in $root: $version"
