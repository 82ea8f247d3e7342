// Command ipvs-proxier is a node-level Kubernetes service proxy that programs Linux IPVS,
// a drop-in replacement for kube-proxy's IPVS mode.
//
//	ipvs-proxier [flags]          run the daemon
//	ipvs-proxier plan [flags]     print what the daemon would program, touching nothing
//	ipvs-proxier status [flags]   summarise the local daemon's /status
//	ipvs-proxier cleanup [flags]  remove everything ipvs-proxier programmed on this node
//	ipvs-proxier version          print the version
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/pflag"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	cmd := "run"
	if len(args) > 0 && (args[0] == "plan" || args[0] == "version" || args[0] == "run" || args[0] == "status" || args[0] == "cleanup") {
		cmd, args = args[0], args[1:]
	}
	var err error
	switch cmd {
	case "version":
		fmt.Println(version)
		return 0
	case "plan":
		err = runPlan(args, os.Stdout)
	case "status":
		err = runStatus(args, os.Stdout)
	case "cleanup":
		err = runCleanup(args, os.Stdout)
	default:
		err = runDaemon(args)
	}
	if errors.Is(err, pflag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "ipvs-proxier:", err)
		return 1
	}
	return 0
}
