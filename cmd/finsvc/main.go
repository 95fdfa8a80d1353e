// Command finsvc is the service binary: the API server and the setup
// commands that integrators' CI scripts drive.
//
//	finsvc serve | demo | migrate | tenant create | user create | …
//
// Exit codes: 0 success (and --help), 1 failure, 2 bad usage (unknown
// command or flag, bad configuration value).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"

	"github.com/finsvc/finsvc/internal/apperr"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], &cli{stdout: os.Stdout, stderr: os.Stderr, getenv: os.LookupEnv})
	stop()
	os.Exit(code)
}

// cli is the process environment a command sees; tests supply their own.
type cli struct {
	stdout, stderr io.Writer
	getenv         func(string) (string, bool)
}

// command is one subcommand. Groups (tenant, user, app) have subs instead
// of run.
type command struct {
	name     string
	synopsis string
	run      func(ctx context.Context, c *cli, args []string) error
	subs     []*command
}

var commands []*command

// register adds a top-level command; each command's file registers itself
// in init, so that adding one does not touch this file.
func register(cmd *command) { commands = append(commands, cmd) }

// registerSub adds sub to the group named group, creating the group.
func registerSub(group, synopsis string, sub *command) {
	for _, c := range commands {
		if c.name == group {
			c.subs = append(c.subs, sub)
			return
		}
	}
	register(&command{name: group, synopsis: synopsis, subs: []*command{sub}})
}

// usageError is bad input on the command line: exit status 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// errHelp: --help was printed; exit 0.
var errHelp = errors.New("help requested")

// run executes the command line and returns the exit status.
func run(ctx context.Context, args []string, c *cli) int {
	if len(args) == 0 {
		printUsage(c.stderr, "finsvc", commands)
		return 2
	}
	path, cmd, rest, err := lookup(args, commands)
	if errors.Is(err, errHelp) {
		printUsage(c.stdout, path, cmd.subsOrTop())
		return 0
	}
	if err == nil {
		err = cmd.run(ctx, c, rest)
	}
	switch {
	case err == nil, errors.Is(err, errHelp):
		return 0
	case errors.As(err, new(usageError)):
		fmt.Fprintf(c.stderr, "%s: %s (see '%s --help')\n", path, oneLine(err.Error()), path)
		return 2
	default:
		fmt.Fprintf(c.stderr, "%s: %s\n", path, oneLine(describe(err)))
		return 1
	}
}

func (c *command) subsOrTop() []*command {
	if c == nil {
		return commands
	}
	return c.subs
}

// lookup walks args down the command tree. It returns the command path for
// messages ("finsvc tenant create"), the runnable command and its args.
func lookup(args []string, cmds []*command) (path string, cmd *command, rest []string, err error) {
	path = "finsvc"
	for {
		if len(args) == 0 {
			return path, cmd, nil, usagef("missing subcommand")
		}
		name := args[0]
		if name == "-h" || name == "--help" || name == "-help" || name == "help" {
			return path, cmd, nil, errHelp
		}
		i := slices.IndexFunc(cmds, func(c *command) bool { return c.name == name })
		if i < 0 {
			return path, cmd, nil, usagef("unknown command %q", name)
		}
		cmd, args, path = cmds[i], args[1:], path+" "+name
		if cmd.run != nil {
			return path, cmd, args, nil
		}
		cmds = cmd.subs
	}
}

func printUsage(w io.Writer, path string, cmds []*command) {
	fmt.Fprintf(w, "Usage: %s <command> [flags]\n\nCommands:\n", path)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, c := range cmds {
		fmt.Fprintf(tw, "  %s\t%s\n", c.name, c.synopsis)
	}
	tw.Flush()
	fmt.Fprintf(w, "\nRun '%s <command> --help' for details.\n", path)
}

// describe renders err for a terminal: domain errors with their field
// messages ("invalid user: email must be a valid email address").
func describe(err error) string {
	var e *apperr.Error
	if !errors.As(err, &e) {
		return err.Error()
	}
	msg := e.Message
	var fields []string
	for f, msgs := range e.Fields {
		for _, m := range msgs {
			fields = append(fields, f+" "+m)
		}
	}
	slices.Sort(fields)
	if len(fields) > 0 {
		msg += ": " + strings.Join(fields, "; ")
	}
	return msg
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", "; ")), " ")
}
