// Package console serves the tool console: a browser page at /ui, embedded
// in the binary, that lists the tools a caller may see, shows their
// contracts and runs them with a form generated from their input schemas.
//
// The page is plain HTML, CSS and ES modules with no build step and no
// external requests. It is a client of the REST gateway only (GET /v1/tools,
// GET /v1/tools/{name}, POST /v1/tools/{name}:call), so it sees exactly what
// the caller's API key may see. The key is typed into the page, kept in
// sessionStorage and sent only as an Authorization header.
package console
