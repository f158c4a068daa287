// Package layering holds the test that keeps toolsvc's layers pointing one
// way (docs/ARCHITECTURE.md): transports → chain → tools → stores, the
// facts of a call in a leaf package, and only server and cmd wiring things
// together. It has no code of its own.
package layering
