#!/usr/bin/env bash
# ktrain build against a real registry (no auth): the image read back by skopeo and
# umoci, run with runc; rebuilds are reproducible and upload only what changed.
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

registry_start "$work/reg"
make_base_image "$work" "docker://$REGISTRY/base:1"
counting_proxy_start "$REGISTRY" "$work/count"

proj=$work/proj
mkdir -p "$proj/src/deep/er" "$proj/secret" "$proj/data"
cat > "$proj/ktrain.yaml" <<YAML
name: hello
image:
  build:
    base: $REGISTRY/base:1
    repository: $PROXY/team/hello
    ignore: ["*.tmp", "data/"]
    env: {GREETING: hi}
train:
  command: [sh, -c, 'echo rank \$KTRAIN_RANK']
YAML
echo 'print("hello")' > "$proj/train.py"; chmod 644 "$proj/train.py"
printf '#!/bin/sh\necho run\n' > "$proj/run.sh"; chmod 755 "$proj/run.sh"
ln -s train.py "$proj/link.py"
long=$(printf 'n%.0s' $(seq 1 120))
echo long > "$proj/src/deep/er/$long.txt"
echo scratch > "$proj/scratch.tmp"
echo big > "$proj/data/blob.bin"
echo hidden > "$proj/secret/token"
echo kept > "$proj/secret/keep.txt"
printf 'secret/\n!secret/keep.txt\n' > "$proj/.ktrainignore"

export KTRAIN_CACHE_DIR=$work/cache HOME=$work/home SOURCE_DATE_EPOCH=1700000000
count() { cat "$work/count"; }

# First build.
"$B/ktrain" build -f "$proj/ktrain.yaml" > "$work/out1" 2> "$work/err1" || { cat "$work/err1"; fail "first build"; }
[ "$(wc -l < "$work/out1")" = 1 ] || fail "stdout has more than the reference: $(cat "$work/out1")"
ref=$(cat "$work/out1")
[[ $ref =~ ^$PROXY/team/hello@sha256:[0-9a-f]{64}$ ]] || fail "unexpected reference '$ref'"
first=$(count)
[ "$first" -gt 0 ] || fail "the first build uploaded nothing"
grep -q "uploaded layer sha256:.*while it was built" "$work/err1" ||
  fail "the first build did not upload the workspace layer while building it: $(cat "$work/err1")"
echo "first build: $ref, $first bytes uploaded"

# Read back with skopeo.
direct=${ref/$PROXY/$REGISTRY}
skopeo inspect --no-tags --tls-verify=false "docker://$direct" > "$work/inspect.json"
skopeo inspect --no-tags --tls-verify=false --config "docker://$direct" > "$work/config.json"
skopeo inspect --no-tags --tls-verify=false --raw "docker://$direct" > "$work/manifest.json"
python3 - "$work" <<'PY'
import json, sys
w = sys.argv[1]
ins = json.load(open(w + "/inspect.json"))
cfg = json.load(open(w + "/config.json"))
man = json.load(open(w + "/manifest.json"))
def check(cond, msg):
    if not cond:
        sys.exit("FAIL: " + msg)
check(man["mediaType"] == "application/vnd.oci.image.manifest.v1+json", "manifest media type")
check(len(ins["Layers"]) == 3, "expected base + launcher + workspace layers, got %d" % len(ins["Layers"]))
check(all(l["mediaType"].endswith("tar+gzip") for l in man["layers"]), "gzip layers")
c = cfg["config"]
check(c["Entrypoint"] == ["/opt/ktrain/bin/ktrain-launch"], "entrypoint %r" % c.get("Entrypoint"))
check(c["WorkingDir"] == "/workspace", "workdir")
check("GREETING=hi" in c["Env"], "env %r" % c["Env"])
check(any(e.startswith("PATH=") for e in c["Env"]), "base env kept")
check("Cmd" not in c or not c["Cmd"], "base Cmd dropped")
labels = ins["Labels"]
check(labels["org.opencontainers.image.created"] == "2023-11-14T22:13:20Z", "created label %r" % labels)
check(cfg["created"] == "2023-11-14T22:13:20Z", "created")
check(len(cfg["rootfs"]["diff_ids"]) == 3, "diff_ids")
check(len(cfg["history"]) >= 2 and "ktrain-launch" in cfg["history"][-2]["created_by"], "history")
PY

# Unpack with umoci: files, modes, links, ignore rules.
skopeo copy --quiet --insecure-policy --src-tls-verify=false "docker://$direct" "oci:$work/layout:img"
umoci unpack --image "$work/layout:img" "$work/bundle" > /dev/null
root=$work/bundle/rootfs
[ "$(stat -c %a "$root/workspace/train.py")" = 644 ] || fail "train.py mode"
[ "$(stat -c %a "$root/workspace/run.sh")" = 755 ] || fail "run.sh mode"
[ "$(readlink "$root/workspace/link.py")" = train.py ] || fail "symlink"
[ -f "$root/workspace/src/deep/er/$long.txt" ] || fail "long name"
[ ! -e "$root/workspace/scratch.tmp" ] || fail "*.tmp not ignored"
[ ! -e "$root/workspace/data" ] || fail "data/ not ignored"
[ ! -e "$root/workspace/secret/token" ] || fail "secret/ not ignored"
[ -f "$root/workspace/secret/keep.txt" ] || fail "!secret/keep.txt not re-included"
[ "$(stat -c %a "$root/opt/ktrain/bin/ktrain-launch")" = 755 ] || fail "ktrain-launch mode"
[ -x "$root/bin/busybox" ] || fail "base layer missing"
[ "$(stat -c %u:%g "$root/workspace/train.py")" = 0:0 ] || fail "owner"

# Rebuild unchanged: same digest, nothing uploaded.
ref2=$("$B/ktrain" build -f "$proj/ktrain.yaml" 2> "$work/err2")
[ "$ref2" = "$ref" ] || fail "unchanged rebuild changed the digest: $ref -> $ref2"
[ "$(count)" = "$first" ] || fail "unchanged rebuild uploaded $(( $(count) - first )) bytes"
grep -q "(cached)" "$work/err2" || fail "the unchanged rebuild did not use the layer cache"

# Same digest without the cache, too (determinism of tar + gzip).
ref_nc=$("$B/ktrain" build --no-cache -f "$proj/ktrain.yaml" 2> /dev/null)
[ "$ref_nc" = "$ref" ] || fail "a build without the cache gave another digest"
[ "$(count)" = "$first" ] || fail "the no-cache rebuild uploaded bytes"

# One file changed: only the workspace layer (and the config) are uploaded.
echo 'print("changed")' >> "$proj/train.py"
before=$(count)
ref3=$("$B/ktrain" build -f "$proj/ktrain.yaml" 2> "$work/err3")
[ "$ref3" != "$ref" ] || fail "a changed file kept the digest"
delta=$(( $(count) - before ))
skopeo inspect --no-tags --tls-verify=false --raw "docker://${ref3/$PROXY/$REGISTRY}" > "$work/manifest3.json"
expect=$(python3 -c 'import json,sys; m=json.load(open(sys.argv[1])); print(m["layers"][-1]["size"] + m["config"]["size"])' "$work/manifest3.json")
[ "$delta" = "$expect" ] || fail "a one-file change uploaded $delta bytes, expected $expect (workspace layer + config)"
echo "one file changed: $delta bytes uploaded (workspace layer + config)"
grep -q "while it was built" "$work/err3" || fail "the changed layer was not streamed"

# --no-stream: the changed layer is uploaded after it is built, the same bytes once.
echo 'print("changed again")' >> "$proj/train.py"
before=$(count)
ref4=$("$B/ktrain" build --no-stream -f "$proj/ktrain.yaml" 2> "$work/err4")
! grep -q "while it was built" "$work/err4" || fail "--no-stream streamed"
grep -q "^ktrain build: uploaded layer sha256:" "$work/err4" || fail "--no-stream: no upload shown"
grep -Eq "^ktrain build: uploaded layer sha256:[0-9a-f]{12} \([0-9.]+ [KMG]?i?B, [0-9.]+ [KMG]?i?B/s\)$" "$work/err4" ||
  fail "--no-stream: the upload's size and rate: $(grep uploaded "$work/err4")"
grep -Eq "^ktrain build: layer workspace: .* \([0-9.]+ [KMG]?i?B/s\)$" "$work/err4" ||
  fail "the workspace layer's rate: $(grep 'layer workspace' "$work/err4")"
skopeo inspect --no-tags --tls-verify=false --raw "docker://${ref4/$PROXY/$REGISTRY}" > "$work/manifest4.json"
expect=$(python3 -c 'import json,sys; m=json.load(open(sys.argv[1])); print(m["layers"][-1]["size"] + m["config"]["size"])' "$work/manifest4.json")
[ "$(( $(count) - before ))" = "$expect" ] || fail "--no-stream uploaded $(( $(count) - before )) bytes, expected $expect"

# A registry that refuses a streamed PATCH (it takes only sized chunks): the layer goes
# up from its file after it is built, and the push succeeds.
main_proxy=$PROXY main_proxy_pid=$PROXY_PID
counting_proxy_start "$REGISTRY" "$work/count_refusing" refuse-streamed
refusing=$PROXY refusing_pid=$PROXY_PID
PROXY=$main_proxy PROXY_PID=$main_proxy_pid
echo 'print("changed for a refusing registry")' >> "$proj/train.py"
ref5=$("$B/ktrain" build -v --set "image.build.repository=$refusing/team/hello" \
  -f "$proj/ktrain.yaml" 2> "$work/err5") || { cat "$work/err5"; fail "build through a registry that refuses streamed uploads"; }
kill "$refusing_pid"; wait "$refusing_pid" 2> /dev/null || true
grep -q "while it was built failed (.*411" "$work/err5" ||
  fail "no fallback after a refused streamed upload: $(grep 'ktrain' "$work/err5")"
grep "^ktrain build: uploaded layer sha256:" "$work/err5" | grep -qv "while it was built" ||
  fail "the fallback upload is not shown: $(grep "^ktrain" "$work/err5")"
skopeo inspect --no-tags --tls-verify=false --raw "docker://${ref5/$refusing/$REGISTRY}" > "$work/manifest5.json"
expect=$(python3 -c 'import json,sys; m=json.load(open(sys.argv[1])); print(m["layers"][-1]["size"] + m["config"]["size"])' "$work/manifest5.json")
[ "$(cat "$work/count_refusing")" = "$expect" ] ||
  fail "after a refused stream, $(cat "$work/count_refusing") bytes were uploaded, expected $expect"

# --oci-layout DIR writes a layout that skopeo reads, with the same digest.
refo=$("$B/ktrain" build -f "$proj/ktrain.yaml" --oci-layout "$work/ocidir" 2> /dev/null)
[ "$refo" = "oci:$work/ocidir@${ref5#*@}" ] || fail "layout reference $refo"
# -o json: what a CI script reads; -o is the output format, as for every verb.
"$B/ktrain" build -o json -f "$proj/ktrain.yaml" --oci-layout "$work/ocidir" 2> /dev/null > "$work/build.json"
python3 - "$work/build.json" "${ref5#*@}" "$work/ocidir" <<'PY' || fail "build -o json: $(cat "$work/build.json")"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["digest"] == sys.argv[2] and d["reference"] == "oci:%s@%s" % (sys.argv[3], sys.argv[2]), d
assert isinstance(d["bytesUploaded"], int), d
PY
if "$B/ktrain" build -o json --dockerfile -f "$proj/ktrain.yaml" > "$work/out" 2> "$work/err"; then fail "-o json --dockerfile was accepted"; fi
grep -q -- "--dockerfile prints a Dockerfile, not -o json" "$work/err" || fail "-o json --dockerfile: $(cat "$work/err")"
[ ! -s "$work/out" ] || fail "-o json --dockerfile printed: $(cat "$work/out")"
if "$B/ktrain" build -o yaml -f "$proj/ktrain.yaml" 2> "$work/err"; then fail "build -o yaml was accepted"; fi
grep -q "^ktrain: error: -o yaml: build prints the reference, or -o json" "$work/err" || fail "build -o yaml: $(cat "$work/err")"
skopeo inspect "oci:$work/ocidir" > /dev/null || fail "skopeo cannot read the layout"

# --dockerfile.
"$B/ktrain" build -f "$proj/ktrain.yaml" --dockerfile | grep -q "^FROM $REGISTRY/base:1$" || fail "--dockerfile"

# --launcher-image: FROM scratch, ktrain-launch (and its GPU helper when built) at /,
# pushed under the given tag; its --install copies it where pods mount it.
lref=$("$B/ktrain" build --launcher-image "$REGISTRY/ktrain/launch:t1" 2> "$work/lerr") || { cat "$work/lerr"; fail "build --launcher-image"; }
[[ $lref =~ ^$REGISTRY/ktrain/launch@sha256:[0-9a-f]{64}$ ]] || fail "launcher image reference '$lref'"
skopeo inspect --no-tags --tls-verify=false "docker://$REGISTRY/ktrain/launch:t1" > "$work/linspect.json"
skopeo inspect --no-tags --tls-verify=false --config "docker://$REGISTRY/ktrain/launch:t1" > "$work/lconfig.json"
python3 - "$work/linspect.json" "$work/lconfig.json" "${lref#*@}" <<'PY' || fail "the launcher image is not as expected"
import json, sys
inspect, config, digest = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3]
assert inspect["Digest"] == digest, (inspect["Digest"], digest)
assert len(inspect["Layers"]) == 1, inspect["Layers"]
assert config["config"]["Entrypoint"] == ["/ktrain-launch"], config["config"]
assert config["config"]["Labels"]["org.opencontainers.image.title"] == "ktrain-launch", config["config"]
assert config["os"] == "linux" and config["architecture"] == "amd64", config
PY
skopeo copy --src-tls-verify=false "docker://$REGISTRY/ktrain/launch:t1" "oci:$work/loci:t1" > /dev/null
umoci unpack --rootless --image "$work/loci:t1" "$work/lbundle" > /dev/null
lfiles=$(cd "$work/lbundle/rootfs" && find . -mindepth 1 | sort | tr '\n' ' ')
case "$lfiles" in
  "./ktrain-launch " | "./ktrain-gpucheck ./ktrain-launch ") ;;
  *) fail "the launcher image holds more than the launcher: $lfiles" ;;
esac
mkdir "$work/installed"
"$work/lbundle/rootfs/ktrain-launch" --install "$work/installed" 2> "$work/linstall" || { cat "$work/linstall"; fail "--install"; }
cmp "$work/installed/ktrain-launch" "$B/ktrain-launch" || fail "--install did not copy the launcher as it is"
[ -x "$work/installed/ktrain-launch" ] || fail "the installed launcher is not executable"
if "$work/lbundle/rootfs/ktrain-launch" --install "$work/nonexistent" 2> "$work/linstall"; then fail "--install into a missing folder succeeded"; fi
grep -q "error: --install $work/nonexistent: No such file or directory" "$work/linstall" || fail "--install error: $(cat "$work/linstall")"
# Rebuilt: the same digest, nothing uploaded again.
before=$(count)
lref2=$("$B/ktrain" build --launcher-image "$PROXY/ktrain/launch:t1" 2> /dev/null) || fail "launcher image rebuild"
[ "${lref2#*@}" = "${lref#*@}" ] || fail "the launcher image is not reproducible: $lref vs $lref2"
[ "$(count)" = "$before" ] || fail "the launcher image rebuild uploaded $(( $(count) - before )) bytes"
if "$B/ktrain" build --launcher-image "Bad:Ref" 2> "$work/lerr"; then fail "a bad --launcher-image was accepted"; fi
grep -q "^ktrain: error: --launcher-image Bad:Ref: " "$work/lerr" || fail "bad --launcher-image error: $(cat "$work/lerr")"
lsize=$(skopeo inspect --raw --tls-verify=false "docker://$REGISTRY/ktrain/launch:t1" |
  python3 -c 'import json, sys; print(sum(l["size"] for l in json.load(sys.stdin)["layers"]))')
echo "launcher image: $lref ($lfiles): $lsize bytes compressed, $(du -sb "$work/lbundle/rootfs" | cut -f1) bytes unpacked"
if ! grep -q "^KTRAIN_SANITIZE:BOOL=ON" "$B/CMakeCache.txt" 2>/dev/null; then
  # Static and stripped, what nothing calls left out (runtime/CMakeLists.txt): the
  # README's figure. A sanitizer build's launcher is dynamic and larger.
  [ "$lsize" -lt 1048576 ] || fail "the launcher image's layer is $lsize bytes (the README says under 1 MiB)"
fi

# runc runs ktrain-launch inside the image with two workers.
if ! command -v runc > /dev/null; then
  echo "SKIP (runc sub-check): runc is not installed"
elif ! "$root/opt/ktrain/bin/ktrain-launch" --help > /dev/null 2>&1; then
  echo "SKIP (runc sub-check): ktrain-launch is not functional yet"
elif readelf -l "$root/opt/ktrain/bin/ktrain-launch" 2>/dev/null | grep -q INTERP; then
  # The sanitizer build links the launcher dynamically (libasan); the busybox base
  # image has no shared libraries for it.
  echo "SKIP (runc sub-check): this ktrain-launch is dynamically linked (sanitizer build)"
else
  python3 - "$work/bundle/config.json" <<'PY'
import json, sys
p = sys.argv[1]
c = json.load(open(p))
c["process"]["terminal"] = False
c["process"]["args"] = ["/opt/ktrain/bin/ktrain-launch", "--nproc-per-node", "2", "--", "sh", "-c", "echo rank $KTRAIN_RANK of $KTRAIN_WORLD_SIZE"]
c["process"]["cwd"] = "/workspace"
json.dump(c, open(p, "w"))
PY
  if (cd "$work/bundle" && timeout 60 runc run "ktrain-e2e-$$" < /dev/null > "$work/runc.out" 2> "$work/runc.err"); then
    grep -q "rank 0 of 2" "$work/runc.out" || { cat "$work/runc.out"; fail "rank 0 did not print"; }
    grep -q "rank 1 of 2" "$work/runc.out" || { cat "$work/runc.out"; fail "rank 1 did not print"; }
    echo "runc: $(tr '\n' ' ' < "$work/runc.out")"
  elif grep -qiE "cgroup|permission denied|operation not permitted|no such file or directory.*(cgroup|proc)|mount" "$work/runc.err"; then
    echo "SKIP (runc sub-check): runc cannot create containers on this machine: $(head -c 300 "$work/runc.err")"
  else
    cat "$work/runc.out" "$work/runc.err"
    fail "runc run of ktrain-launch failed"
  fi
  runc delete -f "ktrain-e2e-$$" > /dev/null 2>&1 || true
fi
echo "PASS"
