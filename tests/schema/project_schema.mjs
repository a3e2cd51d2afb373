#!/usr/bin/env node
// Checks project files (as JSON, from yaml_json.py) against the JSON Schema that
// `ktrain schema` prints, with ajv (draft-07, strict mode: unknown keywords, keywords
// for the wrong type and `required` keys without a schema are errors).
//
//   node project_schema.mjs SCHEMA.json [--valid FILE.json...] [--invalid FILE.json...]
//                           [--listed FILE.json...]
//
// Also checks that every key's `examples` satisfy that key's own schema. Prints one
// line per file; exit status 0 when every --valid file is accepted, every --invalid
// file rejected, and every --listed file (invalid files that only ktrain's parser can
// reject, listed in project_schema.sh) accepted; 1 otherwise.
import { readFileSync } from "node:fs";
import { basename } from "node:path";
import Ajv from "ajv";

const args = process.argv.slice(2);
if (args.length < 1) {
  console.error("usage: project_schema.mjs SCHEMA.json [--valid|--invalid|--listed FILE...]...");
  process.exit(2);
}
const schema = JSON.parse(readFileSync(args[0], "utf8"));
const files = { valid: [], invalid: [], listed: [] };
let mode = null;
for (const a of args.slice(1)) {
  if (a === "--valid" || a === "--invalid" || a === "--listed") mode = a.slice(2);
  else if (mode) files[mode].push(a);
  else {
    console.error(`project_schema.mjs: ${a}: say --valid, --invalid or --listed first`);
    process.exit(2);
  }
}

const ajv = new Ajv({ strict: true, allowUnionTypes: true, allErrors: true });
let validate;
try {
  validate = ajv.compile(schema);
} catch (e) {
  console.log(`FAIL the schema does not compile in strict mode: ${e.message}`);
  process.exit(1);
}
let failures = 0;

function why(errors) {
  return (errors || [])
    .slice(0, 4)
    .map((e) => `${e.instancePath || "/"} ${e.message}` +
      (e.params && e.params.additionalProperty ? ` (${e.params.additionalProperty})` : ""))
    .join("; ");
}

// Every key's examples against that key's schema.
let examples = 0;
const sections = [["", schema], ...Object.entries(schema.definitions || {}).map(
  ([name, s]) => [`/definitions/${name}`, s])];
for (const [pointer, section] of sections) {
  for (const [key, prop] of Object.entries(section.properties || {})) {
    const check = ajv.compile({ $ref: `${schema.$id}#${pointer}/properties/${key}` });
    for (const example of prop.examples || []) {
      examples++;
      if (!check(example)) {
        console.log(`FAIL example of ${pointer || "/"}.${key}: ${JSON.stringify(example)}: ` +
          why(check.errors));
        failures++;
      }
    }
  }
}
if (examples === 0) {
  console.log("FAIL the schema has no examples");
  failures++;
}

for (const [expect, list] of Object.entries(files)) {
  for (const file of list) {
    const name = basename(file, ".json");
    const ok = validate(JSON.parse(readFileSync(file, "utf8")));
    if (expect === "valid" && !ok) {
      console.log(`FAIL ${name}: rejected: ${why(validate.errors)}`);
      failures++;
    } else if (expect === "invalid" && ok) {
      console.log(`FAIL ${name}: accepted, expected it to be rejected`);
      failures++;
    } else if (expect === "listed" && !ok) {
      console.log(`FAIL ${name}: listed as one only the parser rejects, but the schema rejects ` +
        `it too (${why(validate.errors)}): take it off the list`);
      failures++;
    } else {
      console.log(`ok   ${name}: ${ok ? "accepted" : "rejected: " + why(validate.errors)}`);
    }
  }
}
console.log(`${examples} key examples, ${files.valid.length} valid, ` +
  `${files.invalid.length} invalid and ${files.listed.length} listed files checked; ` +
  `${failures} failure(s)`);
process.exit(failures ? 1 : 0);
