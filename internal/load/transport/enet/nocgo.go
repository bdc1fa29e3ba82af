//go:build !cgo

package enet

// Without cgo there is no libenet to bind: the package compiles so that
// `CGO_ENABLED=0 go build ./...` works, but it registers no backend, and
// transport.Lookup("enet") returns an *transport.UnknownBackendError naming
// what this build can speak. A fake backend here would let a gate measure the
// wrong thing.
