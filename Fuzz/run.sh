#!/usr/bin/env bash
# Builds Tollgate's libFuzzer targets and runs each for FUZZ_SECONDS (`make fuzz`; docs/operations.md).
#
#   Fuzz/run.sh [TARGET ...]            build and run the named targets (default: all of them)
#   Fuzz/run.sh --build-only [TARGET …] only build them
#   Fuzz/run.sh --replay TARGET FILE …  build TARGET and run it once on each FILE (a reproducer)
#
# Environment: FUZZ_SECONDS (default 60) per target; FUZZ_BUILD (default .build-fuzz), the
# scratch path; SWIFT (default swift). Exits 1 when any target found a crash, a leak, a timeout
# or a broken invariant, after printing each reproducer and the command that replays it.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

SWIFT=${SWIFT:-swift}
FUZZ_SECONDS=${FUZZ_SECONDS:-60}
FUZZ_BUILD=${FUZZ_BUILD:-.build-fuzz}
ALL_TARGETS=(
    FuzzRequestDecoder FuzzResponseDecoder FuzzCacheControl FuzzHTTPDate FuzzEntityTag FuzzURL
    FuzzCanonicalHost FuzzCookie FuzzDigestChallenge FuzzStoredEntry FuzzManifest FuzzPolicyLoader
    FuzzTLSHandler
)

mode=run
case "${1:-}" in
    --build-only) mode=build; shift ;;
    --replay) mode=replay; shift ;;
esac

# Every module is compiled with libFuzzer's coverage instrumentation and AddressSanitizer (which
# brings LeakSanitizer); -parse-as-library because each target's main.swift only defines
# LLVMFuzzerTestOneInput and libFuzzer supplies `main`. TOLLGATE_FUZZ=1 makes Package.swift
# declare the targets.
build() {
    local target=$1
    echo "fuzz: building $target"
    TOLLGATE_FUZZ=1 "$SWIFT" build --scratch-path "$FUZZ_BUILD" --product "$target" \
        -Xswiftc -sanitize=fuzzer,address -Xswiftc -parse-as-library \
        2>&1 | grep -Ev '^\[[0-9]+/[0-9]+\] |Cannot export local symbol' || true
    [ -x "$FUZZ_BUILD/debug/$target" ] || { echo "fuzz: $target did not build" >&2; exit 1; }
}

if [ "$mode" = replay ]; then
    target=$1; shift
    build "$target"
    SWIFT_BACKTRACE=enable=no exec "$FUZZ_BUILD/debug/$target" "$@"
fi

targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${ALL_TARGETS[@]}")
started=$(date +%s)
for target in "${targets[@]}"; do
    [ -d "Fuzz/Sources/$target" ] || { echo "fuzz: no target $target (Fuzz/Sources/$target)" >&2; exit 2; }
    build "$target"
done
built=$(date +%s)
echo "fuzz: built ${#targets[@]} targets in $((built - started)) s"
[ "$mode" = build ] && exit 0

# The committed seeds are read, never written: new inputs go to a corpus under the build folder,
# which later runs start from.
failed=()
for target in "${targets[@]}"; do
    corpus="$FUZZ_BUILD/corpus/$target"
    artifacts="$FUZZ_BUILD/artifacts/$target"
    log="$FUZZ_BUILD/logs/$target.log"
    rm -rf "$artifacts"  # a reproducer listed below is from this run
    mkdir -p "$corpus" "$artifacts" "$(dirname "$log")"
    dictionary=Fuzz/Dictionaries/http.dict
    max_len=4096
    case "$target" in
        FuzzRequestDecoder | FuzzResponseDecoder) max_len=2048 ;;
        FuzzPolicyLoader) dictionary=Fuzz/Dictionaries/policy.dict; max_len=8192 ;;
        FuzzTLSHandler | FuzzStoredEntry | FuzzManifest) dictionary=""; max_len=8192 ;;
    esac
    echo "fuzz: running $target for $FUZZ_SECONDS s"
    status=0
    # SWIFT_BACKTRACE: Swift's own backtracer would catch the abort first and hang under ASan.
    SWIFT_BACKTRACE=enable=no ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} "$FUZZ_BUILD/debug/$target" \
        -max_total_time="$FUZZ_SECONDS" -max_len="$max_len" -timeout=20 -rss_limit_mb=2560 \
        -malloc_limit_mb=1024 -print_final_stats=1 -artifact_prefix="$artifacts/" \
        ${dictionary:+-dict="$dictionary"} "$corpus" "Fuzz/Corpus/$target" >"$log" 2>&1 || status=$?
    grep -E '^(#[0-9]+ +DONE|stat::number_of_executed_units|stat::peak_rss_mb)' "$log" | tr '\n' ' ' || true
    echo
    if [ $status -ne 0 ]; then
        failed+=("$target")
        echo "fuzz: $target FAILED (exit $status); the end of $log:" >&2
        tail -n 40 "$log" >&2
        for reproducer in "$artifacts"/*; do
            [ -e "$reproducer" ] || continue
            echo "fuzz: reproducer $reproducer — replay: Fuzz/run.sh --replay $target $reproducer" >&2
        done
    fi
done
echo "fuzz: ${#targets[@]} targets, $FUZZ_SECONDS s each, $(( $(date +%s) - started )) s in all (build included)"
if [ ${#failed[@]} -gt 0 ]; then
    echo "fuzz: findings in: ${failed[*]}" >&2
    exit 1
fi
echo "fuzz: no findings"
