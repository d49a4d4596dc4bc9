// sevro's model bridge, the sandbox side (`node --import bridge.mjs cli.js ...`).
//
// pi runs with its network unshared: the only way out is the Unix socket sevro's bridge
// (bridge.py) listens on in the trial's private root. This preload listens on
// 127.0.0.1:$SEVRO_PI_BRIDGE_PORT in the sandbox's own network namespace (pi's models.json
// baseUrl points there) and pipes each connection, byte for byte, to $SEVRO_PI_BRIDGE_SOCKET;
// the outside adds the credential, so pi never holds it. A preload, not a pi extension, so it
// works with --no-extensions. It never writes to stdout (pi's JSON stream); a bad setting or a
// taken port throws, so node exits non-zero before pi starts (fail closed).
import net from "node:net";

const MAX_CONNECTIONS = 16; // the outside's MAX_BRIDGE_CONNECTIONS
const socketPath = process.env.SEVRO_PI_BRIDGE_SOCKET;
const portText = process.env.SEVRO_PI_BRIDGE_PORT;
// pi's bash tool inherits process.env; the bridge's plumbing is no business of its commands.
delete process.env.SEVRO_PI_BRIDGE_SOCKET;
delete process.env.SEVRO_PI_BRIDGE_PORT;

if (socketPath !== undefined || portText !== undefined) {
  const port = /^[0-9]{1,5}$/.test(portText ?? "") ? Number(portText) : 0;
  if (!socketPath || port < 1 || port > 65535) {
    throw new Error(
      "sevro model bridge: SEVRO_PI_BRIDGE_SOCKET and SEVRO_PI_BRIDGE_PORT (1-65535) must both be set",
    );
  }
  const server = net.createServer({ allowHalfOpen: true }, (client) => {
    const outside = net.connect({ path: socketPath, allowHalfOpen: true });
    client.pipe(outside);
    outside.pipe(client);
    client.on("error", () => outside.destroy());
    outside.on("error", () => client.destroy());
  });
  server.maxConnections = MAX_CONNECTIONS;
  await new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", resolve);
  });
  server.unref(); // the listener alone never keeps pi alive
}
