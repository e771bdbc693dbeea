// Package search is fleetcache's keyword search: words that must each
// begin a token of an object's text, case-insensitively.
//
// Tokens splits text into tokens: the runs of letters and digits,
// lowercased, at most MaxTokenLen bytes each. Parse turns what a client
// types ("redis prod") into a Query of words, tokenized the same way;
// Query.Matches tells whether each word begins some token of a text.
// StoredText yields the parts of an object's stored JSON bytes that are
// searched (its annotation values and the strings at Paths, container
// images by default). An object's searched text is the tokens of its name,
// namespace and labels (EachMetaToken), then those of its body
// (AppendBodyTokens), at most MaxObjectTokens in all: package wire reads the
// body's as it decodes an object, and the index from the stored body when
// it is not given them.
//
// Tree is the inverted index's dictionary: every token in order, each with
// its postings (of a type the caller chooses), so that the tokens a word
// begins are one ordered range. Package index keeps one, maintained on
// every change, and plans searches from it; it matches the objects it
// cannot plan from (and subscriptions' changes) with Query.Matches.
package search
