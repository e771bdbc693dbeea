// fleetcache's GraphiQL: GraphiQL with the Explorer plugin, a fetcher that
// runs queries over HTTP and subscriptions over WebSocket (graphql-ws, the
// graphql-transport-ws protocol), and a bearer token field. See ../doc.go.
import { useCallback, useEffect, useMemo, useState } from 'react';
import { createRoot } from 'react-dom/client';
import { GraphiQL } from 'graphiql';
import { explorerPlugin } from '@graphiql/plugin-explorer';
import { createGraphiQLFetcher } from '@graphiql/toolkit';
import { createClient } from 'graphql-ws';
import { parse } from 'graphql';
import 'graphiql/style.css';
import '@graphiql/plugin-explorer/style.css';
import './fleetcache.css';
import { examples } from './examples.js';

// TOKEN_KEY names the token in sessionStorage: it ends with the tab, and
// is never written to localStorage or a URL.
const TOKEN_KEY = 'fleetcache.graphiql.token';

const endpoint = document.querySelector('meta[name="graphql-endpoint"]')?.content || '/graphql';
const httpURL = new URL(endpoint, window.location.href);
const wsURL = new URL(httpURL);
wsURL.protocol = httpURL.protocol === 'https:' ? 'wss:' : 'ws:';

function loadToken() {
  try {
    return sessionStorage.getItem(TOKEN_KEY) ?? '';
  } catch {
    return '';
  }
}

function storeToken(value) {
  try {
    if (value) sessionStorage.setItem(TOKEN_KEY, value);
    else sessionStorage.removeItem(TOKEN_KEY);
  } catch {
    // Storage is off: the token lasts as long as the page.
  }
}

// normalizeToken accepts a token pasted with its "Bearer " prefix; it
// returns null for text that cannot be a header value.
function normalizeToken(text) {
  const t = text.trim().replace(/^bearer\s+/i, '');
  if (t === '') return '';
  return /^[\x21-\x7e]+$/.test(t) ? t : null;
}

// newFetcher returns a GraphiQL fetcher sending token (if any) as
// Authorization: Bearer over HTTP and in connection_init over WebSocket,
// with the graphql-ws client that runs subscriptions, and reports each
// HTTP answer's status to onStatus.
function newFetcher(token, onStatus) {
  const auth = token ? { Authorization: `Bearer ${token}` } : {};
  const wsClient = createClient({
    url: wsURL.href,
    lazy: true,
    connectionParams: () => (token ? { authorization: `Bearer ${token}` } : {}),
    retryAttempts: 3,
  });
  const base = createGraphiQLFetcher({
    url: httpURL.href,
    wsClient,
    headers: auth,
    fetch: async (input, init) => {
      const res = await window.fetch(input, init);
      onStatus(res.status);
      return res;
    },
  });
  // GraphiQL parses the editor's text after a delay, so a query run right
  // after an edit (a paste, then Ctrl-Enter) comes with the previous text's
  // AST and operation name: the toolkit would send a subscription over HTTP,
  // or name an operation the text no longer has. Parse the text actually
  // sent, and name its only operation when the name given is not in it.
  const fetcher = (params, opts) => {
    let documentAST = opts?.documentAST;
    let { operationName } = params;
    try {
      documentAST = parse(params.query);
      const ops = documentAST.definitions.filter((d) => d.kind === 'OperationDefinition');
      if (ops.length === 1 && !ops.some((op) => op.name?.value === operationName)) {
        operationName = ops[0].name?.value ?? null;
      }
    } catch {
      // Not valid: the server says why.
    }
    return base({ ...params, operationName }, { ...opts, documentAST });
  };
  return { fetcher, dispose: () => wsClient.dispose() };
}

const explorer = explorerPlugin({ showAttribution: false });

// linked is the operation a link opened GraphiQL with, in the URL's
// fragment (never sent to the server, so never in its logs):
// /graphql#query=…&variables=…, as the status page writes its links.
function linked() {
  const params = new URLSearchParams(window.location.hash.slice(1));
  const query = params.get('query');
  return query ? { query, variables: params.get('variables') ?? undefined } : {};
}

function TokenBar({ token, onToken, unauthorized }) {
  const [draft, setDraft] = useState('');
  const [problem, setProblem] = useState('');
  const submit = (e) => {
    e.preventDefault();
    const t = normalizeToken(draft);
    if (t === null) {
      setProblem('A bearer token is printable text without spaces.');
      return;
    }
    setProblem('');
    setDraft('');
    onToken(t);
  };
  let hint = token ? 'A token is set for this tab.' : 'No token: requests are sent without one.';
  if (unauthorized) {
    hint = token
      ? 'The server did not accept this token (HTTP 401): enter another one.'
      : 'The server needs a bearer token (HTTP 401): enter one here.';
  }
  return (
    <header className="fc-bar">
      <span className="fc-brand">fleetcache <b>GraphiQL</b></span>
      <form className="fc-token" onSubmit={submit}>
        <label htmlFor="fc-token">Token</label>
        <input
          id="fc-token"
          type="password"
          autoComplete="off"
          spellCheck="false"
          placeholder="Bearer token, if the server asks"
          value={draft}
          onChange={(e) => setDraft(e.target.value)}
          aria-invalid={unauthorized ? 'true' : 'false'}
          aria-describedby="fc-token-hint"
        />
        <button type="submit">Use</button>
        {token ? <button type="button" onClick={() => onToken('')}>Forget</button> : null}
      </form>
      <span id="fc-token-hint" className={unauthorized ? 'fc-hint fc-alert' : 'fc-hint'} role="status">{problem || hint}</span>
      <span className="fc-spacer" />
      <a href="/">Status</a>
    </header>
  );
}

function App() {
  const [token, setToken] = useState(loadToken);
  const [unauthorized, setUnauthorized] = useState(false);
  const onStatus = useCallback((status) => setUnauthorized(status === 401), []);
  const current = useMemo(() => newFetcher(token, onStatus), [token, onStatus]);
  const [link] = useState(linked);
  // A replaced fetcher's WebSocket (and its subscriptions) is closed.
  useEffect(() => current.dispose, [current]);
  const onToken = (t) => {
    storeToken(t);
    setToken(t);
  };
  return (
    <div className="fc-app">
      <TokenBar token={token} onToken={onToken} unauthorized={unauthorized} />
      <div className="fc-graphiql">
        <GraphiQL
          fetcher={current.fetcher}
          plugins={[explorer]}
          defaultTabs={examples}
          query={link.query}
          variables={link.variables}
          defaultEditorToolsVisibility
          shouldPersistHeaders={false}
        />
      </div>
    </div>
  );
}

createRoot(document.getElementById('graphiql')).render(<App />);
