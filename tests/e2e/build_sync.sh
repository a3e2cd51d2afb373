#!/usr/bin/env bash
# `ktrain build --sync` on a real registry: after a build, only what changed in the
# workspace goes, as one thin layer on the image the build recorded (files added or
# changed, whiteouts for those removed); the image unpacked by umoci holds exactly the
# workspace as it is now; an unchanged workspace pushes nothing; syncs chain on the last
# one, and after 16 go back onto the build with every change since; a machine that does
# not know what the image holds sends the whole workspace and says so; the record moves
# to the synced image, so that render and submit run it. Bad combinations are usage
# errors with nothing pushed.
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
expect_eq() { [ "$1" = "$2" ] || fail "$3: expected '$2', got '$1'"; }
export KTRAIN_CACHE_DIR=$work/cache SOURCE_DATE_EPOCH=1700000000 HOME=$work/home
mkdir -p "$HOME"
json() { python3 -c "import json,sys; d=json.load(sys.stdin); r=($1); print(r)"; }

registry_start "$work/reg"
make_base_image "$work" "docker://$REGISTRY/base:1"
# Every upload goes through a proxy that counts the bytes.
counting_proxy_start "$REGISTRY" "$work/count"
uploaded() { cat "$work/count" 2>/dev/null || echo 0; }
REGISTRY=$PROXY build_project "$work/p"
p=$work/p
mkdir -p "$p/src" "$p/data" "$p/gone/deep"
for i in $(seq 1 40); do echo "def f$i(): return $i" >"$p/src/m$i.py"; done
head -c $((4 << 20)) /dev/urandom >"$p/data/big.bin"
echo "old" >"$p/old.txt"
echo "x" >"$p/gone/deep/x"

ktrain() {  # ktrain WHAT ARGS...: must succeed; stdout in $work/out, stderr in $work/err
  local what=$1 rc=0
  shift
  "$B/ktrain" "$@" >"$work/out" 2>"$work/err" || rc=$?
  [ "$rc" = 0 ] || { cat "$work/err" >&2; fail "$what: exit $rc"; }
}
# unpack REF DIR: the image's root file system, as a runtime applies its layers.
unpack() {
  rm -rf "$work/layout" "$2"
  skopeo copy --quiet --insecure-policy --src-tls-verify=false "docker://$1" "oci:$work/layout:t"
  umoci unpack --rootless --image "$work/layout:t" "$2" >/dev/null
}
# same_tree IMAGE_DIR: the workspace in the image is the project folder (less .ktrain).
same_tree() {
  diff -r --exclude=.ktrain "$p" "$1/rootfs/workspace" >"$work/diff" ||
    { cat "$work/diff" >&2; fail "$2: the image's /workspace differs from the folder"; }
}

echo "== a build, then a sync of a one-line edit"
ktrain "build" build -f "$p/ktrain.yaml" -o json
built=$(json 'd["reference"]' <"$work/out")
ktrain "sync with nothing changed" build -f "$p/ktrain.yaml" --sync -o json
expect_eq "$(json 'd["reference"], d["bytesUploaded"], d["sync"]["unchanged"]' <"$work/out")" \
  "('$built', 0, True)" "nothing changed: the built image, nothing uploaded"
grep -q "nothing changed since $built" "$work/err" || fail "sync says nothing changed: $(cat "$work/err")"

echo 'print(2)  # edited' >"$p/train.py"
rm "$p/old.txt"
rm -r "$p/gone"
echo "new" >"$p/src/new.py"
before=$(uploaded)
ktrain "sync of an edit" build -f "$p/ktrain.yaml" --sync -o json
synced=$(json 'd["reference"]' <"$work/out")
[[ $synced =~ ^$PROXY/team/hello@sha256:[0-9a-f]{64}$ ]] || fail "sync printed '$synced'"
[ "$synced" != "$built" ] || fail "an edit synced to the same image"
expect_eq "$(json 'd["sync"]["onto"], d["sync"]["depth"], d["sync"]["changed"], d["sync"]["removed"], d["sync"]["whole"]' <"$work/out")" \
  "('$built', 1, 2, 2, False)" "the sync layer: train.py and src/new.py; whiteouts for old.txt and gone"
sent=$(($(uploaded) - before))
[ "$sent" -lt 16384 ] || fail "a one-line edit uploaded $sent bytes (4 MiB of data unchanged)"
grep -q "synced 2 entries changed and 2 removed onto sha256:" "$work/err" || fail "sync's summary: $(cat "$work/err")"
unpack "$synced" "$work/img1"
same_tree "$work/img1" "the first sync"
[ ! -e "$work/img1/rootfs/workspace/gone" ] || fail "a removed folder is still in the image"
# The launcher and the base are those of the build.
[ -x "$work/img1/rootfs/opt/ktrain/bin/ktrain-launch" ] || fail "the synced image lost ktrain-launch"
expect_eq "$(skopeo inspect --no-tags --tls-verify=false "docker://$synced" | json 'len(d["Layers"]) - 1')" \
  "$(skopeo inspect --no-tags --tls-verify=false "docker://$built" | json 'len(d["Layers"])')" "one layer more than the build"
expect_eq "$(json 'd["images"]["'"$PROXY"'/team/hello"]["digest"], d["images"]["'"$PROXY"'/team/hello"]["sync"]["onto"], d["images"]["'"$PROXY"'/team/hello"]["sync"]["depth"]' <"$p/.ktrain/build.json")" \
  "('${synced#*@}', '${built#*@}', 1)" "the record names the synced image"
ktrain "render after a sync" render -f "$p/ktrain.yaml" --run-id r1
grep -q "image: \"\\?$synced" "$work/out" || fail "render does not name the synced image"

echo "== syncs chain: the next holds only the next change"
echo 'print(3)' >"$p/train.py"
chmod 0755 "$p/src/m1.py"
ktrain "second sync" build -f "$p/ktrain.yaml" --sync -o json
synced2=$(json 'd["reference"]' <"$work/out")
expect_eq "$(json 'd["sync"]["depth"], d["sync"]["changed"], d["sync"]["removed"]' <"$work/out")" \
  "(2, 2, 0)" "the second sync: train.py and the mode of src/m1.py"
unpack "$synced2" "$work/img2"
same_tree "$work/img2" "the second sync"
expect_eq "$(stat -c %a "$work/img2/rootfs/workspace/src/m1.py")" "755" "a mode change reaches the image"

echo "== after 16 syncs, the next goes onto the build, with every change since it"
python3 - "$p/.ktrain/build.json" "$PROXY/team/hello" <<'PY'
import json, sys
path, repo = sys.argv[1], sys.argv[2]
r = json.load(open(path))
r["images"][repo]["sync"]["depth"] = 16
json.dump(r, open(path, "w"))
PY
echo "# one more" >>"$p/src/m2.py"
ktrain "a sync after 16" build -f "$p/ktrain.yaml" --sync -o json
squashed=$(json 'd["reference"]' <"$work/out")
expect_eq "$(json 'd["sync"]["onto"], d["sync"]["depth"], d["sync"]["changed"], d["sync"]["removed"]' <"$work/out")" \
  "('$built', 1, 4, 2)" "onto the build: train.py, new.py, m1.py, m2.py; old.txt and gone"
unpack "$squashed" "$work/img3"
same_tree "$work/img3" "the sync onto the build"

echo "== a machine that does not know what the image holds sends it all, and says so"
KTRAIN_CACHE_DIR=$work/other-cache ktrain "sync without the trees" build -f "$p/ktrain.yaml" --sync -o json
expect_eq "$(json 'd["sync"]["whole"]' <"$work/out")" "True" "the whole workspace went"
grep -q "is not known on this machine" "$work/err" || fail "no warning of the whole workspace: $(cat "$work/err")"
unpack "$(json 'd["reference"]' <"$work/out")" "$work/img4"
same_tree "$work/img4" "a whole sync"

echo "== a project never built: the first sync is a full build"
REGISTRY=$PROXY build_project "$work/q"
ktrain "first sync" build -f "$work/q/ktrain.yaml" --sync -o json
grep -q "nothing is built here yet" "$work/err" || fail "the first sync says it builds: $(cat "$work/err")"
[ "$(json '"sync" in d' <"$work/out")" = False ] || fail "the first sync is a full build"

echo "== bad combinations: exit 2, nothing pushed"
refused() {  # refused WHAT ARGS...
  local what=$1 rc=0 n
  shift
  n=$(uploaded)
  echo "edit $RANDOM" >>"$p/train.py"
  "$B/ktrain" "$@" >"$work/out" 2>"$work/err" || rc=$?
  expect_eq "$rc" 2 "$what: exit status"
  [ ! -s "$work/out" ] || fail "$what: printed $(cat "$work/out")"
  expect_eq "$(uploaded)" "$n" "$what: nothing uploaded"
  grep -q -- "$EXPECT" "$work/err" || fail "$what: the message: $(cat "$work/err")"
}
EXPECT="--oci-layout" refused "--sync --oci-layout" build -f "$p/ktrain.yaml" --sync --oci-layout "$work/l"
EXPECT="--no-cache" refused "--sync --no-cache" build -f "$p/ktrain.yaml" --sync --no-cache
EXPECT="--build rebuilds" refused "submit --sync --build" submit -f "$p/ktrain.yaml" --sync --build
EXPECT="uses it in place" refused "submit --sync --local" submit -f "$p/ktrain.yaml" --sync --local
EXPECT="names another image" refused "image.ref elsewhere" build -f "$p/ktrain.yaml" --sync \
  --set "image.ref=$PROXY/other/app:1"

echo "== an unreadable file: exit 2 with its name, before anything is sent"
echo "secret = 1" >"$p/src/locked.py"
chmod 000 "$p/src/locked.py"
as_other=()
if [ "$(id -u)" = 0 ]; then
  # Root reads any file: ktrain runs as another user that owns what root owns here.
  as_other=(unshare --map-user=1000 --map-group=1000)
  "${as_other[@]}" true 2>/dev/null || as_other=(skip)
fi
if [ "${as_other[*]}" = skip ]; then
  echo "SKIP: cannot run as another user here (unshare --map-user)"
else
  n=$(uploaded) rc=0
  ${as_other[@]+"${as_other[@]}"} "$B/ktrain" build -f "$p/ktrain.yaml" --sync >"$work/out" 2>"$work/err" || rc=$?
  expect_eq "$rc" 2 "an unreadable file: exit status"
  expect_eq "$(uploaded)" "$n" "an unreadable file: nothing uploaded"
  grep -q "cannot read '$p/src/locked.py' (Permission denied): make it readable, or leave it out with .ktrainignore" "$work/err" ||
    fail "an unreadable file: the message: $(cat "$work/err")"
fi
rm -f "$p/src/locked.py"

echo "== in a git work tree: what git ignores is neither sent nor taken out of the image"
if command -v git >/dev/null; then
  git -C "$p" init -q .
  printf 'data/\n*.log\n' >"$p/.gitignore"
  echo "kept" >"$p/src/keep.log"
  git -C "$p" add -f src/keep.log
  ktrain "build in a git work tree" build -f "$p/ktrain.yaml" -o json
  gbuilt=$(json 'd["reference"]' <"$work/out")
  head -c 1024 /dev/urandom >>"$p/data/big.bin"    # ignored: stays as built
  echo "new" >"$p/out.log"                         # ignored, new: not sent
  echo 'print(4)' >"$p/train.py"                   # untracked, not ignored: sent
  echo "kept, changed" >"$p/src/keep.log"          # tracked, though *.log: sent
  n=$(uploaded)
  ktrain "sync in a git work tree" build -f "$p/ktrain.yaml" --sync -o json
  expect_eq "$(json 'd["sync"]["onto"], d["sync"]["changed"], d["sync"]["removed"], d["sync"]["whole"]' <"$work/out")" \
    "('$gbuilt', 2, 0, False)" "git: train.py and the tracked src/keep.log; nothing removed"
  sent=$(($(uploaded) - n))
  [ "$sent" -lt 16384 ] || fail "git: $sent bytes uploaded (the ignored 4 MiB file went)"
  grep -q "are ones git ignores here: they stay as they are in the image" "$work/err" ||
    fail "git: the sync says what it leaves: $(cat "$work/err")"
  rm -r "$p/data"
  ktrain "sync with an ignored folder removed" build -f "$p/ktrain.yaml" --sync -o json
  gsynced=$(json 'd["reference"]' <"$work/out")
  expect_eq "$(json 'd["sync"]["unchanged"]' <"$work/out")" "True" "git: removing an ignored folder is no change"
  unpack "$gsynced" "$work/img5"
  expect_eq "$(stat -c %s "$work/img5/rootfs/workspace/data/big.bin")" "$((4 << 20))" "git: the image keeps data/ as built"
  expect_eq "$(cat "$work/img5/rootfs/workspace/train.py") $(cat "$work/img5/rootfs/workspace/src/keep.log")" \
    "print(4) kept, changed" "git: the synced files"
  [ ! -e "$work/img5/rootfs/workspace/out.log" ] || fail "git: an ignored new file was sent"
  [ ! -e "$work/img5/rootfs/workspace/.git" ] || fail "git: .git went into the image"
else
  echo "SKIP: git is not installed"
fi

sed -i 's/^  command:/  sync: true\n  command:/' "$p/ktrain.yaml"
sed 's/^  build:/  xbuild:/' "$p/ktrain.yaml" | sed '/^image:/,/^train:/c\image: registry.example.com/a:1\ntrain:' >"$work/nobuild.yaml"
rc=0
"$B/ktrain" validate -f "$work/nobuild.yaml" >"$work/out" 2>"$work/err" || rc=$?
expect_eq "$rc" 2 "train.sync without image.build: a validation error"
grep -q "nobuild.yaml:[0-9]*:[0-9]*: train.sync: puts the workspace on the image that ktrain build makes" "$work/err" ||
  fail "the error names train.sync's line: $(cat "$work/err")"
echo "ok: build --sync"
