// A test extension that asks for instrumentation: protocol v1 in Node.js (no dependencies).
// argv[2] is a JSON object {optional: [ids], requested: [{id, configuration}]}: `describe` lists
// `optional` as its optional capabilities and `prepare` requests `requested`, so one script
// shows both an honest and an overreaching extension.
"use strict";
const fs = require("node:fs");

const ID = "sevro-test.instrumented";
const spec = JSON.parse(process.argv[2] || "{}");
const request = JSON.parse(fs.readFileSync(0, "utf8"));

function answer(result) {
  const { protocol, id, method } = request;
  process.stdout.write(JSON.stringify({ protocol, id, method, result }));
}

const methods = {
  describe: () => ({
    extension: { id: ID, version: "1.0.0" },
    protocols: ["sevro.extension.v1"],
    requiredCapabilities: [],
    optionalCapabilities: spec.optional || [],
    graders: [],
    taskVerdictPolicies: [],
  }),
  prepare: () => ({
    artifacts: [],
    requestedInstrumentation: spec.requested || [],
    extensionData: { [`${ID}.host`]: { id: request.params.host.id } },
  }),
};
answer(methods[request.method]());
