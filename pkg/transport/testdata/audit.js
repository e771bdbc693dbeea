// audit.js URL: runs graphql-http's GraphQL-over-HTTP server audits against
// URL, then fetches the schema with graphql-js's introspection query and
// prints it as SDL. Output, one JSON object on stdout:
//   {"audits": [{id, name, status: "ok"|"error"|"warn"|"notice", reason}], "sdl": "...", "schemaError": null}
'use strict';

const { serverAudits } = require('graphql-http');
const { getIntrospectionQuery, buildClientSchema, lexicographicSortSchema, printSchema } = require('graphql');

async function main(url) {
  const audits = [];
  for (const audit of serverAudits({ url, fetchFn: fetch })) {
    const { id, name, status, reason } = await audit.fn();
    audits.push({ id, name, status, reason: reason || null });
  }

  let sdl = null;
  let schemaError = null;
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/graphql-response+json' },
    body: JSON.stringify({ query: getIntrospectionQuery() }),
  });
  const body = await res.json();
  try {
    if (body.errors) throw new Error(JSON.stringify(body.errors));
    // graphql-go keeps fields, arguments and enum values in maps: sort them.
    sdl = printSchema(lexicographicSortSchema(buildClientSchema(body.data)));
  } catch (err) {
    schemaError = `status ${res.status}: ${err.message}`;
  }
  process.stdout.write(JSON.stringify({ audits, sdl, schemaError }) + '\n');
}

main(process.argv[2]).catch((err) => {
  console.error(err);
  process.exit(1);
});
