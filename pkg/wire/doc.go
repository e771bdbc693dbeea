// Package wire decodes what a Kubernetes API server sends for lists and
// watches, in JSON, straight into object.Objects: each object is scanned
// once, its stored bytes are the server's with a few members cut out, and
// the metadata the indexes need is picked up on the way.
//
// A Decoder knows the cluster and the type of the objects it decodes and
// what to leave out of them: metadata.managedFields, the
// kubectl.kubernetes.io/last-applied-configuration annotation (and the
// annotations member when nothing else is left in it) and, if asked, a
// Secret's data and stringData. Everything else is kept byte for byte, in
// the server's order: the stored JSON of an object is what a GET of it
// returns, less those members. Items of a list, which a server sends
// without kind and apiVersion, get them in front, as a GET has them. Input
// with whitespace between tokens is compacted.
//
// Each object comes as a Decoded: the object.Object, the tokens its body
// adds to its searched text (read from the JSON before it is compressed,
// so that the index need not decode the body again to insert it) and the
// newest time of its managedFields. The values of the type's projected
// paths and of the searched ones are found by the scan that checks the
// object's structure (fieldpath.Node), not by a second walk of its bytes;
// only metadata, which is rewritten, and members with whitespace, which
// are compacted, are walked again in the stored bytes.
//
// Decoder.List decodes one list response (a page: its items, its
// resourceVersion and continue token); NewWatchDecoder reads a watch
// response, event by event (ADDED, MODIFIED, DELETED, BOOKMARK, ERROR), as
// a watch.Decoder for apimachinery's StreamWatcher.
//
// The scanner checks the structure it walks (brackets, strings and their
// escapes, member separators) and fails on what it cannot read; it does
// not check that every byte of a string is valid UTF-8: a server's strings
// are kept as the server sent them.
package wire
