#!/usr/bin/env bash
# Benchmark of the Copilot record store (.github/copilot-memories.jsonl).
#
# For each N (default 10,000 and 100,000 records) it generates a JSONL file of Copilot-shaped
# records (40 subjects, 60-200 character facts, 1-3 citations, 5% with votes) and measures the
# whole-process wall time of the release binary, median of RUNS runs (default 7, at least 5), for
#   list    kb list --store copilot
#   recall  kb recall --store copilot QUERY
#   save    kb save --store copilot ... (a unique fact each run, in a subject with N/40 records,
#           so dedup scores every record of that subject and the whole file is rewritten; the
#           facts differ in every word, so no run consolidates into the one before)
#   merge   the same save repeated: it consolidates into the record it wrote, which the undo
#           journal records first (the whole file's prior bytes)
# plus the peak RSS and the CPU time (user + system) of one more run (/usr/bin/time, else getrusage
# through python3). On a shared machine the CPU time is the steadier number.
# Targets (docs/performance.md): <= 50 ms at 10k, <= 500 ms at 100k, <= 64 MB.
#
# Usage: bench/copilot.sh [N...]        env: RUNS=7 KB=path/to/kb
set -euo pipefail
cd "$(dirname "$0")/.."

# Prints a fact whose every word is new (hex digits of a random hash), so dedup never matches it.
unique_fact() {
  local words=() w
  for w in 1 2 3 4 5 6; do words+=("$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n' | cut -c1-10)"); done
  echo "Fact ${words[*]}"
}

RUNS=${RUNS:-7}
(( RUNS >= 5 )) || { echo "RUNS must be at least 5" >&2; exit 2; }
SIZES=("$@")
(( ${#SIZES[@]} )) || SIZES=(10000 100000)
if [[ -z "${KB:-}" ]]; then
  cargo build --release --quiet
  KB=$PWD/target/release/kb
fi
WORK=$PWD/bench/out/copilot
mkdir -p "$WORK"

# Writes N records to $2/.github/copilot-memories.jsonl.
generate() {
  local n=$1 root=$2
  rm -rf "$root" && mkdir -p "$root/.git" "$root/.github" "$root/.co-cli"
  awk -v n="$n" -v seed=42 'BEGIN {
    srand(seed)
    split("the a build test cache module parser index store record memory config watch context " \
          "server client request handler error retry timeout lock file path folder cargo clippy " \
          "rustfmt release debug feature flag schema field value option default setting token " \
          "citation reason subject fact vote import export always never prefer avoid use run", w, " ")
    nw = length(w)
    for (s = 0; s < 40; s++) subj[s] = "subject-" s
    for (i = 0; i < n; i++) {
      len = 60 + int(rand() * 140); fact = "Fact " i ":"
      while (length(fact) < len) fact = fact " " w[1 + int(rand() * nw)]
      nc = 1 + int(rand() * 3); cites = ""
      for (c = 0; c < nc; c++) cites = cites (c ? "," : "") "\"src/" w[1 + int(rand() * nw)] ".rs:" (1 + int(rand() * 900)) "\""
      day = 1 + int(rand() * 28); mon = 1 + int(rand() * 11)
      votes = (rand() < 0.05) ? ",\"votes\":{\"up\":" int(rand() * 4) ",\"down\":" int(rand() * 3) "}" : ""
      printf "{\"id\":\"mem-%08x\",\"subject\":\"%s\",\"fact\":\"%s\",\"citations\":[%s],\"reason\":\"Keeps the build green.\",\"category\":\"general\",\"source\":{\"agent\":\"kb\"},\"created\":\"2026-%02d-%02dT10:%02d:00+00:00\"%s}\n",
        i, subj[i % 40], fact, cites, mon, day, i % 60, votes
    }
  }' > "$root/.github/copilot-memories.jsonl"
}

now_us() { local t; t=$(date +%s%N); echo $(( t / 1000 )); }

# Prints the wall time of one run of "$@" in microseconds.
time_us() {
  local start end
  start=$(now_us)
  "$@" >/dev/null 2>&1 || { echo "command failed: $*" >&2; exit 1; }
  end=$(now_us)
  echo $(( end - start ))
}

# Prints the median of the numbers on stdin.
median() { sort -n | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : int((a[NR / 2] + a[NR / 2 + 1]) / 2) }'; }

# Prints the peak RSS in KiB and the CPU time (user + system) in ms of one run of "$@".
rusage() {
  if [[ -x /usr/bin/time ]]; then
    /usr/bin/time -f '%M %U %S' -o "$WORK/rss" "$@" >/dev/null 2>&1
    tail -n 1 "$WORK/rss" | awk '{ printf "%d %d\n", $1, ($2 + $3) * 1000 }'
  else
    python3 -c 'import resource, subprocess, sys
subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
r = resource.getrusage(resource.RUSAGE_CHILDREN)
print(r.ru_maxrss, int((r.ru_utime + r.ru_stime) * 1000))' "$@"
  fi
}

notes=()
printf '%-8s %-8s %10s %10s %10s %10s %10s\n' N command "median ms" "min ms" "max ms" "cpu ms" "peak MiB"
for n in "${SIZES[@]}"; do
  root=$WORK/repo-$n
  generate "$n" "$root"
  export KB_ROOT=$root
  size=$(stat -c %s "$root/.github/copilot-memories.jsonl")
  for cmd in list recall save merge; do
    samples=()
    for (( r = 0; r < RUNS + 1; r++ )); do
      case $cmd in
        list) args=(list --store copilot) ;;
        recall) args=(recall --store copilot "cache module") ;;
        save) args=(save --store copilot --subject subject-7 --citation "bench.rs:$r" --reason "bench"
                    "$(unique_fact)") ;;
        merge) args=(save --store copilot --subject subject-7 --citation "bench.rs:1" --reason "bench"
                     "The merge benchmark's fact about zebra quartz, run $r") ;;
      esac
      t=$(time_us "$KB" "${args[@]}")
      (( r == 0 )) || samples+=("$t")   # the first run warms the page cache
    done
    med=$(printf '%s\n' "${samples[@]}" | median)
    min=$(printf '%s\n' "${samples[@]}" | sort -n | head -n 1)
    max=$(printf '%s\n' "${samples[@]}" | sort -n | tail -n 1)
    case $cmd in
      save) usage=$(rusage "$KB" save --store copilot --subject subject-7 --reason bench "$(unique_fact)") ;;
      *) usage=$(rusage "$KB" "${args[@]}") ;;
    esac
    read -r rss cpu <<< "$usage"
    printf '%-8s %-8s %10.1f %10.1f %10.1f %10d %10.1f\n' "$n" "$cmd" \
      "$(awk -v v="$med" 'BEGIN { print v / 1000 }')" "$(awk -v v="$min" 'BEGIN { print v / 1000 }')" \
      "$(awk -v v="$max" 'BEGIN { print v / 1000 }')" "$cpu" "$(awk -v v="$rss" 'BEGIN { print v / 1024 }')"
  done
  notes+=("N=$n: $(awk -v s="$size" 'BEGIN { printf "%.1f MiB", s / 1048576 }') of JSONL before the saves; median of $RUNS runs after one warm-up")
done
printf '%s\n' "${notes[@]}"
