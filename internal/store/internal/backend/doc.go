// Package backend holds what the store backends share and must agree on to
// behave identically: input validation and defaults, search term
// tokenization, audit cursors, timestamps and migration loading.
package backend
