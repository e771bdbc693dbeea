// logic.js holds the playground's pure logic: no DOM, no storage, no network.
// In a browser it defines globalThis.PlaygroundLogic; under Node it is a
// CommonJS module, so testdata/logic.test.js can exercise it with node --test.
(function () {
  'use strict';

  // ---------------------------------------------------------------------------
  // GraphQL lexing

  const PUNCTUATORS = '!$&()[]{}:=@|';

  // tokenize splits a GraphQL document into tokens {kind, value, start, end}
  // with kind one of name, number, string, punct, comment. Commas and white
  // space are insignificant and dropped. It never throws: unterminated strings
  // end at the end of the line (or of the document, for block strings), and an
  // unknown character becomes a one-character punct token.
  function tokenize(src) {
    const tokens = [];
    const n = src.length;
    let i = 0;
    const push = (kind, end) => {
      tokens.push({ kind, value: src.slice(i, end), start: i, end });
      i = end;
    };
    while (i < n) {
      const c = src[i];
      if (c === ' ' || c === '\t' || c === ',' || c === '\n' || c === '\r' || c === '\ufeff') {
        i++;
        continue;
      }
      if (c === '#') {
        let j = i;
        while (j < n && src[j] !== '\n' && src[j] !== '\r') j++;
        push('comment', j);
        continue;
      }
      if (c === '"') {
        let j;
        if (src.startsWith('"""', i)) {
          j = i + 3;
          while (j < n && !src.startsWith('"""', j)) {
            j += src.startsWith('\\"""', j) ? 4 : 1;
          }
          j = Math.min(n, j + 3);
        } else {
          j = i + 1;
          while (j < n && src[j] !== '"' && src[j] !== '\n' && src[j] !== '\r') {
            j += src[j] === '\\' ? 2 : 1;
          }
          j = Math.min(n, src[j] === '"' ? j + 1 : j);
        }
        push('string', j);
        continue;
      }
      if (src.startsWith('...', i)) {
        push('punct', i + 3);
        continue;
      }
      if (PUNCTUATORS.includes(c)) {
        push('punct', i + 1);
        continue;
      }
      if (/[_A-Za-z]/.test(c)) {
        let j = i + 1;
        while (j < n && /[_0-9A-Za-z]/.test(src[j])) j++;
        push('name', j);
        continue;
      }
      if (c === '-' || (c >= '0' && c <= '9')) {
        let j = i + 1;
        while (j < n && /[-+.0-9A-Za-z_]/.test(src[j])) j++;
        push('number', j);
        continue;
      }
      push('punct', i + 1);
    }
    return tokens;
  }

  // ---------------------------------------------------------------------------
  // Operations

  const OPERATION_TYPES = ['query', 'mutation', 'subscription'];

  // parseOperations lists the operations a document defines, in order, as
  // {type, name, start, end}: type is query, mutation or subscription, name is
  // null for an anonymous operation, and start/end are character offsets.
  // Fragment definitions are not operations. A definition still being typed
  // (unbalanced braces) ends at the end of the document.
  function parseOperations(src) {
    const tokens = tokenize(src).filter((t) => t.kind !== 'comment');
    const ops = [];
    let depth = 0;
    let current = null; // definition whose header or body we are in
    for (let k = 0; k < tokens.length; k++) {
      const t = tokens[k];
      if (depth === 0 && current === null) {
        if (t.kind === 'name' && (OPERATION_TYPES.includes(t.value) || t.value === 'fragment')) {
          current = { type: t.value, name: null, start: t.start, end: src.length };
          const next = tokens[k + 1];
          if (next && next.kind === 'name') {
            current.name = next.value;
            k++;
          }
          continue;
        }
        if (t.kind === 'punct' && t.value === '{') {
          current = { type: 'query', name: null, start: t.start, end: src.length };
        }
      }
      if (t.kind !== 'punct') continue;
      if (t.value === '{' || t.value === '(' || t.value === '[') depth++;
      if (t.value === '}' || t.value === ')' || t.value === ']') {
        depth = Math.max(0, depth - 1);
        if (depth === 0 && t.value === '}' && current !== null) {
          current.end = t.end;
          if (current.type !== 'fragment') ops.push(current);
          current = null;
        }
      }
    }
    if (current !== null && current.type !== 'fragment') ops.push(current);
    return ops;
  }

  // operationAt returns the operation whose text contains offset, or null.
  function operationAt(ops, offset) {
    return ops.find((op) => op.start <= offset && offset <= op.end) || null;
  }

  // chooseOperationName returns the operationName to send: the selected one
  // when the document defines it, else the first named operation, else null.
  function chooseOperationName(ops, selected) {
    const names = ops.map((op) => op.name).filter((name) => name !== null);
    if (selected && names.includes(selected)) return selected;
    return names.length > 0 ? names[0] : null;
  }

  // ---------------------------------------------------------------------------
  // Variables

  // lineColumn converts a character offset into a 1-based line and column.
  function lineColumn(text, offset) {
    const before = text.slice(0, Math.max(0, Math.min(offset, text.length)));
    const lines = before.split('\n');
    return { line: lines.length, column: lines[lines.length - 1].length + 1 };
  }

  // jsonSyntaxError finds the first syntax error in JSON text, because
  // engines differ in what JSON.parse says (Chromium's message has no
  // position). It returns {offset, message}, or null when text is valid.
  function jsonSyntaxError(text) {
    const n = text.length;
    let i = 0;
    const fail = (message) => {
      throw { offset: i, message };
    };
    const found = () => (i >= n ? 'the end of the text' : "'" + text[i] + "'");
    const space = () => {
      while (i < n && (text[i] === ' ' || text[i] === '\t' || text[i] === '\n' || text[i] === '\r')) i++;
    };
    const numberRE = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
    const string = () => {
      i++; // opening quote
      while (i < n) {
        const c = text[i];
        if (c === '"') {
          i++;
          return;
        }
        if (c === '\\') {
          const e = text[i + 1];
          if (e === 'u' && /^[0-9a-fA-F]{4}$/.test(text.slice(i + 2, i + 6))) i += 6;
          else if (e !== undefined && '"\\/bfnrt'.includes(e)) i += 2;
          else fail('invalid escape in a string');
          continue;
        }
        if (c < ' ') fail('a line break or control character in a string (write it as \\n)');
        i++;
      }
      fail('a string is not closed');
    };
    const value = () => {
      space();
      const c = text[i];
      if (c === '{') {
        i++;
        space();
        if (text[i] === '}') {
          i++;
          return;
        }
        for (;;) {
          space();
          if (text[i] !== '"') fail('expected a property name in double quotes, found ' + found());
          string();
          space();
          if (text[i] !== ':') fail("expected ':' after the property name, found " + found());
          i++;
          value();
          space();
          if (text[i] === ',') {
            i++;
            continue;
          }
          if (text[i] === '}') {
            i++;
            return;
          }
          fail("expected ',' or '}', found " + found());
        }
      }
      if (c === '[') {
        i++;
        space();
        if (text[i] === ']') {
          i++;
          return;
        }
        for (;;) {
          value();
          space();
          if (text[i] === ',') {
            i++;
            continue;
          }
          if (text[i] === ']') {
            i++;
            return;
          }
          fail("expected ',' or ']', found " + found());
        }
      }
      if (c === '"') {
        string();
        return;
      }
      numberRE.lastIndex = i;
      const m = numberRE.exec(text);
      if (m) {
        i += m[0].length;
        return;
      }
      for (const literal of ['true', 'false', 'null']) {
        if (text.startsWith(literal, i)) {
          i += literal.length;
          return;
        }
      }
      fail('expected a value, found ' + found());
    };
    try {
      value();
      space();
      if (i < n) fail('unexpected ' + found() + ' after the end of the value');
      return null;
    } catch (e) {
      if (e && typeof e.offset === 'number') return e;
      return null; // too deeply nested to check here: JSON.parse's message will do
    }
  }

  // parseVariables validates the variables editor's text. It returns
  // {ok: true, value} with value null for an empty editor, or {ok: false,
  // error} with a message that says what is wrong and where.
  function parseVariables(text) {
    if (text.trim() === '') return { ok: true, value: null };
    let value;
    try {
      value = JSON.parse(text);
    } catch (e) {
      const err = jsonSyntaxError(text);
      if (err) {
        const pos = lineColumn(text, err.offset);
        return { ok: false, error: `Variables are not valid JSON: ${err.message} (line ${pos.line}, column ${pos.column}).` };
      }
      return { ok: false, error: `Variables are not valid JSON: ${e && e.message ? e.message : e}.` };
    }
    if (value === null || typeof value !== 'object' || Array.isArray(value)) {
      return { ok: false, error: 'Variables must be a JSON object, like {"first": 10}.' };
    }
    return { ok: true, value };
  }

  // buildRequestBody is what the page POSTs: operationName and variables are
  // left out when there are none.
  function buildRequestBody(query, variables, operationName) {
    const body = { query };
    if (variables) body.variables = variables;
    if (operationName) body.operationName = operationName;
    return body;
  }

  // ---------------------------------------------------------------------------
  // Authentication

  // normalizeToken reads the token field: surrounding space and a pasted
  // "Bearer " prefix are dropped. It returns {ok: true, token} (token '' for
  // an empty field: no header is sent) or {ok: false, error} for text that
  // cannot be sent in a header.
  function normalizeToken(text) {
    const token = String(text).trim().replace(/^bearer\s+/i, '');
    if (token === '' || /^[\x21-\x7e]+$/.test(token)) return { ok: true, token };
    return { ok: false, error: 'A bearer token is printable ASCII text without spaces.' };
  }

  // authHeaders returns the headers that carry token: none without one, so
  // that the page works unchanged against a server without authentication.
  function authHeaders(token) {
    return token ? { Authorization: 'Bearer ' + token } : {};
  }

  // isUnauthenticated reports whether a response says the caller has no
  // valid token: HTTP 401, or a GraphQL error with code UNAUTHENTICATED.
  function isUnauthenticated(status, json) {
    if (status === 401) return true;
    const errors = json && Array.isArray(json.errors) ? json.errors : [];
    return errors.some((e) => e && e.extensions && e.extensions.code === 'UNAUTHENTICATED');
  }

  // ---------------------------------------------------------------------------
  // History

  const HISTORY_LIMIT = 30;

  function validHistoryEntry(e) {
    return e !== null && typeof e === 'object' && typeof e.query === 'string' &&
      typeof e.variables === 'string' && (e.operationName === null || typeof e.operationName === 'string') &&
      typeof e.time === 'number';
  }

  // parseHistory reads stored history, dropping anything malformed.
  function parseHistory(raw) {
    if (typeof raw !== 'string' || raw === '') return [];
    let list;
    try {
      list = JSON.parse(raw);
    } catch (e) {
      return [];
    }
    return Array.isArray(list) ? list.filter(validHistoryEntry).slice(0, HISTORY_LIMIT) : [];
  }

  // addHistory returns a new list with entry first. An older entry with the
  // same query, variables and operation name is dropped, and the list keeps
  // at most limit entries.
  function addHistory(list, entry, limit) {
    const max = limit || HISTORY_LIMIT;
    const same = (e) => e.query === entry.query && e.variables === entry.variables &&
      e.operationName === entry.operationName;
    return [entry].concat(list.filter((e) => !same(e))).slice(0, max);
  }

  // historyLabel names a history entry: its operation name, else its first
  // line that is not a comment, shortened.
  function historyLabel(entry) {
    if (entry.operationName) return entry.operationName;
    const ops = parseOperations(entry.query);
    if (ops.length > 0 && ops[0].name) return ops[0].name;
    const compact = entry.query.replace(/#[^\n]*/g, ' ').replace(/\s+/g, ' ').trim();
    const text = compact !== '' ? compact : '(empty)';
    return text.length > 60 ? text.slice(0, 59) + '…' : text;
  }

  // ---------------------------------------------------------------------------
  // Editing

  const CLOSERS = { '{': '}', '(': ')', '[': ']' };

  // newlineIndent says what Enter inserts when the selection is [start, end):
  // a newline, the current line's indentation, two more spaces after an
  // opening bracket, and the closing bracket on its own line when it directly
  // follows the cursor. cursor is the caret offset after the insertion.
  function newlineIndent(text, start, end) {
    const lineStart = text.lastIndexOf('\n', start - 1) + 1;
    const indent = /^[ \t]*/.exec(text.slice(lineStart, start))[0];
    const before = text.slice(lineStart, start).replace(/\s+$/, '').slice(-1);
    const after = text[end];
    if (CLOSERS[before]) {
      const inner = indent + '  ';
      if (after === CLOSERS[before]) {
        return { insert: '\n' + inner + '\n' + indent, cursor: start + 1 + inner.length };
      }
      return { insert: '\n' + inner, cursor: start + 1 + inner.length };
    }
    return { insert: '\n' + indent, cursor: start + 1 + indent.length };
  }

  // closerDedent says how typing a closing bracket at start changes the text
  // when only spaces precede it on its line: those spaces lose one level (two
  // spaces). It returns {from, insert} (replace [from, start) with insert),
  // or null when the bracket is typed normally.
  function closerDedent(text, start) {
    const lineStart = text.lastIndexOf('\n', start - 1) + 1;
    const lead = text.slice(lineStart, start);
    if (lead.length < 2 || !/^ +$/.test(lead)) return null;
    return { from: lineStart, insert: lead.slice(2) };
  }

  // indentLines indents (or, with dedent, un-indents) by two spaces every line
  // that the selection [start, end) touches. It returns the replacement for
  // [from, to) and the new selection.
  function indentLines(text, start, end, dedent) {
    const from = text.lastIndexOf('\n', start - 1) + 1;
    let to = end;
    if (end > start && text[end - 1] === '\n') to = end - 1; // a selection ending at a line start
    const nl = text.indexOf('\n', to);
    to = nl === -1 ? text.length : nl;
    const lines = text.slice(from, to).split('\n');
    let firstDelta = 0;
    let total = 0;
    const changed = lines.map((line, i) => {
      let delta;
      let out;
      if (dedent) {
        const remove = /^ {0,2}/.exec(line)[0].length;
        out = line.slice(remove);
        delta = -remove;
      } else {
        out = '  ' + line;
        delta = 2;
      }
      if (i === 0) firstDelta = delta;
      total += delta;
      return out;
    });
    const insert = changed.join('\n');
    return {
      from,
      to,
      insert,
      start: Math.max(from, start + firstDelta),
      end: Math.max(from, end + total),
    };
  }

  // prettify re-indents a GraphQL document: one selection per line, two
  // spaces per level, arguments and variable definitions on one line,
  // a blank line between definitions. Comments are kept on their own lines.
  function prettify(src) {
    const tokens = tokenize(src);
    const out = [];
    const stack = []; // '(' '[' '{v' (object value) '{s' (selection set)
    let indent = 0;
    let atLineStart = true;
    let blankPending = false;
    let prev = null;
    let prevPrev = null;

    const top = () => stack[stack.length - 1];
    const inValue = () => top() === '(' || top() === '[' || top() === '{v';
    const newline = () => {
      if (!atLineStart) {
        out.push('\n');
        atLineStart = true;
      }
    };
    const emit = (text, sep) => {
      if (atLineStart) {
        if (blankPending && out.length > 0) out.push('\n');
        blankPending = false;
        out.push('  '.repeat(indent));
      } else {
        out.push(sep);
      }
      out.push(text);
      atLineStart = false;
    };
    const is = (t, kind, value) => t !== null && t.kind === kind && (value === undefined || t.value === value);
    const endsValue = (t) => t !== null && (t.kind === 'name' || t.kind === 'number' || t.kind === 'string' ||
      (t.kind === 'punct' && ']})!'.includes(t.value)));
    const startsItem = (t) => t.kind === 'name' || t.kind === 'number' || t.kind === 'string' ||
      (t.kind === 'punct' && '$[{'.includes(t.value));

    for (let k = 0; k < tokens.length; k++) {
      const t = tokens[k];
      const v = t.value;
      if (t.kind === 'comment') {
        newline();
        emit(v, '');
        newline();
        continue;
      }
      if (inValue()) {
        let sep = ' ';
        if (t.kind === 'punct' && ')]}'.includes(v)) {
          sep = '';
          stack.pop();
        } else if (v === ':' || v === '!' || v === '(') {
          sep = '';
        } else if (is(prev, 'punct') && '([{$@'.includes(prev.value)) {
          sep = '';
        } else if (v === '@' || v === '=' || is(prev, 'punct', ':') || is(prev, 'punct', '=')) {
          sep = ' ';
        } else if (endsValue(prev) && startsItem(t)) {
          sep = ', ';
        }
        emit(v, sep);
        if (v === '(' || v === '[') stack.push(v);
        if (v === '{') stack.push('{v');
      } else if (t.kind === 'punct' && v === '{') {
        stack.push('{s');
        emit('{', ' ');
        indent++;
        newline();
      } else if (t.kind === 'punct' && v === '}') {
        if (top() === '{s') stack.pop();
        indent = Math.max(0, indent - 1);
        newline();
        emit('}', '');
        newline();
        if (stack.length === 0) blankPending = true;
      } else if (t.kind === 'punct' && (v === '(' || v === '[')) {
        emit(v, '');
        stack.push(v);
      } else if (t.kind === 'punct' && v === '...') {
        if (top() === '{s') newline();
        emit(v, ' ');
      } else if (t.kind === 'punct' && (v === ':' || v === '!')) {
        emit(v, '');
      } else if (t.kind === 'punct' && (v === ')' || v === ']')) {
        emit(v, ''); // unbalanced: keep it
      } else if (t.kind === 'name' && top() === '{s') {
        let sep = null;
        if (is(prev, 'punct', '...')) {
          const next = tokens[k + 1];
          sep = v === 'on' && next && next.kind === 'name' ? ' ' : '';
        } else if (is(prev, 'punct', '@')) {
          sep = '';
        } else if (is(prev, 'punct', ':') || (is(prev, 'name', 'on') && is(prevPrev, 'punct', '...'))) {
          sep = ' ';
        }
        if (sep === null) {
          newline();
          sep = '';
        }
        emit(v, sep);
      } else {
        emit(v, is(prev, 'punct', '@') || is(prev, 'punct', '$') ? '' : ' ');
      }
      prevPrev = prev;
      prev = t;
    }
    return out.join('').replace(/[ \t]+\n/g, '\n').replace(/\s+$/, '');
  }

  // ---------------------------------------------------------------------------
  // Schema (from introspection)

  const TYPE_REF = 'kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name } } } } } } }';

  // INTROSPECTION_QUERY asks for what the documentation explorer shows.
  const INTROSPECTION_QUERY = `query PlaygroundIntrospection {
  __schema {
    queryType { name }
    mutationType { name }
    subscriptionType { name }
    types {
      kind name description
      fields(includeDeprecated: true) {
        name description
        args { name description defaultValue type { ${TYPE_REF} } }
        type { ${TYPE_REF} }
        isDeprecated deprecationReason
      }
      inputFields { name description defaultValue type { ${TYPE_REF} } }
      interfaces { name }
      enumValues(includeDeprecated: true) { name description isDeprecated deprecationReason }
      possibleTypes { name }
    }
  }
}`;

  // typeString renders an introspection type reference, like [String!]!.
  function typeString(ref) {
    if (!ref) return '';
    if (ref.kind === 'NON_NULL') return typeString(ref.ofType) + '!';
    if (ref.kind === 'LIST') return '[' + typeString(ref.ofType) + ']';
    return ref.name || '';
  }

  // namedType returns the name of the type inside lists and non-nulls.
  function namedType(ref) {
    let r = ref;
    while (r && !r.name && r.ofType) r = r.ofType;
    return r ? r.name : null;
  }

  // indexSchema turns an introspection result (data.__schema) into
  // {roots: [{operation, name}], types: Map name→type}.
  function indexSchema(schema) {
    const types = new Map();
    for (const t of schema.types || []) types.set(t.name, t);
    const roots = [];
    for (const [operation, key] of [['query', 'queryType'], ['mutation', 'mutationType'], ['subscription', 'subscriptionType']]) {
      if (schema[key] && schema[key].name) roots.push({ operation, name: schema[key].name });
    }
    return { roots, types };
  }

  // searchSchema finds types and fields whose name contains term (case
  // insensitive): exact matches first, then prefixes, then the rest; within
  // each, types before fields, by name. Introspection types (__Type, …) are
  // left out unless the term starts with "__". Results are {type} or
  // {type, field}.
  function searchSchema(index, term, limit) {
    const q = term.trim().toLowerCase();
    if (q === '') return [];
    const max = limit || 100;
    const rank = (name) => {
      const s = name.toLowerCase();
      if (s === q) return 0;
      if (s.startsWith(q)) return 1;
      return s.includes(q) ? 2 : -1;
    };
    const found = [];
    for (const t of index.types.values()) {
      if (t.name.startsWith('__') && !q.startsWith('__')) continue;
      const r = rank(t.name);
      if (r >= 0) found.push({ rank: r, key: '0 ' + t.name, result: { type: t.name } });
      for (const f of (t.fields || []).concat(t.inputFields || [])) {
        const fr = rank(f.name);
        if (fr >= 0) found.push({ rank: fr, key: '1 ' + t.name + '.' + f.name, result: { type: t.name, field: f.name } });
      }
    }
    found.sort((a, b) => a.rank - b.rank || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    return found.slice(0, max).map((f) => f.result);
  }

  // ---------------------------------------------------------------------------
  // Responses

  // jsonTokens splits JSON text into {kind, text} pieces for highlighting,
  // with kind one of key, string, number, literal, punct, space. Joining the
  // texts gives the input back.
  function jsonTokens(text) {
    const re = /("(?:\\.|[^"\\])*")(\s*:)?|(-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)|\b(true|false|null)\b|([{}[\],:])/g;
    const out = [];
    let last = 0;
    let m;
    while ((m = re.exec(text)) !== null) {
      if (m.index > last) out.push({ kind: 'space', text: text.slice(last, m.index) });
      if (m[1] !== undefined) {
        out.push({ kind: m[2] ? 'key' : 'string', text: m[1] });
        if (m[2]) out.push({ kind: 'punct', text: m[2] });
      } else if (m[3] !== undefined) {
        out.push({ kind: 'number', text: m[3] });
      } else if (m[4] !== undefined) {
        out.push({ kind: 'literal', text: m[4] });
      } else {
        out.push({ kind: 'punct', text: m[5] });
      }
      last = re.lastIndex;
    }
    if (last < text.length) out.push({ kind: 'space', text: text.slice(last) });
    return out;
  }

  // summarizeResponse reads a response body: {json, pretty, errors} where json
  // is the parsed body or undefined when it is not JSON, pretty is the text to
  // show, and errors lists GraphQL errors as {message, where}.
  function summarizeResponse(text) {
    let json;
    try {
      json = JSON.parse(text);
    } catch (e) {
      return { json: undefined, pretty: text, errors: [] };
    }
    const errors = [];
    if (json && Array.isArray(json.errors)) {
      for (const e of json.errors) {
        const message = e && typeof e.message === 'string' ? e.message : JSON.stringify(e);
        const where = [];
        if (e && Array.isArray(e.path)) where.push('path ' + e.path.join('.'));
        if (e && Array.isArray(e.locations)) {
          for (const l of e.locations) where.push(`line ${l.line}, column ${l.column}`);
        }
        errors.push({ message, where: where.join('; ') });
      }
    }
    return { json, pretty: JSON.stringify(json, null, 2), errors };
  }

  // formatBytes renders a size, like 1.2 kB.
  function formatBytes(n) {
    if (n < 1000) return n + ' B';
    if (n < 1000 * 1000) return (n / 1000).toFixed(1) + ' kB';
    return (n / 1000 / 1000).toFixed(1) + ' MB';
  }

  const api = {
    tokenize,
    parseOperations,
    operationAt,
    chooseOperationName,
    jsonSyntaxError,
    parseVariables,
    buildRequestBody,
    normalizeToken,
    authHeaders,
    isUnauthenticated,
    HISTORY_LIMIT,
    parseHistory,
    addHistory,
    historyLabel,
    newlineIndent,
    closerDedent,
    indentLines,
    prettify,
    INTROSPECTION_QUERY,
    typeString,
    namedType,
    indexSchema,
    searchSchema,
    jsonTokens,
    summarizeResponse,
    formatBytes,
  };
  if (typeof module === 'object' && module.exports) {
    module.exports = api;
  } else {
    globalThis.PlaygroundLogic = api;
  }
})();
