// resume_client.js URL QUERY VARIABLES: a graphql-ws client that follows
// one resourceEvents subscription as a portal would across replicas: when
// its connection closes it subscribes again, through the same URL, from
// the last cursor it got (an event's or a heartbeat's).
//
// Reports, one JSON object a line on stdout:
//   {"type": "connected"} / {"type": "closed", "code": 1001}
//   {"type": "next", "payload": {...}}
//   {"type": "error", "error": ...}     the subscription ended with an error
'use strict';

const { createClient } = require('graphql-ws');
const WebSocket = require('ws');

const [url, query, varsJSON] = process.argv.slice(2);
const vars = JSON.parse(varsJSON);
const out = (o) => process.stdout.write(JSON.stringify(o) + '\n');

let since = vars.since;
let dispose = null;

const client = createClient({
  url,
  webSocketImpl: WebSocket,
  lazy: true,
  retryAttempts: 1e9,
  shouldRetry: () => true,
  retryWait: () => new Promise((r) => setTimeout(r, 100)),
  on: {
    connected: () => out({ type: 'connected' }),
    closed: (e) => {
      out({ type: 'closed', code: e.code });
      // Subscribe again from the last cursor, not the first one the
      // client would send again on its own.
      setImmediate(follow);
    },
  },
});

function follow() {
  if (dispose) {
    const d = dispose;
    dispose = null;
    d();
  }
  let mine = true;
  const stop = client.subscribe({ query, variables: { ...vars, since } }, {
    next: (payload) => {
      if (!mine) return;
      const ev = payload.data && payload.data.resourceEvents;
      since = (ev && ev.cursor) || (payload.extensions && payload.extensions.cursor) || since;
      out({ type: 'next', payload });
    },
    error: (err) => { if (mine) out({ type: 'error', error: Array.isArray(err) ? err : String(err && (err.reason || err.message) || err) }); },
    complete: () => {},
  });
  dispose = () => { mine = false; stop(); };
}

follow();
