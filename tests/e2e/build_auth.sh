#!/usr/bin/env bash
# ktrain build against a registry with htpasswd Basic auth: credentials from
# ~/.docker/config.json (auths) and from a credential helper; refused credentials give
# exit 3 and say where they came from, never the secret.
set -euo pipefail
B=${KTRAIN_BUILD:-build}
S=${KTRAIN_SOURCE:-.}
for t in docker-registry skopeo umoci python3 curl htpasswd busybox; do
  command -v "$t" >/dev/null || { echo "SKIP: $t is not installed (scripts/setup installs it)"; exit 0; }
done
source "$S/tests/fixtures/registry/registry.sh"
work=$(mktemp -d)
trap 'registry_stop; rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

registry_start "$work/reg" alice 's3cret-pw'
make_base_image "$work" "docker://$REGISTRY/base:1" --dest-creds 'alice:s3cret-pw'

proj=$work/proj
build_project "$proj"
export KTRAIN_CACHE_DIR=$work/cache HOME=$work/home
mkdir -p "$HOME/.docker"

# No credentials: 401, exit 3, says that none were sent.
expect_build_refused anonymous "$proj/ktrain.yaml" "$work/out" "$work/err"
grep -q "401" "$work/err" || fail "anonymous: no 401 in: $(cat "$work/err")"
grep -q "no credentials were sent" "$work/err" || fail "anonymous: message: $(cat "$work/err")"

# Wrong password in auths: exit 3, names the config file and user, never the password.
docker_auths 'alice:wrong-pw'
auth=$(printf 'alice:wrong-pw' | base64)
expect_build_refused "wrong password" "$proj/ktrain.yaml" "$work/out" "$work/err"
grep -q "config.json (auths)" "$work/err" || fail "wrong password: source not named: $(cat "$work/err")"
grep -q "alice" "$work/err" || fail "wrong password: user not named"
if grep -q "wrong-pw\|$auth" "$work/err"; then fail "the secret reached the message"; fi

# Right password in auths: pushed; skopeo reads it back with the same credentials.
docker_auths 'alice:s3cret-pw'
auth=$(printf 'alice:s3cret-pw' | base64)
ref=$("$B/ktrain" build -v -f "$proj/ktrain.yaml" 2> "$work/err") || { cat "$work/err"; fail "auths build"; }
[[ $ref =~ ^$REGISTRY/team/hello@sha256:[0-9a-f]{64}$ ]] || fail "reference '$ref'"
if grep -q "s3cret-pw\|$auth" "$work/err"; then fail "-v printed the secret"; fi
grep -q "^I PUT http://$REGISTRY/v2/team/hello/manifests/sha256:" "$work/err" || fail "-v log lines missing"
skopeo inspect --no-tags --tls-verify=false --creds 'alice:s3cret-pw' "docker://$ref" > /dev/null || fail "skopeo cannot read the image"

# A credential helper (credHelpers) gives the credentials.
mkdir -p "$work/bin"
cat > "$work/bin/docker-credential-ktraintest" <<'SH'
#!/bin/sh
read server
[ "$1" = get ] || exit 1
echo "{\"ServerURL\":\"$server\",\"Username\":\"alice\",\"Secret\":\"s3cret-pw\"}"
SH
chmod +x "$work/bin/docker-credential-ktraintest"
echo "{\"credHelpers\":{\"$REGISTRY\":\"ktraintest\"}}" > "$HOME/.docker/config.json"
echo 'print(2)' > "$proj/train.py"
ref2=$(PATH=$work/bin:$PATH "$B/ktrain" build -f "$proj/ktrain.yaml" 2> "$work/err") || { cat "$work/err"; fail "credHelpers build"; }
[ "$ref2" != "$ref" ] || fail "credHelpers: same digest after a change"
echo "PASS"
