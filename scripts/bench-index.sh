#!/usr/bin/env bash
# Runs the index benchmarks and prints a Markdown table of criterion's medians: build ns/key
# (hash + cardinality + dedup + construct) and probe ns, per filter kind and key count.
# The bits/key and false-positive table is printed by the bench itself, first.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/sieve-target}"
cargo bench -p sieve-benches --bench index -- "$@"
python3 - "$CARGO_TARGET_DIR/criterion" <<'PY'
import json, os, sys
root = sys.argv[1]
kinds = ["xor8", "xor16", "binary_fuse8", "binary_fuse16", "cuckoo", "cuckoo16", "bloom"]
sizes = [10_000, 100_000, 1_000_000]
probes = 4096

def median(group, kind, n):
    path = os.path.join(root, group, kind, str(n), "new", "estimates.json")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)["median"]["point_estimate"]

def cells(group, kind, per):
    values = [median(group, kind, n) for n in sizes]
    return " / ".join("-" if v is None else f"{v / p:.1f}" for v, p in zip(values, per))

print("\n| kind | build ns/key at 10k / 100k / 1M keys | probe ns at 10k / 100k / 1M keys |")
print("|---|---|---|")
for kind in kinds:
    print(f"| {kind} | {cells('build', kind, sizes)} | {cells('probe', kind, [probes] * 3)} |")
PY
