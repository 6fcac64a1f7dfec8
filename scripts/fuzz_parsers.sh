#!/usr/bin/env bash
# libFuzzer on the device's parsers (tests/fuzz/link_harness.c over runtime_c/harness/edgec_link.c, mlperf_harness.c
# over runtime_c/harness/edgec_mlperf.c), built with clang -fsanitize=fuzzer,address,undefined.
#   bash scripts/fuzz_parsers.sh [seconds per target, default 300] [work folder, default /tmp/edgec-fuzz-parsers]
# Seeds the corpus with protocol-shaped streams (tests/parser_streams.py); a crash leaves crash-* files in the
# work folder and makes the script exit non-zero. Needs clang's libFuzzer runtime (scripts/setup.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-300}
work=${2:-/tmp/edgec-fuzz-parsers}
mkdir -p "$work"
inc=(-I runtime_c/harness -I boards/platforms/common)
flags=(-std=c99 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -DEDGEC_LIBFUZZER)
clang "${flags[@]}" "${inc[@]}" tests/fuzz/link_harness.c runtime_c/harness/edgec_link.c -o "$work/link_fuzz"
clang "${flags[@]}" "${inc[@]}" tests/fuzz/mlperf_harness.c runtime_c/harness/edgec_mlperf.c -o "$work/mlperf_fuzz"
.venv/bin/python - "$work" <<'PY'
import sys
from pathlib import Path
import numpy as np
sys.path.insert(0, "tests")
from parser_streams import link_framed, link_raw, mlperf_stream
work = Path(sys.argv[1])
rng = np.random.default_rng(0)
for name, make in (("link", lambda: link_framed(rng, int(rng.integers(1, 20))) if rng.random() < 0.8 else link_raw(rng)),
                   ("mlperf", lambda: mlperf_stream(rng))):
    seeds = work / f"{name}_corpus"
    seeds.mkdir(exist_ok=True)
    for i in range(200):
        (seeds / f"seed{i:03d}").write_bytes(make())
PY
status=0
for t in link mlperf; do
  echo "== $t: libFuzzer for ${secs} s"
  (cd "$work" && ./${t}_fuzz -max_total_time="$secs" -max_len=4096 -timeout=10 -print_final_stats=1 \
      -artifact_prefix="$work/${t}-" "${t}_corpus" 2>&1 | grep -E "^(#[0-9]+ +DONE|stat::number_of_executed_units|stat::peak_rss|==.*ERROR|SUMMARY)|Done [0-9]+ runs") || status=1
  if ls "$work/${t}-"crash-* "$work/${t}-"leak-* "$work/${t}-"timeout-* >/dev/null 2>&1; then status=1; echo "$t: findings in $work"; fi
done
exit $status
