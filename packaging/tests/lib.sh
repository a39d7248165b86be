# Shared by the packaging tests (sourced).

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# require TOOL: exits 77 (ctest: skipped) when TOOL is missing, or fails when
# MCPC_REQUIRE_PEERS=1 says every tool must be there (as under scripts/test.sh and CI).
require() {
  if ! command -v "$1" >/dev/null 2>&1; then
    if [ "${MCPC_REQUIRE_PEERS:-}" = 1 ]; then
      fail "$1 is required (MCPC_REQUIRE_PEERS=1); scripts/install-deps.sh installs it"
    fi
    echo "SKIP: $1 is not installed"
    exit 77
  fi
}

# fresh DIR: an empty directory.
fresh() {
  rm -rf "$1"
  mkdir -p "$1"
}

# check_loads PROGRAM LIBDIR SONAME: PROGRAM records SONAME (not a path) and the loader
# finds it in LIBDIR.
check_loads() {
  readelf -d "$1" | grep -q "(NEEDED).*\[$3\]" || fail "$1 does not record $3: $(readelf -d "$1" | grep NEEDED)"
  resolved="$(ldd "$1" | awk -v so="$3" '$1 == so { print $3 }')"
  [ "$resolved" = "$2/$3" ] || fail "$1 loads $3 from '$resolved', not $2"
}
