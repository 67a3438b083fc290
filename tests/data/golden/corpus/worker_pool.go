// worker_pool.go - fan-out/fan-in over a bounded worker pool with context cancellation.
//
// Written for the vsynth tokenizer corpus: Go with goroutines, channels, select,
// generics, method values, struct tags and a table-driven check in main.
package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"
)

type Job[T any] struct {
	ID    int `json:"id"`
	Input T   `json:"input"`
}

type Result[R any] struct {
	JobID int           `json:"job_id"`
	Value R             `json:"value,omitempty"`
	Err   error         `json:"-"`
	Took  time.Duration `json:"took_ns"`
}

var ErrEmpty = errors.New("empty input")

// Run applies fn to every job with at most `workers` goroutines and returns results
// ordered by job ID. It stops early when ctx is cancelled.
func Run[T, R any](ctx context.Context, workers int, jobs []Job[T], fn func(T) (R, error)) []Result[R] {
	if workers < 1 {
		workers = 1
	}
	in := make(chan Job[T])
	out := make(chan Result[R], len(jobs))
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for job := range in {
				start := time.Now()
				v, err := fn(job.Input)
				out <- Result[R]{JobID: job.ID, Value: v, Err: err, Took: time.Since(start)}
			}
		}()
	}
feed:
	for _, j := range jobs {
		select {
		case <-ctx.Done():
			break feed
		case in <- j:
		}
	}
	close(in)
	wg.Wait()
	close(out)

	results := make([]Result[R], 0, len(jobs))
	for r := range out {
		results = append(results, r)
	}
	sort.Slice(results, func(a, b int) bool { return results[a].JobID < results[b].JobID })
	return results
}

func wordCount(s string) (int, error) {
	if strings.TrimSpace(s) == "" {
		return 0, ErrEmpty
	}
	return len(strings.Fields(s)), nil
}

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()

	inputs := []string{"the quick brown fox", "   ", "日本語 の テキスト", "a\tb\tc", "ünïcödé wörds here"}
	jobs := make([]Job[string], len(inputs))
	for i, s := range inputs {
		jobs[i] = Job[string]{ID: i, Input: s}
	}
	for _, r := range Run(ctx, 3, jobs, wordCount) {
		switch {
		case errors.Is(r.Err, ErrEmpty):
			fmt.Printf("job %d: empty\n", r.JobID)
		case r.Err != nil:
			fmt.Printf("job %d: error %v\n", r.JobID, r.Err)
		default:
			fmt.Printf("job %d: %d words (%v)\n", r.JobID, r.Value, r.Took.Round(time.Microsecond))
		}
	}
}
