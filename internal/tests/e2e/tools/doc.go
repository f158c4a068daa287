// Package tools runs every built-in tool end to end over gRPC, through the
// real server and interceptor chain, against SQLite and (when
// TOOLSVC_TEST_POSTGRES is set) PostgreSQL. It holds only tests.
package tools
