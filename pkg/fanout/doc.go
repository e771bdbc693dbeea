// Package fanout hands the changes of the index's feed to many
// subscribers: the hub behind live subscriptions.
//
// One goroutine (Hub.Start) follows the feed. Subscribers are grouped twice:
// by filter (the filter's matcher runs once per change for all of them)
// and, inside a filter, by a key the caller chooses (subscribers whose
// payloads are the same for the same change), whose members share one
// Delivery per change: its payload is made once, by whichever member reads
// it first (Delivery.Payload). Each subscriber has a bounded queue, grown
// as changes arrive and dropped when drained; one whose queue is full is
// ended with ErrSlowConsumer, so that neither the hub nor the index waits
// for anyone. A subscriber costs no goroutine: Next runs in the caller's.
//
// The package knows index events and filters; what a payload is (a GraphQL
// result) is the caller's: Hub is generic over the value a group shares
// and the payload its deliveries carry.
package fanout
