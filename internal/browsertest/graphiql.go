package browsertest

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/chromedp/chromedp"
)

// GraphiQL is what internal/graphiql's page shows, read as the user sees it.
type GraphiQL struct {
	Query    string   `json:"query"`    // the query editor's text
	Response string   `json:"response"` // the response editor's text
	Hints    []string `json:"hints"`    // the autocompletion list, while shown
	// Errors are the query editor's error marks (its linter's, against
	// the introspected schema), as "text: message": the text underlined
	// and what hovering over it says.
	Errors  []string `json:"errors"`
	Running bool     `json:"running"` // the execute button offers to stop
	// TokenHint is what the page says next to its Token field.
	TokenHint string `json:"tokenHint"`
	// StoredToken is the token in sessionStorage; LocalToken whether
	// localStorage holds it anywhere.
	StoredToken string `json:"storedToken"`
	LocalToken  bool   `json:"localToken"`
}

const readGraphiQL = `(() => {
	const cm = (sel) => document.querySelector(sel + ' .CodeMirror')?.CodeMirror;
	const button = document.querySelector('.graphiql-execute-button');
	const stored = sessionStorage.getItem('fleetcache.graphiql.token') ?? '';
	return JSON.stringify({
		query: cm('.graphiql-query-editor')?.getValue() ?? '',
		response: cm('.graphiql-response')?.getValue() ?? '',
		hints: Array.from(document.querySelectorAll('.CodeMirror-hints .CodeMirror-hint')).map((li) => li.textContent),
		errors: (() => {
			const editor = cm('.graphiql-query-editor');
			if (!editor) return [];
			return editor.getAllMarks().filter((m) => (m.className ?? '').split(' ').includes('CodeMirror-lint-mark-error')).map((m) => {
				const at = m.find();
				const text = at ? editor.getRange(at.from, at.to) : '';
				return text.trim() + ': ' + (m.__annotation?.message ?? '');
			});
		})(),
		running: (button?.getAttribute('aria-label') ?? '').toLowerCase().includes('stop'),
		tokenHint: document.getElementById('fc-token-hint')?.textContent ?? '',
		storedToken: stored,
		localToken: stored !== '' && Object.values(localStorage).some((v) => v.includes(stored)),
	});
})()`

// ReadGraphiQL returns what GraphiQL shows, and its JSON for messages.
func ReadGraphiQL(t testing.TB, ctx context.Context) (GraphiQL, string) {
	t.Helper()
	out, err := chromedp.Run(ctx, chromedp.Evaluate[string](readGraphiQL))
	if err != nil {
		t.Fatalf("read GraphiQL: %v", err)
	}
	var s GraphiQL
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("decode %s: %v", out, err)
	}
	return s, out
}

// SetGraphiQLQuery replaces the text of GraphiQL's query editor, as a paste
// would, and leaves the cursor at its end.
func SetGraphiQLQuery(t testing.TB, ctx context.Context, query string) {
	t.Helper()
	q, _ := json.Marshal(query)
	js := `(() => { const cm = document.querySelector('.graphiql-query-editor .CodeMirror').CodeMirror;
		cm.setValue(` + string(q) + `); cm.focus(); cm.setCursor(cm.lineCount(), 0); return true; })()`
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](js)); err != nil {
		t.Fatalf("set the query: %v", err)
	}
}

// TypeGraphiQL types text into GraphiQL's query editor at its cursor, key
// by key, as a user does: GraphiQL completes and lints what is typed.
func TypeGraphiQL(t testing.TB, ctx context.Context, text string) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS(".graphiql-query-editor .CodeMirror textarea"), text)); err != nil {
		t.Fatalf("type %q: %v", text, err)
	}
}

// RunGraphiQL presses GraphiQL's execute button (which stops a running
// subscription).
func RunGraphiQL(t testing.TB, ctx context.Context) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(".graphiql-execute-button"))); err != nil {
		t.Fatalf("press run: %v", err)
	}
}
