package soakstat

import (
	"math"
	"slices"
	"testing"
)

// series is n samples a second apart of level + rise×t, with a saw of
// amplitude saw (period 4 samples) on top.
func series(n int, level, rise, saw float64) Series {
	s := Series{Process: "p", Metric: "heap"}
	for i := range n {
		t := float64(i)
		s.T = append(s.T, t)
		s.V = append(s.V, level+rise*t+saw*float64(i%4-1))
	}
	return s
}

func TestAnalyseFindsTheSlopeAndJudgesItAgainstTheNoise(t *testing.T) {
	for _, c := range []struct {
		name       string
		s          Series
		warmup     float64
		wantPerH   float64
		wantFlat   bool
		wantGrowth float64
	}{
		// A saw around a level: no growth at all.
		{"flat saw", series(400, 100, 0, 5), 0, 0, true, 0},
		// A rise of 0.1 a second, 39.9 over the window: far above twice
		// the saw's scatter (about 2 × 5.6) and 1% of the mean.
		{"leak", series(400, 100, 0.1, 5), 0, 360, false, 39.9},
		// The same rise, but small against the saw: within noise.
		{"leak hidden by the saw", series(400, 100, 0.01, 5), 0, 36, true, 3.99},
		// A fall, as a pool shrinking after the warm-up: not flat, not rising.
		{"fall", series(400, 100, -0.1, 5), 0, -360, false, -39.9},
		// A constant series: 1% of the mean is the bound.
		{"constant", series(100, 50, 0, 0), 0, 0, true, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := Analyse(c.s, c.warmup)
			if math.Abs(f.SlopePerHour-c.wantPerH) > 0.05*math.Max(40, math.Abs(c.wantPerH)) {
				t.Errorf("slope per hour = %v, want %v", f.SlopePerHour, c.wantPerH)
			}
			if math.Abs(f.Growth-c.wantGrowth) > 0.05*math.Max(4, math.Abs(c.wantGrowth)) {
				t.Errorf("growth = %v, want %v", f.Growth, c.wantGrowth)
			}
			if f.Rising != (!c.wantFlat && c.wantGrowth > 0) {
				t.Errorf("rising = %t with growth %v and bound %v", f.Rising, f.Growth, f.Bound)
			}
			if f.Flat != c.wantFlat {
				t.Errorf("flat = %t, want %t (growth %v, bound %v)", f.Flat, c.wantFlat, f.Growth, f.Bound)
			}
		})
	}
}

func TestAnalyseLeavesTheWarmupOut(t *testing.T) {
	// Growth from nothing over the first 40 samples, then a level: only
	// the level is fitted.
	s := Series{}
	for i := range 400 {
		v := 100.0
		if i < 40 {
			v = 2.5 * float64(i)
		}
		s.T, s.V = append(s.T, float64(i)), append(s.V, v)
	}
	if f := Analyse(s, 40); !f.Flat || f.N != 360 || f.Growth != 0 {
		t.Errorf("with the warm-up left out: %+v, want flat, 360 samples, no growth", f)
	}
	if f := Analyse(s, 0); f.Growth < 20 {
		t.Errorf("with the warm-up fitted: %+v, want the ramp to show as growth", f)
	}
}

func TestBucketsAreTheCounterGrowthPerBucket(t *testing.T) {
	c := Count{T: []float64{0, 10, 20, 30, 40, 50, 60}, V: []float64{5, 5, 7, 7, 7, 10, 12}}
	got := Buckets(c, 20, 60)
	if want := []float64{2, 0, 5}; !slices.Equal(got, want) {
		t.Errorf("buckets = %v, want %v", got, want)
	}
}

func TestSpikes(t *testing.T) {
	for _, c := range []struct {
		name    string
		buckets []float64
		want    []int
	}{
		{"none", []float64{0, 0, 0, 0}, nil},
		{"a steady trickle", []float64{20, 25, 18, 22, 30}, nil},
		{"errors out of nothing", []float64{0, 0, 5, 0}, []int{2}},
		{"four is within noise of none", []float64{0, 0, 4, 0}, nil},
		{"a burst over a trickle", []float64{20, 25, 80, 22}, []int{2}},
	} {
		if got := Spikes(c.buckets); !slices.Equal(got, c.want) {
			t.Errorf("%s: spikes = %v, want %v", c.name, got, c.want)
		}
	}
}

// A process that keeps the largest heap it reached is told from one whose
// held memory grows on its own.
func TestRetainedFollowsTheLargestHeap(t *testing.T) {
	ts := []float64{0, 10, 20, 30, 40, 50, 60}
	heap := Series{T: ts, V: []float64{10, 20, 12, 30, 15, 14, 16}}
	other := Series{T: ts, V: []float64{5, 5, 5, 5, 5, 5, 5}}
	stacks := Series{T: ts, V: []float64{1, 1, 1, 1, 1, 1, 1}}
	keeps := Series{T: ts, V: []float64{16, 26, 26, 36, 36, 36.5, 36}}
	r := Retained(heap, other, stacks, keeps, 10)
	if r.Samples != 6 || r.Gap > 0.5+1e-9 || r.PeakGrowth != 10 {
		t.Errorf("a process keeping its largest heap: %+v", r)
	}
	leaks := Series{T: ts, V: []float64{16, 26, 30, 40, 44, 48, 52}}
	if r := Retained(heap, other, stacks, leaks, 10); r.Gap < 15 {
		t.Errorf("held memory growing beyond the largest heap was read as kept: %+v", r)
	}
}
