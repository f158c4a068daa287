package mcpbridge

import "google.golang.org/protobuf/proto"

// ResultSplits is how many cached results the bridge has rendered (once
// each) to reuse on later hits.
func ResultSplits() int64 { return resultSplits.Load() }

// RenderResult renders m as a tools/call result's structuredContent,
// afresh.
func RenderResult(m proto.Message) ([]byte, error) {
	b, buf, err := marshalResult(m)
	if err != nil {
		return nil, err
	}
	defer scratch.Put(buf)
	return append([]byte(nil), b...), nil
}
