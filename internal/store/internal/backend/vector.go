package backend

import (
	"fmt"

	"github.com/toolsvc/toolsvc/internal/store"
)

// Rows is what both backends' query results offer (*sql.Rows, pgx.Rows).
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

// ScanVectorRows reads rows of (tenant, id, layer, scope_id, vec) as
// vectors of model and calls fn with each. An error of the database goes
// through dbErr (the backend's mapping of it); one of fn, or a stored
// vector that does not decode, is returned as is.
func ScanVectorRows(rows Rows, model string, dbErr func(error) error, fn func(store.MemoryVector) error) error {
	for rows.Next() {
		var (
			v     store.MemoryVector
			layer string
			blob  []byte
		)
		if err := rows.Scan(&v.Tenant, &v.ID, &layer, &v.ScopeID, &blob); err != nil {
			return dbErr(err)
		}
		v.Layer, v.Model = store.Layer(layer), model
		var err error
		if v.Vec, err = store.DecodeVector(blob); err != nil {
			return fmt.Errorf("store: vector of %s: %w", v.ID, err)
		}
		if err := fn(v); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return dbErr(err)
	}
	return nil
}
