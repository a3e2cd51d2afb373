#!/usr/bin/env bash
# The optional targets (train.target pytorchjob, tfjob, mpijob, trainjob, jobset; serve.target
# kserve, lws) against the upstream CRDs of ../shared/schemas: every example rendered under
# every target it is valid for, and every project of tests/schema/targets, checked with the
# CRD validator there (validate-crd.mjs, run from a copy beside tests/schema/node_modules,
# since ../shared is read-only) and, for the core kinds among them (Service, Job, HPA, ...),
# with tests/schema/validate.mjs; after a self-test showing that the CRD validator rejects
# broken objects. Without ../shared/schemas, node, python3 or the npm packages the check is
# skipped (exit 77), except in CI (CI=true), where that is a failure.
set -euo pipefail
src=${KTRAIN_SOURCE:-$(cd "$(dirname "$0")/../.." && pwd)}
build=${KTRAIN_BUILD:-$src/build}
ktrain=$build/ktrain
schema=$src/tests/schema
[ -x "$ktrain" ] || { echo "target_crds: $ktrain is not built"; exit 1; }

skip() {
  if [ "${CI:-}" = true ]; then echo "FAIL target_crds: $*"; exit 1; fi
  echo "SKIP target_crds: $*"
  exit 77
}
shared="$(cd "$src/.." && pwd)/shared/schemas"
if [ ! -f "$shared/validate-crd.mjs" ] || [ ! -d "$shared/crds" ]; then
  skip "$shared (validate-crd.mjs and crds/) is missing"
fi
command -v node >/dev/null 2>&1 || skip "node is missing (run scripts/setup)"
command -v python3 >/dev/null 2>&1 || skip "python3 is missing (run scripts/setup)"
for m in yaml ajv ajv-formats kubernetes-models; do
  [ -d "$schema/node_modules/$m" ] ||
    skip "tests/schema/node_modules/$m is missing (run scripts/setup, or npm ci in tests/schema)"
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export NO_COLOR=1
failures=0
fail() { echo "FAIL $*"; failures=$((failures + 1)); }

# The validator, from a copy whose imports (yaml, ajv, ajv-formats) resolve in tests/schema.
mkdir "$tmp/crd" "$tmp/renders" "$tmp/self"
cp "$shared/validate-crd.mjs" "$tmp/crd/"
ln -s "$schema/node_modules" "$tmp/crd/node_modules"
validate_crd() { node "$tmp/crd/validate-crd.mjs" "$shared/crds" "$@"; }

# The main kind of each target.
declare -A kind_of=(
  [pytorchjob]=PyTorchJob [tfjob]=TFJob [mpijob]=MPIJob [trainjob]=TrainJob [jobset]=JobSet
  [kserve]=InferenceService [lws]=LeaderWorkerSet
)
train_targets=(pytorchjob tfjob mpijob trainjob jobset)
serve_targets=(kserve lws)

# ---- Self-test: the CRD validator accepts a rendered PyTorchJob and rejects broken ones.
self=$tmp/self
"$ktrain" render -o json -f "$src/examples/pytorch-ddp/ktrain.yaml" --run-id st \
  --set train.target=pytorchjob --set train.retry=null >"$self/render.json"
# Through ktrain's own patches: Master.replicas becomes a string.
"$ktrain" render -f "$src/examples/pytorch-ddp/ktrain.yaml" --run-id st-replicas \
  --set train.target=pytorchjob --set train.retry=null \
  --set 'patches.PyTorchJob.spec.pytorchReplicaSpecs.Master.replicas="one"' >"$self/2-replicas.yaml"
python3 - "$self" <<'PY'
import copy, json, sys
d = sys.argv[1]
job = next(o for o in json.load(open(f"{d}/render.json"))["items"] if o["kind"] == "PyTorchJob")
def write(name, mutate):
    o = copy.deepcopy(job)
    o["metadata"]["name"] = name
    mutate(o)
    return o
cases = [
    ("1-good", "selftest-good", lambda o: None),
    ("3-unknown", "selftest-unknown", lambda o: o["spec"].update(workerCount=3)),
    ("4-version", "selftest-version", lambda o: o.update(apiVersion="kubeflow.org/v2")),
    ("5-container", "selftest-container",
     lambda o: o["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
     .update(gpus=8)),
]
for file, name, mutate in cases:
    json.dump(write(name, mutate), open(f"{d}/{file}.json", "w"))
PY
rc=0
validate_crd "$self/1-good.json" "$self/2-replicas.yaml" "$self/3-unknown.json" \
  "$self/4-version.json" "$self/5-container.json" >"$self/out" 2>&1 || rc=$?
sed 's/^/  self-test: /' "$self/out"
[ "$rc" = 1 ] || fail "self-test: the CRD validator exited $rc, not 1"
expect_line() { # PATTERN WHY
  grep -Eq "$1" "$self/out" || fail "self-test: $2"
}
expect_line '^ok PyTorchJob selftest-good$' "a rendered PyTorchJob was not accepted"
expect_line '^bad PyTorchJob resnet50-ddp-st-replicas: .*spec\.pytorchReplicaSpecs\.Master\.replicas must be integer' \
  "replicas: \"one\" (a patch) was accepted"
expect_line '^bad PyTorchJob selftest-unknown: .*unknown field "workerCount"' \
  "an unknown field in spec was accepted"
expect_line '^bad PyTorchJob selftest-version: apiVersion kubeflow.org/v2 is not defined' \
  "an apiVersion the CRD does not define was accepted"
expect_line '^bad PyTorchJob selftest-container: .*unknown field "gpus"' \
  "an unknown field in a pod template's container was accepted"
node "$schema/validate.mjs" --self-test | sed 's/^/  self-test: /' ||
  fail "self-test: tests/schema/validate.mjs"

# ---- Renders. Each is rendered twice: YAML (what kubectl apply reads; the CRD validator
# reads it with YAML 1.1 rules) and JSON (a v1 List, for tests/schema/validate.mjs).
refused=()   # "label: why" of combinations that ktrain refuses (exit 2)
n=0
# render LABEL ARGS...: returns 0 when rendered, 2 when refused (recorded), else 1 (a failure).
render() {
  local label=$1 file
  shift
  n=$((n + 1))
  file=$(printf '%s/%03d' "$tmp/renders" "$n")
  local rc=0
  "$ktrain" render --run-id crd "$@" >"$file.yaml" 2>"$file.err" || rc=$?
  if [ "$rc" = 0 ]; then
    "$ktrain" render --run-id crd -o json "$@" >"$file.json" 2>/dev/null ||
      { fail "$label: renders as YAML but not with -o json"; return 1; }
    printf '%s\n' "$label" >"$file.label"
    return 0
  fi
  rm -f "$file.yaml"
  if [ "$rc" = 2 ]; then
    refused+=("$label: $(sed "s|^ktrain: error: ||; s|$src/||g" "$file.err" | tr '\n' ' ')")
    return 2
  fi
  fail "$label: ktrain render exited $rc: $(cat "$file.err")"
  return 1
}

# Every example under every non-default target of its sections.
examples=0
for file in "$src"/examples/*/ktrain.yaml; do
  ex=$(basename "$(dirname "$file")")
  examples=$((examples + 1))
  if grep -q '^train:' "$file"; then
    ok=0
    for t in "${train_targets[@]}"; do
      sets=(--set "train.target=$t")
      [ "$t" = tfjob ] && sets+=(--set train.framework=tensorflow)
      rc=0
      render "examples/$ex train.target=$t" -f "$file" "${sets[@]}" || rc=$?
      [ "$rc" = 0 ] && ok=$((ok + 1))
    done
    [ "$ok" -gt 0 ] || fail "examples/$ex renders under none of the train targets ${train_targets[*]}"
  fi
  if grep -q '^serve:' "$file"; then
    ok=0
    for t in "${serve_targets[@]}"; do
      rc=0
      render "examples/$ex serve.target=$t" -f "$file" --set "serve.target=$t" || rc=$?
      [ "$rc" = 0 ] && ok=$((ok + 1))
    done
    [ "$ok" -gt 0 ] || fail "examples/$ex renders under none of the serve targets ${serve_targets[*]}"
  fi
done
[ "$examples" -gt 0 ] || fail "no examples"

# Every project of tests/schema/targets, named <target>-<nn>-<what>.yaml: it must render
# (without a warning: --strict), and render its target's kind.
declare -A projects=()
for file in "$schema"/targets/*.yaml; do
  [ -e "$file" ] || continue
  base=$(basename "$file")
  t=${base%%-*}
  if [ -z "${kind_of[$t]:-}" ]; then
    fail "targets/$base: the name does not start with a target (${!kind_of[*]})"
    continue
  fi
  projects[$t]=$((${projects[$t]:-0} + 1))
  rc=0
  render "targets/$base" --strict -f "$file" || rc=$?
  if [ "$rc" = 0 ]; then
    python3 -c 'import json, sys; sys.exit(0 if any(o["kind"] == sys.argv[2] for o in json.load(open(sys.argv[1]))["items"]) else 1)' \
      "$tmp/renders/$(printf '%03d' "$n").json" "${kind_of[$t]}" ||
      fail "targets/$base renders no ${kind_of[$t]}"
  elif [ "$rc" = 2 ]; then
    fail "targets/$base: refused: ${refused[-1]#*: }"
    unset 'refused[-1]'
  fi
done
for t in "${!kind_of[@]}"; do
  [ "${projects[$t]:-0}" -ge 10 ] || fail "tests/schema/targets has ${projects[$t]:-0} projects for $t (at least 10 wanted)"
done

for r in "${refused[@]}"; do echo "refused (exit 2, not validated): $r"; done

yamls=("$tmp"/renders/*.yaml)
[ -e "${yamls[0]}" ] || { fail "nothing rendered"; echo "target_crds: $failures failure(s)"; exit 1; }

# ---- The core kinds of each render, as one v1 List per render, for validate.mjs (which
# fails on kinds it has no model for, such as PyTorchJob): every object whose API group is
# built in (no dot: v1, batch/v1, apps/v1, autoscaling/v2, policy/v1).
python3 - "$tmp/renders" <<'PY'
import glob, json, os, sys
for path in sorted(glob.glob(os.path.join(sys.argv[1], "*.json"))):
    if path.endswith(".core.json"):
        continue
    items = json.load(open(path))["items"]
    core = [o for o in items if "." not in o["apiVersion"].rpartition("/")[0]]
    if core:
        json.dump({"apiVersion": "v1", "kind": "List", "items": core},
                  open(path[:-len(".json")] + ".core.json", "w"))
PY
core_files=("$tmp"/renders/*.core.json)
core_rc=0
if [ -e "${core_files[0]}" ]; then
  node "$schema/validate.mjs" "${core_files[@]}" >"$tmp/core.out" 2>&1 || core_rc=$?
else
  : >"$tmp/core.out"
fi

# ---- The CRD validator on every YAML render at once (the schemas compile once); its lines
# come in the order of the objects, file by file, which names the render of each.
crd_rc=0
validate_crd "${yamls[@]}" >"$tmp/crd.out" 2>&1 || crd_rc=$?
[ "$crd_rc" = 0 ] || [ "$crd_rc" = 1 ] || { cat "$tmp/crd.out"; fail "validate-crd.mjs exited $crd_rc"; }

python3 - "$tmp" "$crd_rc" "$core_rc" "${#yamls[@]}" "${kind_of[@]}" <<'PY' || failures=$((failures + $?))
import collections, glob, json, os, re, sys
tmp, crd_rc, core_rc, n_renders = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
wanted = sys.argv[5:]
failures = 0
def fail(msg):
    global failures
    print(f"FAIL {msg}")
    failures += 1

# The renders, in the order given to the validator, and their objects.
renders = []
for y in sorted(glob.glob(os.path.join(tmp, "renders", "*.yaml"))):
    base = y[: -len(".yaml")]
    label = open(base + ".label").read().strip()
    items = json.load(open(base + ".json"))["items"]
    renders.append((label, items))

lines = [l for l in open(os.path.join(tmp, "crd.out")).read().splitlines() if l.strip()]
objects = [(label, o) for label, items in renders for o in items]
if len(lines) != len(objects):
    print("\n".join(lines))
    fail(f"validate-crd.mjs printed {len(lines)} lines for {len(objects)} objects "
         "(the YAML and JSON renders disagree, or it could not read something)")
    sys.exit(min(failures, 100))

counts = collections.Counter()
for line, (label, o) in zip(lines, objects):
    m = re.match(r"^(ok|bad|skip) (\S+) (\S+?)(:.*)?$", line)
    name = o["metadata"]["name"]
    if not m or m.group(2) != o["kind"] or m.group(3) != name:
        fail(f"{label}: validate-crd.mjs line {line!r} is not about {o['kind']} {name}")
        continue
    verdict = m.group(1)
    group = o["apiVersion"].rpartition("/")[0]
    core = "." not in group
    if not (core and verdict == "skip"):  # the core kinds' verdicts come from validate.mjs
        print(f"{line}   [{label}]")
    if verdict == "ok":
        counts[o["kind"]] += 1
    elif verdict == "bad":
        fail(f"{label}: {line}")
    elif not core:
        fail(f"{label}: {o['apiVersion']} {o['kind']} {name}: no CRD in ../shared/schemas/crds to check it")

# The core kinds, from validate.mjs: "ok   FILE: Kind/name" or "FAIL FILE: Kind/name: why".
labels = {}
for y in glob.glob(os.path.join(tmp, "renders", "*.label")):
    labels[y[: -len(".label")] + ".core.json"] = open(y).read().strip()
core_out = open(os.path.join(tmp, "core.out")).read().splitlines()
core_ok = 0
for line in core_out:
    m = re.match(r"^(ok|FAIL|skip)\s+(\S+\.core\.json): ([^/]+)/(\S+?)(:.*| \(.*)?$", line)
    if not m:
        if line.strip():
            print(f"  validate.mjs: {line}")
        continue
    label = labels.get(m.group(2), m.group(2))
    print(f"{m.group(1)} {m.group(3)} {m.group(4)}{m.group(5) or ''}   [{label}, core]")
    if m.group(1) == "ok":
        counts[m.group(3)] += 1
        core_ok += 1
    elif m.group(1) == "FAIL":
        fail(f"{label}: {m.group(3)}/{m.group(4)}{m.group(5) or ''}")
core_objects = sum(1 for _, o in objects if "." not in o["apiVersion"].rpartition("/")[0])
if core_rc != 0 and failures == 0:
    fail(f"tests/schema/validate.mjs exited {core_rc}")
if core_ok != core_objects:
    fail(f"validate.mjs accepted {core_ok} of {core_objects} core objects")
if crd_rc != 0 and failures == 0:
    fail(f"validate-crd.mjs exited {crd_rc} without a bad line")

for kind in wanted:
    if counts[kind] == 0:
        fail(f"no {kind} was validated")
total = sum(counts.values())
kinds = ", ".join(f"{k} {v}" for k, v in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
if failures == 0:
    print(f"target_crds: {total} objects of {n_renders} renders valid (kinds: {kinds})")
sys.exit(min(failures, 100))
PY

[ "$failures" -eq 0 ] || { echo "target_crds: $failures failure(s)"; exit 1; }
