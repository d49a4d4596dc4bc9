// sevro's pi observer: a read-only pi extension, loaded LAST with `-e`, so the hooks it
// watches have already been chained through every other extension. It never changes what pi
// sends: every handler reads its event and returns undefined (pi then keeps the value).
//
// It appends JSON Lines (one write per record, O_APPEND) to the file named by
// SEVRO_PI_OBSERVE; sevro_hosts_pi/observer.py reads them back. Records:
//   {"kind":"tools","request":n,"names":[...]|null}          every provider request
//   {"kind":"system-prompt","text":s,"truncated":b}          only with SEVRO_PI_OBSERVE_CONTEXT=1
//   {"kind":"provider-context","request":n,"text":s,"truncated":b}   idem, every request
//   {"kind":"unobserved","reason":s}                         something was not recorded
// Requests are numbered from 1 in this process (one pi process is one sevro turn).
// The bounds mirror sevro_hosts_pi/limits.py (a unit test compares them).
import { closeSync, fstatSync, openSync, writeSync } from "node:fs";

const MAX_PI_OBSERVED_TEXT_CHARS = 262144;
const MAX_PI_OBSERVED_REQUESTS = 1024;
const MAX_PI_OBSERVED_TOOL_NAMES = 256;
const MAX_PI_OBSERVED_TOOL_NAME_CHARS = 256;
const MAX_PI_OBSERVE_LINE_BYTES = 2097152;
const MAX_PI_OBSERVE_FILE_BYTES = 67108864;
const MAX_REASON_CHARS = 512;
const NAMED_TOOL_APIS = new Set(["openai-responses", "openai-completions", "anthropic-messages"]);

// The text within its bound, never ending in half a surrogate pair; a lone surrogate (not
// UTF-8 text) becomes U+FFFD, and either change marks the record truncated (not exact).
function cut(text) {
  let end = Math.min(text.length, MAX_PI_OBSERVED_TEXT_CHARS);
  const last = text.charCodeAt(end - 1);
  if (end < text.length && last >= 0xd800 && last <= 0xdbff) end -= 1;
  const kept = text.slice(0, end);
  const wellFormed = kept.toWellFormed();
  return { text: wellFormed, truncated: end < text.length || wellFormed !== kept };
}

function textParts(content) {
  if (typeof content === "string") return [content];
  if (!Array.isArray(content)) return [];
  const parts = [];
  for (const part of content) {
    if (part && part.type === "text" && typeof part.text === "string") parts.push(part.text);
    if (part && part.type === "toolCall" && typeof part.name === "string") {
      parts.push(`${part.name}(${JSON.stringify(part.arguments ?? {})})`);
    }
  }
  return parts;
}

// The provider-neutral context as text: each message's text parts in order (a tool call as
// name(<arguments JSON>), thinking and images left out), messages joined by a blank line.
export function renderContext(messages) {
  const rendered = [];
  for (const message of messages) {
    if (!message || typeof message !== "object") continue;
    let parts;
    if (message.role === "bashExecution") {
      parts = message.excludeFromContext ? [] : [String(message.command), String(message.output)];
    } else if (message.role === "compactionSummary" || message.role === "branchSummary") {
      parts = typeof message.summary === "string" ? [message.summary] : [];
    } else {
      parts = textParts(message.content);
    }
    const text = parts.join("\n");
    if (text) rendered.push(text);
  }
  return rendered.join("\n\n");
}

function toolNames(payload, api) {
  const holder = payload && typeof payload === "object" ? payload : {};
  if (holder.tools === undefined) return NAMED_TOOL_APIS.has(api) ? [] : null;
  if (!Array.isArray(holder.tools) || holder.tools.length > MAX_PI_OBSERVED_TOOL_NAMES) return null;
  const names = [];
  for (const tool of holder.tools) {
    const name = tool?.function?.name ?? tool?.name;
    if (typeof name !== "string" || !name || name.length > MAX_PI_OBSERVED_TOOL_NAME_CHARS) {
      return null;
    }
    names.push(name);
  }
  return names;
}

class Sink {
  constructor(path) {
    this.fd = openSync(path, "a", 0o600);
    this.bytes = fstatSync(this.fd).size;
    this.closed = false;
  }

  write(record) {
    if (this.closed) return;
    const line = `${JSON.stringify(record)}\n`;
    const size = Buffer.byteLength(line);
    const reserve = 4096; // room for the closing "unobserved" record (512 chars, escaped)
    if (size > MAX_PI_OBSERVE_LINE_BYTES || this.bytes + size + reserve > MAX_PI_OBSERVE_FILE_BYTES) {
      this.stop("an observer record would pass its bound");
      return;
    }
    writeSync(this.fd, line);
    this.bytes += size;
  }

  stop(reason) {
    if (this.closed) return;
    const line = `${JSON.stringify({ kind: "unobserved", reason: reason.slice(0, MAX_REASON_CHARS) })}\n`;
    writeSync(this.fd, line);
    this.bytes += Buffer.byteLength(line);
    this.closed = true;
    closeSync(this.fd);
  }
}

export default function sevroObserver(pi) {
  const path = process.env.SEVRO_PI_OBSERVE;
  if (!path) throw new Error("SEVRO_PI_OBSERVE names no file for sevro's observer");
  const sink = new Sink(path);
  const observeContext = process.env.SEVRO_PI_OBSERVE_CONTEXT === "1";
  let toolRequests = 0;
  let contextRequests = 0;
  const guarded = (what, body) => (event, ctx) => {
    try {
      body(event, ctx);
    } catch (error) {
      sink.stop(`${what}: ${error instanceof Error ? error.message : String(error)}`);
    }
    return undefined;
  };

  pi.on(
    "before_provider_request",
    guarded("before_provider_request", (event, ctx) => {
      toolRequests += 1;
      if (toolRequests > MAX_PI_OBSERVED_REQUESTS) {
        sink.stop(`more than ${MAX_PI_OBSERVED_REQUESTS} provider requests`);
        return;
      }
      const names = toolNames(event.payload, ctx?.model?.api);
      sink.write({ kind: "tools", request: toolRequests, names });
    }),
  );
  if (!observeContext) return;
  pi.on(
    "before_agent_start",
    guarded("before_agent_start", (event) => {
      if (typeof event.systemPrompt !== "string") {
        sink.stop("before_agent_start carried no system prompt");
        return;
      }
      sink.write({ kind: "system-prompt", ...cut(event.systemPrompt) });
    }),
  );
  pi.on(
    "context",
    guarded("context", (event) => {
      contextRequests += 1;
      if (contextRequests > MAX_PI_OBSERVED_REQUESTS) {
        sink.stop(`more than ${MAX_PI_OBSERVED_REQUESTS} provider requests`);
        return;
      }
      if (!Array.isArray(event.messages)) {
        sink.stop("context carried no message list");
        return;
      }
      sink.write({ kind: "provider-context", request: contextRequests, ...cut(renderContext(event.messages)) });
    }),
  );
}
