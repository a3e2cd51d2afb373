#!/usr/bin/env node
// Validates rendered manifests against the upstream Kubernetes OpenAPI schemas
// (kubernetes-models, whose models validate with @kubernetes-models/validate).
//
//   node validate.mjs FILE.json...   each FILE is `ktrain render -o json` output (a v1 List)
//   node validate.mjs --self-test    checks that the checker rejects broken objects
//
// Exit status 0 when every object is valid, 1 otherwise. Kinds outside the upstream
// API (Volcano's PodGroup) are reported as skipped; any other unknown kind fails.
import { readFileSync } from "node:fs";
import { Secret, Service } from "kubernetes-models/v1";
import { Job } from "kubernetes-models/batch/v1";
import { Deployment } from "kubernetes-models/apps/v1";
import { HorizontalPodAutoscaler } from "kubernetes-models/autoscaling/v2";
import { PodDisruptionBudget } from "kubernetes-models/policy/v1";

const models = new Map([
  ["v1/Secret", Secret],
  ["v1/Service", Service],
  ["batch/v1/Job", Job],
  ["apps/v1/Deployment", Deployment],
  ["autoscaling/v2/HorizontalPodAutoscaler", HorizontalPodAutoscaler],
  ["policy/v1/PodDisruptionBudget", PodDisruptionBudget],
]);
// Custom resources: no upstream schema to check against.
const exempt = new Set(["scheduling.volcano.sh/v1beta1/PodGroup"]);

/** Returns "" when `obj` is valid, else why not. */
function problem(obj) {
  const key = `${obj.apiVersion}/${obj.kind}`;
  if (exempt.has(key)) return null;
  const Model = models.get(key);
  if (!Model) return `no schema known for ${key}`;
  try {
    new Model(obj).validate();
    return "";
  } catch (e) {
    const details = (e.errors || []).map((x) => `${x.instancePath || "/"} ${x.message}`);
    return details.length ? details.join("; ") : String(e.message || e);
  }
}

function validateFile(file) {
  let list;
  try {
    list = JSON.parse(readFileSync(file, "utf8"));
  } catch (e) {
    console.log(`FAIL ${file}: not JSON: ${e.message}`);
    return 1;
  }
  const items = list.kind === "List" ? list.items : [list];
  if (!Array.isArray(items) || items.length === 0) {
    console.log(`FAIL ${file}: no objects`);
    return 1;
  }
  let failures = 0;
  for (const obj of items) {
    const what = `${file}: ${obj.kind}/${obj.metadata?.name}`;
    const p = problem(obj);
    if (p === null) {
      console.log(`skip ${what} (custom resource, no upstream schema)`);
    } else if (p === "") {
      console.log(`ok   ${what}`);
    } else {
      console.log(`FAIL ${what}: ${p}`);
      failures++;
    }
  }
  return failures;
}

function selfTest() {
  const pod = { restartPolicy: "Never", containers: [{ name: "train", image: "x:1" }] };
  const good = {
    apiVersion: "batch/v1", kind: "Job", metadata: { name: "ok" },
    spec: { completions: 2, template: { spec: pod } },
  };
  const broken = [
    ["completions is a string", { ...good, spec: { ...good.spec, completions: "two" } }],
    ["a container without a name",
      { ...good, spec: { template: { spec: { containers: [{ image: "x:1" }] } } } }],
    ["a Service port that is not a number",
      { apiVersion: "v1", kind: "Service", metadata: { name: "s" },
        spec: { ports: [{ port: "http" }] } }],
    ["an HPA without maxReplicas",
      { apiVersion: "autoscaling/v2", kind: "HorizontalPodAutoscaler", metadata: { name: "h" },
        spec: { scaleTargetRef: { kind: "Deployment", name: "d" } } }],
    ["an unknown kind", { apiVersion: "example.com/v1", kind: "Widget", metadata: { name: "w" } }],
  ];
  let failures = 0;
  if (problem(good) !== "") {
    console.log(`FAIL self-test: a valid Job was rejected: ${problem(good)}`);
    failures++;
  }
  for (const [why, obj] of broken) {
    const p = problem(obj);
    if (p) {
      console.log(`ok   self-test rejects ${why}: ${p}`);
    } else {
      console.log(`FAIL self-test accepted ${why}`);
      failures++;
    }
  }
  return failures;
}

const args = process.argv.slice(2);
if (args.length === 0) {
  console.error("usage: validate.mjs FILE.json... | --self-test");
  process.exit(2);
}
let failures = 0;
for (const a of args) failures += a === "--self-test" ? selfTest() : validateFile(a);
process.exit(failures ? 1 : 0);
