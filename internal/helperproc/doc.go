// Package helperproc runs the test binary again as a helper process, so
// that a benchmark can put the load it drives (clients) in a process of
// its own: each process's CPU time and memory are then its own. The
// parent starts the helper with Start, naming an environment variable that
// carries the helper's task as JSON and no test to run; the helper's
// package checks that variable in an init function (Task), before TestMain
// starts anything, does the task and exits. They talk in lines: the
// parent writes to the helper's standard input (Process.Printf) and reads
// its standard output (Process.Line); closing the input (Process.Wait)
// tells the helper to end.
package helperproc
