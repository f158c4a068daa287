package load

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
)

// Sweep is one target's measured curve and what was learned from it.
type Sweep struct {
	// Name identifies the series, e.g. "toolsvc gRPC" or "bare grpc-go".
	Name string `json:"name"`
	// Transport is grpc, rest, mcp-stateful or mcp-stateless.
	Transport string `json:"transport"`
	// Tool is the tool (or baseline method) called.
	Tool string `json:"tool"`
	// Arguments are the JSON arguments sent (the first, when rotated).
	Arguments string  `json:"arguments,omitempty"`
	Points    []Point `json:"points"`
	// Knee is the knee concurrency (0: none within the measured range).
	Knee int `json:"knee"`
	SLO  SLO `json:"slo"`
	// Recommended is the best concurrency under SLO (0: none meets it).
	Recommended int   `json:"recommendedConcurrency"`
	Feasible    []int `json:"feasibleConcurrency"`
}

// Analyze fills Knee, Recommended and Feasible from Points and SLO.
func (s *Sweep) Analyze() {
	s.Knee = Knee(s.Points)
	s.Recommended, s.Feasible = Recommend(s.Points, s.SLO)
	if s.Feasible == nil {
		s.Feasible = []int{}
	}
}

// At returns the point measured at concurrency c.
func (s *Sweep) At(c int) (Point, bool) {
	for _, p := range s.Points {
		if p.Concurrency == c {
			return p, true
		}
	}
	return Point{}, false
}

// WriteJSON writes v as indented JSON.
func WriteJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// WriteMarkdown writes one table row per point of every sweep, followed
// by the knee and recommendation of each.
func WriteMarkdown(w io.Writer, sweeps []*Sweep) error {
	var b strings.Builder
	b.WriteString("| series | tool | conc. | req/s | p50 ms | p95 ms | p99 ms | max ms | errors | server CPU µs/req | peak RSS MiB |\n")
	b.WriteString("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: |\n")
	for _, s := range sweeps {
		for _, p := range s.Points {
			fmt.Fprintf(&b, "| %s | %s | %d | %.0f | %.3f | %.3f | %.3f | %.3f | %s | %s | %s |\n",
				s.Name, s.Tool, p.Concurrency, p.RPS, p.P50Ms, p.P95Ms, p.P99Ms, p.MaxMs,
				errorCell(p), orDash(p.ServerCPUPerRequestUs, "%.0f"), orDash(float64(p.PeakRSSBytes)/(1<<20), "%.0f"))
		}
	}
	b.WriteString("\n| series | knee (concurrency) | recommended under SLO | feasible |\n| --- | ---: | ---: | --- |\n")
	for _, s := range sweeps {
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", s.Name, intOrNone(s.Knee, "none in range"),
			intOrNone(s.Recommended, "none meets "+s.SLO.String()), joinInts(s.Feasible))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// String describes the SLO, e.g. "p95 ≤ 50ms, p99 ≤ 100ms".
func (s SLO) String() string {
	var parts []string
	if s.P95Ms > 0 {
		parts = append(parts, fmt.Sprintf("p95 ≤ %gms", s.P95Ms))
	}
	if s.P99Ms > 0 {
		parts = append(parts, fmt.Sprintf("p99 ≤ %gms", s.P99Ms))
	}
	parts = append(parts, fmt.Sprintf("errors ≤ %g%%", s.MaxErrorRate*100))
	return strings.Join(parts, ", ")
}

func errorCell(p Point) string {
	if p.Errors == 0 {
		return "0"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(p.ErrorsByCode)) {
		parts = append(parts, fmt.Sprintf("%s×%d", k, p.ErrorsByCode[k]))
	}
	return fmt.Sprintf("%d (%s)", p.Errors, strings.Join(parts, ", "))
}

func orDash(v float64, format string) string {
	if v == 0 {
		return "–"
	}
	return fmt.Sprintf(format, v)
}

func intOrNone(v int, none string) string {
	if v == 0 {
		return none
	}
	return fmt.Sprint(v)
}

func joinInts(v []int) string {
	if len(v) == 0 {
		return "–"
	}
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ", ")
}
