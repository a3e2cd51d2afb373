#!/usr/bin/env bash
# HTTP/2 as managed API servers speak it, at its limits: nginx (TLS, h2, at most 100
# concurrent streams a connection, unbuffered) in front of the test API server.
#  - a sweep's submit multiplexes its requests over one connection;
#  - `logs -f` of 256 pods runs 256 streams at once over 3 connections, as the
#    server's limit demands, with every line once;
#  - streams reset mid-log (the upstream cut, nginx resets the HTTP/2 stream) are
#    resumed with nothing lost or repeated;
#  - GOAWAY mid-follow (nginx reloaded: the old worker sends GOAWAY and closes its
#    connections 1 s later with the streams open) is resumed on a new connection,
#    nothing lost or repeated.
set -euo pipefail
source "${KTRAIN_SOURCE:-.}/tests/fixtures/apiserver/testlib.bash"
source "${KTRAIN_SOURCE:-.}/tests/fixtures/apiserver/nginx_h2.bash"
ktrain="$KTRAIN_BUILD/ktrain"
[ -x "$ktrain" ] || fail "$ktrain not built"
case "$ktrain" in /*) ;; *) ktrain="$PWD/$ktrain" ;; esac

work="$(mktemp -d /tmp/ktrain-h2s.XXXXXX)"
# KEEP_WORK=1 keeps the work folder (nginx's logs, the outputs) for a look.
cleanup() { stop_nginx; stop_apiserver; [ -n "${KEEP_WORK:-}" ] || rm -rf "$work"; }

cat >"$work/script.yaml" <<'YAML'
nodes: 64
pods:
  - match: {job: "wide-*"}
    scheduleDelay: 0.01
    startDelay: 0.01
    linePattern: "[rank {index}] line {i}"
    lineCount: 200
    lineRate: 40
  - match: {job: "cut-*"}
    linePattern: "[rank {index}] line {i}"
    lineCount: 3000
    lineRate: 1000
  - match: {job: "away-*"}
    linePattern: "[rank {index}] line {i}"
    lineCount: 200
    lineRate: 25
  - match: {job: "*"}
    lineCount: 1
YAML
start_apiserver "$work/script.yaml"
trap cleanup EXIT
export NO_COLOR=1

front_apiserver_h2 "$work/nginx"
cd "$work"

# project NAME NODES [EXTRA]
project() {
  cat >"$work/$1.yaml" <<YAML
name: $1
image: registry.example.com/ml/$1:1.0.0
train:
  command: [python3, train.py]
  framework: none
  nodes: $2
  gpus: 0
  preflight: "off"
${3:-}
YAML
}
# count FILE PODS LINES: "lost dup" of lines "[rank R] line I".
count() {
  python3 - "$@" <<'PY'
import re, sys
path, pods, lines = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
pat = re.compile(r"\[rank (\d+)\] line (\d+)$")
seen = {}
for line in open(path, encoding="utf-8", errors="replace"):
    m = pat.search(line.rstrip("\n"))
    if m:
        k = (int(m.group(1)), int(m.group(2)))
        seen[k] = seen.get(k, 0) + 1
want = {(r, i) for r in range(pods) for i in range(1, lines + 1)}
print(len(want - set(seen)), sum(c - 1 for c in seen.values()) + len(set(seen) - want))
PY
}
# connections UA_PREFIX GREP: distinct nginx connections of the matching requests.
connections() {
  grep "\"$1" "$NGINX_DIR/access.log" | grep -E -- "$2" | awk '{print $2}' | sort -u | wc -l | tr -d ' '
}

echo "== a sweep of 40 runs: submit multiplexes its requests over one connection"
project sweep 1 '  sweep:
    lr: ["0.1", "0.2", "0.3", "0.4", "0.5", "0.6", "0.7", "0.8", "0.9", "1.0"]
    seed: ["1", "2", "3", "4"]'
: >"$NGINX_DIR/access.log"
"$ktrain" -v submit -f sweep.yaml --run-id m -o json >"$work/sweep.json" 2>"$work/sweep.log" ||
  fail "submit of the sweep: $(tail -5 "$work/sweep.log")"
expect_eq "$(json 'len(d["runs"])' <"$work/sweep.json")" "40" "the sweep's 40 runs"
expect_eq "$(grep '^I ' "$work/sweep.log" | grep -vc '(HTTP/2)$' || true)" "0" "every request of the sweep over HTTP/2"
# First the server's release, read alone (/version); then the sweep's objects.
expect_eq "$(grep '"ktrain/' "$NGINX_DIR/access.log" | grep -c ' GET /version?')" "1" "the release asked once"
sent="$(grep '"ktrain/' "$NGINX_DIR/access.log" | grep -vc ' GET /version?')"
[ "$sent" -ge 160 ] || fail "nginx saw $sent of the sweep's requests, not 160"
expect_eq "$(connections ktrain/ ' (PATCH|POST) ')" "1" "the sweep's $sent requests over one connection"

echo "== logs -f of 256 pods: 256 streams, 100 a connection"
project wide 256
run="$("$ktrain" submit -f wide.yaml --run-id a)"
: >"$NGINX_DIR/access.log"
"$ktrain" -v logs -f "$run" >"$work/wide.out" 2>"$work/wide.log" || fail "logs -f: $(tail -5 "$work/wide.log")"
read -r lost dup < <(count "$work/wide.out" 256 200)
expect_eq "$lost $dup" "0 0" "256 x 200 lines, none lost, none twice"
streams="$(grep '"ktrain/' "$NGINX_DIR/access.log" | grep -c 'follow=true')"
[ "$streams" -ge 256 ] || fail "nginx saw $streams followed streams, not 256"
conns="$(connections ktrain/ 'follow=true')"
echo "256 streams went over $conns connections"
[ "$conns" -ge 3 ] || fail "256 followed streams over $conns connection(s): at most 100 fit in one"
[ "$conns" -le 4 ] || fail "256 followed streams over $conns connections: 3 are enough"
echo "ok: 256 followed streams over $conns connections"
# No connection carried more than 100 follow streams at once (a stream that ended early
# leaves its place to another, so a connection may carry more than 100 in all): the most
# at once, from each request's end and duration in nginx's log (which times to the ms: a
# stream counts from 2 ms after its start, so that one taking an ended one's place does
# not overlap it by rounding).
per="$(grep '"ktrain/' "$NGINX_DIR/access.log" | grep 'follow=true' | awk '{print $2}' | sort | uniq -c | awk '{print $1}' | sort -n | tr '\n' ' ')"
echo "streams per connection: $per"
most="$(grep '"ktrain/' "$NGINX_DIR/access.log" | grep 'follow=true' | python3 -c '
import sys, collections
spans = collections.defaultdict(list)
for line in sys.stdin:
    f = line.split()
    end, took = float(f[-2]), float(f[-1])
    if took > 0.002:
        spans[f[1]] += [(end - took + 0.002, 1), (end, -1)]
best = 0
for events in spans.values():
    now = 0
    for _, d in sorted(events):  # at the same time, an end (-1) before a start
        now += d
        best = max(best, now)
print(best)')"
echo "at most $most followed streams at once on a connection"
[ "$most" -le 100 ] || fail "a connection carried $most followed streams at once, above the server's 100"
echo "ok: no connection carried more than 100 streams"

echo "== streams reset mid-log: resumed, nothing lost or repeated"
project cut 16
run="$("$ktrain" submit -f cut.yaml --run-id a)"
admin PUT /_test/faults '{"method": "GET", "path": "/api/v1/namespaces/*/pods/*/log", "query": "follow=true", "dropAfterBytes": [2000, 40000], "count": 12}' >/dev/null
: >"$NGINX_DIR/access.log"
"$ktrain" -v logs -f "$run" >"$work/cut.out" 2>"$work/cut.log" || fail "logs -f with resets: $(tail -5 "$work/cut.log")"
admin DELETE /_test/faults >/dev/null
read -r lost dup < <(count "$work/cut.out" 16 3000)
expect_eq "$lost $dup" "0 0" "16 x 3000 lines over 12 reset streams, none lost, none twice"
# nginx ended those streams unfinished: logged with status 200 but the upstream cut.
cut_count="$(grep -c 'upstream prematurely closed' "$NGINX_DIR/error.log" || true)"
[ "$cut_count" -ge 1 ] || fail "nginx logged no cut upstream: the fault did not reach the streams"
resets="$(grep -ciE 'stream.*(reset|not closed cleanly|INTERNAL_ERROR)|RST_STREAM' "$work/cut.log" || true)"
echo "ktrain -v reported $resets reset stream(s); nginx logged $cut_count cut upstream(s)"
[ "$resets" -ge 1 ] || fail "ktrain -v reported no reset stream: $(grep -i 'resum\|retry\|error' "$work/cut.log" | head -5)"
resumed="$(grep '"ktrain/' "$NGINX_DIR/access.log" | grep -c 'follow=true')"
[ "$resumed" -gt 16 ] || fail "no stream was opened again after a reset ($resumed requests)"
echo "ok: $((resumed - 16)) streams opened again after the resets"

echo "== GOAWAY mid-follow: resumed on a new connection"
project away 8
run="$("$ktrain" submit -f away.yaml --run-id a)"
: >"$NGINX_DIR/access.log"
"$ktrain" -v logs -f "$run" >"$work/away.out" 2>"$work/away.log" &
follow_pid=$!
for i in $(seq 1 200); do
  [ "$(grep -c 'line' "$work/away.out" || true)" -ge 80 ] && break
  sleep 0.05
done
before="$(grep -c 'line' "$work/away.out" || true)"
[ "$before" -ge 80 ] || fail "logs -f: only $before lines before the reload"
# curl on one of the streams too: its -v says what nginx's old worker sent.
pod="$(api_curl "/api/v1/namespaces/default/pods?labelSelector=ktrain.dev/run=$run" | json 'd["items"][0]["metadata"]["name"]')"
curl -v -sS --http2 --cacert "$APISERVER_DIR/ca.crt" -H "Authorization: Bearer $(cat "$APISERVER_DIR/token")" \
  -o /dev/null "https://127.0.0.1:$NGINX_PORT/api/v1/namespaces/default/pods/$pod/log?follow=true&container=train" \
  2>"$work/curl.err" &
curl_pid=$!
for i in $(seq 1 100); do
  grep -q '^< HTTP/2 200' "$work/curl.err" && break
  sleep 0.05
done
old_worker="$(pgrep -P "$NGINX_PID")"
reload_nginx
wait "$follow_pid" || fail "logs -f after GOAWAY: exit status $?: $(tail -5 "$work/away.log")"
wait "$curl_pid" || true
expect_contains "$(grep -i goaway "$work/curl.err" || true)" "GOAWAY, error=0" "the old worker sent GOAWAY (curl -v, a stream to the same worker)"
[ "$before" -lt 1600 ] || fail "every line had come before the reload ($before): nothing was tested"
read -r lost dup < <(count "$work/away.out" 8 200)
expect_eq "$lost $dup" "0 0" "8 x 200 lines across the GOAWAY, none lost, none twice ($before before it)"
workers="$(grep '"ktrain/' "$NGINX_DIR/access.log" | grep 'follow=true' | awk '{print $3}' | sort -u | tr '\n' ' ')"
case " $workers" in *" $old_worker "*) ;; *) fail "no stream on the old worker $old_worker (workers: $workers)" ;; esac
[ "$(wc -w <<<"$workers")" -ge 2 ] || fail "no stream resumed on the new worker (workers: $workers)"
echo "ok: streams on the old worker and resumed on the new one ($workers)"
if ! grep -q 'gracefully shutting down' "$NGINX_DIR/error.log"; then
  fail "nginx's old worker did not shut down gracefully (GOAWAY): $(tail -5 "$NGINX_DIR/error.log")"
fi
echo "PASS"
