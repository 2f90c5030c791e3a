#!/usr/bin/env bash
# Regenerates docs/pipeline.svg from docs/pipeline.dot with Graphviz's dot
# (apt-get install graphviz). The SVG records the SHA-256 of the source it was drawn from;
# tests/test_docs.py fails when pipeline.dot changed and the SVG was not regenerated.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
sum="$(sha256sum pipeline.dot | cut -d' ' -f1)"
dot -Tsvg pipeline.dot |
  sed "1a <!-- Generated from pipeline.dot (sha256 $sum) by render_pipeline.sh; do not edit. -->" \
    >pipeline.svg
