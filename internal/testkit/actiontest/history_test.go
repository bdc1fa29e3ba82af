package actiontest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// git runs git in dir with a fixed identity, failing the test on error.
func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(cleanEnv(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// teamRepo is a team repository as actions/checkout leaves it: a clone of
// an origin (a bare repository here) holding gates/.
func teamRepo(t *testing.T) (ws, origin string) {
	t.Helper()
	src := newWorkspace(t)
	git(t, src, "init", "-q", "-b", "main")
	git(t, src, "add", ".")
	git(t, src, "commit", "-qm", "team repo")
	origin = filepath.Join(t.TempDir(), "origin.git")
	git(t, src, "clone", "-q", "--bare", src, origin)
	ws = filepath.Join(t.TempDir(), "ws")
	git(t, filepath.Dir(ws), "clone", "-q", "--depth=1", "file://"+origin, ws)
	return ws, origin
}

// TestHistoryBranch runs the action with history-branch as a workflow
// would: a push to the default branch starts the branch and pushes its
// record; a pull request is judged against it (the summary has the history
// check) and pushes nothing; the workspace's own checkout is left as it was.
func TestHistoryBranch(t *testing.T) {
	ws, origin := teamRepo(t)
	inputs := map[string]string{"PROFILE": "ok", "PROFILES": "gates", "HISTORY_BRANCH": "scalegate-history", "DEFAULT_BRANCH": "main"}
	push := step{bin: scalegateBin, inputs: inputs, env: map[string]string{"GITHUB_EVENT_NAME": "push", "GITHUB_REF": "refs/heads/main"}}.run(t, ws)
	if push.code != 0 {
		t.Fatalf("push run: exit %d\n%s", push.code, push.log)
	}
	if !strings.Contains(push.log, "history branch scalegate-history does not exist yet: starting it") || !strings.Contains(push.log, "history: pushed to scalegate-history") {
		t.Errorf("the push run did not start and push the history branch:\n%s", push.log)
	}
	files := git(t, origin, "ls-tree", "-r", "--name-only", "scalegate-history")
	if !strings.Contains(files, ".gitattributes") || !strings.Contains(files, "ok/") {
		t.Fatalf("origin's scalegate-history holds:\n%s", files)
	}
	records := func() int {
		n := 0
		for _, f := range strings.Fields(files) {
			if strings.HasSuffix(f, ".jsonl") {
				n += strings.Count(git(t, origin, "show", "scalegate-history:"+f), "\n")
			}
		}
		return n
	}
	if n := records(); n != 1 {
		t.Errorf("%d records on the branch after one run, want 1", n)
	}
	pr := step{bin: scalegateBin, inputs: inputs, env: map[string]string{"GITHUB_EVENT_NAME": "pull_request", "GITHUB_REF": "refs/pull/7/merge"}}.run(t, ws)
	if pr.code != 0 {
		t.Fatalf("pull request run: exit %d\n%s", pr.code, pr.log)
	}
	if !strings.Contains(pr.summary, "history: ok/weave") || !strings.Contains(pr.summary, "read-only: nothing appended") {
		t.Errorf("the pull request's summary has no read-only history check:\n%s", pr.summary)
	}
	files = git(t, origin, "ls-tree", "-r", "--name-only", "scalegate-history")
	if n := records(); n != 1 {
		t.Errorf("%d records on the branch after a pull request run, want 1 (read-only)", n)
	}
	if st := git(t, ws, "status", "--porcelain", "--untracked-files=no"); st != "" {
		t.Errorf("the workspace checkout was changed:\n%s", st)
	}
	if wt := git(t, ws, "worktree", "list"); strings.Count(wt, "\n") != 1 {
		t.Errorf("a history worktree was left behind:\n%s", wt)
	}
	if _, err := os.Stat(filepath.Join(ws, "history")); err == nil {
		t.Error("the history was written into the workspace, not the branch")
	}
}
