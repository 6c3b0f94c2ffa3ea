package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"runtime/debug"
)

// runVersion prints the module version, the VCS commit the binary was built
// from, and the Go version, so a bug report says what was run.
func runVersion(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: profile-model version\n\nPrint the version, commit and Go version of this build.")
	}
	if err := parseFlags(fs, args); err != nil {
		return usageError{err.Error()}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Sprintf("version: unexpected argument %q", fs.Arg(0))}
	}
	fmt.Fprintln(stdout, versionLine())
	return nil
}

func versionLine() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "profile-model (no build information)"
	}
	version := bi.Main.Version
	if version == "" {
		version = "(devel)"
	}
	commit, modified, when := "", false, ""
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			commit = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		case "vcs.time":
			when = s.Value
		}
	}
	line := fmt.Sprintf("profile-model %s", version)
	if commit != "" {
		if len(commit) > 12 {
			commit = commit[:12]
		}
		line += " commit " + commit
		if modified {
			line += "+modified"
		}
		if when != "" {
			line += " (" + when + ")"
		}
	}
	return line + " " + bi.GoVersion
}
