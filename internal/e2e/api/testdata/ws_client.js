// ws_client.js URL: a graphql-ws client (over the ws package: Node 20 has no
// global WebSocket) driven by the test through JSON lines.
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

const client = createClient({
  url: process.argv[2],
  webSocketImpl: WebSocket,
  retryAttempts: 0,
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
    case 'subscribe':
      subs.set(cmd.id, client.subscribe({ query: cmd.query, variables: cmd.variables }, {
        next: (payload) => out({ id: cmd.id, type: 'next', payload }),
        error: (err) => out({ id: cmd.id, type: 'error', error: describe(err) }),
        complete: () => out({ id: cmd.id, type: 'complete' }),
      }));
      break;
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
