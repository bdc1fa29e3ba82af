// Package actiontest tests the scalegate GitHub Action outside GitHub.
//
// It runs scripts/action.sh (the logic behind action.yml) with
// GITHUB_STEP_SUMMARY, GITHUB_OUTPUT, GITHUB_PATH and GITHUB_WORKSPACE
// pointed at temp files, against the real scalegate, and checks the job
// summary, the step outputs and the exit code it leaves for a passed, a
// failed, an inconclusive, an interrupted and a never-started run. It also
// checks action.yml's structure (tests only; nothing here is imported).
package actiontest
