// The reference extension of sevro's tests: protocol v1 in Node.js (no dependencies).
// One process answers one request: read stdin to its end, write one JSON response, exit 0.
"use strict";
const fs = require("node:fs");
const crypto = require("node:crypto");

const ID = "sevro-test.reference";
const request = JSON.parse(fs.readFileSync(0, "utf8"));
const params = request.params;

function answer(body) {
  const response = { protocol: request.protocol, id: request.id, method: request.method, ...body };
  process.stdout.write(JSON.stringify(response));
}

const CASES = [
  {
    id: "greets",
    prompt: "Write hello.txt with a greeting.",
    fixture: { kind: "inline", files: { "README.md": "# greeting\n" } },
    checks: [{ id: `${ID}.answer`, grader: `${ID}.answer`, configuration: {} }],
    requiredEvidence: ["sevro.observation.final-message"],
    extensionData: { [`${ID}.case`]: { word: "hello" } },
  },
  {
    // seed 001's extension case (tests/e2e/test_seed_commands.py): the agent answers "ready"
    id: "example-case",
    prompt: "Return ready.",
    fixture: { kind: "inline", files: { "README.md": "fixture\n" } },
    checks: [{ id: `${ID}.answer`, grader: `${ID}.answer`, configuration: {} }],
    requiredEvidence: [],
    extensionData: { [`${ID}.case`]: { word: "ready" } },
  },
  {
    // a built-in check beside the extension's: --replace-builtin-grader sevro.regex drops it
    id: "mixed",
    prompt: "Write hello.txt with a greeting.",
    fixture: { kind: "inline", files: {} },
    checks: [
      { id: "never", grader: "sevro.regex", configuration: { pattern: "this never appears" } },
      { id: `${ID}.answer`, grader: `${ID}.answer`, configuration: {} },
    ],
    requiredEvidence: [],
    extensionData: {},
  },
  {
    id: "farewell",
    prompt: "Write bye.txt.",
    fixture: { kind: "inline", files: {} },
    checks: [],
    requiredEvidence: [],
    extensionData: {},
  },
];

function describe() {
  answer({
    result: {
      extension: { id: ID, version: "1.0.0" },
      protocols: ["sevro.extension.v1"],
      requiredCapabilities: ["sevro.host.exec"],
      optionalCapabilities: ["sevro.codex.skill-reads", "sevro.claude.tool-calls", "sevro.tool-calls"],
      graders: [`${ID}.answer`],
      taskVerdictPolicies: [`${ID}.strict`],
    },
  });
}

function resolve() {
  const wanted = params.selectors.caseIds;
  const cases = wanted ? CASES.filter((c) => wanted.includes(c.id)) : CASES;
  answer({ result: { cases } });
}

function prepare() {
  const content = Buffer.from(`prepared for ${params.case.id} on ${params.host.id}\n`, "utf8");
  answer({
    result: {
      artifacts: [
        {
          id: "notes",
          relativePath: "notes/PREPARED.md",
          sha256: crypto.createHash("sha256").update(content).digest("hex"),
          contentBase64: content.toString("base64"),
        },
      ],
      // configuration "sevro-test.instrument" lists the instrumentation ids to request
      requestedInstrumentation: (params.configuration["sevro-test.instrument"] || []).map(
        (id) => ({ id, configuration: {} }),
      ),
      extensionData: { [`${ID}.prepared`]: { condition: params.condition } },
    },
  });
}

function evaluate() {
  const final = params.observations.find((o) => o.id === "sevro.observation.final-message");
  const complete = final !== undefined && final.completeness === "complete";
  const wanted = (params.extensionData[`${ID}.case`] || { word: "hello" }).word;
  const said = complete && String(final.data.text || "").includes(wanted);
  const check = complete
    ? { id: `${ID}.answer`, status: said ? "passed" : "failed", evidenceRefs: [final.id] }
    : { id: `${ID}.answer`, status: "unavailable", evidenceRefs: [] };
  // Honest: only the checks the case declares (a case without checks gets none).
  const declared = CASES.filter((c) => c.id === params.caseId).flatMap((c) => c.checks);
  const result = {
    checks: declared.some((c) => c.id === check.id) ? [check] : [],
    metrics: [
      { id: `${ID}.message-length`, value: complete ? String(final.data.text || "").length : null, unit: "characters" },
    ],
    domainOutcomes: [
      complete
        ? { id: `${ID}.greeting-seen`, status: said ? "passed" : "failed", evidenceRefs: [final.id], data: { caseId: params.caseId } }
        : { id: `${ID}.greeting-seen`, status: "unavailable", evidenceRefs: [] },
    ],
  };
  // how many keys of the private configuration reached evaluate (only when there are any)
  const keys = Object.keys(params.configuration).filter((k) => k !== "lie").length;
  if (keys > 0) {
    result.metrics.push({ id: `${ID}.configuration-keys`, value: keys, unit: "keys" });
  }
  if (params.selectedTaskVerdictPolicy !== undefined) {
    // configuration "sevro-test.recommend" forces a recommendation (the engine's guard must hold)
    const forced = params.configuration["sevro-test.recommend"];
    result.taskVerdictRecommendation =
      forced !== undefined ? forced : !complete ? "not_assessed" : said ? "passed" : "failed";
  }
  answer({ result: lie(result, final) });
}

// A lying extension for the runtime-rule tests: `configuration.lie` names one lie, told on top
// of the honest answer (evaluate only; without it the reference is honest).
const LIES = {
  "pass-anyway": (r, final) => ({ ...r, checks: [{ id: `${ID}.answer`, status: "passed", evidenceRefs: [final ? final.id : "sevro.observation.final-message"] }] }),
  "cite-unknown": (r) => ({ ...r, checks: [{ id: `${ID}.answer`, status: "passed", evidenceRefs: ["sevro-test.made-up"] }] }),
  "undeclared-check": (r) => ({ ...r, checks: [...r.checks, { id: `${ID}.bonus`, status: "failed", evidenceRefs: [] }] }),
  "foreign-prefix": (r) => ({ ...r, checks: [...r.checks, { id: "acme.answer", status: "failed", evidenceRefs: [] }] }),
  "duplicate-check": (r) => ({ ...r, checks: [...r.checks, ...r.checks] }),
  "recommend-unasked": (r) => ({ ...r, taskVerdictRecommendation: "passed" }),
  "withhold-recommendation": (r) => {
    const { taskVerdictRecommendation, ...rest } = r;
    return rest;
  },
};

function lie(result, final) {
  const which = params.configuration.lie;
  return which === undefined ? result : LIES[which](result, final);
}

const methods = { describe, resolve, prepare, evaluate };
if (methods[request.method]) {
  methods[request.method]();
} else {
  answer({ error: { code: `${ID}.unknown-method`, message: `no method ${request.method}` } });
}
