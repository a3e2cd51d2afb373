#!/usr/bin/env bash
# What a kubeconfig holds stays out of places it should not reach: a token with CR/LF
# (which would reach the server as a header of its own) is refused before anything is
# sent, naming the file and user but never the token; and the server's URL, printed
# when it cannot be reached (and by version --server), has its user:password@ and
# token query parameter redacted, as -v request lines do.
set -uo pipefail
: "${KTRAIN_BUILD:?set KTRAIN_BUILD to the build folder}"
ktrain="$KTRAIN_BUILD/ktrain"
work=$(mktemp -d)
server_pid=""
cleanup() {
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
export HOME="$work"  # no local runs of the user

fail() { echo "FAIL: $*"; exit 1; }

# A server on 127.0.0.1 that answers every request with an empty list (and /version
# with a version), writing each request's head to requests.log.
cat >"$work/server.py" <<'PY'
import http.server, sys

class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        with open(sys.argv[2], "a") as f:
            f.write(self.requestline + "\n" + str(self.headers) + "--\n")
        body = b'{"major":"1","minor":"32","gitVersion":"v1.32.0"}' if self.path == "/version" \
            else b'{"kind":"List","metadata":{"resourceVersion":"1"},"items":[]}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass

server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
with open(sys.argv[1], "w") as f:
    f.write(str(server.server_address[1]))
server.serve_forever()
PY
python3 "$work/server.py" "$work/port" "$work/requests.log" &
server_pid=$!
for _ in $(seq 1 100); do [ -s "$work/port" ] && break; sleep 0.05; done
port=$(cat "$work/port") || fail "the server did not start"

# kubeconfig SERVER TOKEN: writes $work/kubeconfig (TOKEN as a double-quoted YAML scalar).
kubeconfig() {
  cat >"$work/kubeconfig" <<YAML
apiVersion: v1
kind: Config
current-context: c
clusters: [{name: c, cluster: {server: "$1"}}]
users: [{name: u, user: {token: "$2"}}]
contexts: [{name: c, context: {cluster: c, user: u, namespace: default}}]
YAML
}

# The server answers a plain token.
kubeconfig "http://127.0.0.1:$port" "t0k"
"$ktrain" --kubeconfig "$work/kubeconfig" list >"$work/out" 2>"$work/err" ||
  fail "list with a plain token: $(cat "$work/err")"
grep -q "^Authorization: Bearer t0k$" "$work/requests.log" || fail "the token was not sent: $(cat "$work/requests.log")"
rm -f "$work/requests.log"

# A token with CR/LF: nothing is sent, and the message names the user, not the token.
kubeconfig "http://127.0.0.1:$port" 'abc.s3cr3t\r\nX-Injected: 1'
"$ktrain" --kubeconfig "$work/kubeconfig" list >"$work/out" 2>"$work/err"
status=$?
[ "$status" = 3 ] || fail "token with CR/LF: exit status $status, expected 3; stderr: $(cat "$work/err")"
grep -q "user 'u' in kubeconfig $work/kubeconfig: its token holds a line break (CR or LF) or NUL" "$work/err" ||
  fail "token with CR/LF: stderr: $(cat "$work/err")"
grep -q "s3cr3t" "$work/err" && fail "token with CR/LF: the token is printed: $(cat "$work/err")"
[ -e "$work/requests.log" ] && fail "requests reached the server: $(cat "$work/requests.log")"
echo "ok: a token with CR/LF is refused, not sent and not quoted"

# The URL with credentials: version --server prints it redacted.
kubeconfig "http://admin:pa55word@127.0.0.1:$port/?access_token=t0ken" "t0k"
"$ktrain" --kubeconfig "$work/kubeconfig" version --server -o json >"$work/out" 2>"$work/err" ||
  fail "version --server: $(cat "$work/err")"
grep -q '"server": "http://REDACTED@127.0.0.1:'"$port"'/?access_token=REDACTED"' "$work/out" ||
  fail "version --server: $(cat "$work/out")"
grep -q "pa55word\|t0ken" "$work/out" && fail "version --server prints a secret: $(cat "$work/out")"
echo "ok: version --server prints the server's URL redacted"

# No server there: the URL is printed without its user:password@ and token.
kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
server_pid=""
"$ktrain" --kubeconfig "$work/kubeconfig" list >"$work/out" 2>"$work/err"
status=$?
[ "$status" = 3 ] || fail "no server: exit status $status, expected 3; stderr: $(cat "$work/err")"
grep -q "cannot connect to the API server at http://REDACTED@127.0.0.1:$port/?access_token=REDACTED of context 'c'" "$work/err" ||
  fail "no server: stderr: $(cat "$work/err")"
grep -q "pa55word\|t0ken" "$work/err" && fail "no server: a secret is printed: $(cat "$work/err")"
echo "ok: an unreachable server's URL is printed redacted"
