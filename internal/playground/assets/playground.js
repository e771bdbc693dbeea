// playground.js wires the page: editors, running queries, the result pane,
// history and the documentation explorer. The pure logic is in logic.js
// (globalThis.PlaygroundLogic), loaded first.
(function () {
  'use strict';

  const L = globalThis.PlaygroundLogic;
  const HISTORY_KEY = 'fleetcache.playground.history';
  const SESSION_KEY = 'fleetcache.playground.session';
  const TOKEN_KEY = 'fleetcache.playground.token';
  const HIGHLIGHT_LIMIT = 200000; // characters; larger results are shown plain
  const EXAMPLE_QUERY = [
    '# Welcome to the fleetcache GraphQL playground.',
    '# Ctrl+Enter (Cmd+Enter on a Mac) runs the query.',
    '# Docs, on the right, describes every type.',
    '{',
    '  clusters {',
    '    name',
    '    status',
    '    objectCount',
    '  }',
    '  resources(filter: {kinds: ["Pod"]}, first: 10) {',
    '    totalCount',
    '    edges {',
    '      node {',
    '        cluster',
    '        namespace',
    '        name',
    '      }',
    '    }',
    '  }',
    '}',
    '',
  ].join('\n');

  const $ = (id) => document.getElementById(id);
  const endpointMeta = document.querySelector('meta[name="graphql-endpoint"]');
  const endpoint = (endpointMeta && endpointMeta.content) || window.location.pathname;

  const ui = {
    run: $('run'),
    runLabel: $('run-label'),
    picker: $('operation-picker'),
    operation: $('operation'),
    prettify: $('prettify'),
    token: $('token'),
    endpoint: $('endpoint-label'),
    toggleHistory: $('toggle-history'),
    toggleDocs: $('toggle-docs'),
    history: $('history'),
    historyList: $('history-list'),
    historyEmpty: $('history-empty'),
    clearHistory: $('clear-history'),
    query: $('query'),
    variables: $('variables'),
    variablesError: $('variables-error'),
    status: $('status'),
    errors: $('errors'),
    result: $('result'),
    docs: $('docs'),
    docsSearch: $('docs-search'),
    docsCrumbs: $('docs-crumbs'),
    docsBody: $('docs-body'),
    reloadSchema: $('reload-schema'),
  };

  // el builds an element: el('button', {className: 'x', onclick: f}, 'text', child).
  function el(tag, props, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(props || {})) {
      if (value === undefined || value === null || value === false) continue;
      if (key === 'className') node.className = value;
      else if (key.startsWith('on')) node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, value === true ? '' : value);
    }
    for (const child of children) {
      if (child === null || child === undefined || child === false) continue;
      node.append(child instanceof Node ? child : String(child));
    }
    return node;
  }

  // Storage may be unavailable (private mode, disabled); the page still works.
  const storage = {
    get(key) {
      try {
        return window.localStorage.getItem(key);
      } catch (e) {
        return null;
      }
    },
    set(key, value) {
      try {
        window.localStorage.setItem(key, value);
      } catch (e) {
        // Quota or disabled storage: history is a convenience, not required.
      }
    },
  };

  // The bearer token is kept in sessionStorage, never localStorage: it must
  // not outlive the tab. Without storage it lasts as long as the page.
  const tabStorage = {
    get(key) {
      try {
        return window.sessionStorage.getItem(key);
      } catch (e) {
        return null;
      }
    },
    set(key, value) {
      try {
        if (value === '') window.sessionStorage.removeItem(key);
        else window.sessionStorage.setItem(key, value);
      } catch (e) {
        // Disabled storage: the token stays in memory only.
      }
    },
  };

  // ---------------------------------------------------------------------------
  // Authentication

  let token = ''; // sent as Authorization: Bearer when not empty
  let tokenError = null; // why the token field cannot be sent, or null

  // readToken takes the token field's value, reporting whether it changed.
  function readToken() {
    const parsed = L.normalizeToken(ui.token.value);
    tokenError = parsed.ok ? null : parsed.error;
    markToken(!parsed.ok);
    if (!parsed.ok || parsed.token === token) return false;
    token = parsed.token;
    tabStorage.set(TOKEN_KEY, token);
    return true;
  }

  function markToken(invalid) {
    ui.token.setAttribute('aria-invalid', invalid ? 'true' : 'false');
  }

  // authHint says what to do about a response without a valid token,
  // pointing at the token field.
  function authHint() {
    return token
      ? 'The server did not accept the token in the Token field of the toolbar. Enter a valid bearer token, then run again.'
      : 'This server needs a bearer token: enter it in the Token field of the toolbar, then run again.';
  }

  // ---------------------------------------------------------------------------
  // Editing

  // replaceRange replaces [from, to) of a textarea with text, through the
  // browser's editing command when it has one so that Undo works.
  function replaceRange(area, from, to, text) {
    area.focus();
    area.setSelectionRange(from, to);
    let done = false;
    try {
      done = text !== '' && document.execCommand('insertText', false, text);
    } catch (e) {
      done = false;
    }
    if (!done) {
      area.setRangeText(text, from, to, 'end');
      area.dispatchEvent(new Event('input', { bubbles: true }));
    }
  }

  function setEditorText(area, text) {
    replaceRange(area, 0, area.value.length, text);
    area.setSelectionRange(0, 0);
    area.scrollTop = 0;
  }

  // setupEditor gives a textarea code-editor keys: Tab and Shift+Tab indent,
  // Enter keeps the indentation, a closing bracket dedents. Escape releases
  // Tab for one key press so that keyboard users can leave the editor.
  function setupEditor(area) {
    let releaseTab = false;
    area.addEventListener('keydown', (e) => {
      if (e.isComposing || e.altKey || e.ctrlKey || e.metaKey) return;
      const { selectionStart: start, selectionEnd: end, value } = area;
      if (e.key === 'Escape') {
        releaseTab = true;
        return;
      }
      if (e.key === 'Tab') {
        if (releaseTab) {
          releaseTab = false;
          return; // the browser moves focus
        }
        e.preventDefault();
        const multiline = value.slice(start, end).includes('\n');
        if (e.shiftKey || multiline) {
          const r = L.indentLines(value, start, end, e.shiftKey);
          replaceRange(area, r.from, r.to, r.insert);
          area.setSelectionRange(r.start, r.end);
        } else {
          replaceRange(area, start, end, '  ');
        }
        return;
      }
      releaseTab = false;
      if (e.key === 'Enter' && !e.shiftKey) {
        e.preventDefault();
        const r = L.newlineIndent(value, start, end);
        replaceRange(area, start, end, r.insert);
        area.setSelectionRange(r.cursor, r.cursor);
        return;
      }
      if ((e.key === '}' || e.key === ']' || e.key === ')') && start === end) {
        const r = L.closerDedent(value, start);
        if (r) {
          e.preventDefault();
          replaceRange(area, r.from, start, r.insert + e.key);
        }
      }
    });
  }

  // ---------------------------------------------------------------------------
  // Operations

  let operations = [];

  function refreshOperations() {
    operations = L.parseOperations(ui.query.value);
    const named = operations.filter((op) => op.name !== null);
    if (operations.length <= 1) {
      ui.picker.hidden = true;
      ui.operation.replaceChildren();
      return;
    }
    const keep = ui.operation.value;
    ui.operation.replaceChildren(...operations.map((op) =>
      op.name !== null
        ? el('option', { value: op.name }, op.name + ' (' + op.type + ')')
        : el('option', { value: '', disabled: true }, '(anonymous ' + op.type + ')')));
    const names = named.map((op) => op.name);
    ui.operation.value = names.includes(keep) ? keep : (names[0] || '');
    ui.picker.hidden = false;
  }

  // followCursor selects the operation the caret is in, as GraphiQL does.
  function followCursor() {
    if (operations.length <= 1) return;
    const op = L.operationAt(operations, ui.query.selectionStart);
    if (op && op.name !== null && ui.operation.value !== op.name) ui.operation.value = op.name;
  }

  // ---------------------------------------------------------------------------
  // Variables

  function checkVariables() {
    const parsed = L.parseVariables(ui.variables.value);
    ui.variablesError.textContent = parsed.ok ? '' : parsed.error;
    ui.variables.classList.toggle('invalid', !parsed.ok);
    ui.variables.setAttribute('aria-invalid', parsed.ok ? 'false' : 'true');
    return parsed;
  }

  // ---------------------------------------------------------------------------
  // Requests and results

  async function post(body, signal) {
    const started = performance.now();
    const response = await fetch(endpoint, {
      method: 'POST',
      headers: Object.assign({
        'Content-Type': 'application/json',
        Accept: 'application/graphql-response+json, application/json',
      }, L.authHeaders(token)),
      body: JSON.stringify(body),
      credentials: 'same-origin',
      signal,
    });
    const text = await response.text();
    return { response, text, ms: Math.round(performance.now() - started) };
  }

  function setStatus(text, kind) {
    ui.status.textContent = text;
    ui.status.className = 'status ' + (kind || '');
  }

  // showErrors lists errors under title; hint, when given, follows them.
  function showErrors(errors, title, hint) {
    if (errors.length === 0) {
      ui.errors.hidden = true;
      ui.errors.replaceChildren();
      return;
    }
    ui.errors.replaceChildren(
      el('h3', null, title || (errors.length === 1 ? 'Error' : errors.length + ' errors')),
      el('ul', null, ...errors.map((e) => el('li', null, e.message,
        e.where ? el('span', { className: 'where' }, ' (' + e.where + ')') : null))),
      hint ? el('p', { className: 'hint' }, hint) : null);
    ui.errors.hidden = false;
  }

  function showBody(text) {
    if (text.length > HIGHLIGHT_LIMIT) {
      ui.result.textContent = text;
      return;
    }
    const frag = document.createDocumentFragment();
    for (const t of L.jsonTokens(text)) {
      frag.append(t.kind === 'space' ? t.text : el('span', { className: 'j-' + t.kind }, t.text));
    }
    ui.result.replaceChildren(frag);
  }

  let inflight = null;

  function setRunning(running) {
    ui.run.classList.toggle('running', running);
    ui.runLabel.textContent = running ? 'Stop' : 'Run';
    ui.run.title = running ? 'Stop the running request' : 'Run (Ctrl+Enter or Cmd+Enter)';
    ui.result.setAttribute('aria-busy', running ? 'true' : 'false');
  }

  async function run() {
    if (inflight) {
      inflight.abort();
      return;
    }
    const variables = checkVariables();
    if (!variables.ok) {
      setStatus('Not sent: fix the variables', 'err');
      ui.variables.focus();
      return;
    }
    readToken();
    if (tokenError) {
      setStatus('Not sent: fix the token', 'err');
      showErrors([{ message: tokenError, where: 'Token field' }], 'The token cannot be sent');
      ui.token.focus();
      return;
    }
    refreshOperations();
    const query = ui.query.value;
    const operationName = L.chooseOperationName(operations, ui.operation.value);
    addToHistory({ query, variables: ui.variables.value, operationName, time: Date.now() });

    const controller = new AbortController();
    inflight = controller;
    setRunning(true);
    setStatus('Running…', 'busy');
    try {
      const { response, text, ms } = await post(L.buildRequestBody(query, variables.value, operationName), controller.signal);
      const summary = L.summarizeResponse(text);
      const httpOK = response.ok;
      let kind = httpOK ? 'ok' : 'err';
      if (httpOK && summary.errors.length > 0) kind = 'warn';
      const parts = [response.status + (response.statusText ? ' ' + response.statusText : ''), ms + ' ms', L.formatBytes(text.length)];
      if (summary.errors.length > 0) parts.push(summary.errors.length === 1 ? '1 error' : summary.errors.length + ' errors');
      setStatus(parts.join(' · '), kind);
      if (L.isUnauthenticated(response.status, summary.json)) {
        markToken(true);
        const errors = summary.errors.length > 0 ? summary.errors : [{ message: 'HTTP ' + response.status, where: '' }];
        showErrors(errors, 'Not authenticated', authHint());
      } else {
        markToken(false);
        showErrors(summary.errors);
      }
      if (summary.json === undefined && text === '') ui.result.textContent = '(empty response body)';
      else if (summary.json === undefined) ui.result.textContent = text;
      else showBody(summary.pretty);
    } catch (e) {
      if (e && e.name === 'AbortError') {
        setStatus('Stopped', 'err');
      } else {
        setStatus('Request failed', 'err');
        showErrors([{ message: String(e && e.message ? e.message : e), where: 'POST ' + endpoint }], 'The request did not complete');
        ui.result.textContent = '';
      }
    } finally {
      inflight = null;
      setRunning(false);
    }
  }

  // ---------------------------------------------------------------------------
  // History

  let history = L.parseHistory(storage.get(HISTORY_KEY));

  function addToHistory(entry) {
    history = L.addHistory(history, entry);
    storage.set(HISTORY_KEY, JSON.stringify(history));
    renderHistory();
  }

  function renderHistory() {
    ui.historyEmpty.hidden = history.length > 0;
    ui.clearHistory.hidden = history.length === 0;
    ui.historyList.replaceChildren(...history.map((entry) => el('li', null,
      el('button', { type: 'button', onclick: () => loadEntry(entry), title: entry.query },
        el('span', { className: 'label' }, L.historyLabel(entry)),
        el('span', { className: 'time' }, new Date(entry.time).toLocaleString())))));
  }

  function loadEntry(entry) {
    setEditorText(ui.variables, entry.variables);
    setEditorText(ui.query, entry.query);
    refreshOperations();
    if (entry.operationName) ui.operation.value = entry.operationName;
    checkVariables();
    ui.query.focus();
  }

  // ---------------------------------------------------------------------------
  // Documentation explorer

  let schema = null; // from L.indexSchema
  let docsStack = [{ kind: 'root' }];
  let docsMessage = { text: 'Loading the schema…', error: false };

  const KIND_LABELS = {
    OBJECT: 'object type',
    INPUT_OBJECT: 'input type',
    ENUM: 'enum',
    SCALAR: 'scalar',
    INTERFACE: 'interface',
    UNION: 'union',
  };

  function navigate(view) {
    docsStack.push(view);
    ui.docsSearch.value = '';
    renderDocs(true);
  }

  function typeLink(name) {
    return el('button', { type: 'button', className: 'link', onclick: () => navigate({ kind: 'type', name }) }, name);
  }

  function typeRef(ref) {
    const frag = document.createDocumentFragment();
    if (!ref) return frag;
    if (ref.kind === 'NON_NULL') frag.append(typeRef(ref.ofType), '!');
    else if (ref.kind === 'LIST') frag.append('[', typeRef(ref.ofType), ']');
    else frag.append(typeLink(ref.name));
    return frag;
  }

  function description(text) {
    return text ? el('p', { className: 'description' }, text) : null;
  }

  function deprecation(item) {
    return item.isDeprecated
      ? el('p', { className: 'deprecated' }, 'Deprecated' + (item.deprecationReason ? ': ' + item.deprecationReason : ''))
      : null;
  }

  function defaultValue(v) {
    return v !== null && v !== undefined ? el('span', { className: 'default' }, ' = ' + v) : null;
  }

  function argSignature(arg) {
    return el('span', { className: 'arg' }, arg.name + ': ', typeRef(arg.type), defaultValue(arg.defaultValue));
  }

  function fieldItem(typeName, field) {
    const args = field.args || [];
    const name = el('button', {
      type: 'button',
      className: 'link field' + (field.isDeprecated ? ' deprecated-name' : ''),
      onclick: () => navigate({ kind: 'field', type: typeName, field: field.name }),
    }, field.name);
    const sig = el('div', { className: 'sig' }, name);
    if (args.length > 0) sig.append('(', ...args.map(argSignature), ')');
    sig.append(': ', typeRef(field.type));
    return el('li', null, sig, description(field.description), deprecation(field));
  }

  function heading(text) {
    return el('h3', { tabindex: '-1' }, text);
  }

  function section(title, items) {
    return items.length > 0 ? [el('h4', null, title), el('ul', null, ...items)] : [];
  }

  function renderRoot() {
    const out = [heading('Schema')];
    if (!schema) return out;
    out.push(...section('Root types', schema.roots.map((r) =>
      el('li', null, el('span', { className: 'sig' }, r.operation + ': ', typeLink(r.name))))));
    const types = [...schema.types.values()]
      .filter((t) => !t.name.startsWith('__'))
      .sort((a, b) => a.name.localeCompare(b.name));
    out.push(...section('All types', types.map((t) =>
      el('li', null, el('span', { className: 'sig' }, typeLink(t.name)), ' ',
        el('span', { className: 'muted' }, KIND_LABELS[t.kind] || t.kind)))));
    return out;
  }

  function renderType(name) {
    const t = schema && schema.types.get(name);
    if (!t) return [heading(name), el('p', { className: 'message error' }, 'This type is not in the schema.')];
    const out = [heading(t.name), el('p', { className: 'kind' }, KIND_LABELS[t.kind] || t.kind), description(t.description)];
    out.push(...section('Implements', (t.interfaces || []).map((i) => el('li', null, el('span', { className: 'sig' }, typeLink(i.name))))));
    out.push(...section('Fields', (t.fields || []).map((f) => fieldItem(t.name, f))));
    out.push(...section('Input fields', (t.inputFields || []).map((f) =>
      el('li', null, el('div', { className: 'sig' }, el('strong', null, f.name), ': ', typeRef(f.type), defaultValue(f.defaultValue)),
        description(f.description)))));
    out.push(...section('Values', (t.enumValues || []).map((v) =>
      el('li', null, el('div', { className: 'sig' + (v.isDeprecated ? ' deprecated-name' : '') }, v.name),
        description(v.description), deprecation(v)))));
    out.push(...section(t.kind === 'UNION' ? 'Possible types' : 'Implementations',
      (t.possibleTypes || []).map((p) => el('li', null, el('span', { className: 'sig' }, typeLink(p.name))))));
    return out;
  }

  function renderField(typeName, fieldName) {
    const t = schema && schema.types.get(typeName);
    const f = t && (t.fields || []).find((x) => x.name === fieldName);
    if (!f) return [heading(fieldName), el('p', { className: 'message error' }, 'This field is not in the schema.')];
    const out = [
      heading(f.name),
      el('p', { className: 'kind' }, 'field of ', typeLink(typeName)),
      description(f.description),
      deprecation(f),
      el('h4', null, 'Type'),
      el('div', { className: 'sig' }, typeRef(f.type)),
    ];
    out.push(...section('Arguments', (f.args || []).map((a) =>
      el('li', null, el('div', { className: 'sig' }, el('strong', null, a.name), ': ', typeRef(a.type), defaultValue(a.defaultValue)),
        description(a.description)))));
    return out;
  }

  function renderSearch(term) {
    const results = L.searchSchema(schema, term);
    const out = [heading('Search: ' + term)];
    if (results.length === 0) {
      out.push(el('p', { className: 'message' }, 'No type or field matches.'));
      return out;
    }
    const item = (r) => {
      const sig = el('span', { className: 'sig' }, typeLink(r.type));
      if (r.field !== undefined) {
        const t = schema.types.get(r.type);
        const isField = t && (t.fields || []).some((f) => f.name === r.field);
        sig.append('.', el('button', {
          type: 'button',
          className: 'link field',
          onclick: () => navigate(isField ? { kind: 'field', type: r.type, field: r.field } : { kind: 'type', name: r.type }),
        }, r.field));
      }
      return el('li', null, sig);
    };
    out.push(el('ul', null, ...results.map(item)));
    return out;
  }

  function crumbLabel(view) {
    if (view.kind === 'root') return 'Schema';
    if (view.kind === 'type') return view.name;
    return view.type + '.' + view.field;
  }

  function renderDocs(moveFocus) {
    const term = ui.docsSearch.value.trim();
    const crumbs = [];
    docsStack.forEach((view, i) => {
      if (i > 0) crumbs.push(el('span', { className: 'sep', 'aria-hidden': 'true' }, '›'));
      if (i === docsStack.length - 1 && term === '') {
        crumbs.push(el('span', { 'aria-current': 'page' }, crumbLabel(view)));
      } else {
        crumbs.push(el('button', {
          type: 'button',
          onclick: () => {
            docsStack = docsStack.slice(0, i + 1);
            ui.docsSearch.value = '';
            renderDocs(true);
          },
        }, crumbLabel(view)));
      }
    });
    ui.docsCrumbs.replaceChildren(...crumbs);
    ui.docsCrumbs.hidden = docsStack.length === 1 && term === '';

    let body;
    const view = docsStack[docsStack.length - 1];
    if (!schema) body = [heading('Schema')];
    else if (term !== '') body = renderSearch(term);
    else if (view.kind === 'type') body = renderType(view.name);
    else if (view.kind === 'field') body = renderField(view.type, view.field);
    else body = renderRoot();
    if (docsMessage) body.splice(1, 0, el('p', { className: 'message' + (docsMessage.error ? ' error' : '') }, docsMessage.text));
    ui.docsBody.replaceChildren(...body.filter(Boolean));
    ui.docsBody.scrollTop = 0;
    if (moveFocus) {
      const h = ui.docsBody.querySelector('h3');
      if (h) h.focus();
    }
  }

  async function loadSchema() {
    docsMessage = { text: 'Loading the schema…', error: false };
    renderDocs(false);
    try {
      const { response, text } = await post({ query: L.INTROSPECTION_QUERY, operationName: 'PlaygroundIntrospection' });
      const summary = L.summarizeResponse(text);
      if (L.isUnauthenticated(response.status, summary.json)) {
        markToken(true);
        throw new Error(authHint().replace(', then run again', ''));
      }
      const s = summary.json && summary.json.data && summary.json.data.__schema;
      if (!s) {
        const why = summary.errors.length > 0
          ? summary.errors.map((e) => e.message).join('; ')
          : 'HTTP ' + response.status + (summary.json === undefined ? ', not a JSON response' : '');
        throw new Error(why);
      }
      schema = L.indexSchema(s);
      markToken(tokenError !== null);
      docsMessage = null;
      docsStack = docsStack.filter((v) => v.kind === 'root' ||
        (v.kind === 'type' && schema.types.has(v.name)) ||
        (v.kind === 'field' && schema.types.has(v.type)));
    } catch (e) {
      docsMessage = { text: 'Could not load the schema: ' + (e && e.message ? e.message : e), error: true };
    }
    renderDocs(false);
  }

  // ---------------------------------------------------------------------------
  // Page state

  let saveTimer = 0;
  function saveSession() {
    clearTimeout(saveTimer);
    saveTimer = setTimeout(() => {
      storage.set(SESSION_KEY, JSON.stringify({ query: ui.query.value, variables: ui.variables.value }));
    }, 300);
  }

  function initialState() {
    const params = new URLSearchParams(window.location.search);
    if (params.has('query')) {
      let variables = params.get('variables') || '';
      const parsed = L.parseVariables(variables);
      if (parsed.ok && parsed.value) variables = JSON.stringify(parsed.value, null, 2);
      return { query: params.get('query'), variables, operationName: params.get('operationName') };
    }
    try {
      const saved = JSON.parse(storage.get(SESSION_KEY) || 'null');
      if (saved && typeof saved.query === 'string' && typeof saved.variables === 'string') {
        return { query: saved.query, variables: saved.variables, operationName: null };
      }
    } catch (e) {
      // A corrupt saved session falls back to the example.
    }
    return { query: EXAMPLE_QUERY, variables: '', operationName: null };
  }

  function prettifyEditors() {
    const pretty = L.prettify(ui.query.value);
    if (pretty !== ui.query.value) setEditorText(ui.query, pretty);
    const vars = L.parseVariables(ui.variables.value);
    if (vars.ok && vars.value) {
      const text = JSON.stringify(vars.value, null, 2);
      if (text !== ui.variables.value) setEditorText(ui.variables, text);
    }
    ui.query.focus();
  }

  function togglePanel(button, panel) {
    const open = panel.hidden;
    panel.hidden = !open;
    button.setAttribute('aria-expanded', open ? 'true' : 'false');
  }

  // tokenChanged runs when the user is done with the token field: a schema
  // that could not load (for want of a token, say) is loaded again.
  function tokenChanged() {
    readToken();
    if (tokenError) {
      setStatus(tokenError, 'err');
      return;
    }
    if (!schema) loadSchema();
  }

  function init() {
    ui.endpoint.textContent = endpoint;
    ui.token.value = tabStorage.get(TOKEN_KEY) || '';
    readToken();
    const state = initialState();
    ui.query.value = state.query;
    ui.variables.value = state.variables;
    refreshOperations();
    if (state.operationName) ui.operation.value = state.operationName;
    checkVariables();

    setupEditor(ui.query);
    setupEditor(ui.variables);
    ui.query.addEventListener('input', () => {
      refreshOperations();
      followCursor();
      saveSession();
    });
    for (const type of ['keyup', 'click']) ui.query.addEventListener(type, followCursor);
    let checkTimer = 0;
    ui.variables.addEventListener('input', () => {
      clearTimeout(checkTimer);
      checkTimer = setTimeout(checkVariables, 250);
      saveSession();
    });

    ui.token.addEventListener('input', readToken);
    ui.token.addEventListener('change', tokenChanged);
    ui.token.addEventListener('keydown', (e) => {
      if (e.key === 'Enter' && !e.ctrlKey && !e.metaKey) {
        e.preventDefault();
        tokenChanged();
      }
    });
    ui.run.addEventListener('click', run);
    ui.prettify.addEventListener('click', prettifyEditors);
    ui.toggleHistory.addEventListener('click', () => togglePanel(ui.toggleHistory, ui.history));
    ui.toggleDocs.addEventListener('click', () => togglePanel(ui.toggleDocs, ui.docs));
    ui.clearHistory.addEventListener('click', () => {
      history = [];
      storage.set(HISTORY_KEY, '[]');
      renderHistory();
      ui.query.focus();
    });
    ui.reloadSchema.addEventListener('click', loadSchema);
    let searchTimer = 0;
    ui.docsSearch.addEventListener('input', () => {
      clearTimeout(searchTimer);
      searchTimer = setTimeout(() => renderDocs(false), 120);
    });

    document.addEventListener('keydown', (e) => {
      const mod = e.ctrlKey || e.metaKey;
      if (mod && e.key === 'Enter') {
        e.preventDefault();
        run();
      } else if (mod && e.shiftKey && (e.key === 'P' || e.key === 'p')) {
        e.preventDefault();
        prettifyEditors();
      }
    });

    renderHistory();
    loadSchema();
    ui.query.focus();
    ui.query.setSelectionRange(0, 0);
  }

  init();
})();
