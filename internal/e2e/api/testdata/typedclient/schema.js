// schema.js URL DIR: graphql-js's view of fleetcache's typed schema.
//
// It introspects the server at URL with graphql-js's own introspection
// query, builds a client schema from the answer (buildClientSchema) and
// checks it (assertValidSchema), writes the answer to DIR/schema.json, and
// validates each document of DIR/documents.json ({name: text}) against it.
// It prints {"types": n, "errors": {name: [message, ...]}}: a valid
// document has no errors.
const fs = require('fs');
const path = require('path');
const { getIntrospectionQuery, buildClientSchema, assertValidSchema, parse, validate } = require('graphql');

async function main() {
  const [url, dir] = process.argv.slice(2);
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Accept: 'application/graphql-response+json' },
    body: JSON.stringify({ query: getIntrospectionQuery() }),
  });
  const body = await res.json();
  if (!res.ok || body.errors) {
    throw new Error(`introspection: HTTP ${res.status}: ${JSON.stringify(body.errors)}`);
  }
  const schema = buildClientSchema(body.data);
  assertValidSchema(schema);
  fs.writeFileSync(path.join(dir, 'schema.json'), JSON.stringify(body.data));
  const documents = JSON.parse(fs.readFileSync(path.join(dir, 'documents.json'), 'utf8'));
  const errors = {};
  for (const [name, text] of Object.entries(documents)) {
    try {
      errors[name] = validate(schema, parse(text)).map((e) => e.message);
    } catch (e) {
      errors[name] = [String(e.message)]; // a syntax error
    }
  }
  console.log(JSON.stringify({ types: Object.keys(schema.getTypeMap()).length, errors }));
}

main().catch((e) => {
  console.error(e.stack || String(e));
  process.exit(1);
});
