// A test extension whose prepare uses the runtime rules: a generated Git fixture, a git-excluded
// executable artifact and a fixture setup. Case "prepared" sets up fine; case "setup-fails" has
// a setup that exits 9, so its trial's fixture fails before the host starts.
"use strict";
const fs = require("node:fs");
const crypto = require("node:crypto");

const ID = "sevro-test.preparing";
const request = JSON.parse(fs.readFileSync(0, "utf8"));
const params = request.params;
const answer = (body) =>
  process.stdout.write(JSON.stringify({ protocol: request.protocol, id: request.id, method: request.method, ...body }));

const caseWith = (id) => ({
  id,
  prompt: "Check the prepared workspace, then say ready.",
  fixture: { kind: "generated", commits: [{ message: "base", files: { "README.md": "base\n" } }] },
  checks: [{ id: `${ID}.ready`, grader: `${ID}.ready`, configuration: {} }],
  requiredEvidence: [],
  extensionData: {},
});
const CASES = [caseWith("prepared"), caseWith("setup-fails")];

function artifact(id, relativePath, text, extra) {
  const content = Buffer.from(text, "utf8");
  return {
    id,
    relativePath,
    sha256: crypto.createHash("sha256").update(content).digest("hex"),
    contentBase64: content.toString("base64"),
    ...extra,
  };
}

const methods = {
  describe: () =>
    answer({
      result: {
        extension: { id: ID, version: "1.0.0" },
        protocols: ["sevro.extension.v1"],
        requiredCapabilities: ["sevro.fixture.setup"],
        optionalCapabilities: [],
        graders: [`${ID}.ready`],
        taskVerdictPolicies: [],
      },
    }),
  resolve: () => answer({ result: { cases: CASES.filter((c) => params.selectors.caseIds.includes(c.id)) } }),
  prepare: () => {
    const script = params.case.id === "setup-fails" ? "exit 9" : 'test -x tools/check.sh && echo "$SETUP_WORD" > SETUP-RAN';
    answer({
      result: {
        artifacts: [artifact("tool", "tools/check.sh", "#!/bin/sh\ntest -f SETUP-RAN\n", { executable: true, gitExclude: true })],
        requestedInstrumentation: [],
        extensionData: {},
        fixtureSetup: { command: ["/bin/sh", "-c", script], environment: { SETUP_WORD: "s3tup-w0rd" } },
      },
    });
  },
  evaluate: () => {
    // passed only when every command the agent ran succeeded (they check the prepared workspace)
    const byId = (id) => params.observations.find((o) => o.id === id);
    const final = byId("sevro.observation.final-message");
    const commands = byId("sevro.commands");
    const complete = [final, commands].every((o) => o !== undefined && o.completeness === "complete");
    const ran = complete ? commands.data.commands : [];
    const ok = complete && ran.length > 0 && ran.every((c) => c.exitCode === 0);
    const ready = ok && String(final.data.text || "").includes("ready");
    answer({
      result: {
        checks: [{ id: `${ID}.ready`, status: !complete ? "unavailable" : ready ? "passed" : "failed", evidenceRefs: complete ? [final.id, commands.id] : [] }],
        metrics: [],
      },
    });
  },
};
methods[request.method]();
