package mcpbridge_test

import (
	"slices"
	"testing"

	"github.com/toolsvc/toolsvc/internal/contract/schema"
)

// providerExceptions are the provider problems seed-mandated fields cause,
// each explained. Everything else must pass every provider.
var providerExceptions = map[string][]schema.Problem{
	// the memory tools' contract makes add-memory's metadata a free-form object (any
	// caller-defined keys), which OpenAI strict mode cannot express: it
	// requires additionalProperties: false on every object. Anthropic and
	// Gemini accept it. An OpenAI strict client must leave metadata out or
	// use non-strict function calling.
	"add-memory": {{Provider: schema.ProviderOpenAI, Path: "/properties/metadata", Rule: schema.RuleOpenObject}},
}

// TestInputSchemasPassProviders checks every derived input schema against
// the tool-schema rules of OpenAI (strict), Anthropic and Gemini.
func TestInputSchemasPassProviders(t *testing.T) {
	t.Parallel()
	srv := newServer(t, nil)
	for _, tool := range srv.Registry().Latest() {
		t.Run(tool.Name, func(t *testing.T) {
			got := schema.CheckProviders(tool.InputSchema)
			want := providerExceptions[tool.Name]
			if !slices.Equal(got, want) {
				t.Fatalf("problems = %v, want %v", got, want)
			}
		})
	}
}
