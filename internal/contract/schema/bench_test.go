package schema_test

import (
	"testing"

	"github.com/toolsvc/toolsvc/internal/contract/schema"
)

// BenchmarkDerive measures one derivation per tool as the registry does at
// start-up, for the largest test contract.
func BenchmarkDerive(b *testing.B) {
	for _, name := range []string{"Validated", "Everything"} {
		b.Run(name, func(b *testing.B) {
			md := message(b, name)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := schema.Derive(md, schema.Options{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkCheckProviders measures the provider check of the largest schema.
func BenchmarkCheckProviders(b *testing.B) {
	s := derive(b, "Everything")
	b.ReportAllocs()
	for b.Loop() {
		schema.CheckProviders(s)
	}
}
