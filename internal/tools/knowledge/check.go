package knowledge

import (
	"context"
	"errors"
	"fmt"
	"slices"

	knowledgev1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/knowledge/v1"
	"github.com/toolsvc/toolsvc/internal/contract/hints"
	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
	"github.com/toolsvc/toolsvc/internal/tools/internal/scope"
	"github.com/toolsvc/toolsvc/internal/tools/knowledge/kb"
)

// CheckKnowledge evaluates the constraints of accepted items (all of them,
// or those named by knowledgeItemIds) against the given files and
// dependencies. Violations at or above minSeverity (default "warn") are
// listed with their location; passed is false iff a blocking violation
// exists, whatever minSeverity filtered out. Unknown item ids are listed
// and warned about, not an error.
func (s *Service) CheckKnowledge(ctx context.Context, req *knowledgev1.CheckKnowledgeRequest) (*knowledgev1.CheckKnowledgeResponse, error) {
	caller, err := scope.FromContext(ctx)
	if err != nil {
		return nil, err
	}
	minSeverity := req.GetMinSeverity()
	if minSeverity == "" {
		minSeverity = DefaultMinSeverity
	}
	set, viewer := s.knowledgeOf(ctx, caller)
	in := kb.CheckInput{MinSeverity: minSeverity, ItemIDs: req.GetKnowledgeItemIds(), Viewer: viewer}
	for _, f := range req.GetFiles() {
		in.Files = append(in.Files, kb.File{Path: f.GetPath(), Content: f.GetContent()})
	}
	for _, d := range req.GetDependencies() {
		in.Dependencies = append(in.Dependencies, kb.Dependency{Name: d.GetName(), Version: d.GetVersion()})
	}
	res, err := set.Check(ctx, in)
	if err != nil {
		var ie *kb.InputError
		if errors.As(err, &ie) {
			return nil, toolerr.Invalid(inputField(ie.Field), "check.input", "%s", ie.Reason)
		}
		return nil, err
	}

	data := &knowledgev1.CheckKnowledgeData{
		Passed:               res.Passed,
		Violations:           make([]*knowledgev1.Violation, len(res.Violations)),
		Summary:              &knowledgev1.ViolationSummary{Info: uint32(res.Summary.Info), Warn: uint32(res.Summary.Warn), Block: uint32(res.Summary.Block)},
		ItemsEvaluated:       uint32(res.ItemsEvaluated),
		ConstraintsEvaluated: uint32(res.ConstraintsEvaluated),
		UnknownItemIds:       nonNil(res.UnknownItemIDs),
		Truncated:            res.Truncated,
		Superseded:           make([]*knowledgev1.SupersededItem, len(res.Superseded)),
	}
	for i, sup := range res.Superseded {
		data.Superseded[i] = &knowledgev1.SupersededItem{KnowledgeItemId: sup.Item.ID, Layer: sup.Item.Layer,
			SupersededBy: sup.By.ID, SupersededByLayer: sup.By.Layer}
	}
	for i, v := range res.Violations {
		pv := &knowledgev1.Violation{
			KnowledgeItemId:    v.ItemID,
			KnowledgeItemTitle: v.ItemTitle,
			Constraint:         &knowledgev1.ViolatedConstraint{Operator: v.Constraint.Operator, Target: v.Constraint.Target, Pattern: v.Constraint.Pattern},
			Severity:           v.Severity,
			Message:            v.Message,
			Layer:              v.Layer,
			Owner:              v.Owner,
		}
		if v.File != "" {
			pv.Location = &knowledgev1.Location{File: v.File, Line: uint32(max(v.Line, 0))}
		}
		data.Violations[i] = pv
	}
	return &knowledgev1.CheckKnowledgeResponse{Data: data, AgentHints: checkHints(set, viewer, req, res, minSeverity).Build(generatedBy + toolCheck)}, nil
}

// inputField turns a knowledge.InputError field ("Files[2].Path") into the
// request's JSON path ("files[2].path").
func inputField(f string) string {
	switch f {
	case "MinSeverity":
		return "minSeverity"
	}
	var i int
	if _, err := fmt.Sscanf(f, "Files[%d].Path", &i); err == nil {
		return fmt.Sprintf("files[%d].path", i)
	}
	return f
}

// applicable counts the constraints of the accepted items a check looks at
// (all accepted items, or the accepted ones among ids), and how many of
// the named items are accepted.
func applicable(set *kb.Set, v *kb.Viewer, ids []string, superseded []kb.Supersession) (constraints, named, accepted int) {
	left := map[string]bool{}
	for _, s := range superseded {
		left[s.Item.ID] = true
	}
	if len(ids) == 0 {
		for _, it := range set.Visible(v) {
			if it.Status == kb.StatusAccepted && !left[it.ID] {
				constraints += len(it.Constraints)
			}
		}
		return constraints, 0, 0
	}
	seen := map[string]bool{}
	for _, id := range ids {
		if seen[id] {
			continue
		}
		seen[id] = true
		named++
		if it, ok := set.GetVisible(id, v); ok && it.Status == kb.StatusAccepted && !left[id] {
			accepted++
			constraints += len(it.Constraints)
		}
	}
	return constraints, named, accepted
}

func checkHints(set *kb.Set, v *kb.Viewer, req *knowledgev1.CheckKnowledgeRequest, res kb.CheckResult, minSeverity string) *hints.Builder {
	h := hints.New().Validity(hints.ValidShort)
	total, named, accepted := applicable(set, v, req.GetKnowledgeItemIds(), res.Superseded)
	coverage := 0.0
	if total > 0 {
		coverage = float64(res.ConstraintsEvaluated) / float64(total)
	}
	ev := []hints.Evidence{{Name: "constraints evaluated of those of the checked items", Value: coverage, Weight: 1}}
	if named > 0 {
		ev = append(ev, hints.Evidence{Name: "named items that are accepted", Value: float64(accepted) / float64(named), Weight: 1})
	}
	if res.Truncated {
		ev = append(ev, hints.Evidence{Name: "violations listed completely", Value: 0, Weight: 0.5})
	}
	h.Evidence(ev...)
	switch {
	case res.ConstraintsEvaluated == 0:
		h.Quality(hints.QualityLow).Risk("accuracy", hints.High,
			"No constraint applied to the given files and dependencies: passing says nothing.", 0.5, 0.7,
			"Give the files or dependencies the change touches, or name the items to check.")
	case coverage >= 0.5:
		h.Quality(hints.QualityHigh)
	default:
		h.Quality(hints.QualityMedium)
	}

	if len(req.GetFiles()) == 0 && len(req.GetDependencies()) == 0 {
		// Nothing to check (check-knowledge's fields are all optional): the check
		// passes and says nothing. With item ids only, the useful next step
		// is reading those items' constraints; with nothing at all, giving
		// what the change touches.
		known := req.GetKnowledgeItemIds()
		ids := make([]any, len(known))
		for i, id := range known {
			ids[i] = id
		}
		if len(known) > 0 {
			for _, id := range known {
				if slices.Contains(res.UnknownItemIDs, id) {
					continue
				}
				h.Next(toolShow, hints.Medium, "Read the constraints of "+id+": nothing was checked against them.",
					hints.WithArgs(map[string]any{"id": id}), hints.WithCategory(catExploration))
			}
		}
		h.Next(toolCheck, hints.High, "Nothing was checked: call again with the files or dependencies the change touches.",
			hints.WithCategory(catCorrection), hints.WithArgs(map[string]any{"knowledgeItemIds": ids,
				"dependencies": []any{map[string]any{"name": "mysql2"}}}))
	}
	if len(res.UnknownItemIDs) > 0 {
		h.Warn("validation", hints.Medium, fmt.Sprintf("%d requested knowledge item(s) do not exist and were not checked", len(res.UnknownItemIDs)),
			"query-knowledge to find the right ids", res.UnknownItemIDs...)
		h.Next(toolQuery, hints.Medium, "Find the ids of the items you meant to check against.", hints.WithCategory(catExploration))
	}
	if res.Truncated {
		h.Warn("performance", hints.Medium, fmt.Sprintf("more than %d violations: the list is truncated", kb.MaxViolations),
			"check fewer files at a time")
	}

	involved := map[string]bool{}
	var firstBlock *kb.Violation
	for i, v := range res.Violations {
		if !involved[v.ItemID] {
			involved[v.ItemID] = true
			rel := 0.5
			if v.Severity == kb.SeverityBlock {
				rel = 1
			}
			h.Related(resourceItem, v.ItemID, v.ItemTitle, rel, nil)
		}
		if v.Severity == kb.SeverityBlock && firstBlock == nil {
			firstBlock = &res.Violations[i]
		}
	}
	if firstBlock != nil {
		where := "the change"
		switch {
		case firstBlock.File != "" && firstBlock.Line > 0:
			where = fmt.Sprintf("%s line %d", firstBlock.File, firstBlock.Line)
		case firstBlock.File != "":
			where = firstBlock.File
		case firstBlock.Subject != "":
			where = fmt.Sprintf("dependency %q", firstBlock.Subject)
		}
		h.Next(hints.ActionFixViolation, hints.Critical, fmt.Sprintf("Fix %s: %s", where, firstBlock.Message),
			hints.WithCategory(catCorrection), hints.WithArgs(map[string]any{
				"knowledgeItemId": firstBlock.ItemID, "subject": firstBlock.Subject, "file": firstBlock.File,
			}), hints.WithOutcome("check-knowledge passes."))
		h.Next(toolShow, hints.High, "Read the item behind the blocking violation to see what is allowed instead.",
			hints.WithArgs(map[string]any{"id": firstBlock.ItemID}), hints.WithCategory(catExploration))
		h.Next(toolCheck, hints.Medium, "Check again after the fix.", hints.WithCategory(catCorrection),
			hints.WithPrerequisites(hints.ActionFixViolation))
		h.Depends(toolCheck, "required", "re-checking only makes sense after the fix", hints.ActionFixViolation)
		h.Impact(0.9, 0.4, "compliance")
	} else {
		h.Impact(0.5, 0.1, "compliance")
	}
	h.Assume(fmt.Sprintf("Only accepted items are checked; violations below %q are not listed.", minSeverity))
	h.Assume("Only the items of the caller's tenant that its org, team and project ids see are checked; each violation names its item's layer and owner.")
	for _, sup := range res.Superseded {
		h.Assume(fmt.Sprintf("%s (%s) was not checked: %s (%s) supersedes it for this caller.", sup.Item.ID, sup.Item.Layer, sup.By.ID, sup.By.Layer))
	}
	verdict := "passed"
	if !res.Passed {
		verdict = "failed"
	}
	h.Reason("Check %s: %d item(s) and %d of %d applicable constraint(s) evaluated; %d block, %d warn, %d info violation(s) listed.",
		verdict, res.ItemsEvaluated, res.ConstraintsEvaluated, total, res.Summary.Block, res.Summary.Warn, res.Summary.Info)
	return h
}
