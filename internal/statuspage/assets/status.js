// fleetcache status page: one row per cluster, kept live by the aggregator's
// own GraphQL API (see doc.go in this package for why both a subscription
// and a periodic query). Every text shown comes from the server and is set
// with textContent, never parsed as HTML.
//
// When the server authenticates callers, the page itself is served without
// a token but every query needs one: on HTTP 401 the page shows a token
// form, keeps the token in sessionStorage (it must not outlive the tab) and
// sends it in the Authorization header, never in a URL.
'use strict';

const ENDPOINT = '/graphql';
const REFRESH_MS = 10000;
const MIN_BACKOFF_MS = 1000;
const MAX_BACKOFF_MS = 30000;
const TOKEN_KEY = 'fleetcache.status.token';

const FIELDS = 'name status stale message objectCount lastSyncTime lastEventTime ' +
  'resources { resource status objectCount lastError lastSyncTime lastEventTime }';
const SUBSCRIPTION = `subscription { clusterHealth { removed ${FIELDS} } }`;
const QUERY = `{ clusters { ${FIELDS} } }`;

const tbody = document.querySelector('#clusters tbody');
const live = document.getElementById('live');
const empty = document.getElementById('empty');
const tokenForm = document.getElementById('token-form');
const tokenInput = document.getElementById('token');
const tokenMessage = document.getElementById('token-message');

// rows maps a cluster name to its <tr> and when the event stream last
// updated it (performance.now()), so that an older query answer does not
// undo a newer status change.
const rows = new Map();

function el(tag, props = {}, ...children) {
  const e = document.createElement(tag);
  Object.assign(e, props);
  e.append(...children.filter((c) => c !== null));
  return e;
}

function badge(status) {
  return el('span', { className: `badge badge-${String(status).toLowerCase()}`, textContent: status });
}

function time(iso) {
  if (!iso) return el('span', { className: 'muted', textContent: 'never' });
  return el('time', { dateTime: iso, title: iso, textContent: new Date(iso).toLocaleString() });
}

function resourceList(resources) {
  const ul = el('ul', { className: 'resources' });
  for (const r of resources) {
    const li = el('li', {},
      el('span', { className: 'resource', textContent: r.resource }), ' ',
      el('span', { className: 'count', textContent: r.objectCount.toLocaleString() }), ' ',
      badge(r.status));
    li.dataset.resource = r.resource;
    if (r.lastError) li.append(el('div', { className: 'error', textContent: r.lastError }));
    ul.append(li);
  }
  return ul;
}

function render(c) {
  const tr = el('tr', {},
    el('th', { scope: 'row', textContent: c.name }),
    el('td', { className: 'status' }, badge(c.status), c.stale ? el('span', { className: 'stale', textContent: ' stale' }) : null),
    el('td', { className: 'objects', textContent: c.objectCount.toLocaleString() }),
    el('td', {}, resourceList(c.resources)),
    el('td', {}, time(c.lastEventTime)),
    el('td', {}, time(c.lastSyncTime)),
    el('td', { className: 'message', textContent: c.message ?? '' }));
  tr.dataset.cluster = c.name;
  tr.dataset.status = c.status;
  return tr;
}

function upsert(c, fromStream) {
  const tr = render(c);
  const old = rows.get(c.name);
  if (old) {
    old.tr.replaceWith(tr);
  } else {
    const next = Array.from(tbody.rows).find((r) => r.dataset.cluster > c.name);
    tbody.insertBefore(tr, next ?? null);
  }
  rows.set(c.name, { tr, streamAt: fromStream ? performance.now() : (old?.streamAt ?? -1) });
  empty.hidden = true;
}

function remove(name) {
  rows.get(name)?.tr.remove();
  rows.delete(name);
  empty.hidden = rows.size > 0;
}

function setLive(text, ok) {
  live.textContent = text;
  live.className = ok ? 'live-ok' : 'live-down';
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// AuthError is a request the server refused for want of a valid token.
class AuthError extends Error {}

// Storage may be disabled: the token then lasts as long as the page.
function loadToken() {
  try {
    return sessionStorage.getItem(TOKEN_KEY) ?? '';
  } catch {
    return '';
  }
}

function storeToken(value) {
  try {
    sessionStorage.setItem(TOKEN_KEY, value);
  } catch {
    // The token stays in memory only.
  }
}

let token = loadToken();

// tokenWaiters are the loops waiting, after a 401, for a new token.
let tokenWaiters = [];

function withAuth(headers) {
  return token ? { ...headers, Authorization: `Bearer ${token}` } : headers;
}

// authError reads why the server refused a request (HTTP 401).
async function authError(res) {
  let why = '';
  try {
    const body = await res.json();
    why = (body.errors ?? []).map((e) => e.message).join('; ');
  } catch {
    // Not a GraphQL response: the status says enough.
  }
  return new AuthError(why || `HTTP ${res.status}`);
}

// needToken shows the token form saying why, and resolves once the user
// has entered a token; both the stream and the refresh loop wait on it,
// so that they retry at once with the new token.
function needToken(why) {
  tokenMessage.textContent = token
    ? `The server did not accept this token (${why}). Enter another one.`
    : `The server needs a bearer token (${why}). Enter one to see the clusters.`;
  tokenForm.hidden = false;
  setLive('Not live: waiting for a bearer token.', false);
  return new Promise((resolve) => tokenWaiters.push(resolve));
}

// tokenAccepted hides the form once a request with the token succeeded.
function tokenAccepted() {
  if (tokenForm.hidden) return;
  tokenForm.hidden = true;
  tokenMessage.textContent = '';
}

// normalizeToken accepts a token pasted with its "Bearer " prefix; it
// returns '' for text that cannot be a header value.
function normalizeToken(text) {
  const t = text.trim().replace(/^bearer\s+/i, '');
  return /^[\x21-\x7e]+$/.test(t) ? t : '';
}

tokenForm.addEventListener('submit', (e) => {
  e.preventDefault();
  const t = normalizeToken(tokenInput.value);
  if (!t) {
    tokenMessage.textContent = 'A bearer token is printable text without spaces.';
    return;
  }
  token = t;
  storeToken(t);
  tokenInput.value = '';
  tokenMessage.textContent = 'Checking the token…';
  const waiters = tokenWaiters;
  tokenWaiters = [];
  for (const resolve of waiters) resolve();
});

// parseEvent reads one Server-Sent Events block: its event name and data.
function parseEvent(block) {
  let event = 'message';
  const data = [];
  for (let line of block.split('\n')) {
    if (line.endsWith('\r')) line = line.slice(0, -1);
    if (line === '' || line.startsWith(':')) continue; // keep-alive comment
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'event') event = value;
    if (field === 'data') data.push(value);
  }
  return { event, data: data.join('\n') };
}

// follow runs one clusterHealth subscription over graphql-sse (distinct
// connections mode) and returns when the stream ends; it throws when the
// request fails.
async function follow() {
  const res = await fetch(ENDPOINT, {
    method: 'POST',
    headers: withAuth({ 'Content-Type': 'application/json', Accept: 'text/event-stream' }),
    body: JSON.stringify({ query: SUBSCRIPTION }),
    cache: 'no-store',
  });
  if (res.status === 401) throw await authError(res);
  if (!res.ok || !res.body) throw new Error(`the event stream answered HTTP ${res.status}`);
  tokenAccepted();
  setLive('Live: updates appear as they happen.', true);
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  try {
    let buf = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return 'the event stream ended';
      buf += value;
      let end;
      while ((end = buf.indexOf('\n\n')) >= 0) {
        const ev = parseEvent(buf.slice(0, end));
        buf = buf.slice(end + 2);
        if (ev.event === 'complete') return 'the subscription completed';
        if (ev.event !== 'next') continue;
        const payload = JSON.parse(ev.data);
        if (payload.errors?.length) return payload.errors.map((e) => e.message).join('; ');
        const c = payload.data?.clusterHealth;
        if (!c) continue;
        if (c.removed) remove(c.name); else upsert(c, true);
      }
    }
  } finally {
    reader.cancel().catch(() => {});
  }
}

// subscribeForever follows the subscription, subscribing again after
// each end with a growing, jittered delay that resets once a stream opened.
async function subscribeForever() {
  let backoff = MIN_BACKOFF_MS;
  for (;;) {
    const opened = performance.now();
    let reason;
    try {
      reason = await follow();
    } catch (err) {
      if (err instanceof AuthError) {
        await needToken(err.message);
        backoff = MIN_BACKOFF_MS;
        continue;
      }
      reason = err.message;
    }
    if (performance.now() - opened > MAX_BACKOFF_MS) backoff = MIN_BACKOFF_MS;
    const delay = backoff / 2 + Math.random() * (backoff / 2);
    setLive(`Not live (${reason}); reconnecting in ${Math.ceil(delay / 1000)} s.`, false);
    await sleep(delay);
    backoff = Math.min(backoff * 2, MAX_BACKOFF_MS);
  }
}

// refresh reads every cluster with the clusters query, for what the
// subscription does not carry: counts and event times between status
// changes, and clusters removed while the stream was down. It throws only
// AuthError.
async function refresh() {
  const sentAt = performance.now();
  try {
    const res = await fetch(ENDPOINT, {
      method: 'POST',
      headers: withAuth({ 'Content-Type': 'application/json', Accept: 'application/graphql-response+json, application/json' }),
      body: JSON.stringify({ query: QUERY }),
      cache: 'no-store',
    });
    if (res.status === 401) throw await authError(res);
    const body = await res.json();
    if (!body.data) throw new Error((body.errors ?? []).map((e) => e.message).join('; ') || `HTTP ${res.status}`);
    const newer = (name) => (rows.get(name)?.streamAt ?? -1) > sentAt;
    const names = new Set(body.data.clusters.map((c) => c.name));
    for (const name of Array.from(rows.keys())) {
      if (!names.has(name) && !newer(name)) remove(name);
    }
    for (const c of body.data.clusters) {
      if (!newer(c.name)) upsert(c, false);
    }
    empty.hidden = rows.size > 0;
    tokenAccepted();
  } catch (err) {
    if (err instanceof AuthError) throw err;
    // The stream's status line already tells whether the server answers.
    console.warn('status refresh failed', err);
  }
}

async function refreshForever() {
  for (;;) {
    try {
      await refresh();
    } catch (err) {
      await needToken(err.message);
      continue;
    }
    await sleep(REFRESH_MS);
  }
}

subscribeForever();
refreshForever();
