#!/usr/bin/env bash
# action.sh: what the scalegate GitHub Action (action.yml) does, as a script
# so it is tested outside GitHub (internal/testkit/actiontest runs it with the
# GITHUB_* files pointed at temp files).
#
# It gets a scalegate binary (SCALEGATE_BIN if set; else the release
# INPUT_VERSION names, fetched and checked against its SHA256SUMS; else a
# build of the action's own checkout), runs the gate in the working
# directory with an --out it chooses, appends the run's summary.md to the job
# summary, writes the step outputs and exits with scalegate's exit code
# (3, inconclusive, becomes 0 only with allow-inconclusive: true).
#
# Inputs (action.yml passes each as an environment variable):
#   INPUT_PROFILE (required), INPUT_PROFILES, INPUT_STRICT, INPUT_SET
#   (newline-separated PATH=VALUE), INPUT_UPDATE_BASELINE, INPUT_JUNIT,
#   INPUT_WORKING_DIRECTORY, INPUT_VERSION, INPUT_ALLOW_INCONCLUSIVE.
# Environment: GITHUB_OUTPUT, GITHUB_STEP_SUMMARY and GITHUB_WORKSPACE are
#   required; GITHUB_PATH (the binary's directory is added to it) and
#   RUNNER_TEMP are used when set. SCALEGATE_RELEASE_URL replaces the
#   release download base (https://github.com/scalegate/scalegate/releases/download).
# Outputs: exit-code, verdict, run-dir (empty when scalegate stopped before
#   creating it), artifact-name, junit (absolute, when asked for).
#
# Its own failures (a bad input, a failed build or download) exit 2 for
# what the caller can fix and 6 otherwise, the codes scalegate uses, with
# the same outputs written.
set -euo pipefail

action_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# The release download base; the action's tests point it at a local
# release directory (file://).
release_url="${SCALEGATE_RELEASE_URL:-https://github.com/scalegate/scalegate/releases/download}"

die() { # die CODE MESSAGE: fail the step before scalegate ran.
  local code=$1
  shift
  echo "scalegate action: $*" >&2
  if [ -n "${GITHUB_OUTPUT:-}" ]; then
    output exit-code "$code"
    output verdict "$(verdict_for "$code")"
    output run-dir ""
  fi
  if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then
    printf '## scalegate: not run (exit %s)\n\n%s\n\n' "$code" "$*" >>"$GITHUB_STEP_SUMMARY"
  fi
  exit "$code"
}

output() { # output NAME VALUE: one step output (values never hold a newline).
  case "$2" in *$'\n'*) echo "scalegate action: output $1 holds a newline" >&2; exit 6 ;; esac
  printf '%s=%s\n' "$1" "$2" >>"$GITHUB_OUTPUT"
}

verdict_for() { # the verdict of an exit code, as docs/exit-codes.md names it.
  case "$1" in
  0) echo passed ;; 1) echo failed ;; 2) echo usage ;; 3) echo inconclusive ;;
  4) echo "invalid profile" ;; 5) echo "launch failure" ;; 6) echo "internal error" ;;
  130) echo interrupted ;; *) echo "exit $1" ;;
  esac
}

bool_input() { # bool_input NAME VALUE: true or false, as GitHub spells them.
  case "$2" in
  true | True | TRUE) echo true ;;
  false | False | FALSE | "") echo false ;;
  *) die 2 "input $1: \"$2\" is not true or false" ;;
  esac
}

for v in GITHUB_OUTPUT GITHUB_STEP_SUMMARY GITHUB_WORKSPACE; do
  if [ -z "${!v:-}" ]; then
    echo "scalegate action: $v is not set (this script runs as a step of action.yml)" >&2
    exit 2
  fi
done

profile="${INPUT_PROFILE:-}"
profiles="${INPUT_PROFILES:-}"
strict=$(bool_input strict "${INPUT_STRICT:-}")
update_baseline=$(bool_input update-baseline "${INPUT_UPDATE_BASELINE:-}")
allow_inconclusive=$(bool_input allow-inconclusive "${INPUT_ALLOW_INCONCLUSIVE:-}")
junit="${INPUT_JUNIT:-}"
workdir="${INPUT_WORKING_DIRECTORY:-.}"
version="${INPUT_VERSION:-}"
version="${version#v}"

[ -n "$profile" ] || die 2 "input profile is required (e.g. profile: pr; scalegate profiles lists the built-in ones)"
# The profile names the run directory: keep it to what a file name holds.
[[ "$profile" =~ ^[A-Za-z0-9][A-Za-z0-9._-]*$ ]] || die 2 "input profile: \"$profile\" is not a profile name"
# The version names a directory that is emptied and a download URL: only
# a release's version (0.2.0, v0.2.0, 0.3.0-rc.1) gets that far.
[[ -z "$version" || "$version" =~ ^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z][0-9A-Za-z.-]*)?$ ]] ||
  die 2 "input version: \"${INPUT_VERSION}\" is not a release version (like 0.2.0 or v0.2.0; empty builds from the action's ref)"

tmp="${RUNNER_TEMP:-${TMPDIR:-/tmp}}/scalegate-action"
mkdir -p "$tmp"

# fetch_release VERSION: download the release tarball for this runner,
# check it against the release's SHA256SUMS and print the binary's path.
fetch_release() {
  local ver=$1 os arch name dir sums
  case "$(uname -s)" in Linux) os=linux ;; Darwin) os=darwin ;; *) die 2 "version: no release for $(uname -s) runners; leave version empty to build" ;; esac
  case "$(uname -m)" in x86_64 | amd64) arch=amd64 ;; aarch64 | arm64) arch=arm64 ;; *) die 2 "version: no release for $(uname -m) runners; leave version empty to build" ;; esac
  name="scalegate_${ver}_${os}_${arch}"
  dir="$tmp/release-$ver"
  rm -rf "$dir" && mkdir -p "$dir"
  echo "scalegate action: fetching $release_url/v$ver/$name.tar.gz" >&2
  curl -fsSL --retry 3 -o "$dir/$name.tar.gz" "$release_url/v$ver/$name.tar.gz" ||
    die 2 "version $ver: cannot download $release_url/v$ver/$name.tar.gz (is v$ver released?)"
  curl -fsSL --retry 3 -o "$dir/SHA256SUMS" "$release_url/v$ver/SHA256SUMS" ||
    die 6 "version $ver: cannot download $release_url/v$ver/SHA256SUMS"
  sums=$(grep " $name.tar.gz\$" "$dir/SHA256SUMS" || true)
  [ -n "$sums" ] || die 6 "version $ver: SHA256SUMS has no line for $name.tar.gz"
  if command -v sha256sum >/dev/null 2>&1; then
    (cd "$dir" && echo "$sums" | sha256sum -c --quiet -) >&2 || die 6 "version $ver: $name.tar.gz does not match SHA256SUMS"
  else
    (cd "$dir" && echo "$sums" | shasum -a 256 -c --quiet -) >&2 || die 6 "version $ver: $name.tar.gz does not match SHA256SUMS"
  fi
  tar -xzf "$dir/$name.tar.gz" -C "$dir" || die 6 "version $ver: cannot unpack $name.tar.gz"
  [ -x "$dir/$name/bin/scalegate" ] || die 6 "version $ver: $name.tar.gz has no bin/scalegate"
  echo "$dir/$name/bin/scalegate"
}

# build_here: build the action's own checkout (its ref is the action's
# ref) with the prerequisites scripts/deps.sh installs.
build_here() {
  # shellcheck source-path=SCRIPTDIR source=deps.sh
  (source "$action_root/scripts/deps.sh") >&2 || die 6 "prerequisites: scripts/deps.sh failed (see above)"
  # deps.sh ran in a subshell (its exit must not end this script), so its
  # PATH change is lost: add the fallback Go it knows here.
  # shellcheck disable=SC2031
  export PATH="$PATH:/usr/local/go/bin"
  mkdir -p "$tmp/bin"
  echo "scalegate action: building scalegate from $action_root" >&2
  go -C "$action_root" build -o "$tmp/bin/scalegate" ./cmd/scalegate >&2 || die 6 "go build ./cmd/scalegate failed (see above)"
  echo "$tmp/bin/scalegate"
}

if [ -n "${SCALEGATE_BIN:-}" ]; then
  [ -x "$SCALEGATE_BIN" ] || die 2 "SCALEGATE_BIN=$SCALEGATE_BIN is not an executable"
  bin="$SCALEGATE_BIN"
elif [ -n "$version" ]; then
  bin=$(fetch_release "$version")
else
  bin=$(build_here)
fi
bin="$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")"
"$bin" version >&2 || die 6 "$bin does not run"
if [ -n "${GITHUB_PATH:-}" ]; then
  # Later steps of the job can run scalegate (compare, report, vet).
  dirname "$bin" >>"$GITHUB_PATH"
fi

cd "$GITHUB_WORKSPACE" || die 6 "GITHUB_WORKSPACE=$GITHUB_WORKSPACE is not a directory"
cd "$workdir" 2>/dev/null || die 2 "input working-directory: $workdir is not a directory under $GITHUB_WORKSPACE"

# The run directory, named as scalegate names its default one
# (results/<profile>_<UTC timestamp>, -2, -3… when taken), chosen here so
# the outputs can name it.
stamp=$(date -u +%Y%m%dT%H%M%SZ)
run_dir="$PWD/results/${profile}_$stamp"
for i in $(seq 2 99); do
  [ -e "$run_dir" ] || break
  run_dir="$PWD/results/${profile}_$stamp-$i"
done

args=(--profile "$profile" --out "$run_dir")
[ -z "$profiles" ] || args+=(--profiles "$profiles")
[ "$strict" = false ] || args+=(--strict)
[ "$update_baseline" = false ] || args+=(--update-baseline)
if [ -n "$junit" ]; then
  case "$junit" in /*) ;; *) junit="$PWD/$junit" ;; esac
  # scalegate writes the file after the run and does not create its
  # directory: a missing one would turn a finished run into exit 6.
  mkdir -p "$(dirname "$junit")" || die 2 "input junit: cannot create the directory of $junit"
  args+=(--junit "$junit")
fi
while IFS= read -r line; do
  line="${line#"${line%%[![:space:]]*}"}"
  line="${line%"${line##*[![:space:]]}"}"
  [ -z "$line" ] || args+=(--set "$line")
done <<<"${INPUT_SET:-}"

# Run scalegate in the background so an interrupt of this step (the runner
# sends SIGINT, then SIGTERM, when a job is cancelled) is passed on to it:
# the first stops the leg in stages and keeps partial artifacts, the second
# kills at once (docs/exit-codes.md, 130). Its output goes to the log and
# to a file, whose tail goes into the job summary when there is no
# summary.md. The job summary is written here, not by scalegate, so it
# holds the run exactly once.
# The run history (docs/history.md): records live on a branch of their own
# (input history-branch), checked out here as a worktree of the workspace's
# repository, so the credentials actions/checkout left in its config push
# it. A run on the default branch appends and pushes; any other run (a pull
# request) is judged against it read-only.
history_branch="${INPUT_HISTORY_BRANCH:-}"
history_dir=""
history_append=false
if [ -n "$history_branch" ]; then
  git check-ref-format --branch "$history_branch" >/dev/null 2>&1 || die 2 "input history-branch: \"$history_branch\" is not a branch name"
  repo_root=$(git rev-parse --show-toplevel 2>/dev/null) || die 2 "input history-branch: $PWD is not in a git checkout (check the repository out first)"
  history_dir="$tmp/history-$$"
  rm -rf "$history_dir"
  if git -C "$repo_root" fetch --quiet origin "+refs/heads/$history_branch:refs/remotes/origin/$history_branch" 2>/dev/null; then
    git -C "$repo_root" worktree add --quiet --detach "$history_dir" "origin/$history_branch" >&2 ||
      die 6 "history: cannot check out origin/$history_branch"
  else
    echo "scalegate action: history branch $history_branch does not exist yet: starting it" >&2
    git -C "$repo_root" worktree add --quiet --detach "$history_dir" >&2 || die 6 "history: cannot make a worktree for $history_branch"
    (cd "$history_dir" && git checkout --quiet --orphan "$history_branch" && git rm -rfq . >/dev/null) || die 6 "history: cannot start branch $history_branch"
  fi
  default_branch="${INPUT_DEFAULT_BRANCH:-}"
  if [ -n "$default_branch" ] && [ "${GITHUB_REF:-}" = "refs/heads/$default_branch" ] && [ "${GITHUB_EVENT_NAME:-}" != pull_request ]; then
    history_append=true
    args+=(--history "$history_dir")
  else
    args+=(--history "$history_dir" --history-read-only)
  fi
fi

# push_history commits the records this run appended and pushes them,
# rebasing on what another job pushed meanwhile (the files merge line by
# line: .gitattributes asks for a union merge), at most 3 times.
push_history() {
  (
    cd "$history_dir" || exit 6
    git add -A . && git diff --cached --quiet && { echo "scalegate action: history: nothing to push" >&2; exit 0; }
    git -c user.name="scalegate" -c user.email="scalegate@users.noreply.github.com" \
      commit --quiet -m "scalegate history: $profile at ${GITHUB_SHA:-$(git -C "$repo_root" rev-parse HEAD)}" || exit 6
    for attempt in 1 2 3; do
      if git push --quiet origin "HEAD:refs/heads/$history_branch" 2>&1; then
        echo "scalegate action: history: pushed to $history_branch" >&2
        exit 0
      fi
      echo "scalegate action: history: push $attempt refused; rebasing on origin/$history_branch" >&2
      git fetch --quiet origin "+refs/heads/$history_branch:refs/remotes/origin/$history_branch" &&
        git -c user.name="scalegate" -c user.email="scalegate@users.noreply.github.com" rebase --quiet "origin/$history_branch" >&2 || exit 6
    done
    exit 6
  )
}

log="$tmp/scalegate-$$.log"
fifo="$tmp/scalegate-$$.fifo"
rm -f "$fifo" && mkfifo "$fifo"
tee "$log" <"$fifo" &
tee_pid=$!
echo "scalegate action: scalegate ${args[*]}" >&2
env -u GITHUB_STEP_SUMMARY "$bin" "${args[@]}" >"$fifo" 2>&1 &
pid=$!
trap 'kill -INT "$pid" 2>/dev/null || true' INT TERM
code=0
wait "$pid" || code=$?
while kill -0 "$pid" 2>/dev/null; do
  # wait returned for a signal this script trapped: scalegate is still
  # stopping; its own status is what counts.
  code=0
  wait "$pid" || code=$?
done
trap - INT TERM
# tee ends when scalegate's side of the fifo closes; scalegate leaves no
# descendant holding it, but a bound keeps the step from hanging on one.
for _ in $(seq 1 50); do kill -0 "$tee_pid" 2>/dev/null || break; sleep 0.1; done
kill "$tee_pid" 2>/dev/null || true
wait "$tee_pid" 2>/dev/null || true
rm -f "$fifo"

if [ "$history_append" = true ] && [ "$code" -ne 130 ]; then
  hcode=0
  push_history || hcode=$?
  if [ "$hcode" -ne 0 ]; then
    echo "scalegate action: history: the records were not pushed to $history_branch (see above)" >&2
    [ "$code" -ne 0 ] || code=6
  fi
fi
if [ -n "$history_dir" ]; then
  git -C "$repo_root" worktree remove --force "$history_dir" 2>/dev/null || rm -rf "$history_dir"
fi

verdict=$(verdict_for "$code")
if [ -f "$run_dir/summary.json" ]; then
  # The run's own verdict: the top-level "verdict" key, the only one at two
  # spaces of indent in the file scalegate writes (json.MarshalIndent);
  # legs and capacity curves nest theirs deeper. internal/testkit/actiontest checks
  # this against the parsed file for every verdict it produces.
  verdict=$(sed -n 's/^  "verdict": "\([a-z ]*\)",\{0,1\}$/\1/p' "$run_dir/summary.json")
  [ -n "$verdict" ] || verdict="unreadable summary.json"
fi
if [ -f "$run_dir/summary.md" ]; then
  cat "$run_dir/summary.md" >>"$GITHUB_STEP_SUMMARY"
else
  {
    # shellcheck disable=SC2016 # the backquotes are Markdown
    printf '## scalegate: profile `%s`: %s (exit %s)\n\n' "$profile" "$verdict" "$code"
    printf 'scalegate stopped before it wrote a summary. The end of its output:\n\n```\n'
    tail -n 40 "$log"
    printf '```\n\n'
  } >>"$GITHUB_STEP_SUMMARY"
fi
rm -f "$log"

if [ -d "$run_dir" ]; then
  output run-dir "$run_dir"
  output artifact-name "scalegate-$(basename "$run_dir")"
else
  output run-dir ""
fi
[ -z "$junit" ] || [ ! -f "$junit" ] || output junit "$junit"
output exit-code "$code"
output verdict "$verdict"

if [ "$code" -eq 3 ] && [ "$allow_inconclusive" = true ]; then
  printf '\n_Inconclusive (exit 3) is allowed by this step (allow-inconclusive: true): the step passes, the verdict stays inconclusive._\n' >>"$GITHUB_STEP_SUMMARY"
  echo "scalegate action: inconclusive (exit 3) allowed by allow-inconclusive: true" >&2
  exit 0
fi
exit "$code"
