#!/usr/bin/env bash
# ktrain build's errors: unknown base image, missing context, an ignore file that
# excludes everything, a registry that drops the connection, no ktrain-launch.
set -euo pipefail
B=${KTRAIN_BUILD:-build}
S=${KTRAIN_SOURCE:-.}
for t in docker-registry skopeo umoci python3 curl busybox; do
  command -v "$t" >/dev/null || { echo "SKIP: $t is not installed (scripts/setup installs it)"; exit 0; }
done
source "$S/tests/fixtures/registry/registry.sh"
work=$(mktemp -d)
dropper=
trap '[ -n "$dropper" ] && kill $dropper 2>/dev/null; registry_stop; rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
export KTRAIN_CACHE_DIR=$work/cache HOME=$work/home

registry_start "$work/reg"
make_base_image "$work" "docker://$REGISTRY/base:1"

# expect_error CODE TEXT -- ktrain args...
expect_error() {
  local code=$1 text=$2
  shift 3
  set +e
  "$B/ktrain" "$@" > "$work/out" 2> "$work/err"
  local rc=$?
  set -e
  [ "$rc" = "$code" ] || { cat "$work/err"; fail "$*: exit $rc, expected $code"; }
  grep -qF -- "$text" "$work/err" || fail "$*: expected '$text' in: $(cat "$work/err")"
  [ ! -s "$work/out" ] || fail "$*: stdout is not empty"
}

project() {  # project DIR BASE [extra build lines]
  mkdir -p "$1"
  cat > "$1/ktrain.yaml" <<YAML
name: hello
image:
  build:
    base: $2
    repository: $REGISTRY/team/hello
${3:-}
train:
  command: [sh, -c, 'echo hi']
YAML
}

project "$work/p1" "$REGISTRY/no/such:1"
echo x > "$work/p1/a.py"
expect_error 1 "does not exist" -- build -f "$work/p1/ktrain.yaml"

project "$work/p2" "$REGISTRY/base:1" "    context: $work/nowhere"
expect_error 2 "does not exist" -- build -f "$work/p2/ktrain.yaml"

project "$work/p3" "$REGISTRY/base:1"
echo x > "$work/p3/a.py"
echo '*' > "$work/p3/.ktrainignore"
expect_error 2 ".ktrainignore may exclude everything" -- build -f "$work/p3/ktrain.yaml"

project "$work/p4" "$REGISTRY/base:1"
echo x > "$work/p4/a.py"
KTRAIN_LAUNCH_PATH=$work/none expect_error 2 "cannot find ktrain-launch" -- build -f "$work/p4/ktrain.yaml"

expect_error 2 "--platform" -- build -f "$work/p4/ktrain.yaml" --platform amd64

# A registry that accepts connections and closes them at once.
port=$(registry_free_port)
python3 -c '
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(16)
while True:
    c, _ = s.accept(); c.recv(4096); c.close()
' "$port" &
dropper=$!
sleep 0.3
project "$work/p5" "127.0.0.1:$port/base:1"
echo x > "$work/p5/a.py"
expect_error 3 "closed before the response was complete" -- build -f "$work/p5/ktrain.yaml"

# Nothing listening at all.
project "$work/p6" "127.0.0.1:$(registry_free_port)/base:1"
echo x > "$work/p6/a.py"
expect_error 3 "cannot connect to 127.0.0.1" -- build -f "$work/p6/ktrain.yaml"
echo "PASS"
