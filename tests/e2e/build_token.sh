#!/usr/bin/env bash
# ktrain build against a registry with Bearer auth (the docker token flow): a real
# docker-registry that trusts the tokens of a token service started here
# (tests/fixtures/registry/token_server.py). Tokens are asked for with the credentials
# from ~/.docker/config.json and reused, not asked for on every request; refused
# credentials give exit 3 and say where they came from, never the secret.
set -euo pipefail
B=${KTRAIN_BUILD:-build}
S=${KTRAIN_SOURCE:-.}
for t in docker-registry skopeo umoci python3 curl openssl busybox; do
  command -v "$t" >/dev/null || { echo "SKIP: $t is not installed (scripts/setup installs it)"; exit 0; }
done
source "$S/tests/fixtures/registry/registry.sh"
work=$(mktemp -d)
trap 'registry_stop; rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

registry_start "$work/reg" --token alice 's3cret-pw'
# skopeo, a client nobody here wrote, does the same token flow to push the base.
make_base_image "$work" "docker://$REGISTRY/base:1" --dest-creds 'alice:s3cret-pw'
grep -q "^alice repository:base:pull,push" "$TOKEN_LOG" ||
  fail "skopeo did not get its token from the token service: $(cat "$TOKEN_LOG")"

proj=$work/proj
build_project "$proj"
export KTRAIN_CACHE_DIR=$work/cache HOME=$work/home
mkdir -p "$HOME/.docker"

# No credentials: the token service answers a token that grants nothing, and the
# registry refuses it: exit 3, and the message says that no credentials were sent.
: > "$TOKEN_LOG"
expect_build_refused anonymous "$proj/ktrain.yaml" "$work/out" "$work/err"
grep -q "401" "$work/err" || fail "anonymous: no 401 in: $(cat "$work/err")"
grep -q "no credentials were sent" "$work/err" || fail "anonymous: message: $(cat "$work/err")"
grep -q "^- repository:base:pull" "$TOKEN_LOG" || fail "anonymous: no anonymous token asked for: $(cat "$TOKEN_LOG")"

# A wrong password: the token service refuses it: exit 3, names the config file and
# the user, never the password.
docker_auths 'alice:wrong-pw'
auth=$(printf 'alice:wrong-pw' | base64)
expect_build_refused "wrong password" "$proj/ktrain.yaml" "$work/out" "$work/err"
grep -q "token service refused the credentials from .*config.json (auths)" "$work/err" ||
  fail "wrong password: message: $(cat "$work/err")"
grep -q "alice" "$work/err" || fail "wrong password: user not named"
if grep -q "wrong-pw\|$auth" "$work/err"; then fail "the secret reached the message"; fi

# The right password: pushed with Bearer tokens; skopeo reads the image back.
docker_auths 'alice:s3cret-pw'
auth=$(printf 'alice:s3cret-pw' | base64)
: > "$TOKEN_LOG"
ref=$("$B/ktrain" build -v -f "$proj/ktrain.yaml" 2> "$work/err") || { cat "$work/err"; fail "token build"; }
[[ $ref =~ ^$REGISTRY/team/hello@sha256:[0-9a-f]{64}$ ]] || fail "reference '$ref'"
if grep -q "s3cret-pw\|$auth" "$work/err"; then fail "-v printed the secret"; fi
# A token is a JWT: header.claims.signature, both JSON ("eyJ..."). A bare "eyJ" also
# turns up by chance in other base64 the request lines carry (an upload's _state).
if grep -Eq 'eyJ[A-Za-z0-9_-]*\.eyJ' "$work/err"; then fail "-v printed a token: $(grep -E 'eyJ[A-Za-z0-9_-]*\.eyJ' "$work/err" | head -n 2)"; fi
# Tokens are reused: three for the whole push (the base's pull, the target's pull and
# push, the mount's), not one per request.
tokens=$(wc -l < "$TOKEN_LOG")
requests=$(grep -c "^I " "$work/err")
grep -qv "^alice " "$TOKEN_LOG" && fail "a token was asked for without the credentials: $(cat "$TOKEN_LOG")"
[ "$tokens" -le 3 ] || fail "$tokens tokens asked for in $requests requests: $(cat "$TOKEN_LOG")"
[ "$requests" -ge $((tokens * 2)) ] || fail "only $requests requests for $tokens tokens"
echo "pushed $ref with $tokens tokens for $requests requests:"; sed "s/^/  /" "$TOKEN_LOG"

skopeo inspect --no-tags --tls-verify=false --creds 'alice:s3cret-pw' "docker://$ref" > "$work/inspect.json" ||
  fail "skopeo cannot read the image"
python3 - "$work/inspect.json" <<'PY' || fail "the image read back is not the one built"
import json, sys
m = json.load(open(sys.argv[1]))
assert len(m["Layers"]) == 3, m["Layers"]
PY
# The base layer is mounted across repositories, which takes a token for both.
grep -q "mounted base layer" "$work/err" || fail "the base layer was not mounted: $(grep '^ktrain' "$work/err")"
grep -q "^alice repository:team/hello:pull,push repository:base:pull$" "$TOKEN_LOG" ||
  fail "no token for the mount: $(cat "$TOKEN_LOG")"

# An unchanged rebuild asks again (a new process) and uploads nothing.
ref2=$("$B/ktrain" build -f "$proj/ktrain.yaml" 2> "$work/err2") || { cat "$work/err2"; fail "rebuild"; }
[ "$ref2" = "$ref" ] || fail "the unchanged rebuild changed the digest"
grep -q "uploaded 0 B" "$work/err2" || fail "the unchanged rebuild uploaded: $(grep pushed "$work/err2")"
echo "PASS"
