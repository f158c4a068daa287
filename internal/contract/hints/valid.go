package hints

import (
	"regexp"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/v1"
)

// Valid reports whether h certainly satisfies the protovalidate rules of
// AgentHints (proto/toolsvc/v1/hints.proto). It is the chain's fast path
// for checking every result's hints: protovalidate interprets the rules
// and was the largest single step of the chain after the tool
// (measured: docs/BENCHMARKS.md, "Design measurements"). Valid checks the same rules directly and is conservative: a
// true answer means protovalidate passes too (TestValidImpliesProtovalidate),
// a false one only that protovalidate must decide and name the violation.
// Parts it does not check itself (preference alignments, dependencies,
// alternatives) make it answer false. TestValidCoversEveryRule fails when
// a rule is added to the proto that this function does not know.
func Valid(h *toolsvcv1.AgentHints) bool {
	if h == nil || len(h.GetSuggestedNextActions()) > MaxSuggestedActions || len(h.GetRelatedResources()) > MaxRelatedResources ||
		!unit(h.GetConfidence()) || !oneOf(h.GetSourceQuality(), sourceQualities) ||
		!oneOf(h.GetValidityPeriod(), validityPeriods) ||
		len(h.GetPreferenceAlignment()) > 0 || len(h.GetDependencies()) > 0 || len(h.GetAlternatives()) > 0 {
		return false
	}
	for _, a := range h.GetSuggestedNextActions() {
		if !validAction(a) {
			return false
		}
	}
	for _, r := range h.GetRelatedResources() {
		if r.GetType() == "" || r.GetId() == "" || !unit(r.GetRelevance()) {
			return false
		}
	}
	for _, r := range h.GetRiskFactors() {
		if !oneOf(r.GetType(), riskTypes) || !oneOf(r.GetSeverity(), priorities) || r.GetDescription() == "" ||
			!unit(r.GetProbability()) || !unit(r.GetImpact()) {
			return false
		}
	}
	for _, w := range h.GetWarnings() {
		if !oneOf(w.GetType(), warningTypes) || !oneOf(w.GetSeverity(), priorities) || w.GetMessage() == "" {
			return false
		}
	}
	if m := h.GetMetadata(); m != nil && m.ProcessingTime != nil && !(m.GetProcessingTime() >= 0) {
		return false
	}
	return validImpact(h.GetEstimatedImpact())
}

// validAction checks a SuggestedAction's rules.
func validAction(a *toolsvcv1.SuggestedAction) bool {
	return actionName.MatchString(a.GetAction()) && oneOf(a.GetPriority(), priorities) &&
		(a.EstimatedTime == nil || a.GetEstimatedTime() >= 0) && (a.EstimatedCost == nil || a.GetEstimatedCost() >= 0) &&
		oneOf(a.GetCategory(), categories) && (a.Confidence == nil || unit(a.GetConfidence()))
}

// validImpact checks EstimatedImpact: required, benefit in 0..1, effort in
// (0, 1], and roi = benefit / effort within 1e-6 (its CEL rule).
func validImpact(e *toolsvcv1.EstimatedImpact) bool {
	if e == nil || !unit(e.GetBenefit()) || !(e.GetEffort() > 0 && e.GetEffort() <= 1) {
		return false
	}
	d := e.GetRoi() - e.GetBenefit()/e.GetEffort()
	return d <= 0.000001 && -d <= 0.000001
}

// unit is the rule {gte: 0, lte: 1}; NaN fails it, as in protovalidate.
func unit(f float64) bool { return f >= 0 && f <= 1 }

func oneOf(s string, set []string) bool {
	for _, v := range set {
		if s == v {
			return true
		}
	}
	return false
}

// The sets and the pattern of hints.proto's rules.
var (
	actionName      = regexp.MustCompile(`^[a-z][a-z0-9]*(-[a-z0-9]+)*$`)
	sourceQualities = []string{"high", "medium", "low", "unknown"}
	validityPeriods = []string{"immediate", "short", "medium", "long", "indefinite"}
	priorities      = []string{"critical", "high", "medium", "low"}
	categories      = []string{"", "exploration", "optimization", "correction", "learning"}
	riskTypes       = []string{"performance", "accuracy", "cost", "complexity", "user-experience"}
	warningTypes    = []string{"validation", "duplicate", "conflict", "deprecation", "performance"}
)
