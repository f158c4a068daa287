package mcpbridge

import (
	"sync"
	"sync/atomic"

	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/toolsvc/toolsvc/internal/contract/callctx"
	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
)

// renderingMCP names the bridge's rendering in a callctx.Rendered.
const renderingMCP = "mcp.result"

// cachedParts is the result JSON of a cached result around its metadata,
// the one part the chain sets per call: head is everything before the
// metadata's value, tail everything after. ok is false when appendResult
// does not render the message (protojson does, on every call).
type cachedParts struct {
	desc       protoreflect.MessageDescriptor
	head, tail []byte
	ok         bool
}

// marshalOnce renders out, the result of a call made with slot in its
// context, as marshalResult does. When the chain answered from its cache,
// it reuses the rendering of the same cached result made for an earlier
// call and renders only this call's metadata into it.
func marshalOnce(slot *callctx.RenderSlot, out proto.Message) (result []byte, buf *[]byte, err error) {
	if r := slot.Rendered(); r != nil {
		if result, buf, ok := marshalCached(r, out); ok {
			return result, buf, nil
		}
	}
	return marshalResult(out)
}

// marshalCached renders out from r's parts (made from out the first
// time) and out's metadata; ok is false when it cannot, and out must be
// rendered whole.
func marshalCached(r *callctx.Rendered, out proto.Message) (result []byte, buf *[]byte, ok bool) {
	pr := out.ProtoReflect()
	meta := pr.Descriptor().Fields().ByName("metadata")
	if meta == nil || meta.Message() == nil || !pr.Has(meta) {
		return nil, nil, false
	}
	v, found := r.Load(renderingMCP)
	if !found {
		v = r.Store(renderingMCP, splitResult(pr, meta))
	}
	p := v.(*cachedParts)
	// Another descriptor of the type (an upstream's contracts read again
	// while the call was on its way) renders whole.
	if !p.ok || p.desc != pr.Descriptor() {
		return nil, nil, false
	}
	buf = scratch.Get().(*[]byte)
	b := (*buf)[:0]
	b = append(b, p.head...)
	b, err := appendMessage(b, pr.Get(meta).Message())
	if err != nil {
		scratch.Put(buf)
		return nil, nil, false
	}
	b = append(b, p.tail...)
	if cap(b) <= 64<<10 { // as marshalResult
		*buf = b
	}
	return b, buf, true
}

// resultSplits counts splitResult's renderings (read by tests: a cached
// result is rendered once).
var resultSplits atomic.Int64

// splitResult renders m and cuts it around the value of its field meta.
func splitResult(m protoreflect.Message, meta protoreflect.FieldDescriptor) *cachedParts {
	resultSplits.Add(1)
	b, start, end, err := appendFields(nil, m, meta)
	if err != nil || start < 0 || end < start {
		return &cachedParts{desc: m.Descriptor()}
	}
	return &cachedParts{desc: m.Descriptor(), head: b[:start:start], tail: b[end:], ok: true}
}

// scratch holds the buffers results are rendered into before
// toolResult copies them (twice) into the response: reused, they spare
// protojson growing a new buffer on every call.
var scratch = sync.Pool{New: func() any { return new([]byte) }}

// marshalResult renders m as resultJSON would (appendResult, or
// protojson for what that leaves to it) into a scratch buffer (*buf,
// which the caller returns to scratch once done with the result).
func marshalResult(m proto.Message) (result []byte, buf *[]byte, err error) {
	buf = scratch.Get().(*[]byte)
	b, ok := appendResult((*buf)[:0], m.ProtoReflect())
	if !ok {
		b, err = resultJSON.MarshalAppend((*buf)[:0], m)
	}
	if err != nil {
		scratch.Put(buf)
		return nil, nil, status.Error(toolerr.Internal.GRPCCode(), "internal error: result is not serializable")
	}
	if cap(b) <= 64<<10 { // a huge result's buffer is left to the GC
		*buf = b
	}
	return b, buf, nil
}
