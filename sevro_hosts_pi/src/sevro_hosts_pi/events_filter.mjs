// sevro's pi stdout filter: a preload (`node --import events_filter.mjs cli.js --mode json`)
// that makes pi's JSON stream grow linearly instead of quadratically.
//
// pi prints every streamed delta as a `message_update` repeating the whole partial message
// twice, and every `tool_execution_update` repeating the accumulated partial result: a 6000
// character reply in 1500 deltas is ~10 MiB of stdout. The final message and result arrive
// whole in `message_end` / `tool_execution_end`, so this filter prints each update as a stub
// (`{"type":"message_update"}`, `{"type":"tool_execution_update","toolCallId":...}`) that
// keeps its place in the stream, which is all sevro_hosts_pi/events.py checks of an update.
// Every other line passes unchanged. It prints nothing of its own.
//
// pi writes each event with one `write` call of one line (dist/modes/print-mode.js), and
// binds process.stdout.write when it takes stdout over (dist/core/output-guard.js), after
// this preload ran; so wrapping process.stdout.write here sees every event line whole.
const MESSAGE_UPDATE = '{"type":"message_update",';
const TOOL_UPDATE = '{"type":"tool_execution_update",';

function stub(chunk) {
  if (typeof chunk !== "string" || !chunk.endsWith("\n") || chunk.indexOf("\n") !== chunk.length - 1) {
    return chunk;
  }
  if (chunk.startsWith(MESSAGE_UPDATE)) return '{"type":"message_update"}\n';
  if (!chunk.startsWith(TOOL_UPDATE)) return chunk;
  let event;
  try {
    event = JSON.parse(chunk);
  } catch {
    return chunk; // not pi's event: left for the parser to reject
  }
  return `${JSON.stringify({ type: "tool_execution_update", toolCallId: event.toolCallId })}\n`;
}

const write = process.stdout.write;
process.stdout.write = function filteredWrite(chunk, ...rest) {
  return write.call(this, stub(chunk), ...rest);
};
