package cli

import (
	"context"

	"github.com/scalegate/scalegate/internal/load/swarmcli"
)

func init() {
	register("swarm", "run the bot swarm against a server and report what clients observe", runSwarm)
}

// runSwarm is `scalegate swarm`: the swarm command line every swarm binary
// shares (internal/load/swarmcli), speaking load protocol v1.
func runSwarm(ctx context.Context, env *Env, args []string) error {
	return swarmcli.Scalegate.Run(ctx, &swarmcli.Env{Stdout: env.Stdout, Stderr: env.Stderr, Getenv: env.Getenv}, args)
}
