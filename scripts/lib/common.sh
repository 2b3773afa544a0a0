# Shared by the scripts: paths, system packages, the Python venv for tests. Source it.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
DATA="${STUDYBUS_DATA:-$ROOT/.data}"
VENV="$ROOT/.build-venv"

# The keys scripts/dev makes (its `ensure_keys`), and whether the bus uses them; for scripts/dev
# and the scripts that talk to what it runs (busctl gets the operator key). Not for scripts/test:
# tests choose their own keys.
use_dev_keys() {
    KEYS="$DATA/keys"
    # Bus security of the local system: on unless BUS_SECURITY=off is set explicitly.
    export BUS_SECURITY="${BUS_SECURITY:-on}"
    export BUS_KEY="${BUS_KEY:-$KEYS/busctl.key_secret}" BUS_BROKER_KEY="${BUS_BROKER_KEY:-$KEYS/broker.key}"
    # The HTTP edge's token secret (HS256); `busctl token issue` signs development tokens with it.
    export EDGE_JWT_SECRET_FILE="${EDGE_JWT_SECRET_FILE:-$KEYS/edge-jwt.secret}"
    export EDGE_URL="${EDGE_URL:-http://127.0.0.1:${EDGE_PORT:-8080}}"
    # The operator token of the broker's console (its monitoring port's /console).
    export BROKER_CONSOLE_TOKEN_FILE="${BROKER_CONSOLE_TOKEN_FILE:-$KEYS/console.token}"
}

log() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }

# Runs a command as a named step of a longer script: logs the name, times it, and keeps the time
# for print_step_times (which a script sets as its EXIT trap), failed steps marked. The command
# runs in a subshell with `set -e` in force (under `||` bash would ignore it in functions).
STEP_TIMES=()
step() {
    local title=$1 started status; shift
    log "$title"
    started=$(date +%s)
    set +e
    (set -e; "$@")
    status=$?
    set -e
    STEP_TIMES+=("$(( $(date +%s) - started ))|$([ $status -eq 0 ] && echo ok || echo FAILED)|$title")
    return $status
}

print_step_times() {
    local status=$? total=0 entry seconds result title
    [ ${#STEP_TIMES[@]} -gt 0 ] || return $status
    printf '\n%8s  %-6s  %s\n' seconds result step >&2
    for entry in "${STEP_TIMES[@]}"; do
        IFS='|' read -r seconds result title <<<"$entry"
        total=$((total + seconds))
        printf '%8d  %-6s  %s\n' "$seconds" "$result" "${title%% (*}" >&2
    done
    printf '%8d  %-6s  %s\n' "$total" "" "in all" >&2
    return $status
}
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# Installs every Debian package listed in scripts/requirements/apt/*.txt that is missing.
ensure_system_packages() {
    local wanted=() missing=()
    while read -r package; do
        [ -n "$package" ] && wanted+=("$package")
    done < <(cat "$ROOT"/scripts/requirements/apt/*.txt | sed 's/#.*//' | tr -s ' \t' '\n' | sort -u)
    for package in "${wanted[@]}"; do
        dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    log "installing system packages: ${missing[*]}"
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
}

# A virtualenv with every Python package the tests use (scripts/requirements/pip/*.txt).
ensure_python_venv() {
    if [ ! -x "$VENV/bin/python" ]; then
        log "creating the test virtualenv in .build-venv"
        python3 -m venv "$VENV"
    fi
    local requirements
    requirements=$(cat "$ROOT"/scripts/requirements/pip/*.txt | sed 's/#.*//' | grep -v '^\s*$' | sort -u)
    local stamp="$VENV/.requirements"
    if [ "$requirements" != "$(cat "$stamp" 2>/dev/null)" ]; then
        log "installing Python test packages"
        "$VENV/bin/pip" install --quiet --disable-pip-version-check $requirements
        printf '%s' "$requirements" > "$stamp"
    fi
}

# Writes the git commit (12 hex digits, -dirty with uncommitted changes) into the header that
# BuildInfo.commit is compiled from, only when it changed, so an unchanged tree rebuilds nothing.
# Outside a git checkout it leaves the header alone (the build then says "unknown").
stamp_build_commit() {
    local commit header="$ROOT/Shared/CBuildInfo/build-commit.h" line
    commit=$(git -C "$ROOT" rev-parse --short=12 HEAD 2>/dev/null) || return 0
    git -C "$ROOT" diff --quiet HEAD -- 2>/dev/null || commit="$commit-dirty"
    line="#define STUDYBUS_BUILD_COMMIT \"$commit\""
    [ "$(cat "$header" 2>/dev/null)" = "$line" ] || printf '%s\n' "$line" >"$header"
}

# For benchmarks, metrics on and off: prints the monitoring address 127.0.0.1:PORT for a process
# to get as METRICS_ADDRESS, or nothing when STUDYBUS_METRICS=off (then it records no metrics).
bench_metrics_address() {
    [ "${STUDYBUS_METRICS:-on}" = off ] || echo "127.0.0.1:$1"
}

# Reads `name value unit` lines of several rounds from FILE; prints each name once, in the
# order first seen, with the median of its values (a `_dropped` name: the largest).
medians() {
    awk '{ n = $1; if (!(n in count)) order[++names] = n; values[n, ++count[n]] = $2; unit[n] = $3 }
        END {
            for (i = 1; i <= names; i++) {
                n = order[i]; k = count[n]
                for (a = 1; a <= k; a++) sorted[a] = values[n, a]
                for (a = 1; a <= k; a++) for (b = a + 1; b <= k; b++) if (sorted[b] + 0 < sorted[a] + 0) { t = sorted[a]; sorted[a] = sorted[b]; sorted[b] = t }
                if (n ~ /_dropped$/) value = sorted[k]
                else value = k % 2 ? sorted[(k + 1) / 2] : (sorted[k / 2] + sorted[k / 2 + 1]) / 2
                # One decimal for large figures; four significant digits for small ones (1.761 ms).
                printf "%s %s %s\n", n, (value >= 100 || value <= -100) ? sprintf("%.1f", value) : sprintf("%.4g", value), unit[n]
            }
        }' "$1"
}

# What something costs, in percent (positive: worse with it), from the `name value unit` lines
# of FILE: for each NAME, the figure WITH_PREFIX+NAME against WITHOUT_PREFIX+NAME, printed as
# COST_PREFIX+NAME. A name with `_us` or `_ms` is a latency (lower is better), any other a rate.
# Usage: cost_percent FILE WITH_PREFIX WITHOUT_PREFIX COST_PREFIX NAME...
cost_percent() {
    local file=$1 with=$2 without=$3 cost=$4; shift 4
    awk -v with="$with" -v without="$without" -v cost="$cost" -v names="$*" '
        { value[$1] = $2 }
        END {
            count = split(names, list, " ")
            for (i = 1; i <= count; i++) {
                n = list[i]; a = value[with n]; b = value[without n]
                if (!((with n) in value) || !((without n) in value) || b <= 0) continue
                printf "%s%s %.1f %%\n", cost, n, (n ~ /_(us|ms)/ ? a / b - 1 : 1 - a / b) * 100
            }
        }' "$file"
}

# swift build with our own warnings treated as errors (dependencies may warn).
build_checked() {
    stamp_build_commit
    local output status=0
    output=$(swift build "$@" 2>&1) || status=$?
    printf '%s\n' "$output" | grep -vE '^\[[0-9]+/[0-9]+\]' || true
    [ $status -eq 0 ] || return $status
    if printf '%s\n' "$output" | grep -E "^$ROOT/(Shared|Services|Tests|Benchmarks)/.*warning:" >/dev/null; then
        die "the build has warnings in StudyBus code (listed above); fix them"
    fi
}
