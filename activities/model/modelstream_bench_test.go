package model

import (
	"context"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/custos-dev/custos/demomodel"
	"github.com/custos-dev/custos/stream"
)

// BenchmarkModelTurn is one model call of a job against the demo endpoint
// over loopback HTTP, plain and streamed (with a watcher). A typical turn:
// a paragraph and two calls. "instant": the endpoint answers at once, in
// 8-byte deltas (about 120 chunks), so what is measured is the cost of
// streaming itself, both ends' JSON per chunk included. "paced": the
// endpoint takes about 170 ms, like a fast real one: 50 ms to its first
// token, then 32-byte deltas 5 ms apart; the plain answer comes after the
// same time, whole.
func BenchmarkModelTurn(b *testing.B) {
	for _, pace := range []string{"instant", "paced"} {
		for _, mode := range []string{"plain", "stream"} {
			b.Run(pace+"/"+mode, func(b *testing.B) { benchTurn(b, pace == "paced", mode == "stream") })
		}
	}
}

func benchTurn(b *testing.B, paced, streamed bool) {
	reply := demomodel.Reply{
		Message: openai.ChatCompletionMessage{Content: strings.Repeat("I will read the test file and run it. ", 12),
			ToolCalls: []openai.ToolCall{
				demomodel.ToolCall("c1", "Read", `{"file_path":"internal/archtest/archtest_test.go"}`),
				demomodel.ToolCall("c2", "Bash", `{"command":"go test ./internal/archtest/ -run TestFunctionLength -count=1"}`),
			}},
	}
	if paced {
		reply.ChunkSize, reply.FirstDelay, reply.ChunkDelay = 32, 50*time.Millisecond, 5*time.Millisecond
	}
	chunks := len(demomodel.StreamChunks(openai.ChatCompletionResponse{Choices: []openai.ChatCompletionChoice{{Message: reply.Message}}}, 32, true))
	total := reply.FirstDelay + time.Duration(chunks-2)*reply.ChunkDelay
	srv := demomodel.New(func(req openai.ChatCompletionRequest) (demomodel.Reply, error) {
		if !req.Stream {
			time.Sleep(total) // the same generation time, in one piece
		}
		return reply, nil
	})
	base, err := srv.Start("127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	m := New(base, "k", "m", nil)
	if streamed {
		m.Stream = stream.NewHub(stream.Limits{})
		sub := m.Stream.Subscribe("job1")
		defer sub.Close()
		go func() {
			for {
				if _, err := sub.Next(context.Background()); err != nil {
					return
				}
			}
		}()
	}
	req := jobRequest(b.TempDir())
	ctx := context.Background()
	if _, err := m.Chat(ctx, req); err != nil { // writes the transcript
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := m.Chat(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
}
