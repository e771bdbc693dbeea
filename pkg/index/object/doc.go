// Package object is fleetcache's object model: the compact, immutable form
// in which every cached Kubernetes object is held, which package wire
// decodes into, the informers' stores hold, the index (package index)
// stores and the planner and the API read.
//
// An Object is one object of one cluster: its JSON body, compressed by its
// Type's Codec (package compact), beside the few fields the indexes need
// (namespace, name, UID, resourceVersion, Labels, OwnerRefs, creation
// time). Objects point at a shared Type, one per resource type of a
// cluster: its resource, GVR, kind and the paths whose values each object
// keeps beside its body (Type.Projected). Build makes an Object from the
// Meta a decoder read and the JSON bytes; NewObject from an unstructured
// object, for tests and tools; NewBookmark the object of a watch's
// BOOKMARK event, never stored. An Object is a runtime.Object, so that
// client-go's reflector takes it from list and watch responses, and is
// never modified once built and shared.
//
// Raw and Doc read an Object's body, decoding a compressed one into a
// small cache of recent bodies; reads of many objects decode into a
// BodyReader's reused buffers instead.
//
// A Key (cluster, resource, namespace, name) identifies an object; a
// Position (cluster, namespace, name, kind, resource) orders it: the
// index's primary order, in which CompareObjects compares objects and a
// Range is the slice of one cluster or one namespace. A SortValue is an
// object's value at a path (SortValueOf), in the order sorted reads and
// the index's ordered indexes use (CompareSortValues).
package object
