package sim_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"

	"github.com/profile-model/profile-model/profiling/sim"
)

// A simulated engine answers a completion as ATOM does; the stand-in
// tokenizer counts the six short words of the prompt as six tokens.
func Example() {
	srv, err := sim.New(sim.Config{Model: "my-model", Layers: 2, TimeScale: 100})
	if err != nil {
		fmt.Println(err)
		return
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	defer func() { stop(); <-done }()

	body := `{"model": "my-model", "prompt": "the cat sat on the mat", "max_tokens": 4, "ignore_eos": true}`
	resp, err := http.Post("http://"+ln.Addr().String()+"/v1/completions", "application/json", strings.NewReader(body))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	var reply struct {
		Choices []struct {
			Text         string `json:"text"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage struct {
			PromptTokens     int `json:"prompt_tokens"`
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&reply); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(resp.Status)
	fmt.Println("prompt tokens:", reply.Usage.PromptTokens, "completion tokens:", reply.Usage.CompletionTokens)
	fmt.Printf("finish: %s, text: %q\n", reply.Choices[0].FinishReason, reply.Choices[0].Text)
	// Output:
	// 200 OK
	// prompt tokens: 6 completion tokens: 4
	// finish: length, text: " that for it as"
}

// The simulated engine's stand-in tokenizer, which tests use to build
// prompts the engine counts as they expect.
func ExampleCountTokens() {
	fmt.Println(sim.CountTokens("the quick brown fox jumps over"))
	// Output: 6
}
