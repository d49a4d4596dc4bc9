// Extensions that break protocol v1 on purpose, one way each: argv[2] names the way.
"use strict";
const fs = require("node:fs");
const path = require("node:path");

const mode = process.argv[2];
const request = JSON.parse(fs.readFileSync(0, "utf8"));
const echo = { protocol: request.protocol, id: request.id, method: request.method };
const DESCRIBED = {
  extension: { id: "sevro-test.misbehaving", version: "0.0.1" },
  protocols: ["sevro.extension.v1"],
  requiredCapabilities: [],
  optionalCapabilities: [],
  graders: [],
  taskVerdictPolicies: [],
};
const write = (value) => process.stdout.write(typeof value === "string" ? value : JSON.stringify(value));

switch (mode) {
  case "malformed":
    write('{"protocol": "sevro.discovery.v1", "id": ');
    break;
  case "not-utf8":
    process.stdout.write(Buffer.concat([Buffer.from('{"id": "'), Buffer.from([0xff, 0xfe]), Buffer.from('"}')]));
    break;
  case "not-object":
    write([echo]);
    break;
  case "oversized": {
    // 9 MiB of valid JSON, then it stays alive: only the kill ends it
    const padding = "x".repeat(9 * 1024 * 1024);
    process.stdout.write(JSON.stringify({ ...echo, result: DESCRIBED, padding }));
    setInterval(() => {}, 1000);
    break;
  }
  case "huge-stderr":
    process.stderr.write("e".repeat(1024 * 1024) + "\n");
    write({ ...echo, result: DESCRIBED });
    break;
  case "crash":
    process.stderr.write("first line\nsomething broke: bad state\n");
    process.exit(3);
    break;
  case "wrong-id":
    write({ ...echo, id: "00000000-0000-4000-8000-000000000000", result: DESCRIBED });
    break;
  case "wrong-protocol":
    write({ ...echo, protocol: "sevro.extension.v1", result: DESCRIBED });
    break;
  case "wrong-method":
    write({ ...echo, method: "resolve", result: DESCRIBED });
    break;
  case "both":
    write({ ...echo, result: DESCRIBED, error: { code: "sevro-test.oops", message: "both" } });
    break;
  case "neither":
    write(echo);
    break;
  case "error":
    write({ ...echo, error: { code: "sevro-test.not-ready", message: "the index is\nnot built" } });
    break;
  case "bad-error-code":
    write({ ...echo, error: { code: "NotNamespaced", message: "x" } });
    break;
  case "invalid-result":
    write({ ...echo, result: { ...DESCRIBED, extension: { id: "Bad Id", version: "1" } } });
    break;
  case "extra-key":
    write({ ...echo, result: DESCRIBED, note: "not in the envelope" });
    break;
  case "self-modifying": {
    // answers correctly, then rewrites its own source (a copy the test made)
    write({ ...echo, result: DESCRIBED });
    const me = path.resolve(__filename);
    fs.appendFileSync(me, "\n// modified\n");
    break;
  }
  default:
    process.exit(9);
}
