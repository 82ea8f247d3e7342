// Command ipvs-proxier is a node-level Kubernetes service proxy that programs Linux IPVS,
// a drop-in replacement for kube-proxy's IPVS mode.
//
//	ipvs-proxier [flags]          run the daemon
//	ipvs-proxier plan [flags]     print what the daemon would program, touching nothing
//	ipvs-proxier status [flags]   summarise the local daemon's /status
//	ipvs-proxier cleanup [flags]  remove everything ipvs-proxier programmed on this node
//	ipvs-proxier version          print the version
//	ipvs-proxier help [COMMAND]   what the program is and its commands, or a command's flags
package main

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/spf13/pflag"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

// subcommands are the words run accepts first; anything else that is not a flag is a
// typo, never a reason to start the daemon.
var subcommands = []string{"run", "plan", "status", "cleanup", "version", "help"}

func run(args []string) int {
	cmd := "run"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		if !slices.Contains(subcommands, args[0]) {
			fmt.Fprintf(os.Stderr, "ipvs-proxier: unknown command %q; valid: %s (none runs the daemon)\n", args[0], strings.Join(subcommands, ", "))
			return 2
		}
		cmd, args = args[0], args[1:]
	}
	var err error
	switch cmd {
	case "version":
		fmt.Println(version)
		return 0
	case "help":
		err = runHelp(args, os.Stdout)
	case "plan":
		err = runPlan(args, os.Stdout)
	case "status":
		err = runStatus(args, os.Stdout)
	case "cleanup":
		err = runCleanup(args, os.Stdout)
	default:
		err = runDaemon(args)
	}
	if errors.Is(err, errUsage) {
		fmt.Fprintln(os.Stderr, "ipvs-proxier:", err)
		return 2
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

// errUsage marks a command line that is wrong in itself (exit code 2).
var errUsage = errors.New("usage")

// noArgs rejects positional arguments: every setting is a flag, so a stray word is a
// typo (`ipvs-proxier --v 2 stauts`) that must not start anything.
func noArgs(fs *pflag.FlagSet) error {
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q; valid commands: %s", errUsage, fs.Arg(0), strings.Join(subcommands, ", "))
	}
	return nil
}
