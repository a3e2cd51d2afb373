#!/usr/bin/env bash
# ktrain build's layer cache is private and checked: it lives under KTRAIN_CACHE_DIR,
# XDG_CACHE_HOME or HOME only (none set: no cache, never a shared /tmp folder), its
# folders are 0700 and its files 0600, a cached layer changed on disk is refused (and
# dropped) before it is uploaded, and setuid/setgid bits of workspace files do not
# reach the image.
set -euo pipefail
B=${KTRAIN_BUILD:-build}
S=${KTRAIN_SOURCE:-.}
for t in docker-registry skopeo umoci python3 curl busybox; do
  command -v "$t" >/dev/null || { echo "SKIP: $t is not installed (scripts/setup installs it)"; exit 0; }
done
source "$S/tests/fixtures/registry/registry.sh"
work=$(mktemp -d)
trap 'registry_stop; rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
mkdir -p "$work/home" "$work/tmp"
export HOME=$work/home TMPDIR=$work/tmp SOURCE_DATE_EPOCH=1700000000
unset XDG_CACHE_HOME KTRAIN_CACHE_DIR

registry_start "$work/reg"
make_base_image "$work" "docker://$REGISTRY/base:1"
build_project "$work/p"
printf '#!/bin/sh\necho hi\n' > "$work/p/suid.sh"
chmod 4755 "$work/p/suid.sh"
mkdir -p "$work/p/shared"
chmod 2775 "$work/p/shared"
echo x > "$work/p/shared/f"

build() {  # build WHAT [ktrain build flags...]: must succeed
  local what=$1 rc=0
  shift
  "$B/ktrain" build -f "$work/p/ktrain.yaml" "$@" > "$work/out" 2> "$work/err" || rc=$?
  [ "$rc" = 0 ] || { cat "$work/err" >&2; fail "$what: exit $rc"; }
}

# No KTRAIN_CACHE_DIR, XDG_CACHE_HOME nor HOME: no cache, and nothing in the folder
# that ktrain once used then (/tmp/ktrain-cache-UID), whose name anyone could guess.
shared=/tmp/ktrain-cache-$(id -u)
key=$(printf '%s\n%s\n%s' "$work/p" workspace gzip | sha256sum | cut -d' ' -f1)
shared_before=$([ -e "$shared" ] && echo yes || echo no)
env -u HOME "$B/ktrain" build -f "$work/p/ktrain.yaml" --oci-layout "$work/layout0" \
  > "$work/out" 2> "$work/err" || { cat "$work/err" >&2; fail "a build without HOME"; }
if [ -e "$shared/index/$key.json" ] || { [ "$shared_before" = no ] && [ -e "$shared" ]; }; then
  rm -f "$shared/index/$key.json"
  fail "a build without HOME used $shared"
fi
[ -z "$(ls -A "$work/tmp")" ] || fail "a build without HOME left in TMPDIR: $(ls -A "$work/tmp")"
[ ! -e "$HOME/.cache" ] || fail "a build without HOME wrote $HOME/.cache"

# The cache under HOME (made by ktrain, so mode 0700 from the start), then XDG_CACHE_HOME.
build "a build with HOME" --oci-layout "$work/layout1"
cache=$HOME/.cache/ktrain
[ -d "$cache/index" ] || fail "no cache in $cache"
XDG_CACHE_HOME=$work/xdg build "a build with XDG_CACHE_HOME" --oci-layout "$work/layout1"
[ -d "$work/xdg/ktrain/blobs/sha256" ] || fail "no cache in $work/xdg/ktrain"
for c in "$cache" "$work/xdg/ktrain"; do
  bad=$(find "$c" -type d ! -perm 0700 -printf '%m %p\n')
  [ -z "$bad" ] || fail "cache folders open to others: $bad"
  bad=$(find "$c/index" "$c/blobs" -type f ! -perm 0600 -printf '%m %p\n')
  [ -z "$bad" ] || fail "cache files open to others: $bad"
done
[ "$(stat -c %a "$HOME/.cache")" = 700 ] || fail "$HOME/.cache is not 0700"

# No setuid or setgid bit in the image's layers (read back with Python's tarfile).
python3 - "$work/layout1" <<'PY' || fail "setuid or setgid bits in the image"
import os, sys, tarfile
root = os.path.join(sys.argv[1], "blobs", "sha256")
seen = {}
for name in os.listdir(root):
    try:
        with tarfile.open(os.path.join(root, name), "r:*") as t:
            for m in t.getmembers():
                seen[m.name] = m.mode
    except tarfile.TarError:
        continue  # the config or the manifest
for want in ("workspace/suid.sh", "workspace/shared"):
    if want not in seen:
        sys.exit("%s is not in the image" % want)
    if seen[want] & 0o6000 or seen[want] & 0o777 not in (0o755, 0o775):
        sys.exit("%s has mode %o" % (want, seen[want]))
PY

# A cached layer changed on disk (same size) is refused before it is uploaded, and
# dropped from the cache: the next build makes it again and pushes.
build "the first push"
# One byte of the workspace layer's cached blob flipped; its size and file times stay.
blob=$(python3 -c 'import json, sys
print(sys.argv[1] + "/blobs/sha256/" + json.load(open(sys.argv[1] + "/index/" + sys.argv[2] + ".json"))["digest"][7:])' \
  "$cache" "$key")
[ -f "$blob" ] || fail "no cached workspace layer at $blob"
python3 -c 'import os, sys
p = sys.argv[1]; st = os.stat(p)
with open(p, "r+b") as f:
    f.seek(100); c = f.read(1); f.seek(100); f.write(bytes([c[0] ^ 0xff]))
os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))' "$blob"
# Another repository, which lacks the layers (the workspace, ktrain.yaml included, is
# left as it is).
other=(--set "image.build.repository=$REGISTRY/team/other")
rc=0
"$B/ktrain" build -f "$work/p/ktrain.yaml" "${other[@]}" > "$work/out" 2> "$work/err" || rc=$?
[ "$rc" = 1 ] || { cat "$work/err" >&2; fail "a changed cached layer: exit $rc, expected 1"; }
grep -qF "the cached layer '$blob' does not match its digest" "$work/err" ||
  fail "a changed cached layer: $(cat "$work/err")"
[ ! -e "$blob" ] || fail "the changed cached layer was kept in the cache"
[ ! -s "$work/out" ] || fail "a changed cached layer: something on stdout"
grep -qF "layer workspace:" "$work/err" && ! grep -q "layer workspace:.*(cached)" "$work/err" &&
  fail "the workspace layer was not taken from the cache: $(cat "$work/err")"
build "the build after a changed cached layer" "${other[@]}"
ref=$(cat "$work/out")
[[ $ref =~ ^$REGISTRY/team/other@sha256:[0-9a-f]{64}$ ]] || fail "unexpected reference '$ref'"
skopeo inspect --no-tags --tls-verify=false "docker://$ref" > /dev/null ||
  fail "the image pushed after a changed cached layer cannot be read back"
echo "PASS"
