#!/usr/bin/env bash
# Every C file of the package compiled against Darwin's own libc headers (macOS's, shipped by
# the `ziglang` package on PyPI), for aarch64 and x86_64 macOS at the deployment target, with
# warnings as errors, for macOS (aarch64, x86_64), iOS and tvOS at Package.swift's deployment
# targets: a call that Darwin does not declare (fchmod without <sys/stat.h> broke every Apple
# build once) or an API newer than the deployment target fails here as on a Mac. ziglang ships
# one set of Darwin libc headers (any-darwin-any) with each function's macOS, iOS and tvOS
# availability; for iOS and tvOS it is named with -isystem (zig itself links only macOS).
#
#   Tests/AppleShell/darwin-headers.sh          exit 1 on any diagnostic, 0 otherwise
# Installs ziglang with pip when it is missing; without pip or the network it says so and
# exits 0 (a skip, said), unless MP4PROBE_REQUIRE_DARWIN_HEADERS=1.
set -uo pipefail
cd "$(dirname "$0")/../.."

python=${PYTHON:-python3}
if ! "$python" -m ziglang version >/dev/null 2>&1; then
  "$python" -m pip install -q ziglang >/dev/null 2>&1 \
    || "$python" -m pip install -q --break-system-packages ziglang >/dev/null 2>&1 || true
fi
if ! "$python" -m ziglang version >/dev/null 2>&1; then
  echo "note: no ziglang (pip install ziglang); the C targets were not compiled against Darwin's headers"
  [ "${MP4PROBE_REQUIRE_DARWIN_HEADERS:-0}" = 1 ] && exit 1
  exit 0
fi

# The deployment targets of Package.swift's `platforms`.
version() { sed -n "s/.*\.$1(\.v\([0-9]*\)).*/\1/p" Package.swift | head -1; }
macos=$(version macOS); ios=$(version iOS); tvos=$(version tvOS)
headers=$("$python" -c 'import ziglang, os; print(os.path.join(os.path.dirname(ziglang.__file__), "lib/libc/include/any-darwin-any"))')
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
failed=0
for target in aarch64-macos.${macos:-13}.0 x86_64-macos.${macos:-13}.0 aarch64-ios.${ios:-16}.0 aarch64-tvos.${tvos:-16}.0; do
  for dir in Sources/*/; do
    for file in "$dir"*.c; do
      [ -e "$file" ] || continue
      if ! log=$("$python" -m ziglang cc -target "$target" -c -o "$out/x.o" \
          -Wall -Wextra -Werror -Werror=implicit-function-declaration \
          -Werror=unguarded-availability -Werror=unguarded-availability-new \
          -isystem "$headers" -I"$dir/include" "$file" 2>&1); then
        echo "error: $file does not compile for $target against Darwin's headers:"
        echo "$log"
        failed=1
      fi
    done
  done
done
[ $failed = 0 ] && echo "darwin headers: every C file compiles for macOS ${macos:-13} (aarch64, x86_64), iOS ${ios:-16}, tvOS ${tvos:-16}"
exit $failed
