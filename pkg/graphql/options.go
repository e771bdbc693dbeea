package graphql

import (
	"time"

	"k8s.io/klog/v2"
)

// Option defaults.
const (
	defaultPageSize          = 100
	defaultMaxPageSize       = 1000
	defaultMaxDepth          = 12
	defaultMaxBodyBytes      = 1 << 20
	defaultTimeout           = 10 * time.Second
	defaultDocumentCacheSize = 1024
)

// Options configure a Server. Each field's comment states its default, used
// when the field is zero.
type Options struct {
	// DefaultPageSize is the default of resources(first:). Default 100.
	DefaultPageSize int
	// MaxPageSize is the largest resources(first:) accepted. Default 1000.
	MaxPageSize int
	// MaxDepth is how deeply a document may nest field selections, counted
	// with fragments expanded: { resources { edges { node { name } } } } is
	// 4 deep. Introspection (__schema, __type) is bounded separately by
	// max(MaxDepth, 16), which fits the introspection query of GraphQL
	// clients such as GraphiQL. Default 12.
	MaxDepth int
	// MaxBodyBytes is the largest request body accepted; larger ones get
	// HTTP 413. Default 1 MiB.
	MaxBodyBytes int64
	// Timeout bounds the execution of each request. Default 10s.
	Timeout time.Duration
	// DocumentCacheSize is how many parsed and validated documents are kept,
	// keyed by query text; documents over 64 KiB are not cached. Default 1024.
	DocumentCacheSize int
	// Logger receives the server's log lines. Default klog.Background().
	Logger klog.Logger
}

// withDefaults fills in the defaults of unset fields.
func (o Options) withDefaults() Options {
	if o.DefaultPageSize <= 0 {
		o.DefaultPageSize = defaultPageSize
	}
	if o.MaxPageSize <= 0 {
		o.MaxPageSize = defaultMaxPageSize
	}
	if o.MaxDepth <= 0 {
		o.MaxDepth = defaultMaxDepth
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = defaultMaxBodyBytes
	}
	if o.Timeout <= 0 {
		o.Timeout = defaultTimeout
	}
	if o.DocumentCacheSize <= 0 {
		o.DocumentCacheSize = defaultDocumentCacheSize
	}
	if o.Logger.GetSink() == nil {
		o.Logger = klog.Background()
	}
	return o
}
