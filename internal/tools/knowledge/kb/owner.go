package kb

// Viewer is who looks at a knowledge set: the org, team and project ids of
// the caller's credential. Empty ids match no owner.
type Viewer struct {
	OrgID, TeamID, ProjectID string
}

// OwnerKey names the credential identifier that owns a layer: "org_id",
// "team_id" or "project_id"; "tenant" for company.
func OwnerKey(layer string) string {
	switch layer {
	case LayerOrg:
		return "org_id"
	case LayerTeam:
		return "team_id"
	case LayerProject:
		return "project_id"
	}
	return "tenant"
}

// Sees reports whether v may see it: company items and items without an
// owner always; org, team and project items when v's id at that layer is
// the item's owner. A nil Viewer sees everything (tools such as lint that
// speak for no caller).
func (v *Viewer) Sees(it *Item) bool {
	if v == nil || it.Owner == "" {
		return true
	}
	switch it.Layer {
	case LayerOrg:
		return v.OrgID == it.Owner
	case LayerTeam:
		return v.TeamID == it.Owner
	case LayerProject:
		return v.ProjectID == it.Owner
	}
	return false
}

// Supersedes reports whether newer, explicitly naming older in its
// supersedes key, takes older's place in a check: it must be accepted and of
// the same or a narrower layer. A narrower item may replace a broader one
// for its own owner only (a project spec replacing an org ADR for that
// project), since only that owner's callers see it; a broader item naming
// a narrower one is informational and replaces nothing.
func Supersedes(newer, older *Item) bool {
	return newer.Supersedes == older.ID && newer.Status == StatusAccepted &&
		layerRank(newer.Layer) >= layerRank(older.Layer)
}
