package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestHelpIsNotAnError(t *testing.T) {
	t.Parallel()
	for _, c := range commands() {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var stdout, stderr bytes.Buffer
			if err := run(context.Background(), []string{c.name, "-h"}, &stdout, &stderr); err != nil {
				t.Fatalf("%s -h: %v", c.name, err)
			}
			if out := stdout.String() + stderr.String(); !strings.Contains(out, "usage: profile-model "+c.name) {
				t.Errorf("%s -h printed no usage line:\n%s", c.name, out)
			}
		})
	}
}

func TestUnknownCommandIsUsageError(t *testing.T) {
	t.Parallel()
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"frobnicate"}, &stdout, &stderr)
	var u usageError
	if err == nil || !strings.Contains(err.Error(), "frobnicate") {
		t.Fatalf("err = %v, want unknown command", err)
	}
	if !errors.As(err, &u) {
		t.Errorf("err %T is not a usage error (exit status 2)", err)
	}
	if !strings.Contains(stderr.String(), "commands:") {
		t.Errorf("no command list on stderr:\n%s", stderr.String())
	}
}

func TestVersion(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"version"}, &out, &out))
	require.Regexp(t, `^profile-model \S+( commit [0-9a-f]{1,12}(\+modified)?( \(\S+\))?)? go1\.\d+`, out.String())
	require.Error(t, run(context.Background(), []string{"version", "x"}, &out, &out))
}
