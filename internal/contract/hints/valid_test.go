package hints_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"buf.build/gen/go/bufbuild/protovalidate/protocolbuffers/go/buf/validate"
	"buf.build/go/protovalidate"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/v1"
	"github.com/toolsvc/toolsvc/internal/contract/hints"
)

// Pools of values the generator picks from: each holds values that pass
// and values that break some rule, edges included.
var (
	units = []float64{0, 0.25, 1, -0.0001, 1.0001, math.NaN(), math.Inf(1), -1}
	strs  = []string{"", "high", "medium", "low", "unknown", "critical", "short", "immediate", "indefinite", "long",
		"performance", "accuracy", "cost", "complexity", "user-experience", "validation", "duplicate", "conflict",
		"deprecation", "exploration", "optimization", "correction", "learning", "x", "HIGH", " high"}
	actions = []string{"search-memories", "get-sync-status", "a", "a1-b2", "", "Search", "search--x", "search-", "-x", "1abc", "sync_knowledge"}
)

func pick[T any](r *rand.Rand, xs []T) T { return xs[r.IntN(len(xs))] }

// randomHints builds hints mostly from valid values, with a chance of a
// broken field anywhere, and now and then the parts Valid leaves to
// protovalidate.
func randomHints(r *rand.Rand) *toolsvcv1.AgentHints {
	ok := func() bool { return r.IntN(12) != 0 }
	unit := func() float64 {
		if ok() {
			return float64(r.IntN(5)) / 4
		}
		return pick(r, units)
	}
	str := func(valid ...string) string {
		if ok() {
			return pick(r, valid)
		}
		return pick(r, strs)
	}
	h := hints.New().Build("test")
	h.Confidence = unit()
	h.SourceQuality = str("high", "medium", "low", "unknown")
	h.ValidityPeriod = str("immediate", "short", "medium", "long", "indefinite")
	for range r.IntN(4) {
		a := &toolsvcv1.SuggestedAction{Action: pick(r, actions[:4]), Priority: str("critical", "high", "medium", "low"),
			Category: str("", "exploration", "optimization", "correction", "learning")}
		if !ok() {
			a.Action = pick(r, actions)
		}
		if r.IntN(3) == 0 {
			a.Confidence = proto.Float64(unit())
		}
		if r.IntN(3) == 0 {
			a.EstimatedTime = proto.Float64(pick(r, []float64{0, 12, -1, math.NaN()}))
		}
		if r.IntN(3) == 0 {
			a.EstimatedCost = proto.Float64(pick(r, []float64{0, 0.5, -0.1}))
		}
		h.SuggestedNextActions = append(h.SuggestedNextActions, a)
	}
	if r.IntN(20) == 0 {
		for range 21 {
			h.SuggestedNextActions = append(h.SuggestedNextActions, &toolsvcv1.SuggestedAction{Action: "a", Priority: "low"})
		}
	}
	for range r.IntN(3) {
		h.RelatedResources = append(h.RelatedResources, &toolsvcv1.RelatedResource{Type: str("memory", "knowledge"), Id: str("m-1", "adr-7"), Relevance: unit()})
	}
	for range r.IntN(3) {
		h.RiskFactors = append(h.RiskFactors, &toolsvcv1.RiskFactor{Type: str("performance", "accuracy", "cost", "complexity", "user-experience"),
			Severity: str("critical", "high", "medium", "low"), Description: str("stale data"), Probability: unit(), Impact: unit()})
	}
	for range r.IntN(3) {
		h.Warnings = append(h.Warnings, &toolsvcv1.Warning{Type: str("validation", "duplicate", "conflict", "deprecation", "performance"),
			Severity: str("low", "medium", "high", "critical"), Message: str("check the input")})
	}
	benefit, effort := unit(), pick(r, []float64{0.5, 1, 0.25})
	if !ok() {
		effort = pick(r, []float64{0, -0.5, 1.5, math.NaN()})
	}
	h.EstimatedImpact = &toolsvcv1.EstimatedImpact{Benefit: benefit, Effort: effort, Roi: benefit / effort}
	switch r.IntN(16) {
	case 0:
		h.EstimatedImpact = nil
	case 1:
		h.EstimatedImpact.Roi += pick(r, []float64{0.0000005, 0.00001, -0.001})
	case 2:
		h.Metadata = &toolsvcv1.HintsMetadata{ProcessingTime: proto.Float64(pick(r, []float64{0, 3.5, -1, math.NaN()}))}
	case 3:
		h.Alternatives = append(h.Alternatives, &toolsvcv1.Alternative{Approach: "retry", Confidence: unit()})
	case 4:
		h.Dependencies = append(h.Dependencies, &toolsvcv1.ActionDependency{Action: "a", DependsOn: []string{"b"}, Type: "required"})
	case 5:
		h.PreferenceAlignment = append(h.PreferenceAlignment, &toolsvcv1.PreferenceAlignment{Action: "a", Preference: "p", Alignment: "strong"})
	}
	return h
}

// TestValidImpliesProtovalidate checks Valid against protovalidate on
// random hints: whenever Valid says yes, protovalidate agrees (the fast
// path never lets a broken result through), and for hints without the
// parts Valid leaves to protovalidate the two agree exactly (the fast path
// is taken whenever it can be).
func TestValidImpliesProtovalidate(t *testing.T) {
	v, err := protovalidate.New()
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	var valid, invalid, deferred int
	for i := range 20000 {
		h := randomHints(r)
		fast := hints.Valid(h)
		slowErr := v.Validate(h)
		leftToProtovalidate := len(h.Alternatives)+len(h.Dependencies)+len(h.PreferenceAlignment) > 0
		switch {
		case fast && slowErr != nil:
			t.Fatalf("case %d: Valid accepts hints protovalidate refuses (%v):\n%v", i, slowErr, h)
		case !fast && slowErr == nil && !leftToProtovalidate:
			t.Fatalf("case %d: Valid refuses hints protovalidate accepts:\n%v", i, h)
		case fast:
			valid++
		case leftToProtovalidate:
			deferred++
		default:
			invalid++
		}
	}
	t.Logf("valid %d, invalid %d, left to protovalidate %d", valid, invalid, deferred)
	if valid < 1000 || invalid < 1000 {
		t.Fatalf("the generator is lopsided: %d valid, %d invalid", valid, invalid)
	}
	// What the builder makes is valid.
	if !hints.Valid(hints.New().Build("test")) {
		t.Fatal("a fresh builder's hints are not Valid")
	}
}

// TestValidCoversEveryRule lists every protovalidate rule reachable from
// AgentHints and fails on one Valid does not know: a rule added to
// hints.proto must be added to Valid (or its message to the parts Valid
// leaves to protovalidate) in the same change.
func TestValidCoversEveryRule(t *testing.T) {
	known := []string{
		"toolsvc.v1.AgentHints.suggested_next_actions", "toolsvc.v1.AgentHints.related_resources",
		"toolsvc.v1.AgentHints.confidence", "toolsvc.v1.AgentHints.source_quality", "toolsvc.v1.AgentHints.validity_period",
		"toolsvc.v1.AgentHints.estimated_impact",
		"toolsvc.v1.SuggestedAction.action", "toolsvc.v1.SuggestedAction.priority", "toolsvc.v1.SuggestedAction.estimated_time",
		"toolsvc.v1.SuggestedAction.estimated_cost", "toolsvc.v1.SuggestedAction.category", "toolsvc.v1.SuggestedAction.confidence",
		"toolsvc.v1.RelatedResource.type", "toolsvc.v1.RelatedResource.id", "toolsvc.v1.RelatedResource.relevance",
		"toolsvc.v1.RiskFactor.type", "toolsvc.v1.RiskFactor.severity", "toolsvc.v1.RiskFactor.description",
		"toolsvc.v1.RiskFactor.probability", "toolsvc.v1.RiskFactor.impact",
		"toolsvc.v1.EstimatedImpact.benefit", "toolsvc.v1.EstimatedImpact.effort", "toolsvc.v1.EstimatedImpact (message)",
		"toolsvc.v1.Warning.type", "toolsvc.v1.Warning.severity", "toolsvc.v1.Warning.message",
		"toolsvc.v1.HintsMetadata.processing_time",
	}
	// Messages Valid refuses whenever they are present.
	deferred := []protoreflect.FullName{"toolsvc.v1.PreferenceAlignment", "toolsvc.v1.ActionDependency", "toolsvc.v1.Alternative"}
	var found []string
	seen := map[protoreflect.FullName]bool{}
	var walk func(md protoreflect.MessageDescriptor)
	walk = func(md protoreflect.MessageDescriptor) {
		if seen[md.FullName()] || slices.Contains(deferred, md.FullName()) {
			return
		}
		seen[md.FullName()] = true
		if mr, ok := proto.GetExtension(md.Options(), validate.E_Message).(*validate.MessageRules); ok && mr != nil && proto.Size(mr) > 0 {
			found = append(found, string(md.FullName())+" (message)")
		}
		for i := range md.Fields().Len() {
			fd := md.Fields().Get(i)
			if fr, ok := proto.GetExtension(fd.Options(), validate.E_Field).(*validate.FieldRules); ok && fr != nil && proto.Size(fr) > 0 {
				found = append(found, string(fd.FullName()))
			}
			if fd.Message() != nil {
				walk(fd.Message())
			}
		}
		for i := range md.Oneofs().Len() {
			if or, ok := proto.GetExtension(md.Oneofs().Get(i).Options(), validate.E_Oneof).(*validate.OneofRules); ok && or != nil && proto.Size(or) > 0 {
				found = append(found, string(md.Oneofs().Get(i).FullName())+" (oneof)")
			}
		}
	}
	walk((&toolsvcv1.AgentHints{}).ProtoReflect().Descriptor())
	for _, f := range found {
		if !slices.Contains(known, f) {
			t.Errorf("rule on %s is not checked by hints.Valid", f)
		}
	}
	for _, k := range known {
		if !slices.Contains(found, k) {
			t.Errorf("hints.Valid checks %s, which has no rule in hints.proto any more", k)
		}
	}
}

func BenchmarkValid(b *testing.B) {
	h := hints.New().Next("search-memories", hints.High, "look").Evidence(hints.Evidence{Value: 0.5, Weight: 1}).Build("test")
	v, err := protovalidate.New()
	if err != nil {
		b.Fatal(err)
	}
	b.Run("fast", func(b *testing.B) {
		for b.Loop() {
			if !hints.Valid(h) {
				b.Fatal("invalid")
			}
		}
	})
	b.Run("protovalidate", func(b *testing.B) {
		for b.Loop() {
			if err := v.Validate(h); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestCapsMatchProto: the Builder's caps are the max_items rules of
// hints.proto, so a tightened rule cannot leave the Builder building hints
// the result validator refuses.
func TestCapsMatchProto(t *testing.T) {
	fields := (&toolsvcv1.AgentHints{}).ProtoReflect().Descriptor().Fields()
	for name, want := range map[protoreflect.Name]int{
		"suggested_next_actions": hints.MaxSuggestedActions,
		"related_resources":      hints.MaxRelatedResources,
	} {
		fr, _ := proto.GetExtension(fields.ByName(name).Options(), validate.E_Field).(*validate.FieldRules)
		if got := fr.GetRepeated().GetMaxItems(); got != uint64(want) {
			t.Errorf("%s: max_items %d in hints.proto, the Builder caps at %d", name, got, want)
		}
	}
}

// TestBuildKeepsHintsWithinTheirContract: a tool that relates more
// resources or suggests more actions than the contract allows still gets
// hints that pass protovalidate: the most relevant resources and the most
// urgent actions, in the tool's order, and a constraint saying what was cut.
func TestBuildKeepsHintsWithinTheirContract(t *testing.T) {
	v, err := protovalidate.New()
	if err != nil {
		t.Fatal(err)
	}
	b := hints.New()
	for i := range 120 {
		// Relevance rises then falls: the most relevant are not the first.
		b.Related("memory", fmt.Sprintf("m-%03d", i), "", 1-math.Abs(float64(i-60))/60, nil)
	}
	for i := range 30 {
		p := hints.Low
		if i%10 == 9 {
			p = hints.Critical
		}
		b.Next("search-memories", p, fmt.Sprintf("step %d", i))
	}
	h := b.Build("test")
	if err := v.Validate(h); err != nil {
		t.Fatalf("hints break their contract: %v", err)
	}
	if !hints.Valid(h) {
		t.Error("hints.Valid refuses the capped hints")
	}
	rr := h.GetRelatedResources()
	if len(rr) != hints.MaxRelatedResources {
		t.Fatalf("%d related resources, want %d", len(rr), hints.MaxRelatedResources)
	}
	for i, r := range rr {
		// The 50 most relevant of 0..119 are 35..84 (relevance >= 1-25/60), in order.
		if want := fmt.Sprintf("m-%03d", 35+i); r.GetId() != want {
			t.Fatalf("related[%d] = %s, want %s", i, r.GetId(), want)
		}
	}
	acts := h.GetSuggestedNextActions()
	if len(acts) != hints.MaxSuggestedActions {
		t.Fatalf("%d actions, want %d", len(acts), hints.MaxSuggestedActions)
	}
	if acts[9].GetPriority() != hints.Critical || acts[0].GetDescription() != "step 0" {
		t.Errorf("actions lost their order or the critical ones: %v", acts)
	}
	critical := 0
	for _, a := range acts {
		if a.GetPriority() == hints.Critical {
			critical++
		}
	}
	if critical != 3 {
		t.Errorf("%d critical actions kept, want all 3", critical)
	}
	want := []string{
		"relatedResources lists the 50 most relevant of 120 resources; the result's data lists them all",
		"suggestedNextActions lists the 20 most important of 30 actions",
	}
	if !slices.Equal(h.GetConstraints(), want) {
		t.Errorf("constraints %q, want %q", h.GetConstraints(), want)
	}
}
