package store

// Layer is a memory layer: the scope a memory belongs to, from the narrowest
// (agent) to the broadest (company).
type Layer string

// The memory layers, narrowest first.
const (
	LayerAgent   Layer = "agent"
	LayerUser    Layer = "user"
	LayerSession Layer = "session"
	LayerProject Layer = "project"
	LayerTeam    Layer = "team"
	LayerOrg     Layer = "org"
	LayerCompany Layer = "company"
)

// Layers lists every layer in precedence order, highest first: when two
// memories conflict, the one from the earlier layer wins.
var Layers = []Layer{LayerAgent, LayerUser, LayerSession, LayerProject, LayerTeam, LayerOrg, LayerCompany}

// Precedence returns the position of l in [Layers]: 0 for agent (highest)
// through 6 for company, or -1 for an unknown layer.
func (l Layer) Precedence() int {
	for i, known := range Layers {
		if l == known {
			return i
		}
	}
	return -1
}

// Valid reports whether l is one of [Layers].
func (l Layer) Valid() bool { return l.Precedence() >= 0 }
