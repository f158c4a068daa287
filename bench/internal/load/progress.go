package load

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// progress draws a one-line bar of the whole sweep's elapsed time,
// redrawn in place every 200ms. A nil writer draws nothing.
type progress struct {
	w      io.Writer
	label  string
	levels []int
	total  time.Duration
	start  time.Time
	mu     sync.Mutex
	level  int
	stage  string
	stop   chan struct{}
	wg     sync.WaitGroup
}

const barWidth = 30

func newProgress(w io.Writer, label string, levels []int, warmup, d time.Duration) *progress {
	p := &progress{w: w, label: label, levels: levels, total: time.Duration(len(levels)) * (max(warmup, 0) + d), start: time.Now()}
	if w == nil {
		return p
	}
	p.stop = make(chan struct{})
	p.wg.Go(func() {
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-tick.C:
				p.draw()
			}
		}
	})
	return p
}

func (p *progress) phase(level int, stage string) {
	p.mu.Lock()
	p.level, p.stage = level, stage
	p.mu.Unlock()
}

func (p *progress) draw() {
	p.mu.Lock()
	level, stage := p.level, p.stage
	p.mu.Unlock()
	frac := 1.0
	if p.total > 0 {
		frac = min(1, float64(time.Since(p.start))/float64(p.total))
	}
	n := int(frac * barWidth)
	fmt.Fprintf(p.w, "\r%s [%s%s] %3.0f%% concurrency %d (%s)\033[K", p.label,
		strings.Repeat("#", n), strings.Repeat(".", barWidth-n), frac*100, p.levels[level], stage)
}

func (p *progress) done() {
	if p.w == nil {
		return
	}
	close(p.stop)
	p.wg.Wait()
	fmt.Fprint(p.w, "\r\033[K")
}
