// Package hints builds the AgentHints every tool result carries (docs/CONTRACTS.md;
// mitigation: "agentHints generators for standard cases"). A Builder starts
// with every required field present (empty lists, unknown quality), tools add
// what they observed, and Build computes confidence from the evidence given
// — there is no way to set a constant confidence.
package hints

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"

	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/v1"
)

// Source qualities (docs/CONTRACTS.md).
const (
	QualityHigh    = "high"
	QualityMedium  = "medium"
	QualityLow     = "low"
	QualityUnknown = "unknown"
)

// Validity periods (docs/CONTRACTS.md).
const (
	ValidImmediate  = "immediate"
	ValidShort      = "short"
	ValidMedium     = "medium"
	ValidLong       = "long"
	ValidIndefinite = "indefinite"
)

// Priorities of suggested actions and severities of risks and warnings.
const (
	Critical = "critical"
	High     = "high"
	Medium   = "medium"
	Low      = "low"
)

// The most suggested actions and related resources one AgentHints may carry
// (the max_items rules of hints.proto; TestCapsMatchProto holds them equal).
// A tool may add more: Build keeps the most important and says what it cut,
// so that no valid input can make a tool build hints its contract forbids.
const (
	MaxSuggestedActions = 20
	MaxRelatedResources = 50
)

// Evidence is one observation confidence is computed from: Value in 0..1
// (e.g. the share of query terms matched, of layers searched, of items
// accepted), weighted by Weight (> 0).
type Evidence struct {
	Name   string
	Value  float64
	Weight float64
}

// Confidence is the weighted mean of the evidence, clamped to 0..1. With no
// usable evidence it is 0: a tool that observed nothing is not confident.
func Confidence(ev ...Evidence) float64 {
	var sum, weights float64
	for _, e := range ev {
		if e.Weight <= 0 || math.IsNaN(e.Value) || math.IsNaN(e.Weight) {
			continue
		}
		sum += clamp01(e.Value) * e.Weight
		weights += e.Weight
	}
	if weights == 0 {
		return 0
	}
	return round(clamp01(sum / weights))
}

// Builder assembles one AgentHints. The zero value is not usable; call New.
type Builder struct {
	h        *toolsvcv1.AgentHints
	evidence []Evidence
	start    time.Time
}

// New returns a Builder whose hints already have every required field:
// empty lists, source quality unknown, validity short, and a neutral
// estimated impact (benefit 0, effort 1) until Impact is called.
func New() *Builder {
	return &Builder{
		start: time.Now(),
		h: &toolsvcv1.AgentHints{
			SuggestedNextActions: []*toolsvcv1.SuggestedAction{},
			RelatedResources:     []*toolsvcv1.RelatedResource{},
			SourceQuality:        QualityUnknown,
			ValidityPeriod:       ValidShort,
			ContextNeeded:        []string{},
			Assumptions:          []string{},
			RiskFactors:          []*toolsvcv1.RiskFactor{},
			Dependencies:         []*toolsvcv1.ActionDependency{},
			EstimatedImpact:      &toolsvcv1.EstimatedImpact{Benefit: 0, Effort: 1, Roi: 0},
			PreferenceAlignment:  []*toolsvcv1.PreferenceAlignment{},
		},
	}
}

// Evidence records observations that confidence is computed from.
func (b *Builder) Evidence(ev ...Evidence) *Builder {
	b.evidence = append(b.evidence, ev...)
	return b
}

// ActionOption refines a suggested action.
type ActionOption func(*toolsvcv1.SuggestedAction)

// WithArgs attaches the arguments to call the suggested tool with.
func WithArgs(args map[string]any) ActionOption {
	return func(a *toolsvcv1.SuggestedAction) {
		if s, err := structpb.NewStruct(args); err == nil {
			a.Data = s
		}
	}
}

// WithCategory sets exploration, optimization, correction or learning.
func WithCategory(c string) ActionOption {
	return func(a *toolsvcv1.SuggestedAction) { a.Category = c }
}

// WithOutcome says what executing the action will achieve.
func WithOutcome(o string) ActionOption {
	return func(a *toolsvcv1.SuggestedAction) { a.ExpectedOutcome = o }
}

// WithActionConfidence sets the confidence in this action (0..1).
func WithActionConfidence(c float64) ActionOption {
	return func(a *toolsvcv1.SuggestedAction) { v := round(clamp01(c)); a.Confidence = &v }
}

// Reversible says whether the action can be undone.
func Reversible(r bool) ActionOption {
	return func(a *toolsvcv1.SuggestedAction) { a.Reversible = &r }
}

// WithPrerequisites names actions that must complete first.
func WithPrerequisites(p ...string) ActionOption {
	return func(a *toolsvcv1.SuggestedAction) { a.Prerequisites = append(a.Prerequisites, p...) }
}

// WithEstimatedTime sets the estimated time in milliseconds.
func WithEstimatedTime(ms float64) ActionOption {
	return func(a *toolsvcv1.SuggestedAction) { a.EstimatedTime = &ms }
}

// Next suggests an action (usually a tool name) with a priority.
func (b *Builder) Next(action, priority, description string, opts ...ActionOption) *Builder {
	a := &toolsvcv1.SuggestedAction{Action: action, Priority: priority, Description: description}
	for _, o := range opts {
		o(a)
	}
	b.h.SuggestedNextActions = append(b.h.SuggestedNextActions, a)
	return b
}

// Related adds a related resource with a relevance in 0..1.
func (b *Builder) Related(typ, id, label string, relevance float64, md *toolsvcv1.ResourceMetadata) *Builder {
	b.h.RelatedResources = append(b.h.RelatedResources, &toolsvcv1.RelatedResource{
		Type: typ, Id: id, Label: label, Relevance: round(clamp01(relevance)), Metadata: md,
	})
	return b
}

// Quality sets the source quality.
func (b *Builder) Quality(q string) *Builder { b.h.SourceQuality = q; return b }

// Validity sets how long the hints stay valid.
func (b *Builder) Validity(v string) *Builder { b.h.ValidityPeriod = v; return b }

// NeedContext records information that would improve the hints.
func (b *Builder) NeedContext(c ...string) *Builder {
	b.h.ContextNeeded = append(b.h.ContextNeeded, c...)
	return b
}

// Assume records assumptions made.
func (b *Builder) Assume(a ...string) *Builder {
	b.h.Assumptions = append(b.h.Assumptions, a...)
	return b
}

// Risk adds a risk factor.
func (b *Builder) Risk(typ, severity, description string, probability, impact float64, mitigation string) *Builder {
	b.h.RiskFactors = append(b.h.RiskFactors, &toolsvcv1.RiskFactor{
		Type: typ, Severity: severity, Description: description,
		Probability: round(clamp01(probability)), Impact: round(clamp01(impact)), Mitigation: mitigation,
	})
	return b
}

// Depends records that action depends on others (type required, recommended or optional).
func (b *Builder) Depends(action, typ, reason string, on ...string) *Builder {
	b.h.Dependencies = append(b.h.Dependencies, &toolsvcv1.ActionDependency{Action: action, DependsOn: on, Type: typ, Reason: reason})
	return b
}

// Impact sets the estimated impact; roi is computed as benefit / effort.
// Effort is clamped to (0, 1]: every action costs something.
func (b *Builder) Impact(benefit, effort float64, metrics ...string) *Builder {
	benefit = round(clamp01(benefit))
	effort = round(math.Max(clamp01(effort), 0.01))
	// roi keeps 6 decimals: benefit / effort's float noise (0.3 / 0.8 =
	// 0.37499999999999994) is not shown, and the hints' rule (roi within
	// 1e-6 of benefit / effort) still holds.
	roi := math.Round(benefit/effort*1e6) / 1e6
	b.h.EstimatedImpact = &toolsvcv1.EstimatedImpact{Benefit: benefit, Effort: effort, Roi: roi, AffectedMetrics: metrics}
	return b
}

// Align records how an action aligns with a preference (score -1..1).
func (b *Builder) Align(action, preference, alignment string, score float64, explanation string) *Builder {
	b.h.PreferenceAlignment = append(b.h.PreferenceAlignment, &toolsvcv1.PreferenceAlignment{
		Action: action, Preference: preference, Alignment: alignment, Score: round(math.Max(-1, math.Min(1, score))), Explanation: explanation,
	})
	return b
}

// Reason sets the plain-English reasoning.
func (b *Builder) Reason(format string, args ...any) *Builder {
	b.h.Reasoning = fmt.Sprintf(format, args...)
	return b
}

// Warn adds a warning.
func (b *Builder) Warn(typ, severity, message, fix string, relatedIDs ...string) *Builder {
	b.h.Warnings = append(b.h.Warnings, &toolsvcv1.Warning{Type: typ, Severity: severity, Message: message, SuggestedFix: fix, RelatedIds: relatedIDs})
	return b
}

// Alternative adds an approach that was considered.
func (b *Builder) Alternative(approach string, confidence float64, reasoning string) *Builder {
	b.h.Alternatives = append(b.h.Alternatives, &toolsvcv1.Alternative{Approach: approach, Confidence: round(clamp01(confidence)), Reasoning: reasoning})
	return b
}

// Constrain records a limitation of the suggestions.
func (b *Builder) Constrain(c ...string) *Builder {
	b.h.Constraints = append(b.h.Constraints, c...)
	return b
}

// Build computes confidence from the recorded evidence, stamps the hints'
// metadata and returns them. The Builder must not be used afterwards.
func (b *Builder) Build(generatedBy string) *toolsvcv1.AgentHints {
	b.capLists()
	b.h.Confidence = Confidence(b.evidence...)
	pt := float64(time.Since(b.start).Microseconds()) / 1000
	b.h.Metadata = &toolsvcv1.HintsMetadata{
		GeneratedAt:    timestamppb.Now(),
		GeneratedBy:    generatedBy,
		ProcessingTime: &pt,
	}
	return b.h
}

// capLists keeps the hints within their contract's bounds. Of the related
// resources it keeps the MaxRelatedResources most relevant (ties: the
// earlier), in the order the tool gave them; of the suggested actions the
// first MaxSuggestedActions of the highest priority. A constraint says how
// many of how many are listed, so an agent knows the list is a selection
// and that the result's data is whole.
func (b *Builder) capLists() {
	if n := len(b.h.RelatedResources); n > MaxRelatedResources {
		b.h.RelatedResources = keepTop(b.h.RelatedResources, MaxRelatedResources, func(x, y *toolsvcv1.RelatedResource) int {
			return cmp.Compare(y.GetRelevance(), x.GetRelevance())
		})
		b.h.Constraints = append(b.h.Constraints, fmt.Sprintf(
			"relatedResources lists the %d most relevant of %d resources; the result's data lists them all", MaxRelatedResources, n))
	}
	if n := len(b.h.SuggestedNextActions); n > MaxSuggestedActions {
		b.h.SuggestedNextActions = keepTop(b.h.SuggestedNextActions, MaxSuggestedActions, func(x, y *toolsvcv1.SuggestedAction) int {
			return cmp.Compare(priorityRank(x.GetPriority()), priorityRank(y.GetPriority()))
		})
		b.h.Constraints = append(b.h.Constraints, fmt.Sprintf(
			"suggestedNextActions lists the %d most important of %d actions", MaxSuggestedActions, n))
	}
}

// keepTop returns the n first elements of xs by order (stable: ties keep
// their place), in their original order.
func keepTop[T any](xs []T, n int, order func(x, y T) int) []T {
	idx := make([]int, len(xs))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(i, j int) int { return order(xs[i], xs[j]) })
	idx = idx[:n]
	slices.Sort(idx)
	out := make([]T, n)
	for k, i := range idx {
		out[k] = xs[i]
	}
	return out
}

// priorityRank orders priorities from the most urgent.
func priorityRank(p string) int {
	switch p {
	case Critical:
		return 0
	case High:
		return 1
	case Medium:
		return 2
	case Low:
		return 3
	default:
		return 4
	}
}

func clamp01(v float64) float64 {
	switch {
	case math.IsNaN(v) || v < 0:
		return 0
	case v > 1:
		return 1
	default:
		return v
	}
}

// round keeps 4 decimals so that hints read well and compare stably.
func round(v float64) float64 { return math.Round(v*1e4) / 1e4 }
