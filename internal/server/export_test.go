package server

// GarbageKick is garbageKick for the live tests (package server_test),
// which see the server only as a client does.
const GarbageKick = garbageKick
