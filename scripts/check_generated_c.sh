#!/usr/bin/env bash
# Generated model C of this checkout against an earlier commit's, after scripts/c_renames.txt and without the
# #include lines: byte-identical, or the diff and exit 1.   bash scripts/check_generated_c.sh [BASE_REV]
# Cases: both examples, digits with two int16 layers, digits with the arena guard (model .c/.h only).
set -euo pipefail
cd "$(dirname "$0")/.."
base_rev=${1:-7fd0adb}
work=$(mktemp -d)
trap '[ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
git archive "$base_rev" | tar -x -C "$work" --one-top-level=base
py=$PWD/.venv/bin/python
gen() {   # gen SOURCE_ROOT OUT: the model libraries of every case into OUT/<case>/ (edgec imported from SOURCE_ROOT)
  cd "$1" && PYTHONHASHSEED=0 PYTHONPATH="$1" "$py" - "$2" <<'PY'
import sys
from pathlib import Path
from edgec import api, codegen, ptq
cases = {"digits": ("digits_cnn", {}, False), "cancer": ("cancer_conv1d", {}, False),
         "digits16": ("digits_cnn", {"int16": ("/conv2/Conv", "/dw/Conv")}, False),
         "digitsguard": ("digits_cnn", {}, True)}
for case, (ex, opts, guard) in cases.items():
    _, graph, _ = api.compile_model(f"examples/{ex}/model.onnx", f"examples/{ex}/calib.npz",
                                    options=ptq.QuantOptions(sensitivity_samples=0, **opts))
    plan = api.schedule_and_plan(graph, 16 if guard else 0)     # 16: guard.GUARD_BYTES
    codegen.generate(graph, plan, Path(sys.argv[1]) / case, graph.name)
PY
  cd - >/dev/null
}
gen "$work/base" "$work/old" >/dev/null
gen "$PWD" "$work/new" >/dev/null
grep -q edgec_fast_conv_s8 "$work/old/digits/digits_cnn.c"    # the base really is the old code
for d in old new; do   # keep the model's own files
  find "$work/$d" -mindepth 2 \( -name 'edgec_*' -o -name fast \) -prune -exec rm -rf {} +
done
bash scripts/apply_c_renames.sh "$work/old" >/dev/null
sed -i '/^#include "edgec_/d' "$work"/old/*/* "$work"/new/*/*
diff -r "$work/old" "$work/new" && echo "generated C identical to $base_rev's (modulo includes and renames)"
