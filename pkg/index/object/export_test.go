package object

// Internals the tests of package object_test read.

// CompareParts is compareParts.
var CompareParts = compareParts

// StatusApart returns where o's stored body is split in two parts (0: not
// split) and where its status begins in its JSON.
func StatusApart(o *Object) (split, statusAt int) { return o.body.Split(), int(o.statusAt) }
