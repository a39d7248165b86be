#!/usr/bin/env bash
# Builds the C API reference from include/mcpc.h with doxygen (Debian's; scripts/install-deps.sh
# installs it) into build/api/html/index.html, in the header's order: its groups, then each
# group's functions as declared. Fails on any doxygen warning, which is to say on anything the
# header exports without documenting it (a function, type, enum value, struct member or macro)
# and on a doc comment doxygen cannot read; the warnings are in build/api/warnings.log.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v doxygen >/dev/null 2>&1; then
  echo "api-docs: doxygen is missing (bash scripts/install-deps.sh installs it)" >&2
  exit 1
fi
rm -rf build/api
mkdir -p build/api
version="$(sed -n 's/^#define MCPC_VERSION "\(.*\)"$/\1/p' include/mcpc.h)"

# MCPC_API marks every function for the Windows DLL; doxygen reads it as empty.
doxygen - >build/api/doxygen.log 2>&1 <<EOF || true
PROJECT_NAME           = mcpc
PROJECT_NUMBER         = $version
PROJECT_BRIEF          = "An MCP client library with a C ABI"
INPUT                  = include/mcpc.h
OUTPUT_DIRECTORY       = build/api
GENERATE_HTML          = YES
GENERATE_LATEX         = NO
HAVE_DOT               = NO
CLASS_DIAGRAMS         = NO
OPTIMIZE_OUTPUT_FOR_C  = YES
JAVADOC_AUTOBRIEF      = YES
MARKDOWN_SUPPORT       = YES
SORT_MEMBER_DOCS       = NO
SORT_GROUP_NAMES       = NO
ENABLE_PREPROCESSING   = YES
MACRO_EXPANSION        = YES
EXPAND_ONLY_PREDEF     = YES
PREDEFINED             = MCPC_API=
EXTRACT_ALL            = NO
QUIET                  = YES
WARNINGS               = YES
WARN_IF_UNDOCUMENTED   = YES
WARN_IF_DOC_ERROR      = YES
WARN_NO_PARAMDOC       = NO
WARN_AS_ERROR          = NO
WARN_LOGFILE           = build/api/warnings.log
EOF

if [ ! -f build/api/html/index.html ]; then
  cat build/api/doxygen.log >&2
  echo "api-docs: doxygen wrote no reference" >&2
  exit 1
fi
if [ -s build/api/warnings.log ]; then
  cat build/api/warnings.log >&2
  echo "api-docs: $(wc -l <build/api/warnings.log) doxygen warning(s) on include/mcpc.h: document every export" >&2
  exit 1
fi
echo "api-docs: build/api/html/index.html, no warnings"
