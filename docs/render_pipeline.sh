#!/usr/bin/env bash
# Regenerates docs/pipeline.svg from docs/pipeline.dot with Graphviz's dot (apt-get install
# graphviz). The SVG records the SHA-256 of the source it was drawn from; tests/repo/test_docs.py
# fails when pipeline.dot changed and the SVG was not regenerated. (docs/layers.dot, which
# ./dev docs writes, has no SVG in the repository: its header says how to draw one.)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
for name in pipeline; do
  sum="$(sha256sum "$name.dot" | cut -d' ' -f1)"
  dot -Tsvg "$name.dot" |
    sed "1a <!-- Generated from $name.dot (sha256 $sum) by render_pipeline.sh; do not edit. -->" \
      >"$name.svg"
done
