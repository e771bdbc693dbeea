// Tests for assets/logic.js, run by playground_test.go with node --test.
'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');

const L = require(path.join(__dirname, '..', 'assets', 'logic.js'));

test('parseOperations', async (t) => {
  const cases = [
    { name: 'empty', doc: '', want: [] },
    { name: 'anonymous shorthand', doc: '{ clusters { name } }', want: [['query', null]] },
    { name: 'named query', doc: 'query Pods { resources { totalCount } }', want: [['query', 'Pods']] },
    {
      name: 'several operations, fragment skipped',
      doc: 'query A { a }\nfragment F on T { x }\nmutation B($x: Int) { b(x: $x) { ...F } }\nsubscription C { c }',
      want: [['query', 'A'], ['mutation', 'B'], ['subscription', 'C']],
    },
    {
      name: 'braces in strings, comments and block strings do not count',
      doc: 'query A { a(s: "}{", t: """ } """) # }\n}\nquery B { b }',
      want: [['query', 'A'], ['query', 'B']],
    },
    { name: 'operation named like a keyword', doc: 'query query { a }', want: [['query', 'query']] },
    { name: 'unfinished while typing', doc: 'query A { a }\nquery B { b {', want: [['query', 'A'], ['query', 'B']] },
    { name: 'variables with default object', doc: 'query A($f: F = {k: 1}) { a }', want: [['query', 'A']] },
  ];
  for (const c of cases) {
    await t.test(c.name, () => {
      assert.deepEqual(L.parseOperations(c.doc).map((op) => [op.type, op.name]), c.want);
    });
  }
});

test('operationAt and chooseOperationName', () => {
  const doc = 'query A { a }\n\nquery B { b }';
  const ops = L.parseOperations(doc);
  assert.equal(L.operationAt(ops, doc.indexOf('a }')).name, 'A');
  assert.equal(L.operationAt(ops, doc.indexOf('b }')).name, 'B');
  assert.equal(L.operationAt(ops, doc.indexOf('\n\n') + 1), null);
  assert.equal(L.chooseOperationName(ops, 'B'), 'B');
  assert.equal(L.chooseOperationName(ops, 'Gone'), 'A');
  assert.equal(L.chooseOperationName(ops, ''), 'A');
  assert.equal(L.chooseOperationName(L.parseOperations('{ a }'), ''), null);
  assert.equal(L.chooseOperationName([], 'A'), null);
});

test('parseVariables', async (t) => {
  const cases = [
    { name: 'empty', text: '', want: { ok: true, value: null } },
    { name: 'blank', text: ' \n ', want: { ok: true, value: null } },
    { name: 'object', text: '{"first": 10, "kinds": ["Pod"]}', want: { ok: true, value: { first: 10, kinds: ['Pod'] } } },
    { name: 'array', text: '[1]', error: /must be a JSON object/ },
    { name: 'null', text: 'null', error: /must be a JSON object/ },
    { name: 'number', text: '3', error: /must be a JSON object/ },
    {
      name: 'trailing comma says where',
      text: '{\n  "a": 1,\n}',
      error: /^Variables are not valid JSON: expected a property name in double quotes, found '}' \(line 3, column 1\)\.$/,
    },
    { name: 'missing value', text: '{"first": }', error: /expected a value, found '}' \(line 1, column 11\)/ },
    { name: 'unquoted key', text: '{first: 1}', error: /expected a property name in double quotes, found 'f' \(line 1, column 2\)/ },
    { name: 'not closed', text: '{"a": [1, 2', error: /expected ',' or '\]', found the end of the text \(line 1, column 12\)/ },
    { name: 'text after the object', text: '{} x', error: /unexpected 'x' after the end of the value \(line 1, column 4\)/ },
  ];
  for (const c of cases) {
    await t.test(c.name, () => {
      const got = L.parseVariables(c.text);
      if (c.error) {
        assert.equal(got.ok, false);
        assert.match(got.error, c.error);
      } else {
        assert.deepEqual(got, c.want);
      }
    });
  }
});

test('jsonSyntaxError agrees with JSON.parse', () => {
  const samples = [
    '{}', '[]', '{"a": [1, -2.5e3, true, false, null, "x\\n\\u00e9"]}', ' {"a": {"b": {}}} ',
    '', '{', '{"a"}', '{"a": 01}', '{"a": .5}', '["x\ny"]', '["\\q"]', '[1,]', 'tru', '"unterminated', '{"a": 1}}', 'nul',
  ];
  for (const text of samples) {
    let valid = true;
    try {
      JSON.parse(text);
    } catch (e) {
      valid = false;
    }
    const err = L.jsonSyntaxError(text);
    assert.equal(err === null, valid, `${JSON.stringify(text)}: JSON.parse valid=${valid}, jsonSyntaxError=${JSON.stringify(err)}`);
  }
  // Random texts built from JSON's pieces, from a fixed seed.
  const pieces = ['{', '}', '[', ']', ',', ':', '"', 'a', '1', '-', '0', '.', 'e', ' ', '\n', 'true', 'null', '\\', '\\n', 'x"'];
  let seed = 1;
  const random = (n) => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return Math.floor((seed / 2147483648) * n);
  };
  for (let k = 0; k < 20000; k++) {
    let text = '';
    for (let j = random(12) + 1; j > 0; j--) text += pieces[random(pieces.length)];
    let valid = true;
    try {
      JSON.parse(text);
    } catch (e) {
      valid = false;
    }
    assert.equal(L.jsonSyntaxError(text) === null, valid, JSON.stringify(text));
  }
});

test('buildRequestBody leaves out what is not there', () => {
  assert.deepEqual(L.buildRequestBody('{ a }', null, null), { query: '{ a }' });
  assert.deepEqual(L.buildRequestBody('query A { a }', { x: 1 }, 'A'), { query: 'query A { a }', variables: { x: 1 }, operationName: 'A' });
  assert.equal(JSON.stringify(L.buildRequestBody('{ a }', null, null)), '{"query":"{ a }"}');
});

test('history', async (t) => {
  const e = (query, time, operationName = null, variables = '') => ({ query, variables, operationName, time });
  await t.test('newest first, duplicates moved up', () => {
    let list = [];
    list = L.addHistory(list, e('{ a }', 1));
    list = L.addHistory(list, e('{ b }', 2));
    list = L.addHistory(list, e('{ a }', 3));
    assert.deepEqual(list.map((x) => [x.query, x.time]), [['{ a }', 3], ['{ b }', 2]]);
  });
  await t.test('different variables are different entries', () => {
    const list = L.addHistory([e('{ a }', 1, null, '{"x":1}')], e('{ a }', 2, null, '{"x":2}'));
    assert.equal(list.length, 2);
  });
  await t.test('bounded', () => {
    let list = [];
    for (let i = 0; i < 50; i++) list = L.addHistory(list, e(`{ f${i} }`, i));
    assert.equal(list.length, L.HISTORY_LIMIT);
    assert.equal(list[0].query, '{ f49 }');
    assert.equal(L.addHistory(list, e('{ z }', 99), 3).length, 3);
  });
  await t.test('parseHistory drops what is malformed', () => {
    assert.deepEqual(L.parseHistory(null), []);
    assert.deepEqual(L.parseHistory('not json'), []);
    assert.deepEqual(L.parseHistory('{"query":"x"}'), []);
    const good = e('{ a }', 1);
    assert.deepEqual(L.parseHistory(JSON.stringify([good, { query: 1 }, null, 'x'])), [good]);
  });
  await t.test('labels', () => {
    assert.equal(L.historyLabel(e('query A { a } query B { b }', 1, 'B')), 'B');
    assert.equal(L.historyLabel(e('query Pods { a }', 1)), 'Pods');
    assert.equal(L.historyLabel(e('# comment\n{\n  clusters { name }\n}', 1)), '{ clusters { name } }');
    assert.equal(L.historyLabel(e('', 1)), '(empty)');
    assert.ok(L.historyLabel(e('{ ' + 'x '.repeat(100) + '}', 1)).length <= 60);
  });
});

test('editing helpers', async (t) => {
  await t.test('Enter keeps indentation', () => {
    const text = '{\n  clusters';
    assert.deepEqual(L.newlineIndent(text, text.length, text.length), { insert: '\n  ', cursor: text.length + 3 });
  });
  await t.test('Enter after an opening bracket indents', () => {
    const text = '{\n  clusters {';
    assert.deepEqual(L.newlineIndent(text, text.length, text.length), { insert: '\n    ', cursor: text.length + 5 });
  });
  await t.test('Enter between brackets opens a block', () => {
    const text = '{}';
    assert.deepEqual(L.newlineIndent(text, 1, 1), { insert: '\n  \n', cursor: 4 });
  });
  await t.test('closing bracket dedents a blank line', () => {
    assert.deepEqual(L.closerDedent('{\n    ', 6), { from: 2, insert: '  ' });
    assert.equal(L.closerDedent('{\n  a ', 6), null);
    assert.equal(L.closerDedent('{\n ', 3), null);
  });
  await t.test('indent and dedent lines', () => {
    const text = 'a\nb\nc';
    const r = L.indentLines(text, 0, 3, false);
    assert.equal(text.slice(0, r.from) + r.insert + text.slice(r.to), '  a\n  b\nc');
    assert.deepEqual([r.start, r.end], [2, 7]);
    const d = L.indentLines('  a\n b\nc', 0, 6, true);
    assert.equal(d.insert, 'a\nb');
  });
});

test('prettify', async (t) => {
  const example = '{ clusters { name status objectCount } resources(filter: {kinds: ["Pod"]}, first: 10) { totalCount edges { node { cluster namespace name } } } }';
  const want = [
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
  ].join('\n');
  await t.test('example', () => assert.equal(L.prettify(example), want));
  await t.test('idempotent', () => assert.equal(L.prettify(want), want));
  await t.test('operations, variables, aliases, fragments, directives, comments', () => {
    const doc = 'query Q($a: Int = 1 $b: [String!]!) @d(x: 1) { x: f(a: $a) @include(if: true) { ...F ... on T { id } } }' +
      '# note\nfragment F on T { id }';
    assert.equal(L.prettify(doc), [
      'query Q($a: Int = 1, $b: [String!]!) @d(x: 1) {',
      '  x: f(a: $a) @include(if: true) {',
      '    ...F',
      '    ... on T {',
      '      id',
      '    }',
      '  }',
      '}',
      '',
      '# note',
      'fragment F on T {',
      '  id',
      '}',
    ].join('\n'));
  });
  await t.test('keeps strings as written', () => {
    assert.equal(L.prettify('{ a(s: "x  ,  y") }'), '{\n  a(s: "x  ,  y")\n}');
  });
  await t.test('unbalanced input does not throw', () => {
    assert.equal(typeof L.prettify('{ a { b '), 'string');
    assert.equal(typeof L.prettify('} } ) ]'), 'string');
  });
});

test('schema helpers', () => {
  const ref = { kind: 'NON_NULL', name: null, ofType: { kind: 'LIST', name: null, ofType: { kind: 'NON_NULL', name: null, ofType: { kind: 'OBJECT', name: 'Cluster' } } } };
  assert.equal(L.typeString(ref), '[Cluster!]!');
  assert.equal(L.namedType(ref), 'Cluster');
  const index = L.indexSchema({
    queryType: { name: 'Query' },
    mutationType: null,
    types: [
      { kind: 'OBJECT', name: 'Query', fields: [{ name: 'clusters' }, { name: 'cluster' }] },
      { kind: 'OBJECT', name: 'Cluster', fields: [{ name: 'name' }, { name: 'clusterStatus' }] },
      { kind: 'INPUT_OBJECT', name: 'ResourceFilter', inputFields: [{ name: 'clusters' }] },
      { kind: 'OBJECT', name: '__Type', fields: [{ name: 'name' }] },
    ],
  });
  assert.deepEqual(index.roots, [{ operation: 'query', name: 'Query' }]);
  assert.deepEqual(L.searchSchema(index, 'cluster'), [
    { type: 'Cluster' },
    { type: 'Query', field: 'cluster' },
    { type: 'Cluster', field: 'clusterStatus' },
    { type: 'Query', field: 'clusters' },
    { type: 'ResourceFilter', field: 'clusters' },
  ]);
  assert.deepEqual(L.searchSchema(index, 'status'), [{ type: 'Cluster', field: 'clusterStatus' }]);
  assert.deepEqual(L.searchSchema(index, '  '), []);
  assert.deepEqual(L.searchSchema(index, '__ty'), [{ type: '__Type' }]);
  assert.ok(L.INTROSPECTION_QUERY.includes('__schema'));
  assert.deepEqual(L.parseOperations(L.INTROSPECTION_QUERY).map((op) => op.name), ['PlaygroundIntrospection']);
});

test('authentication', async (t) => {
  await t.test('normalizeToken', () => {
    assert.deepEqual(L.normalizeToken(''), { ok: true, token: '' });
    assert.deepEqual(L.normalizeToken('  abc.DEF-123  '), { ok: true, token: 'abc.DEF-123' });
    assert.deepEqual(L.normalizeToken('Bearer abc'), { ok: true, token: 'abc' });
    assert.deepEqual(L.normalizeToken('bearer   abc\n'), { ok: true, token: 'abc' });
    assert.equal(L.normalizeToken('two words').ok, false);
    assert.equal(L.normalizeToken('line\nbreak').ok, false);
    assert.equal(L.normalizeToken('caf\u00e9').ok, false);
  });
  await t.test('authHeaders sends nothing without a token', () => {
    assert.deepEqual(L.authHeaders(''), {});
    assert.deepEqual(L.authHeaders('abc'), { Authorization: 'Bearer abc' });
  });
  await t.test('isUnauthenticated', () => {
    const unauthenticated = { errors: [{ message: 'unauthenticated', extensions: { code: 'UNAUTHENTICATED' } }] };
    assert.equal(L.isUnauthenticated(401, unauthenticated), true);
    assert.equal(L.isUnauthenticated(401, undefined), true);
    assert.equal(L.isUnauthenticated(200, unauthenticated), true);
    assert.equal(L.isUnauthenticated(200, { data: { a: 1 } }), false);
    assert.equal(L.isUnauthenticated(403, { errors: [{ message: 'no', extensions: { code: 'FORBIDDEN' } }] }), false);
    assert.equal(L.isUnauthenticated(400, { errors: [null, 'x'] }), false);
  });
});

test('responses', async (t) => {
  await t.test('jsonTokens round-trips and classifies', () => {
    const text = JSON.stringify({ data: { a: 'x:"y"', n: -1.5e3, ok: true, none: null, list: [1, 2] } }, null, 2);
    const tokens = L.jsonTokens(text);
    assert.equal(tokens.map((x) => x.text).join(''), text);
    const kinds = new Set(tokens.map((x) => x.kind));
    for (const k of ['key', 'string', 'number', 'literal', 'punct', 'space']) assert.ok(kinds.has(k), k);
    assert.deepEqual(tokens.find((x) => x.kind === 'string'), { kind: 'string', text: '"x:\\"y\\""' });
  });
  await t.test('summarizeResponse reads errors', () => {
    const s = L.summarizeResponse('{"errors":[{"message":"boom","path":["resources",0],"locations":[{"line":2,"column":3}]}],"data":null}');
    assert.deepEqual(s.errors, [{ message: 'boom', where: 'path resources.0; line 2, column 3' }]);
    assert.equal(s.pretty, JSON.stringify(s.json, null, 2));
  });
  await t.test('summarizeResponse keeps a body that is not JSON', () => {
    assert.deepEqual(L.summarizeResponse('upstream timeout'), { json: undefined, pretty: 'upstream timeout', errors: [] });
  });
  await t.test('formatBytes', () => {
    assert.equal(L.formatBytes(12), '12 B');
    assert.equal(L.formatBytes(1234), '1.2 kB');
    assert.equal(L.formatBytes(2500000), '2.5 MB');
  });
});
