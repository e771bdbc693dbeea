// Package browsertest runs Debian's headless chromium for tests of
// fleetcache's web pages (the status page, GraphiQL):
// New starts a browser in a fresh profile and returns the context of its tab
// and a function that returns the page's problems (uncaught exceptions,
// console errors and warnings, which include Content-Security-Policy
// violations). Viewport sets the window's size in CSS pixels; Screenshot
// saves what the tab shows. ReadGraphiQL reads what internal/graphiql's page
// shows (its editors, the completion list, the query's error marks);
// SetGraphiQLQuery, TypeGraphiQL and RunGraphiQL drive it as a user does.
//
// A missing chromium fails the test, never skips it: make test installs it
// (make testdeps), and a skipped browser test proves nothing.
package browsertest
