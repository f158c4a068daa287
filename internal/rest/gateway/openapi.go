package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/toolsvc/toolsvc/gen/openapi"
	"github.com/toolsvc/toolsvc/internal/base/version"
	"github.com/toolsvc/toolsvc/internal/contract/registry"
	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
)

// baseDocument decodes the document protoc-gen-openapiv2 generated
// (gen/openapi/toolsvc.swagger.json, embedded).
func baseDocument() (map[string]any, error) {
	var doc map[string]any
	if err := decodeJSON(openapi.Swagger, &doc); err != nil {
		return nil, fmt.Errorf("gateway: embedded OpenAPI document: %w", err)
	}
	return doc, nil
}

// decodeJSON decodes keeping numbers as written.
func decodeJSON(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	return dec.Decode(v)
}

// Document returns the OpenAPI 2.0 document of the REST API: the one
// generated from the protos, enriched from reg with what the protos'
// OpenAPI options cannot say (contracts carry no openapiv2 options):
//
//   - each tool operation's title, description, deprecation, examples and
//     contract (x-toolsvc-tool: permissions, category, annotations, rate
//     limit, ...);
//   - the protovalidate constraints of the tools' derived input schemas
//     (lengths, patterns, bounds, enums, item limits, required fields) as
//     schema and parameter keywords;
//   - the bearer security scheme;
//   - every error response with the {"error": ToolError} body, Retry-After
//     on 429 and WWW-Authenticate on 401;
//   - the /api/mcp routes (docs/REST.md, Routes).
//
// The output is deterministic (sorted keys), so it can be golden-tested.
func Document(reg *registry.Registry) ([]byte, error) {
	doc, err := baseDocument()
	if err != nil {
		return nil, err
	}
	d := &document{doc: doc, defs: object(doc, "definitions"), paths: object(doc, "paths")}
	d.info()
	d.errorModel()
	if err := d.tools(reg); err != nil {
		return nil, err
	}
	d.apiMCPRoutes()
	d.errorResponses()
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("gateway: encode OpenAPI document: %w", err)
	}
	return append(out, '\n'), nil
}

type document struct {
	doc, defs, paths map[string]any
}

// object returns m[key] as an object, creating it when absent.
func object(m map[string]any, key string) map[string]any {
	if o, ok := m[key].(map[string]any); ok {
		return o
	}
	o := map[string]any{}
	m[key] = o
	return o
}

func (d *document) info() {
	d.doc["info"] = map[string]any{
		"title":   "toolsvc REST API",
		"version": version.Version,
		"description": "Agent tools defined as protobuf contracts, served over REST by a gateway that is a client " +
			"of the one gRPC server and interceptor chain. Authenticate with `Authorization: Bearer <API key or JWT>`. " +
			"Every tool result is {data, agentHints, metadata}; every error is {\"error\": ToolError} with the HTTP " +
			"status of its code. Each tool operation carries its contract in x-toolsvc-tool.",
	}
	d.doc["securityDefinitions"] = map[string]any{
		"bearer": map[string]any{
			"type": "apiKey", "in": "header", "name": "Authorization",
			"description": "`Bearer <token>`, where the token is an API key or a JWT from the configured issuer.",
		},
	}
	d.doc["security"] = []any{map[string]any{"bearer": []any{}}}
	tags, _ := d.doc["tags"].([]any)
	d.doc["tags"] = append(tags, map[string]any{
		"name":        "Seed003",
		"description": "The /api/mcp routes (docs/REST.md, Routes): health, tool listing and tool calls by name.",
	})
}

// errorModel adds the ToolError schema (the proto message is not in any
// RPC's signature, so the generator leaves it out) and the error body.
func (d *document) errorModel() {
	str := func(desc string) map[string]any { return map[string]any{"type": "string", "description": desc} }
	codes := make([]any, 0, len(toolerr.Codes()))
	for _, c := range toolerr.Codes() {
		codes = append(codes, string(c))
	}
	d.defs["v1FieldViolation"] = map[string]any{
		"type":        "object",
		"description": "FieldViolation names one invalid input field.",
		"properties": map[string]any{
			"field":   str("Path of the field in lowerCamelCase JSON names, e.g. `files[2].path`."),
			"rule":    str("Id of the rule that failed, e.g. `string.min_len`."),
			"message": str("What was expected."),
		},
	}
	d.defs["v1ToolError"] = map[string]any{
		"type":        "object",
		"description": "ToolError is the one error model of every transport (docs/REST.md, Errors).",
		"required":    []any{"code", "message", "retryable", "kind"},
		"properties": map[string]any{
			"code":    map[string]any{"type": "string", "enum": codes, "description": "The error code; it decides the HTTP status."},
			"message": str("Human-readable message that never leaks internals."),
			"details": map[string]any{"type": "object", "description": "Additional machine-readable details."},
			"retryable": map[string]any{"type": "boolean",
				"description": "Whether the same call may succeed if retried."},
			"kind": map[string]any{"type": "string", "enum": []any{toolerr.KindValidation, toolerr.KindBusiness, toolerr.KindSystem},
				"description": "validation, business or system (docs/ARCHITECTURE.md, Errors)."},
			"fieldViolations": map[string]any{"type": "array", "items": ref("v1FieldViolation"),
				"description": "The input fields that failed validation, with the rule broken."},
			"retryAfterSeconds": map[string]any{"type": "number", "format": "double",
				"description": "Seconds to wait before retrying, for RATE_LIMITED."},
			"traceId": str("Trace id of the failed call, to find it in the logs."),
			"agentHints": withDesc(ref("v1AgentHints"), "What to do next: the field to fix, when retrying is safe, "+
				"which tool to call instead, and the confidence of the diagnosis."),
			"metadata":  withDesc(ref("v1ResultMetadata"), "Execution metadata of the failed call."),
			"success":   map[string]any{"type": "boolean", "description": "Always false (the error envelope's field)."},
			"errorCode": str("The code again, under the error envelope's name."),
		},
	}
	d.defs["ErrorResponse"] = map[string]any{
		"type": "object",
		"description": "The body of every error response: the error envelope (success, errorCode, message, " +
			"details, retryable) and the whole ToolError under error.",
		"required": []any{"success", "errorCode", "message", "details", "retryable", "error"},
		"properties": map[string]any{
			"success":   map[string]any{"type": "boolean", "description": "Always false."},
			"errorCode": map[string]any{"type": "string", "enum": codes, "description": "The error code (error.code)."},
			"message":   str("Human-readable message (error.message)."),
			"details":   map[string]any{"type": "object", "description": "Machine-readable details (error.details)."},
			"retryable": map[string]any{"type": "boolean", "description": "Whether retrying may succeed (error.retryable)."},
			"error":     ref("v1ToolError"),
		},
	}
}

func ref(def string) map[string]any { return map[string]any{"$ref": "#/definitions/" + def} }

// withDesc returns a schema that is ref with a description (Swagger 2.0
// ignores siblings of $ref, so the reference goes into allOf).
func withDesc(r map[string]any, desc string) map[string]any {
	return map[string]any{"allOf": []any{r}, "description": desc}
}

// errorStatus is one error response every operation may return.
type errorStatus struct {
	status, name, description string
	headers                   map[string]any
	bodyOnly                  bool // only operations with a request body
	anonymous                 bool // also operations without authentication
}

var errorStatuses = []errorStatus{
	{status: "400", name: "BadRequest", anonymous: true, description: "INVALID_INPUT: malformed JSON, an unknown field or query parameter, a wrong type, or a " +
		"broken constraint (fieldViolations names each field and rule)."},
	{status: "401", name: "Unauthorized", description: "UNAUTHORIZED: no credentials, or credentials that are not valid.",
		headers: map[string]any{"WWW-Authenticate": map[string]any{"type": "string",
			"description": "`Bearer realm=\"toolsvc\"`, with `error=\"invalid_token\"` when a token was sent and `resource_metadata` when OAuth metadata is published."}}},
	{status: "403", name: "Forbidden", description: "FORBIDDEN: the credential may not do this (tenant, read-only credential, policy)."},
	{status: "404", name: "NotFound", anonymous: true, description: "NOT_FOUND: no such route, tool or resource; a tool the caller may not use does not exist for it."},
	{status: "409", name: "Conflict", description: "CONFLICT: the call conflicts with the current state; retry."},
	{status: "413", name: "PayloadTooLarge", bodyOnly: true, anonymous: true, description: "INVALID_INPUT: the request body exceeds the configured limit (details.limitBytes)."},
	{status: "415", name: "UnsupportedMediaType", bodyOnly: true, anonymous: true, description: "INVALID_INPUT: the body is not application/json (charset utf-8)."},
	{status: "429", name: "TooManyRequests", description: "RATE_LIMITED: a rate limit of the tool or the caller is spent; retry after Retry-After seconds.",
		headers: map[string]any{"Retry-After": map[string]any{"type": "integer", "description": "Seconds to wait, rounded up."}}},
	{status: "500", name: "InternalError", anonymous: true, description: "INTERNAL: an unexpected failure; the log holds the cause under traceId."},
	{status: "503", name: "Unavailable", anonymous: true, description: "PROVIDER_ERROR: a dependency (storage, embeddings) is unavailable; retry."},
	{status: "504", name: "GatewayTimeout", description: "TIMEOUT: the call did not finish within its deadline; retry."},
}

// errorResponses declares the error responses once and references them
// from every operation.
func (d *document) errorResponses() {
	shared := object(d.doc, "responses")
	for _, e := range errorStatuses {
		r := map[string]any{"description": e.description, "schema": ref("ErrorResponse")}
		if e.headers != nil {
			r["headers"] = e.headers
		}
		shared[e.name] = r
	}
	for _, item := range d.paths {
		for _, op := range item.(map[string]any) {
			opm, ok := op.(map[string]any)
			if !ok {
				continue
			}
			hasBody := false
			params, _ := opm["parameters"].([]any)
			for _, p := range params {
				if pm, _ := p.(map[string]any); pm["in"] == "body" {
					hasBody = true
				}
			}
			security, declared := opm["security"].([]any)
			anonymous := declared && len(security) == 0
			responses := object(opm, "responses")
			for _, e := range errorStatuses {
				if (e.bodyOnly && !hasBody) || (anonymous && !e.anonymous) {
					continue
				}
				responses[e.status] = map[string]any{"$ref": "#/responses/" + e.name}
			}
		}
	}
}

// operation is one operation of the document.
type operation struct {
	path, method string
	op           map[string]any
}

func (d *document) operations() map[string]operation {
	out := map[string]operation{}
	for path, item := range d.paths {
		for method, op := range item.(map[string]any) {
			if opm, ok := op.(map[string]any); ok {
				if id, ok := opm["operationId"].(string); ok {
					out[id] = operation{path: path, method: method, op: opm}
				}
			}
		}
	}
	return out
}

// tools enriches every tool's operations (the HTTP rule and its additional
// bindings) from the registry.
func (d *document) tools(reg *registry.Registry) error {
	ops := d.operations()
	var names []any
	for _, t := range reg.Latest() {
		names = append(names, t.Name)
	}
	for _, t := range reg.All() {
		base := string(t.Method.Parent().Name()) + "_" + string(t.Method.Name())
		input, err := normalize(t.InputSchema)
		if err != nil {
			return fmt.Errorf("gateway: %s input schema: %w", t.Name, err)
		}
		ext, err := toolExtension(t)
		if err != nil {
			return err
		}
		for id, o := range ops {
			if id != base && !(strings.HasPrefix(id, base) && isDigits(id[len(base):])) {
				continue
			}
			if t.Def.GetTitle() != "" {
				o.op["summary"] = t.Def.GetTitle()
			}
			o.op["description"] = t.Def.GetDescription()
			o.op["x-toolsvc-tool"] = ext
			if t.Deprecated() {
				o.op["deprecated"] = true
			}
			d.constrain(o.op, input, firstExample(t))
		}
	}
	if call, ok := ops["ToolService_CallTool"]; ok {
		params, _ := call.op["parameters"].([]any)
		for _, p := range params {
			if pm, _ := p.(map[string]any); pm["in"] == "path" && pm["name"] == "name" {
				pm["enum"] = names
			}
		}
	}
	return nil
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// normalize turns a derived JSON Schema into plain decoded JSON.
func normalize(s map[string]any) (map[string]any, error) {
	if s == nil {
		return map[string]any{}, nil
	}
	b, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	return out, decodeJSON(b, &out)
}

// toolExtension is x-toolsvc-tool: the ToolDefinition as ListTools reports
// it, without the schemas the document already expresses.
func toolExtension(t *registry.Tool) (map[string]any, error) {
	b, err := marshalJSON(t.Def)
	if err != nil {
		return nil, fmt.Errorf("gateway: %s definition: %w", t.Name, err)
	}
	var ext map[string]any
	if err := decodeJSON(b, &ext); err != nil {
		return nil, err
	}
	delete(ext, "inputSchema")
	delete(ext, "outputSchema")
	return ext, nil
}

// firstExample returns the params of the tool's first successful example.
func firstExample(t *registry.Tool) map[string]any {
	for _, ex := range t.Examples {
		if ex.ErrorCode == "" && ex.ParamsJSON != nil {
			if m, err := normalize(ex.ParamsJSON); err == nil {
				return m
			}
		}
	}
	return nil
}

// constrain applies the input schema's constraints to the operation's body
// schema and parameters, and the example to the body schema.
func (d *document) constrain(op, input, example map[string]any) {
	params, _ := op["parameters"].([]any)
	for _, p := range params {
		pm, _ := p.(map[string]any)
		if pm["in"] == "body" {
			schema, _ := pm["schema"].(map[string]any)
			if name, ok := refName(schema); ok {
				d.constrainDefinition(name, input, map[string]bool{})
				if example != nil {
					d.defs[name].(map[string]any)["example"] = example
				}
			}
			continue
		}
		name, _ := pm["name"].(string)
		if sub := lookup(input, name); sub != nil {
			constrainSchema(pm, sub)
			if pm["in"] == "query" && requires(input, name) {
				pm["required"] = true
			}
		}
	}
}

func refName(s map[string]any) (string, bool) {
	r, ok := s["$ref"].(string)
	if !ok {
		return "", false
	}
	return strings.TrimPrefix(r, "#/definitions/"), true
}

// lookup finds the schema of a dotted field path in an object schema.
func lookup(s map[string]any, path string) map[string]any {
	for _, part := range strings.Split(path, ".") {
		props, _ := s["properties"].(map[string]any)
		next, ok := props[part].(map[string]any)
		if !ok {
			return nil
		}
		s = next
	}
	return s
}

// requires reports whether the last field of a dotted path is required by
// its parent (and every parent by its own).
func requires(s map[string]any, path string) bool {
	parts := strings.Split(path, ".")
	for _, part := range parts {
		req, _ := s["required"].([]any)
		found := false
		for _, r := range req {
			found = found || r == part
		}
		if !found {
			return false
		}
		props, _ := s["properties"].(map[string]any)
		s, _ = props[part].(map[string]any)
	}
	return true
}

// constrainDefinition applies an object schema to a definition, following
// references into nested definitions once each.
func (d *document) constrainDefinition(name string, s map[string]any, seen map[string]bool) {
	def, ok := d.defs[name].(map[string]any)
	if !ok || seen[name] {
		return
	}
	seen[name] = true
	props, _ := def["properties"].(map[string]any)
	if req, ok := s["required"].([]any); ok {
		var kept []any
		for _, r := range req {
			if n, ok := r.(string); ok && props[n] != nil {
				kept = append(kept, n)
			}
		}
		if len(kept) > 0 {
			def["required"] = kept
		}
	}
	sprops, _ := s["properties"].(map[string]any)
	keys := make([]string, 0, len(sprops))
	for k := range sprops {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		p, ok := props[k].(map[string]any)
		sub, _ := sprops[k].(map[string]any)
		if !ok || sub == nil {
			continue
		}
		if n, ok := refName(p); ok {
			d.constrainDefinition(n, sub, seen)
			continue
		}
		constrainSchema(p, sub)
		if items, ok := p["items"].(map[string]any); ok {
			if n, ok := refName(items); ok {
				if subItems, ok := sub["items"].(map[string]any); ok {
					d.constrainDefinition(n, subItems, seen)
				}
			}
		}
	}
}

// Keywords copied from the JSON Schema to an OpenAPI 2.0 schema or
// parameter, by the OpenAPI type (an int64 is a string in OpenAPI 2.0, so
// a keyword only applies where the types agree).
var keywords = map[string][]string{
	"string":  {"minLength", "maxLength", "pattern", "enum", "format", "default"},
	"integer": {"minimum", "maximum", "multipleOf", "enum", "default"},
	"number":  {"minimum", "maximum", "multipleOf", "enum", "default"},
	"boolean": {"default"},
	"array":   {"minItems", "maxItems", "uniqueItems", "default"},
}

// constrainSchema copies the keywords of s that dst's type takes, never
// overwriting what the generator wrote.
func constrainSchema(dst, s map[string]any) {
	typ, _ := dst["type"].(string)
	for _, k := range keywords[typ] {
		if v, ok := s[k]; ok {
			if _, exists := dst[k]; !exists {
				dst[k] = v
			}
		}
	}
	if typ == "integer" || typ == "number" {
		// JSON Schema 2020-12 exclusive bounds are numbers; OpenAPI 2.0's are
		// flags on minimum and maximum.
		for _, b := range [][2]string{{"exclusiveMinimum", "minimum"}, {"exclusiveMaximum", "maximum"}} {
			if v, ok := s[b[0]]; ok {
				if _, exists := dst[b[1]]; !exists {
					dst[b[1]], dst[b[0]] = v, true
				}
			}
		}
	}
	if typ == "array" {
		items, _ := dst["items"].(map[string]any)
		sub, _ := s["items"].(map[string]any)
		if items != nil && sub != nil {
			if _, isRef := refName(items); !isRef {
				constrainSchema(items, sub)
			}
		}
	}
}

// apiMCPRoutes documents the /api/mcp routes (docs/REST.md, Routes).
func (d *document) apiMCPRoutes() {
	tags := []any{"Seed003"}
	d.defs["SeedHealth"] = map[string]any{
		"type": "object", "required": []any{"status", "timestamp"},
		"properties": map[string]any{
			"status":    map[string]any{"type": "string", "enum": []any{"ok", "unavailable"}},
			"timestamp": map[string]any{"type": "string", "format": "date-time"},
		},
	}
	d.defs["SeedToolList"] = map[string]any{
		"type": "object", "required": []any{"tools"},
		"properties": map[string]any{"tools": map[string]any{"type": "array", "items": ref("v1ToolDefinition")}},
	}
	d.defs["SeedToolCall"] = map[string]any{
		"type":        "object",
		"description": "A call by name. Give input or arguments (the same), not both.",
		"required":    []any{"toolName"},
		"properties": map[string]any{
			"toolName":  map[string]any{"type": "string", "description": "The tool's name, e.g. search-memories."},
			"version":   map[string]any{"type": "string", "description": "The version pin: empty for the highest version, \"1.2.0\" for the highest served with major 1 and at least 1.2.0, \"=1.2.0\" for exactly 1.2.0; metadata.toolVersion says which answered."},
			"input":     map[string]any{"type": "object", "description": "The tool's input, valid against its input schema."},
			"arguments": map[string]any{"type": "object", "description": "Another name for input."},
		},
		"example": map[string]any{"toolName": "search-memories", "input": map[string]any{"query": "database choice"}},
	}
	d.defs["SeedToolResult"] = map[string]any{
		"type": "object", "required": []any{"result"},
		"properties": map[string]any{"result": ref("v1CallToolResponse")},
	}
	ok := func(desc, def string) map[string]any {
		return map[string]any{"200": map[string]any{"description": desc, "schema": ref(def)}}
	}
	d.paths[pathAPIMCPHealth] = map[string]any{"get": map[string]any{
		"operationId": "Seed_Health", "tags": tags, "summary": "Health of the service.",
		"description": "`ok` while the service serves; `unavailable` (503) once it is shutting down. No authentication.",
		"security":    []any{},
		"responses":   ok("The service is up.", "SeedHealth"),
	}}
	d.paths[pathAPIMCPTools] = map[string]any{"get": map[string]any{
		"operationId": "Seed_ListTools", "tags": tags, "summary": "List the tools the caller may use.",
		"description": "Every ToolDefinition the caller's permissions allow, as ListTools reports them.",
		"responses":   ok("The tools.", "SeedToolList"),
	}}
	d.paths[pathAPIMCPCall] = map[string]any{"post": map[string]any{
		"operationId": "Seed_CallTool", "tags": tags, "summary": "Call a tool by name.",
		"description": "Runs the tool through the same checks as its own route and answers its result.",
		"parameters": []any{map[string]any{
			"name": "body", "in": "body", "required": true, "schema": ref("SeedToolCall"),
		}},
		"responses": ok("The tool's result.", "SeedToolResult"),
	}}
}
