#!/usr/bin/env bash
# ktrain build against a registry that lies (tests/fixtures/registry/hostile_registry.py):
# a layer digest that climbs out of the build folders, one with an absolute path, a
# sha512 digest, a pinned index whose platform manifest is not the one it names, a
# config and a layer whose bytes do not match, a 5 MiB manifest, a config said to be
# 64 MiB, a layer redirected to file://. Each is refused with exit status 1 and a
# message that names the digest; no file appears outside the intended folders, and
# nothing is left in an OCI layout's blobs/sha256.
set -euo pipefail
B=${KTRAIN_BUILD:-build}
S=${KTRAIN_SOURCE:-.}
for t in python3 curl; do
  command -v "$t" >/dev/null || { echo "SKIP: $t is not installed (scripts/setup installs it)"; exit 0; }
done
source "$S/tests/fixtures/registry/registry.sh"
# Short, so that the hostile digests (64 characters) can name a file in it.
work=$(mktemp -d /tmp/ktrain-hostile.XXXXXX)
server=
trap '[ -n "$server" ] && kill $server 2>/dev/null; rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
mkdir -p "$work/tmp" "$work/home"
export KTRAIN_CACHE_DIR=$work/cache HOME=$work/home TMPDIR=$work/tmp

port=$(registry_free_port)
python3 "$S/tests/fixtures/registry/hostile_registry.py" "$port" "$work/pwned" "$work/info" &
server=$!
for _ in $(seq 1 100); do
  curl -s -o /dev/null "http://127.0.0.1:$port/v2/" && break
  sleep 0.05
done
[ -s "$work/info" ] || fail "the hostile registry did not start"
source "$work/info"
reg=127.0.0.1:$port

# nothing_planted WHAT: no file the registry aimed at exists, and the build's temporary
# folders are gone.
nothing_planted() {
  local found
  found=$(find "$work" -name 'pwned*' -print)
  [ -z "$found" ] || fail "$1: the registry made ktrain create: $found"
  [ -z "$(ls -A "$work/tmp")" ] || fail "$1: left in TMPDIR: $(ls -A "$work/tmp")"
}

# refused WHAT REPO-REF TEXT [build flags...]: the build exits 1, prints nothing on
# stdout, and names TEXT on stderr.
refused() {
  local what=$1 base=$2 text=$3 rc=0
  shift 3
  mkdir -p "$work/p"
  cat > "$work/p/ktrain.yaml" <<YAML
name: hello
image:
  build:
    base: $reg/$base
    repository: $reg/team/hello
train:
  command: [sh, -c, 'echo hi']
YAML
  echo 'print(1)' > "$work/p/train.py"
  "$B/ktrain" build -f "$work/p/ktrain.yaml" "$@" > "$work/out" 2> "$work/err" || rc=$?
  [ "$rc" = 1 ] || { cat "$work/err" >&2; fail "$what: exit $rc, expected 1"; }
  [ ! -s "$work/out" ] || fail "$what: something on stdout: $(cat "$work/out")"
  grep -qF -- "$text" "$work/err" || fail "$what: expected '$text' in: $(cat "$work/err")"
  nothing_planted "$what"
}

# layout_clean WHAT: the OCI layout (if the build got as far as making it) holds no
# temporary or misnamed blob.
layout_clean() {
  local bad
  [ -d "$work/layout" ] || return 0
  bad=$(find "$work/layout" -name '*.tmp*' -print)
  [ -z "$bad" ] || fail "$1: left in the OCI layout: $bad"
  if [ -d "$work/layout/blobs/sha256" ]; then
    bad=$(ls -A "$work/layout/blobs/sha256" | grep -Ev '^[0-9a-f]{64}$' || true)
    [ -z "$bad" ] || fail "$1: misnamed blobs in the OCI layout: $bad"
  fi
}

# A layer digest that climbs out of any folder: pushing (copied through a temporary
# file), and into an OCI layout.
refused "a climbing layer digest" traversal:1 "'$traversal_digest' is not a sha256 digest"
grep -qF "layer 1" "$work/err" || fail "the message does not say which layer: $(cat "$work/err")"
refused "a climbing layer digest, --oci-layout" traversal:1 "'$traversal_digest'" \
  --oci-layout "$work/layout"
layout_clean "a climbing layer digest"
refused "an absolute layer digest, --oci-layout" absolute:1 "'$absolute_digest'" \
  --oci-layout "$work/layout"
layout_clean "an absolute layer digest"

# Another algorithm than sha256.
refused "a sha512 layer digest" sha512:1 \
  "the digest '$sha512_digest' uses sha512: only sha256 digests are supported"

# A pinned multi-platform base whose platform manifest is not the one its index names.
refused "a forged platform manifest" "multi@$multi_index" \
  "not $multi_manifest (which the index's entry for linux/amd64 names)"
refused "a forged platform manifest, by tag" multi:1 "not $multi_manifest"

# A config and a layer whose bytes are not what their digests say.
refused "a forged config" badconfig:1 "$badconfig_digest"
grep -qF "does not match its digest" "$work/err" || fail "forged config: $(cat "$work/err")"
refused "a forged layer, --oci-layout" badlayer:1 \
  "downloading blob $badlayer_digest of $reg/badlayer: the content does not match its digest" \
  --oci-layout "$work/layout"
layout_clean "a forged layer"
[ ! -e "$work/layout/blobs/sha256/${badlayer_digest#sha256:}" ] ||
  fail "the forged layer was kept in the OCI layout"
# Answers without bounds: a manifest over 4 MiB, a config said to be 64 MiB, and a
# layer's download redirected to a local file.
refused "a 5 MiB manifest" huge:1 \
  "pulling the manifest of $reg/huge:1: the answer from $reg is too large to read whole (more than 4 MiB)"
refused "a 64 MiB config" bigconfig:1 "is larger than the 16 MiB that ktrain reads of an image config"
refused "a layer redirected to file://" redirect:1 \
  "redirected to a URL that is not HTTP or HTTPS, which ktrain does not follow" \
  --oci-layout "$work/layout"
grep -qF "$redirect_digest" "$work/err" || fail "the redirected layer is not named: $(cat "$work/err")"
layout_clean "a layer redirected to file://"
echo "PASS"
