#!/usr/bin/env bash
# ktrain-launch is fully static (no interpreter, no NEEDED libraries), so it starts
# in any image; its man page documents every variable, flag and exit status.
source "$(dirname "$0")/launch_lib.bash"
SOURCE=${KTRAIN_SOURCE:-.}
if grep -q "^KTRAIN_SANITIZE:BOOL=ON" "$BUILD/CMakeCache.txt" 2>/dev/null; then
  echo "skip: the sanitizer build links ktrain-launch dynamically"
else
  file "$LAUNCH" | tee "$WORK/file"
  grep -q "statically linked" "$WORK/file" || fail "file does not say statically linked"
  ! readelf -l "$LAUNCH" | grep -q "INTERP" || fail "the launcher has a program interpreter"
  ! readelf -d "$LAUNCH" | grep -q "NEEDED" || fail "the launcher needs shared libraries"
  readelf -d "$LAUNCH" || true
  pass "static: no interpreter, no NEEDED entries"
fi
"$LAUNCH" --version | grep -q "^ktrain-launch [0-9]" || fail "--version"
"$LAUNCH" --help >"$WORK/help"
MAN=$SOURCE/man/ktrain-launch.1
[ -f "$MAN" ] || fail "no $MAN"
for v in $(grep -o 'KTRAIN_[A-Z_]*\|JOB_COMPLETION_INDEX' "$WORK/help" | sort -u) \
         $(grep -o -- '--[a-z-]*' "$WORK/help" | sort -u); do
  grep -q -- "${v//-/\\\\-}\|$v" "$MAN" || fail "man page lacks $v"
done
for s in 74 75 76 77 78 79; do grep -q "^\.B $s\|^$s\b\|^\.IP $s\|\\fB$s\\fR" "$MAN" || fail "man page lacks exit status $s"; done
if command -v groff >/dev/null; then
  warnings=$(groff -man -ww -z "$MAN" 2>&1 || true)
  [ -z "$warnings" ] || { echo "$warnings"; fail "groff warnings"; }
  pass "man page clean under groff -man -ww -z"
fi
pass "--help and the man page list every variable and flag"
