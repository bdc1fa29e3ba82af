//go:build !linux

package udp

// The raw UDP host drives its socket with Linux's non-blocking
// recvfrom/sendto (MSG_DONTWAIT, MSG_TRUNC). On other systems the package
// compiles but registers no backend: transport.Lookup("udp") returns an
// *transport.UnknownBackendError naming what the build can speak, rather than
// a host whose Service could block.
