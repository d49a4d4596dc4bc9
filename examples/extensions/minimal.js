// A complete minimal sevro extension (protocol v1): one JSON request on stdin per process.
"use strict";
const request = JSON.parse(require("node:fs").readFileSync(0, "utf8"));
const { method, params } = request;
const ID = "acme.greeting";
const FINAL = "sevro.observation.final-message";

const methods = {
  describe: () => ({
    extension: { id: ID, version: "1.0.0" },
    protocols: ["sevro.extension.v1"],
    requiredCapabilities: [],
    optionalCapabilities: [],
    graders: [`${ID}.says-hello`],
    taskVerdictPolicies: [`${ID}.strict`],
  }),
  resolve: () => ({
    cases: [
      {
        id: "greets",
        prompt: "Reply with a friendly hello.",
        fixture: { kind: "inline", files: {} },
        checks: [{ id: `${ID}.says-hello`, grader: `${ID}.says-hello`, configuration: {} }],
        requiredEvidence: [FINAL],
        extensionData: {},
      },
    ].filter((c) => !params.selectors.caseIds || params.selectors.caseIds.includes(c.id)),
  }),
  prepare: () => ({ artifacts: [], requestedInstrumentation: [], extensionData: {} }),
  evaluate: () => {
    const final = params.observations.find((o) => o.id === FINAL);
    const seen = final !== undefined && final.completeness === "complete";
    const hello = seen && /hello/i.test(final.data.text || "");
    const check = seen
      ? { id: `${ID}.says-hello`, status: hello ? "passed" : "failed", evidenceRefs: [FINAL] }
      : { id: `${ID}.says-hello`, status: "unavailable", evidenceRefs: [] };
    const result = { checks: [check], metrics: [] };
    if (params.selectedTaskVerdictPolicy !== undefined) {
      result.taskVerdictRecommendation = seen ? check.status : "not_assessed";
    }
    return result;
  },
};

const { protocol, id } = request;
process.stdout.write(JSON.stringify({ protocol, id, method, result: methods[method]() }));
