#!/usr/bin/env bash
# Applies the C runtime's rename map (scripts/c_renames.txt: one "old new" pair a line, C identifiers and runtime
# file paths) to text files, whole words only:  bash scripts/apply_c_renames.sh [FILE|FOLDER...]
# Default: runtime_c templates tests docs README.md edgec (the places that name runtime files or kernels).
set -euo pipefail
cd "$(dirname "$0")/.."
map=scripts/c_renames.txt
args=()
while read -r old new; do
  [ -n "$old" ] || continue
  o=$(printf '%s' "$old" | sed 's/[].[*^$\/]/\\&/g')
  n=$(printf '%s' "$new" | sed 's/[&\/]/\\&/g')
  args+=(-e "s/\\b$o\\b/$n/g")
done <"$map"
[ $# -gt 0 ] || set -- runtime_c templates tests docs README.md edgec
grep -rlIZ --exclude-dir=__pycache__ -F -f <(cut -d' ' -f1 "$map") "$@" | xargs -0 -r sed -i "${args[@]}"
