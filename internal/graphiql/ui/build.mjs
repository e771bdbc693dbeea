// Bundles GraphiQL, its explorer plugin and the graphql-ws client into one
// script and one style sheet under ../dist, which the Go package embeds.
// Run by the Makefile (make ui) after npm ci; see ../doc.go.
import { build } from 'esbuild';

await build({
  entryPoints: { graphiql: 'src/main.jsx' },
  outdir: '../dist',
  bundle: true,
  minify: true,
  format: 'iife',
  target: ['es2020'],
  jsx: 'automatic',
  legalComments: 'linked',
  define: { 'process.env.NODE_ENV': '"production"' },
  logLevel: 'warning',
});
