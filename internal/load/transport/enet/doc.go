// Package enet is the ENet backend of package transport.
//
// It is a thin cgo binding on the system libenet 1.3.17 (pkg-config
// libenet). Importing the package registers the backend as "enet"; a build
// without cgo compiles the package but registers nothing, so
// transport.Lookup("enet") reports an *transport.UnknownBackendError
// instead of a silent fallback.
//
// The binding follows ENet's threading rule: a host and its peers belong to
// the goroutine that services it. C never holds Go memory: sends are copied by
// enet_packet_create, received packets are copied into a buffer the host
// reuses and destroyed at once, and peers are named by their index in
// host->peers (no Go pointer ever lands in peer->data).
//
// Channel 0 is reliable (transport.Reliable); channel 1 is unreliable
// sequenced (transport.Unreliable). The packet throttle is configured with
// deceleration 0 on both ends at connect, because ENet otherwise drops
// unreliable packets before they reach the socket whenever an RTT sample
// looks high — a load test must see every datagram it sent or lost, never
// ENet's silent shedding. Unreliable packets larger than one fragment go out
// as unreliable fragments instead of ENet's default reliable fragments.
//
// The C side lives in enet_glue.c/enet_glue.h (the binding) and
// enet_guard.c: an optional connect guard (transport.ConnectGuard) that
// drops CONNECT datagrams over a per-source limit in ENet's intercept hook,
// before ENet gives them a peer slot, and resets handshakes left half-open.
// Options.MaxRecvMessage and MaxRecvWaiting cap what ENet reassembles from
// peers; the host's own sends are not limited by them.
//
// A listening host batches its socket I/O (enet_io.c): each flush's
// datagrams go out in one sendmmsg and waiting datagrams come in through
// recvmmsg, where libenet makes a system call per datagram. The binding
// takes the place of libenet's enet_socket_send and enet_socket_receive
// (ELF symbol interposition) and hands every call outside a server host's
// drain or flush back to libenet's own.
package enet
