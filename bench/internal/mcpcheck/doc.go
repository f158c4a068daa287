// Package mcpcheck reads MCP JSON-RPC responses cheaply, for load
// clients: a tools/list page of 100 tools is over a megabyte, and decoding
// it into values would cost a client sharing the server's cores more than
// the server's answer, inflating the latency measured. Scan walks the
// structure without decoding; ListCheck compares a page with one it
// already verified.
package mcpcheck
