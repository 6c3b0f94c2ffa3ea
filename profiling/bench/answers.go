package bench

import (
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
)

// The errors of a server that answers, but not as a streaming completion
// endpoint does: a redirect, a 200 that is not an event stream, a profiler
// left on by an earlier run.

// httpBody is a net/http response body with its headers.
type httpBody struct {
	io.ReadCloser
	header http.Header
}

// headerOf is a response header (content-type or location) of a body
// returned by Client.post.
func headerOf(body io.ReadCloser, name string) string {
	switch b := body.(type) {
	case *httpBody:
		return b.header.Get(name)
	case *streamBody:
		for i := 0; i+1 < len(b.header); i += 2 {
			if b.header[i] == name {
				return b.header[i+1]
			}
		}
	}
	return ""
}

// noRedirects makes net/http hand a redirect back instead of following it:
// a POST followed after a 301 or 302 is resent as a GET, which then fails
// far from its cause.
func noRedirects(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// redirectError is the error of a 3xx answer, nil for another status.
func redirectError(method, url string, status int, location string) error {
	if status < 300 || status > 399 {
		return nil
	}
	if location == "" {
		return fmt.Errorf("%s %s: HTTP %d redirect without a Location: the client does not follow redirects; pass the server's own URL as --url", method, url, status)
	}
	return fmt.Errorf("%s %s: HTTP %d redirect to %s: the client does not follow redirects (a POST would be resent as a GET); pass the server's own URL as --url", method, url, status, location)
}

// firstBytes keeps the first bytes read through it, for the error of a
// body that is not what was expected.
type firstBytes struct {
	io.ReadCloser
	b []byte
}

const firstBytesKept = 200

func (f *firstBytes) Read(p []byte) (int, error) {
	n, err := f.ReadCloser.Read(p)
	if k := firstBytesKept - len(f.b); k > 0 && n > 0 {
		f.b = append(f.b, p[:min(n, k)]...)
	}
	return n, err
}

// notAStream is the error of a 200 answer in which no event came: what
// arrived instead.
func notAStream(url, contentType string, first []byte, why string) error {
	ct := contentType
	if ct == "" {
		ct = "none"
	}
	begin := fmt.Sprintf("it began %.200q", first)
	if len(first) == 0 {
		begin = "its body was empty"
	}
	if mt, _, _ := mime.ParseMediaType(contentType); mt != "text/event-stream" {
		return fmt.Errorf("POST %s: HTTP 200 but not an event stream: Content-Type %s, %s (%s); is this an OpenAI-compatible server's streaming endpoint?", url, ct, begin, why)
	}
	return fmt.Errorf("POST %s: an event stream without any event: %s (%s)", url, begin, why)
}

// profilingOnError is the error of a /start_profile refused because the
// profiler is already running, nil for another refusal. base is the
// server's base URL.
func profilingOnError(base string, status int, body []byte) error {
	if status == http.StatusOK || !strings.Contains(strings.ToLower(string(body)), "already") {
		return nil
	}
	return fmt.Errorf("POST %s/start_profile: the server is already profiling (HTTP %d: %s): an earlier run was probably killed before its /stop_profile; stop it with `curl -X POST %s/stop_profile` and run again",
		base, status, strings.TrimSpace(string(body)), base)
}
