#!/bin/sh
echo "rules_aten: coverage tools are not available offline (@remote_coverage_tools is a stub)" >&2
exit 1
