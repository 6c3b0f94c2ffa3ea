package main

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

const helperEnv = "PROFILE_MODEL_SERVE_SIM_HELPER"

// TestServeSimHelper is the serve-sim process of TestServeSimProcess: the
// test binary re-executed with the command's arguments in helperEnv.
func TestServeSimHelper(t *testing.T) {
	args := os.Getenv(helperEnv)
	if args == "" {
		t.Skip("runs only as the child process of TestServeSimProcess")
	}
	os.Args = append([]string{"profile-model"}, strings.Split(args, "\x1f")...)
	main()
	os.Exit(0)
}

// simProcess is a running serve-sim child process.
type simProcess struct {
	cmd    *exec.Cmd
	url    string
	stderr *strings.Builder
	done   chan struct{}
}

var servingLine = regexp.MustCompile(`serving "[^"]*" on (http://\S+)`)

// startSim starts serve-sim with args; it returns once the server listens.
func startSim(t *testing.T, args ...string) *simProcess {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestServeSimHelper$")
	cmd.Env = append(os.Environ(), helperEnv+"="+strings.Join(append([]string{"serve-sim"}, args...), "\x1f"))
	pipe, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	p := &simProcess{cmd: cmd, stderr: &strings.Builder{}, done: make(chan struct{})}
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-p.done
	})
	found := make(chan string, 1)
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			p.stderr.WriteString(sc.Text() + "\n")
			if m := servingLine.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
			}
		}
		close(found)
	}()
	url, ok := <-found
	if !ok {
		<-p.done
		cmd.Wait()
		t.Fatalf("serve-sim did not start:\n%s", p.stderr)
	}
	p.url = url
	return p
}

// wait returns the exit status once the process ends.
func (p *simProcess) wait(t *testing.T) int {
	t.Helper()
	<-p.done
	err := p.cmd.Wait()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	require.NoError(t, err)
	return 0
}

func TestServeSimProcess(t *testing.T) {
	t.Parallel()
	t.Run("SIGTERM exits 0", func(t *testing.T) {
		t.Parallel()
		p := startSim(t, "--model", "m", "--server-port", "0")
		resp, err := http.Get(p.url + "/health")
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
		require.Equal(t, 0, p.wait(t), p.stderr.String())
	})
	t.Run("crash-after-requests exits 3", func(t *testing.T) {
		t.Parallel()
		p := startSim(t, "--model", "m", "--server-port", "0", "--time-scale", "100", "--crash-after-requests", "2")
		for range 2 {
			resp, err := http.Post(p.url+"/v1/completions", "application/json", strings.NewReader(`{"prompt":"x","max_tokens":3}`))
			require.NoError(t, err)
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			require.Equal(t, http.StatusOK, resp.StatusCode)
		}
		require.Equal(t, 3, p.wait(t), p.stderr.String())
		require.Contains(t, p.stderr.String(), "simulated crash after 2 requests")
	})
	t.Run("port taken exits 1", func(t *testing.T) {
		t.Parallel()
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		defer ln.Close()
		port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
		cmd := exec.Command(os.Args[0], "-test.run=^TestServeSimHelper$")
		cmd.Env = append(os.Environ(), helperEnv+"="+strings.Join([]string{"serve-sim", "--model", "m", "--server-port", port}, "\x1f"))
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee)
		require.Equal(t, 1, ee.ExitCode())
		require.Contains(t, string(out), "is the port taken")
	})
	t.Run("no model is a usage error", func(t *testing.T) {
		t.Parallel()
		err := run(t.Context(), []string{"serve-sim", "--server-port", "0"}, io.Discard, io.Discard)
		var u usageError
		require.ErrorAs(t, err, &u)
		require.Contains(t, err.Error(), "--model")
	})
}
