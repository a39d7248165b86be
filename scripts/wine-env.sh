# Sourced, not run: the Wine environment of the Windows checks (scripts/windows-checks.sh,
# scripts/windows/wine-run.sh, and cargo's runner for the Rust tests under Wine).
#
# - WINEPREFIX: a prefix of our own under build/ (MCPC_WINEPREFIX overrides), never ~/.wine;
# - headless: no DISPLAY, so Wine never opens a window; Mono and Gecko are not installed
#   (WINEDLLOVERRIDES), which would otherwise be offered on the first start;
# - WINEDEBUG=-all: no debug chatter on the programs' stderr, which the tests read.
#
# mcpc_wine_init (once per run) creates the prefix if it does not exist (`wineboot --init`,
# 14 s on an idle machine here, up to 2 min on a loaded one) and builds
# scripts/wine/bcryptprimitives.c into it (see that file: Rust programs need it under Wine 8).
mcpc_repo_dir=$(cd "$(dirname "${BASH_SOURCE[0]:-$0}")/.." && pwd)
export WINEPREFIX="${MCPC_WINEPREFIX:-$mcpc_repo_dir/build/wine}"
export WINEDEBUG=-all
export WINEDLLOVERRIDES="mscoree,mshtml="
unset DISPLAY WAYLAND_DISPLAY

mcpc_wine_init() {
    local system32="$WINEPREFIX/drive_c/windows/system32"
    local shim_src="$mcpc_repo_dir/scripts/wine/bcryptprimitives.c"
    if [ ! -f "$WINEPREFIX/system.reg" ]; then
        mkdir -p "$WINEPREFIX"
        local start=$SECONDS
        wineboot --init >/dev/null 2>&1 || { echo "wineboot --init failed" >&2; return 1; }
        wineserver -w
        echo "wine: prefix $WINEPREFIX created in $((SECONDS - start)) s"
    fi
    local shim="$system32/bcryptprimitives.dll" marker="$system32/.mcpc-bcryptprimitives"
    # Wine 9.0 and later have their own (a file there that we did not put): left alone.
    if [ -f "$shim" ] && [ ! -f "$marker" ]; then
        return 0
    fi
    if [ ! -f "$shim" ] || [ "$shim_src" -nt "$shim" ]; then
        x86_64-w64-mingw32-gcc -O2 -Wall -Wextra -Werror -shared -o "$shim" "$shim_src" \
            "${shim_src%.c}.def" -ladvapi32 || return 1
        touch "$marker"
    fi
}
