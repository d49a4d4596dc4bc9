// A conforming extension that breaks protocol v1 in one way, at one method, on purpose:
// `node faulty.js MODE [METHOD]` (METHOD defaults to evaluate; MODE "none" breaks nothing).
// `sevro extension check` must report the fault with its reason (tests/extensions/test_conformance.py).
"use strict";
const fs = require("node:fs");
const path = require("node:path");
const crypto = require("node:crypto");

const [mode, at = "evaluate"] = process.argv.slice(2);
const ID = "sevro-test.faulty";
const request = JSON.parse(fs.readFileSync(0, "utf8"));
const params = request.params;
const faulty = request.method === at;
const echo = { protocol: request.protocol, id: request.id, method: request.method };
const answer = (result) => process.stdout.write(JSON.stringify({ ...echo, result }));

const CASE = {
  id: "only",
  prompt: "Say hello.",
  fixture: { kind: "inline", files: { "README.md": "# hello\n" } },
  checks: [{ id: `${ID}.said`, grader: `${ID}.said`, configuration: {} }],
  requiredEvidence: [],
  extensionData: {},
};
const content = Buffer.from("prepared\n", "utf8");

function describe() {
  return {
    extension: { id: ID, version: "0.0.1" },
    protocols: ["sevro.extension.v1"],
    requiredCapabilities: [],
    optionalCapabilities: ["sevro.codex.native-calls"],
    graders: [`${ID}.said`],
    taskVerdictPolicies: [`${ID}.policy`],
  };
}

function resolve() {
  if (faulty && mode === "wrong-case") return { cases: [{ ...CASE, id: "other" }] };
  if (faulty && mode === "bad-case") return { cases: [{ ...CASE, checks: [...CASE.checks, ...CASE.checks] }] };
  return { cases: [CASE] };
}

function prepare() {
  const sha256 = crypto.createHash("sha256").update(content).digest("hex");
  const artifact = { id: "notes", relativePath: "NOTES.md", sha256, contentBase64: content.toString("base64") };
  if (faulty && mode === "bad-digest") artifact.sha256 = "0".repeat(64);
  if (faulty && mode === "collision") artifact.relativePath = "README.md";
  if (faulty && mode === "source-ref") {
    // the same bytes, named through the case source map instead of inline
    delete artifact.contentBase64;
    artifact.sourceRef = "notes";
  }
  return { artifacts: [artifact], requestedInstrumentation: [], extensionData: {} };
}

function evaluate() {
  const final = params.observations.find((o) => o.id === "sevro.observation.final-message");
  const complete = final !== undefined && final.completeness === "complete";
  const lying = faulty && mode === "lying";
  const check = complete || lying
    ? { id: `${ID}.said`, status: "passed", evidenceRefs: [final.id] }
    : { id: `${ID}.said`, status: "unavailable", evidenceRefs: [] };
  if (faulty && mode === "unknown-evidence") check.evidenceRefs = ["sevro-test.nowhere"], check.status = "passed";
  if (faulty && mode === "undeclared") check.id = `${ID}.surprise`;
  if (faulty && mode === "unprefixed") check.id = "sevro-test.elsewhere";
  const value = faulty && mode === "nondeterministic" ? Math.random() : 1;
  const result = { checks: [check], metrics: [{ id: `${ID}.score`, value, unit: "points" }] };
  const policy = params.selectedTaskVerdictPolicy !== undefined;
  if (policy !== (faulty && mode === "recommends-without-policy")) {
    result.taskVerdictRecommendation = complete ? "passed" : "not_assessed";
  }
  return result;
}

if (mode === "needs-configuration" && request.method !== "describe" && params.configuration.ready !== true) {
  process.stdout.write(JSON.stringify({
    ...echo,
    error: { code: `${ID}.unconfigured`, message: "configuration.ready is not true" },
  }));
  process.exit(0);
}
if (faulty) {
  switch (mode) {
    case "malformed":
      process.stdout.write('{"protocol": "sevro.extension.v1", "result": ');
      process.exit(0);
    case "crash":
      process.stderr.write(`${request.method}: something broke\n`);
      process.exit(3);
    case "slow":
      setInterval(() => {}, 1000); // never answers: only the timeout's SIGKILL ends it
      return;
    case "oversized":
      answer({ ...{ describe, resolve, prepare, evaluate }[at](), padding: "x".repeat(9 * 1024 * 1024) });
      setInterval(() => {}, 1000);
      return;
    case "self-modifying":
      // answers correctly, then rewrites its own source (a copy the test made)
      fs.appendFileSync(path.resolve(__filename), "\n// modified\n");
      break;
  }
}
answer({ describe, resolve, prepare, evaluate }[request.method]());
