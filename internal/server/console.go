package server

import "github.com/toolsvc/toolsvc/internal/rest/console"

// mountConsole serves the browser tool console at /ui. It is a client of
// the REST gateway's /v1/tools routes, so it needs nothing from the server.
func (s *Server) mountConsole() {
	h := console.Handler()
	s.mux.Handle("GET "+console.Path, h)
	s.mux.Handle("GET "+console.Path+"/", h)
}
