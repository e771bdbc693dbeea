// fleetcache status page: the dashboard an on-call person keeps open. A
// summary of the fleet first, then one row per cluster, the one not current
// for longest at the top, each opening onto its resource types. It is kept
// live by the aggregator's own GraphQL API (see doc.go in this package for
// why both a subscription and a periodic query). Every text shown comes
// from the server and is set with textContent, never parsed as HTML.
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
const SVG = 'http://www.w3.org/2000/svg';

const FIELDS = 'name labels status stale message objectCount currentAsOf lastEventTime changeRate ' +
  'resources { resource kind status objectCount currentAsOf lastError lastEventTime metadataOnly refused }';
const SUBSCRIPTION = `subscription { clusterHealth { removed ${FIELDS} } }`;
const QUERY = `{ clusters { ${FIELDS} } }`;

// SEVERITY orders statuses from the worst.
const SEVERITY = { DISCONNECTED: 0, DEGRADED: 1, SYNCING: 2, PENDING: 3, SYNCED: 4 };

const list = document.getElementById('clusters');
const live = document.getElementById('live');
const empty = document.getElementById('empty');
const filterInput = document.getElementById('filter');
const shown = document.getElementById('shown');
const tokenForm = document.getElementById('token-form');
const tokenInput = document.getElementById('token');
const tokenMessage = document.getElementById('token-message');

// clusters maps a cluster name to its last known state c, its <details>
// element, and when the event stream last updated it (performance.now()),
// so that an older query answer does not undo a newer status change.
const clusters = new Map();

function el(tag, props = {}, ...children) {
  const e = document.createElement(tag);
  Object.assign(e, props);
  e.append(...children.filter((c) => c !== null && c !== undefined));
  return e;
}

function badge(status) {
  return el('span', { className: `badge badge-${String(status).toLowerCase()}`, textContent: status });
}

// duration writes a number of milliseconds as an on-call person reads it.
function duration(ms) {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} m`;
  const h = Math.floor(m / 60);
  if (h < 48) return m % 60 ? `${h} h ${m % 60} m` : `${h} h`;
  return `${Math.floor(h / 24)} d`;
}

// freshness says how fresh the cached objects of c (a cluster or one of
// its types) are: current, never current yet, or since when they are not.
// A DEGRADED cluster is current: its failing types hold no data.
function freshness(c, now) {
  if (c.currentAsOf && (c.status === 'SYNCED' || c.status === 'DEGRADED')) {
    return { current: true, text: 'current', since: Infinity };
  }
  if (!c.currentAsOf) {
    const text = c.status === 'PENDING' || c.status === 'SYNCING' ? 'initial sync' : 'never synced';
    return { current: false, text, since: -Infinity };
  }
  const since = Date.parse(c.currentAsOf);
  return { current: false, text: `stale for ${duration(now - since)}`, since };
}

// compare orders clusters worst first: not current for longest (never
// current, then stale since long ago, then stale since recently), then the
// current ones by status, worst first; then by name.
function compare(a, b, now) {
  const fa = freshness(a, now);
  const fb = freshness(b, now);
  if (fa.since !== fb.since) return fa.since < fb.since ? -1 : 1;
  const sa = SEVERITY[a.status] ?? 5;
  const sb = SEVERITY[b.status] ?? 5;
  if (sa !== sb) return sa - sb;
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}

// budgetNote says what the memory budget did to the objects of type r,
// '' when nothing.
function budgetNote(r) {
  const parts = [];
  if (r.metadataOnly) parts.push(`${r.metadataOnly.toLocaleString()} metadata only`);
  if (r.refused) parts.push(`${r.refused.toLocaleString()} refused`);
  return parts.length ? `memory budget: ${parts.join(', ')}` : '';
}

// lastError is the first thing an on-call person needs to read about c.
function lastError(c) {
  if (c.message) return c.message;
  const r = c.resources.find((r) => r.lastError);
  if (r) return r.lastError;
  const d = c.resources.find((r) => budgetNote(r));
  return d ? `${d.resource}: ${budgetNote(d)}` : '';
}

function rateText(perSecond) {
  if (perSecond === 0) return '0/s';
  if (perSecond < 0.1) return '<0.1/s';
  return `${perSecond < 10 ? perSecond.toFixed(1) : Math.round(perSecond).toLocaleString()}/s`;
}

// sparkline draws rates (oldest first) as a line over a filled area, scaled
// to their own maximum; its title says the peak and the latest value.
function sparkline(rates) {
  const svg = document.createElementNS(SVG, 'svg');
  const w = 100;
  const h = 24;
  svg.setAttribute('viewBox', `0 0 ${w} ${h}`);
  svg.setAttribute('preserveAspectRatio', 'none');
  svg.setAttribute('role', 'img');
  const max = Math.max(...rates, 0);
  const latest = rates.length ? rates[rates.length - 1] : 0;
  const summary = `peak ${rateText(max)}, latest ${rateText(latest)} (10 s intervals, last 5 minutes)`;
  svg.setAttribute('aria-label', `changes per second: ${summary}`);
  const title = document.createElementNS(SVG, 'title');
  title.textContent = summary;
  svg.append(title);
  if (rates.length > 1) {
    const step = w / (rates.length - 1);
    const pts = rates.map((r, i) => `${(i * step).toFixed(1)},${(h - 1 - (max > 0 ? (r / max) * (h - 2) : 0)).toFixed(1)}`);
    const area = document.createElementNS(SVG, 'polygon');
    area.setAttribute('points', `0,${h} ${pts.join(' ')} ${w},${h}`);
    area.setAttribute('class', 'spark-area');
    const line = document.createElementNS(SVG, 'polyline');
    line.setAttribute('points', pts.join(' '));
    line.setAttribute('class', 'spark');
    svg.append(area, line);
  }
  return svg;
}

function latestRate(c) {
  const r = c.changeRate ?? [];
  return r.length ? r[r.length - 1] : 0;
}

// typesTable is the drill-down of c: one line per resource type.
function typesTable(c, now) {
  const head = el('tr', {}, ...['Type', 'Status', 'Freshness', 'Objects', 'Last event', 'Last error']
    .map((t, i) => el('th', { scope: 'col', textContent: t, className: ['c-type', '', '', 'num', 'events', 'c-error'][i] })));
  const body = el('tbody');
  for (const r of c.resources) {
    const f = freshness(r, now);
    const tr = el('tr', {},
      el('td', { className: 'resource', textContent: r.resource, title: r.kind }),
      el('td', {}, badge(r.status)),
      el('td', { className: f.current ? 'fresh-current' : 'fresh-stale', textContent: f.text }),
      el('td', { className: 'num count', textContent: r.objectCount.toLocaleString() }),
      el('td', { className: 'events', textContent: r.lastEventTime ? `${duration(now - Date.parse(r.lastEventTime))} ago` : 'never' }),
      el('td', { className: 'type-error', textContent: [r.lastError, budgetNote(r)].filter(Boolean).join('; ') }));
    tr.dataset.resource = r.resource;
    body.append(tr);
  }
  return el('table', { className: 'types' }, el('thead', {}, head), body);
}

// renderCluster fills entry's <details> with c: the summary row, and the
// drill-down, built only while it is open.
function renderCluster(entry, now) {
  const c = entry.c;
  const f = freshness(c, now);
  const err = lastError(c);
  const row = el('summary', { className: 'row' },
    el('span', { className: 'name', textContent: c.name, title: c.name }),
    el('span', { className: 'status' }, badge(c.status)),
    el('span', { className: `fresh ${f.current ? 'fresh-current' : 'fresh-stale'}`, textContent: f.text }),
    el('span', { className: 'num objects', textContent: c.objectCount.toLocaleString() }),
    el('span', { className: 'rate' }, sparkline(c.changeRate ?? []), el('span', { className: 'rate-now', textContent: rateText(latestRate(c)) })),
    el('span', { className: 'error', textContent: c.status === 'SYNCED' ? '' : err, title: err }));
  const d = entry.details;
  d.dataset.cluster = c.name;
  d.dataset.status = c.status;
  const parts = [row];
  if (d.open) {
    parts.push(el('div', { className: 'drill' },
      c.message ? el('p', { className: 'message', textContent: c.message }) : null,
      typesTable(c, now)));
  }
  d.replaceChildren(...parts);
}

function matches(c, query, now) {
  if (!query) return true;
  const labels = Object.entries(c.labels ?? {}).map(([k, v]) => `${k}=${v}`).join(' ');
  const hay = `${c.name} ${labels} ${c.status} ${freshness(c, now).text} ${lastError(c)} ${c.resources.map((r) => r.resource).join(' ')}`.toLowerCase();
  return query.split(/\s+/).every((word) => hay.includes(word));
}

function summarize(all, now) {
  const byStatus = {};
  let objects = 0;
  let rates = [];
  for (const c of all) {
    byStatus[c.status] = (byStatus[c.status] ?? 0) + 1;
    objects += c.objectCount;
    const r = c.changeRate ?? [];
    if (rates.length < r.length) rates = rates.concat(new Array(r.length - rates.length).fill(0));
    r.forEach((v, i) => { rates[i] += v; });
  }
  document.getElementById('sum-clusters').textContent = all.length.toLocaleString();
  const chips = Object.keys(byStatus).sort((a, b) => (SEVERITY[a] ?? 5) - (SEVERITY[b] ?? 5)).map((s) => {
    const b = el('button', { type: 'button', className: `chip-${s.toLowerCase()}`, textContent: `${byStatus[s]} ${s}`, title: `Show the ${s} clusters only` });
    b.dataset.status = s;
    b.addEventListener('click', () => {
      filterInput.value = filterInput.value.trim().toUpperCase() === s ? '' : s;
      renderAll();
    });
    return b;
  });
  document.getElementById('sum-statuses').replaceChildren(...chips);
  document.getElementById('sum-objects').textContent = objects.toLocaleString();
  document.getElementById('sum-rate').textContent = rateText(rates.length ? rates[rates.length - 1] : 0);
  document.getElementById('sum-rate-spark').replaceChildren(sparkline(rates));
  const worst = all.find((c) => !freshness(c, now).current);
  const detail = document.getElementById('sum-stalest-detail');
  document.getElementById('sum-stalest').textContent = worst ? worst.name : (all.length ? 'none' : '–');
  detail.textContent = worst ? `${freshness(worst, now).text} · ${worst.status}` : (all.length ? 'every cluster is current' : '');
  detail.className = worst ? 'detail fresh-stale' : 'detail fresh-current';
}

// summarizeTypes fills the fleet's per-type table: each resource type's
// objects, how many of the clusters that have it hold it current, and an
// error of a cluster where it fails.
function summarizeTypes(all, now) {
  const byType = new Map();
  for (const c of all) {
    for (const r of c.resources) {
      let t = byType.get(r.resource);
      if (!t) {
        t = { objects: 0, current: 0, clusters: 0, error: '' };
        byType.set(r.resource, t);
      }
      t.objects += r.objectCount;
      t.clusters++;
      if (freshness(r, now).current) t.current++;
      if (!t.error && r.lastError) t.error = `${c.name}: ${r.lastError}`;
    }
  }
  const rows = Array.from(byType.keys()).sort().map((name) => {
    const t = byType.get(name);
    const tr = el('tr', {},
      el('td', { className: 'resource', textContent: name }),
      el('td', { className: 'num count', textContent: t.objects.toLocaleString() }),
      el('td', { className: t.current === t.clusters ? 'fresh-current' : 'fresh-stale', textContent: `${t.current} of ${t.clusters} clusters` }),
      el('td', { className: 'type-error', textContent: t.error }));
    tr.dataset.resource = name;
    return tr;
  });
  document.getElementById('by-type-rows').replaceChildren(...rows);
}

// renderAll sorts the clusters worst first, re-renders them in that order
// (moving an element keeps it open), applies the filter and updates the
// summary.
function renderAll() {
  const now = Date.now();
  const entries = Array.from(clusters.values()).sort((a, b) => compare(a.c, b.c, now));
  const query = filterInput.value.trim().toLowerCase();
  let visible = 0;
  for (const entry of entries) {
    renderCluster(entry, now);
    entry.details.hidden = !matches(entry.c, query, now);
    if (!entry.details.hidden) visible++;
    list.append(entry.details);
  }
  summarize(entries.map((e) => e.c), now);
  summarizeTypes(entries.map((e) => e.c), now);
  shown.textContent = query ? `${visible} of ${entries.length} shown` : '';
  empty.hidden = clusters.size > 0;
}

// One render a frame at most, however many events arrive.
let renderQueued = false;
function scheduleRender() {
  if (renderQueued) return;
  renderQueued = true;
  requestAnimationFrame(() => {
    renderQueued = false;
    renderAll();
  });
}

function upsert(c, fromStream) {
  let entry = clusters.get(c.name);
  if (!entry) {
    const details = el('details', { className: 'cluster' });
    entry = { details, streamAt: -1 };
    details.addEventListener('toggle', () => renderCluster(entry, Date.now()));
    clusters.set(c.name, entry);
  }
  entry.c = c;
  if (fromStream) entry.streamAt = performance.now();
}

function remove(name) {
  clusters.get(name)?.details.remove();
  clusters.delete(name);
}

function setLive(text, ok) {
  live.textContent = text;
  live.className = ok ? 'live-ok' : 'live-down';
}

filterInput.addEventListener('input', scheduleRender);

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
        scheduleRender();
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
    const newer = (name) => (clusters.get(name)?.streamAt ?? -1) > sentAt;
    const names = new Set(body.data.clusters.map((c) => c.name));
    for (const name of Array.from(clusters.keys())) {
      if (!names.has(name) && !newer(name)) remove(name);
    }
    for (const c of body.data.clusters) {
      if (!newer(c.name)) upsert(c, false);
    }
    renderAll();
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
