package main

import (
	"bytes"
	"context"
	"regexp"
	"strings"
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
