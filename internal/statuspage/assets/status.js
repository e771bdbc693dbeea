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
  'server kubernetesVersion source controlPlaneHealthy controlPlaneMessage ' +
  'resources { resource kind status objectCount currentAsOf lastError lastEventTime metadataOnly refused initialSyncSeconds }';
const HISTORY = 'history { status start end message }';
// Each status change comes with the cluster's history over the stream;
// the periodic query asks for every history only every HISTORY_EVERY
// refreshes (a minute), as they more than double its answer (800 KB to
// 1.8 MB at 1,000 clusters), and change only with a status.
const SUBSCRIPTION = `subscription { clusterHealth { removed ${FIELDS} ${HISTORY} } }`;
const SELF = 'fleetcache { version startTime replica memoryBytes memoryLimitBytes memoryBudgetBytes memoryBudgetUsedBytes ' +
  'listSlots listSlotsInUse listsWaiting goroutines }';
const QUERY = `{ clusters { ${FIELDS} } ${SELF} }`;
const QUERY_HISTORY = `{ clusters { ${FIELDS} ${HISTORY} } ${SELF} }`;
const HISTORY_EVERY = 6;
const CHANGES = `query($f: ResourceFilter, $since: String) {
  changes(filter: $f, since: $since, order: DESC, first: 200) {
    edges { type time resource { cluster kind namespace name resourceVersion } }
    pageInfo { hasNextPage }
    truncated
  }
}`;
// HISTORY_MS is the window of the status timelines (the server keeps 24 h).
const HISTORY_MS = 24 * 3600 * 1000;
// RATE_INTERVAL_S is the length of a changeRate interval.
const RATE_INTERVAL_S = 10;

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

// burst reports whether rates hold a burst (a start-up's lists, a relist):
// a largest value over ten times the median. Charts of such rates are
// drawn on a logarithmic scale, so that the burst does not flatten what
// follows it.
function burst(rates) {
  const max = Math.max(0, ...rates);
  const sorted = rates.slice().sort((a, b) => a - b);
  const median = sorted.length ? sorted[Math.floor(sorted.length / 2)] : 0;
  return max >= 1 && max > 10 * Math.max(median, 0.1);
}

// sparkline draws rates (oldest first) as a line over a filled area, scaled
// to their own maximum, logarithmically after a burst; its title says the
// peak, the latest value and the scale.
function sparkline(rates) {
  const svg = document.createElementNS(SVG, 'svg');
  const w = 100;
  const h = 24;
  svg.setAttribute('viewBox', `0 0 ${w} ${h}`);
  svg.setAttribute('preserveAspectRatio', 'none');
  svg.setAttribute('role', 'img');
  const max = Math.max(...rates, 0);
  const latest = rates.length ? rates[rates.length - 1] : 0;
  const log = burst(rates);
  const summary = `peak ${rateText(max)}, latest ${rateText(latest)} (10 s intervals, last 5 minutes${log ? ', log scale' : ''})`;
  svg.setAttribute('aria-label', `changes per second: ${summary}`);
  svg.dataset.scale = log ? 'log' : 'linear';
  const title = document.createElementNS(SVG, 'title');
  title.textContent = summary;
  svg.append(title);
  if (rates.length > 1) {
    const step = w / (rates.length - 1);
    const scale = (r) => (log ? Math.log10(1 + r) / Math.log10(1 + max) : r / max);
    const pts = rates.map((r, i) => `${(i * step).toFixed(1)},${(h - 1 - (max > 0 ? scale(r) * (h - 2) : 0)).toFixed(1)}`);
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
  const head = el('tr', {}, ...['Type', 'Status', 'Freshness', 'Objects', 'Initial sync', 'Last event', 'Last error', 'Objects in']
    .map((t, i) => el('th', { scope: 'col', textContent: t, className: ['c-type', '', '', 'num', 'num sync', 'events', 'c-error', 'c-links'][i] })));
  const body = el('tbody');
  for (const r of c.resources) {
    const f = freshness(r, now);
    const tr = el('tr', {},
      el('td', { className: 'resource', textContent: r.resource, title: r.kind }),
      el('td', {}, badge(r.status)),
      el('td', { className: f.current ? 'fresh-current' : 'fresh-stale', textContent: f.text }),
      el('td', { className: 'num count', textContent: r.objectCount.toLocaleString() }),
      el('td', { className: 'num sync', textContent: r.initialSyncSeconds == null ? '–' : seconds(r.initialSyncSeconds) }),
      el('td', { className: 'events', textContent: r.lastEventTime ? `${duration(now - Date.parse(r.lastEventTime))} ago` : 'never' }),
      el('td', { className: 'type-error', textContent: [r.lastError, budgetNote(r)].filter(Boolean).join('; ') }),
      el('td', { className: 'links' }, objectLinks(c.name, r)));
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
    el('span', { className: 'timeline-cell' }, timeline(c.history ?? [], now, false)),
    el('span', { className: 'error', textContent: c.status === 'SYNCED' ? '' : err, title: err }));
  const d = entry.details;
  d.dataset.cluster = c.name;
  d.dataset.status = c.status;
  const parts = [row];
  if (d.open) {
    parts.push(el('div', { className: 'drill' },
      c.message ? el('p', { className: 'message', textContent: c.message }) : null,
      clusterDetail(c, now),
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
  fleetRates = rates;
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
  renderSide(entries.map((e) => e.c), now);
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
  // An answer without histories keeps the one known, and ends its
  // current period's band at now as it is drawn.
  if (c.history === undefined && entry.c) c.history = entry.c.history;
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
// refreshes counts the refreshes: every HISTORY_EVERY-th (the first
// included) asks for the histories too.
let refreshes = 0;

async function refresh() {
  const sentAt = performance.now();
  const query = refreshes++ % HISTORY_EVERY === 0 ? QUERY_HISTORY : QUERY;
  try {
    const res = await fetch(ENDPOINT, {
      method: 'POST',
      headers: withAuth({ 'Content-Type': 'application/json', Accept: 'application/graphql-response+json, application/json' }),
      body: JSON.stringify({ query }),
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
    let historyBehind = false;
    for (const c of body.data.clusters) {
      if (newer(c.name)) continue;
      upsert(c, false);
      const h = clusters.get(c.name).c.history ?? [];
      if (!h.length || h[h.length - 1].status !== c.status) historyBehind = true;
    }
    // A status the stream did not bring (it was down): ask for the
    // histories with the next refresh.
    if (historyBehind) refreshes = 0;
    selfStatus = body.data.fleetcache ?? null;
    selfAt = Date.now();
    renderAll();
    tokenAccepted();
  } catch (err) {
    if (err instanceof AuthError) throw err;
    // The stream's status line already tells whether the server answers.
    console.warn('status refresh failed', err);
  }
}

// every runs fn every REFRESH_MS, forever; when fn throws (an AuthError),
// it waits for a token and runs it again at once.
async function every(fn) {
  for (;;) {
    try {
      await fn();
    } catch (err) {
      await needToken(err.message);
      continue;
    }
    await sleep(REFRESH_MS);
  }
}

// seconds writes a number of seconds with a precision that fits it.
function seconds(s) {
  if (s < 1) return `${Math.round(s * 1000)} ms`;
  if (s < 60) return `${s < 10 ? s.toFixed(1) : Math.round(s)} s`;
  return duration(s * 1000);
}

function bytes(n) {
  if (!n) return '0';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) {
    n /= 1024;
    i++;
  }
  return `${n < 10 && i > 0 ? n.toFixed(1) : Math.round(n)} ${units[i]}`;
}

function svgEl(tag, attrs = {}, text) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  if (text !== undefined) e.textContent = text;
  return e;
}

function clock(t) {
  return new Date(t).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
}

// timeline draws a cluster's statuses over the last 24 hours: one band a
// period, coloured by status and titled with when it began, how long it
// lasted and why; before the first period (fleetcache was not running, or
// did not know the cluster) the band is left empty. With axis, hour marks
// and their labels are drawn under it.
function timeline(history, now, axis, windowMs = HISTORY_MS) {
  // The axis' text is drawn at about its size in CSS pixels: the chart
  // is as wide as its box, at most 40rem.
  const w = axis ? 640 : 240;
  const bandH = axis ? 18 : 12;
  const h = axis ? bandH + 14 : bandH;
  const start = now - windowMs;
  const x = (t) => ((Math.min(Math.max(t, start), now) - start) / windowMs) * w;
  const hours = windowMs / 3600000;
  const svg = svgEl('svg', { viewBox: `0 0 ${w} ${h}`, class: axis ? 'timeline timeline-axis' : 'timeline', role: 'img' });
  const described = [];
  svg.append(svgEl('rect', { x: 0, y: 0, width: w, height: bandH, class: 'tl-none' }));
  // The least severe bands first (SYNCED), DISCONNECTED last: a short
  // problem, widened to be seen, is drawn over its neighbours.
  const indexed = history.map((p, i) => ({ ...p, order: i }));
  const ordered = indexed.slice().sort((a, b) => (SEVERITY[b.status] ?? 5) - (SEVERITY[a.status] ?? 5));
  for (const p of ordered) {
    const from = Date.parse(p.start);
    const to = p.end ? Date.parse(p.end) : now;
    if (to < start) continue;
    const x0 = Math.min(x(from), w - 4);
    // At least 4 units (of 240: 24 minutes of a day), so that a short
    // outage shows; its title says how long it really was.
    const width = Math.max(x(to) - x0, 4);
    const what = `${p.status} from ${clock(from)}${p.end ? ` to ${clock(to)}` : ', now'} (${duration(to - from)})${p.message ? `: ${p.message}` : ''}`;
    described.push(what);
    const r = svgEl('rect', { x: x0.toFixed(2), y: 0, width: width.toFixed(2), height: bandH, class: `tl tl-${p.status.toLowerCase()}` });
    r.dataset.status = p.status;
    r.dataset.order = String(p.order); // its place in the history: oldest 0
    r.append(svgEl('title', {}, what));
    svg.append(r);
  }
  svg.setAttribute('aria-label', `status over the last ${hours >= 1 ? `${hours} hours` : `${hours * 60} minutes`}: ${described.join('; ') || 'no data'}`);
  svg.dataset.window = String(hours);
  if (axis) {
    // Four steps: 6 h marks over a day, 15 min marks over an hour.
    for (let i = 4; i >= 0; i--) {
      const ago = (windowMs / 4) * i;
      const xx = w - (ago / windowMs) * w;
      svg.append(svgEl('line', { x1: xx, x2: xx, y1: bandH, y2: bandH + 3, class: 'axis' }));
      const anchor = i === 4 ? 'start' : i === 0 ? 'end' : 'middle';
      const label = i === 0 ? 'now' : ago >= 3600000 ? `−${ago / 3600000} h` : `−${ago / 60000} min`;
      svg.append(svgEl('text', { x: xx, y: h - 1, 'text-anchor': anchor, class: 'axis-label axis-label-big' }, label));
    }
  }
  return svg;
}

// niceMax rounds a chart's top up to 1, 2 or 5 times a power of ten.
function niceMax(v) {
  if (v <= 0) return 1;
  const p = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 2, 5, 10]) if (v <= m * p) return m * p;
  return 10 * p;
}

// rateChart draws the fleet's changes per second over the last 5 minutes,
// with a y axis and a time axis. When the largest interval is more than
// ten times the median (a start-up or a relist burst), the y axis is
// logarithmic, so that the burst does not flatten what follows; the chart
// says so.
function rateChart(rates) {
  const w = 320;
  const h = 140;
  const left = 40;
  const bottom = 18;
  const top = 8;
  const plotW = w - left - 8;
  const plotH = h - top - bottom;
  const svg = svgEl('svg', { viewBox: `0 0 ${w} ${h}`, class: 'chart-svg', role: 'img' });
  const max = Math.max(0, ...rates);
  const log = burst(rates);
  const top10 = log ? 10 ** Math.ceil(Math.log10(max + 1)) : niceMax(max);
  const y = log
    ? (v) => top + plotH - (Math.log10(1 + v) / Math.log10(1 + top10)) * plotH
    : (v) => top + plotH - (v / top10) * plotH;
  const ticks = log
    ? Array.from({ length: Math.log10(top10) + 1 }, (_, i) => (i === 0 ? 0 : 10 ** i))
    : [0, top10 / 2, top10];
  for (const t of ticks) {
    svg.append(svgEl('line', { x1: left, x2: left + plotW, y1: y(t), y2: y(t), class: 'grid' }));
    svg.append(svgEl('text', { x: left - 4, y: y(t) + 3, 'text-anchor': 'end', class: 'axis-label' }, rateText(t).replace('/s', '')));
  }
  const n = rates.length;
  const x = (i) => left + (n > 1 ? (i / (n - 1)) * plotW : plotW);
  for (const [i, label] of [[0, '−5 min'], [Math.floor((n - 1) / 2), '−2.5 min'], [n - 1, 'now']]) {
    if (n < 2) break;
    svg.append(svgEl('text', { x: x(i), y: h - 4, 'text-anchor': i === 0 ? 'start' : i === n - 1 ? 'end' : 'middle', class: 'axis-label' }, label));
  }
  if (n > 1) {
    const pts = rates.map((r, i) => `${x(i).toFixed(1)},${y(r).toFixed(1)}`);
    svg.append(svgEl('polygon', { points: `${left},${top + plotH} ${pts.join(' ')} ${left + plotW},${top + plotH}`, class: 'spark-area' }));
    svg.append(svgEl('polyline', { points: pts.join(' '), class: 'spark' }));
  }
  svg.append(svgEl('text', { x: left, y: top - 1, class: 'axis-label' }, log ? 'per second, log scale' : 'per second'));
  const latest = n ? rates[n - 1] : 0;
  svg.setAttribute('aria-label', `fleet changes per second over 5 minutes in ${RATE_INTERVAL_S} s intervals: peak ${rateText(max)}, latest ${rateText(latest)}${log ? ', log scale' : ''}`);
  svg.dataset.scale = log ? 'log' : 'linear';
  return svg;
}

// graphiqlLink links GraphiQL with query (and its variables) filled in,
// in the URL's fragment, which the browser never sends to the server.
function graphiqlLink(text, query, variables) {
  let href = `/graphql#query=${encodeURIComponent(query)}`;
  if (variables) href += `&variables=${encodeURIComponent(JSON.stringify(variables, null, 2))}`;
  return el('a', { href, textContent: text, className: 'graphiql-link', target: '_blank', rel: 'noopener' });
}

// quote quotes a shell word when it needs it.
function quote(w) {
  return /^[\w@%+=:,./-]+$/.test(w) ? w : `'${w.replaceAll("'", "'\\''")}'`;
}

// command shows a command to copy, with a button that copies it.
function command(words) {
  const text = words.map(quote).join(' ');
  const code = el('code', { className: 'cmd', textContent: text });
  const button = el('button', { type: 'button', className: 'copy', textContent: 'Copy', title: 'Copy the command' });
  button.addEventListener('click', async () => {
    try {
      await navigator.clipboard.writeText(text);
      button.textContent = 'Copied';
    } catch {
      // No clipboard (plain HTTP on another host): select it for Ctrl-C.
      const range = document.createRange();
      range.selectNodeContents(code);
      const sel = window.getSelection();
      sel.removeAllRanges();
      sel.addRange(range);
      button.textContent = 'Selected';
    }
    setTimeout(() => { button.textContent = 'Copy'; }, 2000);
  });
  return el('span', { className: 'command' }, code, button);
}

// kindFilter is the ResourceFilter kind of a resource type: "Pod",
// "Deployment.apps".
function kindFilter(r) {
  const dot = r.resource.indexOf('.');
  return dot < 0 ? r.kind : `${r.kind}.${r.resource.slice(dot + 1)}`;
}

// objectLinks links a type of a cluster to its objects: a GraphiQL query
// and the kubectl fleet command.
function objectLinks(cluster, r) {
  const q = `query Objects($filter: ResourceFilter) {
  resources(filter: $filter, first: 50) {
    totalCount
    edges { node { namespace name columns(age: true) { name value } } }
    pageInfo { hasNextPage endCursor }
  }
}`;
  const link = graphiqlLink('GraphiQL', q, { filter: { clusters: [cluster], kinds: [kindFilter(r)] } });
  link.dataset.resource = r.resource;
  return el('span', { className: 'object-links' }, link, command(['kubectl', 'fleet', 'get', r.resource, '-A', '--clusters', cluster]));
}

// clusterDetail is what the drill-down says of a cluster beside its types:
// its API server, version, labels, source and the inventory's condition,
// its status timeline with an axis, and links to its objects.
function clusterDetail(c, now) {
  const labels = Object.entries(c.labels ?? {}).map(([k, v]) => `${k}=${v}`);
  const condition = c.controlPlaneHealthy == null ? 'not reported'
    : `${c.controlPlaneHealthy ? 'healthy' : 'unhealthy'}${c.controlPlaneMessage ? ` (${c.controlPlaneMessage})` : ''}`;
  const facts = [
    ['API server', c.server ?? 'hidden or not known'],
    ['Kubernetes', c.kubernetesVersion ?? 'not known yet'],
    ['Labels', labels.length ? labels.join(', ') : 'none'],
    ['Source', c.source ?? 'not known'],
    ['Inventory says', condition],
  ];
  const dl = el('dl', { className: 'facts cluster-facts' });
  for (const [k, v] of facts) dl.append(el('dt', { textContent: k }), el('dd', { textContent: v }));
  const periods = (c.history ?? []).slice().reverse().slice(0, 8).map((p) => {
    const from = Date.parse(p.start);
    const to = p.end ? Date.parse(p.end) : now;
    return el('li', {}, badge(p.status), ` ${clock(from)}${p.end ? `–${clock(to)}` : '–now'} (${duration(to - from)})`,
      p.message ? el('span', { className: 'period-why', textContent: ` ${p.message}` }) : null);
  });
  const all = `query Cluster($cluster: String!) {
  cluster(name: $cluster) { name status message server kubernetesVersion labels source history { status start end message } }
  resources(filter: {clusters: [$cluster]}, first: 50) { totalCount edges { node { kind namespace name } } }
}`;
  return el('div', { className: 'cluster-detail' },
    dl,
    el('div', { className: 'history' },
      el('h3', { textContent: 'Status, last 24 hours' }),
      timeline(c.history ?? [], now, true),
      el('h3', { textContent: 'Last hour' }),
      timeline(c.history ?? [], now, true, 3600 * 1000),
      el('ol', { className: 'periods', reversed: true }, ...periods)),
    el('p', { className: 'cluster-links' }, 'Its objects: ', graphiqlLink('in GraphiQL', all, { cluster: c.name }), ' · ',
      command(['kubectl', 'fleet', 'get', 'pods', '-A', '--clusters', c.name])));
}

// selfStatus and selfAt are the last Query.fleetcache answer and when it
// came;
// fleetRates the fleet's change rates, for the side panels.
let selfStatus = null;
let selfAt = 0;
let fleetRates = [];

// meter shows used against limit, with the numbers written out.
function meter(used, limit, what) {
  if (!limit) return el('span', { textContent: `${bytes(used)} (${what}: none)` });
  const m = el('meter', { min: 0, max: limit, value: Math.min(used, limit), high: limit * 0.75, optimum: 0 });
  m.setAttribute('aria-label', `${bytes(used)} of ${bytes(limit)}`);
  return el('span', { className: 'meter' }, m, ` ${bytes(used)} of ${bytes(limit)} (${Math.round((used / limit) * 100)} %)`);
}

// renderSide fills the side panels: fleetcache's own health, the fleet's
// change rate with axes, and the clusters slowest to sync.
function renderSide(all, now) {
  const dl = document.getElementById('self');
  if (selfStatus) {
    const up = now - Date.parse(selfStatus.startTime);
    const facts = [
      ['Version', selfStatus.version],
      ['Replica', selfStatus.replica],
      ['Up for', `${duration(up)} (since ${new Date(selfStatus.startTime).toLocaleString()})`],
      ['Memory', meter(selfStatus.memoryBytes, selfStatus.memoryLimitBytes, 'limit')],
      ['Index budget', meter(selfStatus.memoryBudgetUsedBytes, selfStatus.memoryBudgetBytes, 'budget')],
      ['List slots', `${selfStatus.listSlotsInUse} of ${selfStatus.listSlots} in use, ${selfStatus.listsWaiting} waiting`],
      ['Goroutines', selfStatus.goroutines.toLocaleString()],
    ];
    dl.replaceChildren(...facts.flatMap(([k, v]) => [el('dt', { textContent: k }), el('dd', {}, v)]));
    dl.dataset.at = String(selfAt);
  } else {
    dl.replaceChildren(el('dt', { textContent: 'Not reported' }), el('dd', { textContent: 'this server does not say' }));
  }
  document.getElementById('rate-chart').replaceChildren(rateChart(fleetRates));
  const slow = [];
  for (const c of all) {
    let worst = null;
    for (const r of c.resources) {
      if (r.initialSyncSeconds != null && (!worst || r.initialSyncSeconds > worst.initialSyncSeconds)) worst = r;
    }
    if (worst) slow.push({ c, r: worst });
  }
  slow.sort((a, b) => b.r.initialSyncSeconds - a.r.initialSyncSeconds);
  const items = slow.slice(0, 5).map(({ c, r }) => {
    const li = el('li', {}, el('span', { className: 'name-plain', textContent: c.name }),
      el('span', { className: 'num', textContent: seconds(r.initialSyncSeconds) }),
      el('span', { className: 'muted', textContent: r.resource }));
    li.dataset.cluster = c.name;
    return li;
  });
  document.getElementById('slowest').replaceChildren(...(items.length ? items : [el('li', { className: 'muted', textContent: 'no cluster has synced yet' })]));
  updateClusterChoices(all);
}

// updateClusterChoices keeps the What changed view's cluster choices in
// step with the clusters.
function updateClusterChoices(all) {
  const select = document.getElementById('changes-cluster');
  const names = all.map((c) => c.name).sort();
  const have = Array.from(select.options).slice(1).map((o) => o.value);
  if (have.join('\n') === names.join('\n')) return;
  const chosen = select.value;
  select.replaceChildren(select.options[0], ...names.map((n) => el('option', { value: n, textContent: n })));
  select.value = names.includes(chosen) ? chosen : '';
}

// route shows the view the URL's fragment names: #changes, else the
// clusters; #cluster=NAME opens that cluster.
function route() {
  const hash = window.location.hash;
  const changes = hash === '#changes';
  document.getElementById('view-clusters').hidden = changes;
  document.getElementById('view-changes').hidden = !changes;
  for (const [id, current] of [['tab-clusters', !changes], ['tab-changes', changes]]) {
    const tab = document.getElementById(id);
    if (current) tab.setAttribute('aria-current', 'page'); else tab.removeAttribute('aria-current');
  }
  if (changes) loadChanges();
  if (hash.startsWith('#cluster=')) {
    const entry = clusters.get(decodeURIComponent(hash.slice('#cluster='.length)));
    if (entry) {
      entry.details.open = true;
      entry.details.scrollIntoView({ block: 'start' });
    }
  }
}

// changesFilter is the ResourceFilter of the What changed view's inputs.
function changesFilter() {
  const f = {};
  const cluster = document.getElementById('changes-cluster').value;
  const kind = document.getElementById('changes-kind').value.trim();
  const ns = document.getElementById('changes-namespace').value.trim();
  const name = document.getElementById('changes-name').value.trim();
  if (cluster) f.clusters = [cluster];
  if (kind) f.kinds = kind.split(/[\s,]+/).filter(Boolean);
  if (ns) f.namespaces = ns.split(/[\s,]+/).filter(Boolean);
  if (name) f.nameContains = name;
  return f;
}

// changesSeq orders the What changed answers: an older one that arrives
// late is dropped.
let changesSeq = 0;

// loadChanges reads the changes of the view's filter, newest first, and
// shows them. It throws only AuthError.
async function loadChanges() {
  if (document.getElementById('view-changes').hidden) return;
  const seq = ++changesSeq;
  const since = document.getElementById('changes-since').value;
  const status = document.getElementById('changes-status');
  try {
    const res = await fetch(ENDPOINT, {
      method: 'POST',
      headers: withAuth({ 'Content-Type': 'application/json', Accept: 'application/graphql-response+json, application/json' }),
      body: JSON.stringify({ query: CHANGES, variables: { f: changesFilter(), since } }),
      cache: 'no-store',
    });
    if (res.status === 401) throw await authError(res);
    const body = await res.json();
    if (seq !== changesSeq) return;
    if (!body.data) {
      status.textContent = (body.errors ?? []).map((e) => e.message).join('; ') || `HTTP ${res.status}`;
      status.className = 'fresh-stale';
      return;
    }
    const ch = body.data.changes;
    const now = Date.now();
    const rows = ch.edges.map((e) => {
      const r = e.resource;
      const t = Date.parse(e.time);
      const q = `query Object($cluster: String!, $kind: String!, $namespace: String, $name: String!) {
  resource(cluster: $cluster, kind: $kind, namespace: $namespace, name: $name) { resourceVersion labels columns(age: true) { name value } object }
}`;
      const tr = el('tr', {},
        el('td', { textContent: `${duration(now - t)} ago`, title: new Date(t).toISOString() }),
        el('td', {}, el('span', { className: `badge event-${e.type.toLowerCase()}`, textContent: e.type })),
        el('td', { textContent: r.cluster }),
        el('td', { textContent: r.kind }),
        el('td', { textContent: r.namespace ?? '' }),
        el('td', {}, e.type === 'DELETED' ? el('span', { textContent: r.name })
          : graphiqlLink(r.name, q, { cluster: r.cluster, kind: r.kind, namespace: r.namespace, name: r.name })));
      tr.dataset.type = e.type;
      tr.dataset.cluster = r.cluster;
      tr.dataset.name = r.name;
      return tr;
    });
    document.getElementById('changes-rows').replaceChildren(...rows);
    const parts = [`${rows.length}${ch.pageInfo.hasNextPage ? '+' : ''} changes since ${since} ago, newest first`];
    if (ch.pageInfo.hasNextPage) parts.push('the newest 200 shown: narrow the filter');
    if (ch.truncated) parts.push('fleetcache keeps fewer changes than that: older ones are not known');
    status.textContent = `${parts.join('; ')}.`;
    status.className = 'muted';
    tokenAccepted();
  } catch (err) {
    if (err instanceof AuthError) throw err;
    status.textContent = `Could not read the changes: ${err.message}`;
    status.className = 'fresh-stale';
  }
}

document.getElementById('changes-form').addEventListener('submit', (e) => {
  e.preventDefault();
  loadChanges().catch(() => {});
});
for (const id of ['changes-since', 'changes-cluster', 'changes-kind', 'changes-namespace', 'changes-name']) {
  document.getElementById(id).addEventListener('change', () => loadChanges().catch(() => {}));
}

window.addEventListener('hashchange', route);
route();
subscribeForever();
every(refresh);
// The What changed view refreshes itself while it shows.
every(loadChanges);
