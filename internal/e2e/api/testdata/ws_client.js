// ws_client.js URL [resume]: a graphql-ws client (over the ws package: Node
// 20 has no global WebSocket) driven by the test through JSON lines.
//
// Without "resume" the client never retries. With it, it retries as a portal
// should: after a close that graphql-ws retries on, it reconnects (every
// 250 ms, up to 40 times) and subscribes again with the same payload object,
// whose variables.since the client keeps at the last cursor it received (an
// event's, or a heartbeat's extensions.cursor), so that it resumes there.
//
// Commands, one JSON object a line on stdin:
//   {"op": "subscribe", "id": "a", "query": "...", "variables": {...}}
//   {"op": "complete", "id": "a"}     dispose of subscription a
//   {"op": "exit"}                    dispose of the client and exit
// Reports, one JSON object a line on stdout:
//   {"type": "ready"}                 commands are read from now on
//   {"type": "connected"} / {"type": "closed", "code": 1000, "reason": "..."}
//   {"id": "a", "type": "next", "payload": {...}}
//   {"id": "a", "type": "error", "error": {"errors": [...]} | {"code": 4400, "reason": "..."} | {"message": "..."}}
//   {"id": "a", "type": "complete"}
'use strict';

const { createClient } = require('graphql-ws');
const WebSocket = require('ws');
const readline = require('readline');

const out = (o) => process.stdout.write(JSON.stringify(o) + '\n');

// describe turns what graphql-ws hands sink.error into JSON: the errors of
// an error message, a close event, or an Error.
function describe(err) {
  if (Array.isArray(err)) return { errors: err };
  if (err && typeof err.code === 'number') return { code: err.code, reason: err.reason };
  return { message: String(err && err.message ? err.message : err) };
}

// cursorOf returns the cursor a result carries, if any: a heartbeat's, or
// that of the subscription field's event.
function cursorOf(result) {
  if (result && result.extensions && typeof result.extensions.cursor === 'string') return result.extensions.cursor;
  for (const v of Object.values((result && result.data) || {})) {
    if (v && typeof v.cursor === 'string') return v.cursor;
  }
  return undefined;
}

const resume = process.argv[3] === 'resume';
const client = createClient({
  url: process.argv[2],
  webSocketImpl: WebSocket,
  retryAttempts: resume ? 40 : 0,
  retryWait: () => new Promise((resolve) => setTimeout(resolve, 250)),
  on: {
    connected: () => out({ type: 'connected' }),
    closed: (e) => out({ type: 'closed', code: e.code, reason: e.reason }),
  },
});

const subs = new Map();
const rl = readline.createInterface({ input: process.stdin });
rl.on('line', async (line) => {
  const cmd = JSON.parse(line);
  switch (cmd.op) {
    case 'subscribe': {
      // graphql-ws sends this very object again when it resubscribes.
      const request = { query: cmd.query, variables: { ...cmd.variables } };
      subs.set(cmd.id, client.subscribe(request, {
        next: (payload) => {
          const cursor = resume ? cursorOf(payload) : undefined;
          if (cursor !== undefined) request.variables.since = cursor;
          out({ id: cmd.id, type: 'next', payload });
        },
        error: (err) => out({ id: cmd.id, type: 'error', error: describe(err) }),
        complete: () => out({ id: cmd.id, type: 'complete' }),
      }));
      break;
    }
    case 'complete':
      subs.get(cmd.id)?.();
      subs.delete(cmd.id);
      break;
    case 'exit':
      await client.dispose();
      process.exit(0);
  }
});
rl.on('close', async () => {
  await client.dispose();
  process.exit(0);
});
out({ type: 'ready' });
