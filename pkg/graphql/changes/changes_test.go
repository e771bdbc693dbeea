package changes

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/graphql-go/graphql"

	"github.com/fleetcache/fleetcache/pkg/graphql/cursor"
	"github.com/fleetcache/fleetcache/pkg/index/feed"
	"github.com/fleetcache/fleetcache/pkg/index/object"
	"github.com/fleetcache/fleetcache/pkg/index/planner"
)

// stillIndex is an Index at revision 100 of epoch "e1", retaining none.
type stillIndex struct{}

func (stillIndex) Epoch() string                                            { return "e1" }
func (stillIndex) Revision() uint64                                         { return 100 }
func (stillIndex) OldestRevision() uint64                                   { return 50 }
func (stillIndex) RevisionBefore(time.Time) uint64                          { return 60 }
func (stillIndex) Events(uint64, int) ([]feed.Event[*object.Object], error) { return nil, nil }

// codes is an Engine that marks its errors with their code.
type codes struct{}

type coded struct {
	code string
	err  error
}

func (c *coded) Error() string { return c.code + ": " + c.err.Error() }
func (c *coded) Unwrap() error { return c.err }

func (codes) Filter(any) (planner.Filter, error)                              { return planner.Filter{}, nil }
func (codes) PageSize(map[string]any) (int, error)                            { return 10, nil }
func (codes) Sees(context.Context) func(context.Context, *object.Object) bool { return nil }
func (codes) RevisionCursor(uint64, planner.Filter) string                    { return "" }
func (codes) CheckContext(context.Context) error                              { return nil }
func (codes) BadInput(err error) error                                        { return &coded{"BAD_USER_INPUT", err} }
func (codes) CursorExpired(err error) error                                   { return &coded{"CURSOR_EXPIRED", err} }

// TestParseBound checks the forms of since and until: a duration before
// now, an RFC 3339 time, a revision cursor of this index; and what is
// wrong with the others.
func TestParseBound(t *testing.T) {
	q := New(stillIndex{}, codes{})
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	rev := func(epoch string, r uint64) string {
		return cursor.EncodeRevision(cursor.Revision{Epoch: epoch, Revision: r})
	}
	for _, tc := range []struct {
		name, v string
		want    bound
		err     string
		expired bool
	}{
		{name: "a duration", v: "90m", want: bound{time: now.Add(-90 * time.Minute), isTime: true}},
		{name: "spaces around", v: " 1h ", want: bound{time: now.Add(-time.Hour), isTime: true}},
		{name: "a time", v: "2026-11-28T10:00:00Z", want: bound{time: time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC), isTime: true}},
		{name: "a revision cursor", v: rev("e1", 70), want: bound{revision: 70}},
		{name: "a negative duration", v: "-5m", err: "BAD_USER_INPUT: invalid since \"-5m\": a duration before now must not be negative"},
		{name: "a malformed time", v: "2026-11-28T25:00:00Z", err: "BAD_USER_INPUT: invalid since \"2026-11-28T25:00:00Z\": want a duration"},
		{name: "garbage", v: "yesterday", err: "BAD_USER_INPUT: invalid since \"yesterday\": want a duration"},
		{name: "a cursor ahead of the index", v: rev("e1", 101),
			err: "BAD_USER_INPUT: invalid since cursor: revision 101 is ahead of the index (revision 100)"},
		{name: "a cursor of another index", v: rev("e0", 70), err: "ask with a time instead", expired: true},
		{name: "a page cursor", v: cursor.EncodePage(object.Position{Cluster: "c1"}), err: "BAD_USER_INPUT"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := q.parseBound("since", tc.v, now)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				var expired *revisionExpiredError
				if errors.As(err, &expired) != tc.expired {
					t.Errorf("expired %v, want %v", !tc.expired, tc.expired)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("bound %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestField checks the arguments of Query.changes and their defaults.
func TestField(t *testing.T) {
	order := graphql.NewEnum(graphql.EnumConfig{Name: "SortOrder", Values: graphql.EnumValueConfigMap{"ASC": {Value: "ASC"}, "DESC": {Value: "DESC"}}})
	filter := graphql.NewInputObject(graphql.InputObjectConfig{Name: "ResourceFilter", Fields: graphql.InputObjectConfigFieldMap{"kinds": {Type: graphql.String}}})
	event := graphql.NewObject(graphql.ObjectConfig{Name: "ResourceEvent", Fields: graphql.Fields{"cursor": {Type: graphql.String}}})
	f := New(stillIndex{}, codes{}).Field(event, Inputs{Filter: filter, Order: order, DefaultPageSize: 100, MaxPageSize: 1000})
	var names []string
	for name := range f.Args {
		names = append(names, name)
	}
	for _, want := range []string{"filter", "since", "until", "first", "after", "order"} {
		if f.Args[want] == nil {
			t.Errorf("no argument %s among %v", want, names)
		}
	}
	if f.Args["first"].DefaultValue != 100 || f.Args["order"].DefaultValue != "ASC" {
		t.Errorf("defaults: first %v, order %v; want 100, ASC", f.Args["first"].DefaultValue, f.Args["order"].DefaultValue)
	}
	if !strings.Contains(f.Args["first"].Description, "1000") {
		t.Errorf("first's description %q does not give the maximum", f.Args["first"].Description)
	}
}
