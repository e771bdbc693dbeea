// Package fieldpath names values inside a cached object: dotted paths such
// as status.phase, spec.containers[].image or
// metadata.annotations["example.com/owner"], and the path cluster, which
// names the object's cluster.
//
// Parse turns a path's text into a Path, with an error that says what is
// malformed and where; Path.String prints it back in the same (canonical)
// form, so a parsed path re-parses to itself. A Path reads an object's
// stored JSON bytes (object.Object.Raw) without decoding the object: Each
// visits the values at the path (a Value: a string, number, boolean,
// object or array, with its JSON text) skipping absent ones and nulls, and
// AppendJSON writes the value at the path as JSON, copied from the stored
// bytes: null when absent, and a list of the values found when the path
// crosses an array ([]). A Set reads several paths in one walk of the
// bytes; Set.Read hands what the walk found (Found) to several readers.
// A caller that scans the bytes itself follows a Set's paths along its own
// scan instead (Node, Set.Collect, Found.Add): the wire decoder finds the
// values of the paths an object keeps and of those it searches in the scan
// that checks the object's structure.
//
// The package knows nothing of the index: it reads bytes and a cluster
// name. Package fieldselector (pkg/index/fieldselector) builds field
// selectors on these paths.
package fieldpath
