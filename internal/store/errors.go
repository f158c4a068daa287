package store

import (
	"errors"
	"fmt"
)

var (
	// ErrNotFound is returned when a record does not exist in the caller's
	// tenant, including when the same id exists in another tenant.
	ErrNotFound = errors.New("store: not found")
	// ErrInvalidCursor is returned by ListAudit for a cursor that is
	// malformed or was issued for a different filter.
	ErrInvalidCursor = errors.New("store: invalid cursor")
	// ErrConflict is returned by AddMemory when the caller supplied an ID
	// that already exists in the tenant.
	ErrConflict = errors.New("store: conflict")
)

// InvalidArgumentError reports input the store refuses before touching the
// backend: a missing tenant, an unknown layer, a malformed record. Retrying
// the same call cannot succeed.
type InvalidArgumentError struct {
	// Field is the offending field, e.g. "Layer" or "Scopes[2].ScopeID".
	Field string
	// Reason says what is wrong with it.
	Reason string
}

// Error implements error.
func (e *InvalidArgumentError) Error() string {
	return fmt.Sprintf("store: invalid %s: %s", e.Field, e.Reason)
}

// UnavailableError reports that the backend could not be reached or failed
// transiently: connection refused or reset, PostgreSQL restarting or out of
// connections, SQLite still busy after its busy timeout. The same call may
// succeed later, so callers map it to a retryable PROVIDER_ERROR.
//
// Its message names the operation and the driver's cause but never SQL
// text.
type UnavailableError struct {
	// Op is the store operation that failed, e.g. "AddMemory" or "open".
	Op string
	// Err is the driver's error.
	Err error
}

// Error implements error.
func (e *UnavailableError) Error() string {
	if e.Err == nil {
		return "store: " + e.Op + ": backend unavailable"
	}
	return "store: " + e.Op + ": backend unavailable: " + e.Err.Error()
}

// Unwrap returns the driver's error.
func (e *UnavailableError) Unwrap() error { return e.Err }

// Unavailable reports true: the failure is transient and the call may be
// retried. The interceptor chain maps any error with this method to a
// retryable PROVIDER_ERROR, even when a tool returns it unwrapped.
func (e *UnavailableError) Unavailable() bool { return true }
