package server

import "github.com/scalegate/scalegate/internal/guard/boundedhttp"

// GarbageKick is garbageKick for the live tests (package server_test),
// which see the server only as a client does.
const GarbageKick = garbageKick

// MetricsHTTPStats is the metrics endpoint's connection counts, for the
// crowd test's log.
func MetricsHTTPStats(s *Server) boundedhttp.Stats { return s.http.srv.Stats() }
