// Package columns computes the columns `kubectl get -o wide` prints for a
// cached object, from its stored JSON bytes (object.Object.Raw), the way the
// member cluster's API server computes its Table (Accept:
// application/json;as=Table;g=meta.k8s.io;v=v1), every column, priority 0
// and above, except the object's age, which clients compute.
//
// Types.For returns an object's Columns, in the server's order; Row returns them
// as Cells, with each column's priority in the server's Table (what
// `kubectl get` prints without -o wide) and, when asked, the age where the
// server has it, as `kubectl fleet get` prints them. The printers of
// built-in kinds (Pod, Deployment, Service, Node, … see printers) each
// decode the few fields they need into a small struct of their own: gjson
// finds those parts in the stored bytes and encoding/json decodes only them
// (decodeFields), so that a Pod's container specs, say, are skipped; the
// Pod's printer, the most used, reads its values as gjson views of the
// bytes and decodes nothing (printPod). Custom
// resources are printed from their CustomResourceDefinition's
// additionalPrinterColumns (PrinterColumn): a Custom, which pkg/informers
// fills from the member cluster and records for the object.Type in a Types
// table (a side table of printers per type, owned by this package), holds
// them compiled. DataNotCached, recorded for the type of Secrets whose
// data is not cached, makes their Data column unknown. Every other kind is printed
// as its name alone.
//
// Cells that hold a time relative to now (a Pod's last restart, a Job's
// duration, an Event's last seen, a custom resource's date columns) are
// computed at the time For is given, as the server does when it answers.
package columns
