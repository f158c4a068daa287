package backend

import (
	"encoding/json"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/toolsvc/toolsvc/internal/store"
)

// Size limits protect the database from oversized rows; they are far above
// anything a tool call produces.
const (
	maxIDLen      = 128
	maxContentLen = 1 << 20
	maxTags       = 64
	maxTagLen     = 128
	maxScopes     = 256
)

func invalid(field, reason string) error {
	return &store.InvalidArgumentError{Field: field, Reason: reason}
}

func requireText(field, v string, limit int) error {
	switch {
	case v == "":
		return invalid(field, "must not be empty")
	case len(v) > limit:
		return invalid(field, "too long")
	case !utf8.ValidString(v):
		return invalid(field, "not valid UTF-8")
	}
	return nil
}

// RequireTenant validates a tenant argument.
func RequireTenant(tenant string) error { return requireText("Tenant", tenant, maxIDLen) }

// PreparedMemory is a validated memory ready to be written.
type PreparedMemory struct {
	// Tags is the de-duplicated tag list, never nil.
	Tags []string
	// TagsJSON and MetadataJSON are the JSON encodings of Tags and Metadata.
	TagsJSON, MetadataJSON []byte
}

// PrepareMemory validates m and fills its defaults: ID (when empty),
// SourceType, de-duplicated Tags, non-nil Metadata, and both timestamps set
// to now. Pointer memories need a KnowledgeItemID and default to
// SourceKnowledgeSync.
func PrepareMemory(m *store.Memory, now time.Time, pointer bool) (PreparedMemory, error) {
	if err := RequireTenant(m.Tenant); err != nil {
		return PreparedMemory{}, err
	}
	if !m.Layer.Valid() {
		return PreparedMemory{}, invalid("Layer", "unknown layer "+quote(string(m.Layer)))
	}
	if err := requireText("ScopeID", m.ScopeID, maxIDLen); err != nil {
		return PreparedMemory{}, err
	}
	if err := requireText("Content", m.Content, maxContentLen); err != nil {
		return PreparedMemory{}, err
	}
	if m.ID != "" {
		if err := requireText("ID", m.ID, maxIDLen); err != nil {
			return PreparedMemory{}, err
		}
	}
	if pointer {
		if err := requireText("KnowledgeItemID", m.KnowledgeItemID, maxIDLen); err != nil {
			return PreparedMemory{}, err
		}
		if m.SourceType == "" {
			m.SourceType = store.SourceKnowledgeSync
		}
	} else if m.SourceType == "" {
		m.SourceType = store.SourceManual
	}
	if !slices.Contains(store.SourceTypes, m.SourceType) {
		return PreparedMemory{}, invalid("SourceType", "unknown source type "+quote(m.SourceType))
	}
	if len(m.ContentHash) > maxIDLen*4 {
		return PreparedMemory{}, invalid("ContentHash", "too long")
	}
	tags, err := dedupeTags("Tags", m.Tags)
	if err != nil {
		return PreparedMemory{}, err
	}
	m.Tags = tags
	if m.Metadata == nil {
		m.Metadata = map[string]any{}
	}
	meta, err := json.Marshal(m.Metadata)
	if err != nil {
		return PreparedMemory{}, invalid("Metadata", "not JSON-encodable: "+err.Error())
	}
	tagsJSON, err := json.Marshal(tags)
	if err != nil {
		return PreparedMemory{}, invalid("Tags", err.Error())
	}
	if m.ID == "" {
		m.ID = store.NewMemoryID()
	}
	m.CreatedAt, m.UpdatedAt = now, now
	return PreparedMemory{Tags: tags, TagsJSON: tagsJSON, MetadataJSON: meta}, nil
}

// dedupeTags validates tags and drops repeats, keeping the first
// occurrence's position. The result is never nil.
func dedupeTags(field string, tags []string) ([]string, error) {
	if len(tags) > maxTags {
		return nil, invalid(field, "too many tags")
	}
	out := make([]string, 0, len(tags))
	for _, t := range tags {
		if err := requireText(field, t, maxTagLen); err != nil {
			return nil, err
		}
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out, nil
}

// DecodeMemoryJSON fills m.Tags and m.Metadata from their stored JSON.
func DecodeMemoryJSON(m *store.Memory, tagsJSON, metaJSON []byte) error {
	m.Tags = []string{}
	if len(tagsJSON) > 0 {
		if err := json.Unmarshal(tagsJSON, &m.Tags); err != nil {
			return err
		}
	}
	m.Metadata = map[string]any{}
	if len(metaJSON) > 0 {
		if err := json.Unmarshal(metaJSON, &m.Metadata); err != nil {
			return err
		}
	}
	return nil
}

// PrepareSyncRun validates r and defaults StartedAt; it returns the JSON
// encoding of FailedItems.
func PrepareSyncRun(r *store.SyncRun, now time.Time) ([]byte, error) {
	if err := RequireTenant(r.Tenant); err != nil {
		return nil, err
	}
	if r.DurationMs < 0 || r.Added < 0 || r.Updated < 0 || r.Deleted < 0 || r.Unchanged < 0 || r.Failures < 0 {
		return nil, invalid("SyncRun", "counts and duration must not be negative")
	}
	if r.StartedAt.IsZero() {
		r.StartedAt = now
	}
	r.StartedAt = Normalize(r.StartedAt)
	if r.FailedItems == nil {
		r.FailedItems = []store.SyncFailure{}
	}
	return json.Marshal(r.FailedItems)
}

// DecodeFailures parses stored FailedItems; the result is never nil.
func DecodeFailures(b []byte) ([]store.SyncFailure, error) {
	out := []store.SyncFailure{}
	if len(b) == 0 {
		return out, nil
	}
	err := json.Unmarshal(b, &out)
	return out, err
}

// PrepareItemVersion validates v and defaults At.
func PrepareItemVersion(v *store.ItemVersion, now time.Time) error {
	if err := RequireTenant(v.Tenant); err != nil {
		return err
	}
	if err := requireText("ItemID", v.ItemID, maxIDLen*4); err != nil {
		return err
	}
	switch v.Change {
	case store.ChangeAdded, store.ChangeUpdated, store.ChangeRemoved:
	default:
		return invalid("Change", "unknown change "+quote(v.Change))
	}
	if v.At.IsZero() {
		v.At = now
	}
	v.At = Normalize(v.At)
	return nil
}

// PrepareAudit validates e and defaults At.
func PrepareAudit(e *store.AuditEvent, now time.Time) error {
	if err := RequireTenant(e.Tenant); err != nil {
		return err
	}
	if err := requireText("Tool", e.Tool, maxIDLen*4); err != nil {
		return err
	}
	if err := validDecision(e.Decision); err != nil {
		return err
	}
	if e.At.IsZero() {
		e.At = now
	}
	e.At = Normalize(e.At)
	return nil
}

func validDecision(d string) error {
	switch d {
	case store.DecisionAllow, store.DecisionDeny, store.DecisionError:
		return nil
	}
	return invalid("Decision", "unknown decision "+quote(d))
}

// PrepareAuditFilter validates f and clamps its limit. It returns the
// position decoded from f.Cursor (zero without a cursor).
func PrepareAuditFilter(f *store.AuditFilter) (Position, error) {
	if err := RequireTenant(f.Tenant); err != nil {
		return Position{}, err
	}
	if f.Decision != "" {
		if err := validDecision(f.Decision); err != nil {
			return Position{}, err
		}
	}
	switch {
	case f.Limit <= 0:
		f.Limit = store.DefaultAuditLimit
	case f.Limit > store.MaxAuditLimit:
		f.Limit = store.MaxAuditLimit
	}
	if f.Cursor == "" {
		return Position{}, nil
	}
	return DecodeCursor(*f, f.Cursor)
}

func quote(s string) string {
	if len(s) > 40 {
		s = s[:40] + "..."
	}
	b, _ := json.Marshal(s)
	return string(b)
}
