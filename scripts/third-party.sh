#!/usr/bin/env bash
# Refreshes third_party/proto from the Go module cache (run after bumping
# protovalidate or grpc-gateway). Generation itself never needs the network.
set -euo pipefail
cd "$(dirname "$0")/.."
mod() { go mod download -json "$1" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p'; }
pv=$(mod github.com/bufbuild/protovalidate@v1.2.2)
gw1=$(mod github.com/grpc-ecosystem/grpc-gateway@v1.16.0)
gw2=$(cd tools && go list -m -f '{{.Dir}}' github.com/grpc-ecosystem/grpc-gateway/v2)
install -D -m 0644 "$pv/proto/protovalidate/buf/validate/validate.proto" third_party/proto/buf/validate/validate.proto
for f in annotations http; do
  install -D -m 0644 "$gw1/third_party/googleapis/google/api/$f.proto" "third_party/proto/google/api/$f.proto"
done
for f in annotations openapiv2; do
  install -D -m 0644 "$gw2/protoc-gen-openapiv2/options/$f.proto" "third_party/proto/protoc-gen-openapiv2/options/$f.proto"
done
echo "third_party/proto refreshed"
