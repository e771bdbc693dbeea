// sse_client.js URL: a graphql-sse client (distinct connections mode, over
// Node's fetch) driven by the test through JSON lines, like ws_client.js:
// the same commands on stdin, the same reports on stdout (no connected or
// closed reports: each subscription is its own request).
'use strict';

const { createClient } = require('graphql-sse');
const readline = require('readline');

const out = (o) => process.stdout.write(JSON.stringify(o) + '\n');

function describe(err) {
  if (Array.isArray(err)) return { errors: err };
  return { message: String(err && err.message ? err.message : err) };
}

const client = createClient({ url: process.argv[2], retryAttempts: 0 });

const subs = new Map();
const rl = readline.createInterface({ input: process.stdin });
rl.on('line', (line) => {
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
      client.dispose();
      process.exit(0);
  }
});
rl.on('close', () => {
  client.dispose();
  process.exit(0);
});
out({ type: 'ready' });
