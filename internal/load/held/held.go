// Package held is a sleep the Go scheduler does not see, for pacing loops.
//
// A goroutine that paces a loop at a fixed rate and sleeps through the Go
// runtime (a timer, time.Sleep) gives its processor up and is woken through
// another thread: on a VM that costs each wake 0.1 to several
// milliseconds, and a goroutine locked to its OS thread pays a second
// thread hand-off on top. Sleep instead blocks in the kernel with the
// goroutine still holding its thread and processor, and the kernel wakes
// that thread itself. The swarm's held pacer (docs/swarm.md, "Held
// pacing") and the reference server's pinned tick loop (docs/server.md,
// "The tick") sleep this way.
//
// The price: while a goroutine sleeps held, no other goroutine can use its
// processor, and a stop-the-world (the GC's) waits for the sleep to end. A
// caller keeps each sleep short and yields between sleeps.
//
// Block is the other kernel sleep: a system call the scheduler sees, so the
// processor is free for other goroutines meanwhile, for a wait too long to
// hold (the reference server's pinned workers between ticks).
package held
