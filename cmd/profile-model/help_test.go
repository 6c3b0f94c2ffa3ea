package main

import (
	"bytes"
	"context"
	"flag"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestHelpNamesOwnFlags: a command's help mentions only flags the command
// has (run has no --profile: it always profiles), unless it names another
// command's ("layers --mode compat").
func TestHelpNamesOwnFlags(t *testing.T) {
	t.Parallel()
	names := map[string]bool{}
	for _, c := range commands() {
		names[c.name] = true
	}
	mention := regexp.MustCompile(`(\S+ )?--([a-z][a-z0-9_-]*)`)
	defined := regexp.MustCompile(`(?m)^  -([a-z][a-z0-9_-]*)`)
	for _, c := range commands() {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var out, errb bytes.Buffer
			require.NoError(t, run(context.Background(), []string{c.name, "-h"}, &out, &errb))
			help := out.String() + errb.String()
			has := map[string]bool{}
			for _, m := range defined.FindAllStringSubmatch(help, -1) {
				has[m[1]] = true
			}
			for _, m := range mention.FindAllStringSubmatch(help, -1) {
				if other := strings.TrimSpace(strings.TrimLeft(m[1], "(")); names[other] && other != c.name {
					continue
				}
				require.True(t, has[m[2]], "%s -h mentions --%s, which %s does not have:\n%s", c.name, m[2], c.name, help)
			}
		})
	}
}

// TestHelpShowsDefaults: -h and a usage error of every command print the
// help without a panic (a wrapped duration flag once panicked in flag's
// zero-value check), and every flag whose default is not its type's zero
// shows that default. Not parallel: seenFlagSet is package state.
func TestHelpShowsDefaults(t *testing.T) {
	var mu sync.Mutex
	sets := map[string][]*flag.FlagSet{}
	var cur string
	seenFlagSet = func(fs *flag.FlagSet) {
		mu.Lock()
		defer mu.Unlock()
		sets[cur] = append(sets[cur], fs)
	}
	defer func() { seenFlagSet = nil }()
	entry := regexp.MustCompile(`(?m)^  -([a-z][a-z0-9_-]*)[^\n]*(\n {4,}\t[^\n]*)*`)
	for _, c := range commands() {
		cases := [][]string{{c.name, "-h"}, {c.name, "--no-such-flag"}}
		if c.name == "run" {
			cases = append(cases, []string{"run", "--plan", "plan.json", "-h"})
		}
		for _, args := range cases {
			mu.Lock()
			cur = strings.Join(args, " ")
			mu.Unlock()
			var out, errb bytes.Buffer
			_ = run(context.Background(), args, &out, &errb)
			help := out.String() + errb.String()
			require.NotContains(t, help, "panic", "%s", cur)
			entries := map[string]string{}
			for _, m := range entry.FindAllStringSubmatch(help, -1) {
				entries[m[1]] = m[0]
			}
			require.NotEmpty(t, sets[cur], "%s parsed no flag set", cur)
			n := 0
			for _, fs := range sets[cur] {
				fs.VisitAll(func(f *flag.Flag) {
					n++
					text, ok := entries[f.Name]
					require.True(t, ok, "%s: the help has no entry for -%s:\n%s", cur, f.Name, help)
					switch f.DefValue {
					case "", "0", "false", "0s", "[]":
						return
					}
					require.Contains(t, text, f.DefValue, "%s: -%s does not show its default", cur, f.Name)
				})
			}
			t.Logf("%s: %d flags", cur, n)
		}
	}
}
