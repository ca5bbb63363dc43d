// Package soakstat holds what a soak run (BenchmarkSoak in test/bench)
// measured, as it writes it and the report program reads it, and the two
// judgements made on it: whether a series is flat and whether a count of
// errors spiked.
//
// A series is flat when the growth its least-squares line makes over the
// measured window is within noise:
//
//	|slope × window| ≤ max(FlatNoiseK × residual stddev, FlatMeanFraction × |mean|)
//
// The residual stddev is the scatter of the samples around that line (a
// garbage-collected heap saws up and down; a leak is a rise that the saw
// does not hide). The mean term keeps a series without scatter (a
// goroutine count that does not move) from being called growing for one
// goroutine more at the end. Samples in the warm-up, the first
// WarmupFraction of the run, are shown but not fitted: caches fill and
// pools grow to their working size there.
//
// A bucket of an error count spikes when it exceeds the mean m of the
// other buckets by more than SpikeK × √max(m, 1): four standard deviations
// of a Poisson count of that mean, so that errors out of nothing (five in
// a bucket where the others have none) are a spike and a steady trickle is
// not.
package soakstat

import (
	"math"
	"time"
)

// The judgements' constants; docs/benchmarks.md states them.
const (
	FlatNoiseK       = 2.0
	FlatMeanFraction = 0.01
	WarmupFraction   = 0.1
	SpikeK           = 4.0
)

// Results is one soak run.
type Results struct {
	Date time.Time `json:"date"`
	// Machine describes the CPU and how many cores the run saw.
	Machine string `json:"machine"`
	Go      string `json:"go"`
	// Duration is the measured run, from the first sample to the last;
	// Warmup its part that is not fitted; Sample the time between samples;
	// Bucket the width of the error buckets.
	Duration Seconds `json:"durationSeconds"`
	Warmup   Seconds `json:"warmupSeconds"`
	Sample   Seconds `json:"sampleSeconds"`
	Bucket   Seconds `json:"bucketSeconds"`
	// Setup says what ran, in words and numbers for the report.
	Setup Setup `json:"setup"`
	// Series are the sampled levels (resident set, heap, goroutines) of
	// every process.
	Series []Series `json:"series"`
	// Counts are counters sampled at the same times, reported per bucket.
	Counts []Count `json:"counts"`
}

// Seconds is a duration in seconds.
type Seconds float64

// D is s as a time.Duration.
func (s Seconds) D() time.Duration { return time.Duration(float64(s) * float64(time.Second)) }

// Setup is the scenario a run had.
type Setup struct {
	Replicas        int     `json:"replicas"`
	SteadyUpstreams int     `json:"steadyUpstreams"`
	FlapUpstreams   int     `json:"flapUpstreams"`
	FlapPeriod      Seconds `json:"flapPeriodSeconds"`
	FlapDown        Seconds `json:"flapDownSeconds"`
	ChurnPeriod     Seconds `json:"churnPeriodSeconds"`
	ImportInterval  Seconds `json:"importIntervalSeconds"`
	AgentsPerEra    int     `json:"agentsPerEra"`
	AgentPause      Seconds `json:"agentPauseSeconds"`
	// ApprovalPeriod is how often each agent calls the tool that needs
	// approval; ApprovalEvery, in older results, was every how many calls.
	ApprovalPeriod Seconds `json:"approvalPeriodSeconds,omitempty"`
	ApprovalEvery  int     `json:"approvalEvery,omitempty"`
	// Totals over the run: calls answered, approvals decided, flaps
	// (an upstream stopped and started again), definitions re-approved.
	Calls       int `json:"calls"`
	Approvals   int `json:"approvals"`
	Flaps       int `json:"flaps"`
	Reapprovals int `json:"reapprovals"`
}

// Series is one sampled level of one process.
type Series struct {
	Process string `json:"process"`
	// Metric is "rss" or "heap" (MiB) or "goroutines".
	Metric string `json:"metric"`
	// T are the samples' times in seconds from the start; V their values.
	T []float64 `json:"t"`
	V []float64 `json:"v"`
}

// Count is one counter, sampled; Errors marks one that counts errors,
// judged for spikes.
type Count struct {
	Name   string    `json:"name"`
	Errors bool      `json:"errors"`
	T      []float64 `json:"t"`
	V      []float64 `json:"v"`
}

// Fit is a series' least-squares line over the measured window.
type Fit struct {
	N int
	// SlopePerHour is the line's slope in the series' unit per hour;
	// Growth what it adds over the fitted window.
	SlopePerHour, Growth float64
	Mean, Residual       float64
	// Bound is the growth within noise: max(FlatNoiseK × Residual,
	// FlatMeanFraction × |Mean|).
	Bound float64
	// Flat: |Growth| ≤ Bound. Rising: Growth > Bound, what a leak looks
	// like; a series neither flat nor rising is falling.
	Flat, Rising bool
}

// Analyse fits the samples of s taken after warmup.
func Analyse(s Series, warmup float64) Fit {
	var t, v []float64
	for i := range s.T {
		if s.T[i] >= warmup && i < len(s.V) {
			t, v = append(t, s.T[i]), append(v, s.V[i])
		}
	}
	f := Fit{N: len(t)}
	if f.N < 3 {
		return f
	}
	var mt, mv float64
	for i := range t {
		mt += t[i]
		mv += v[i]
	}
	mt /= float64(f.N)
	mv /= float64(f.N)
	var stt, stv float64
	for i := range t {
		stt += (t[i] - mt) * (t[i] - mt)
		stv += (t[i] - mt) * (v[i] - mv)
	}
	slope := 0.0
	if stt > 0 {
		slope = stv / stt
	}
	var ss float64
	for i := range t {
		r := v[i] - (mv + slope*(t[i]-mt))
		ss += r * r
	}
	f.Mean = mv
	f.Residual = math.Sqrt(ss / float64(f.N-2))
	f.SlopePerHour = slope * 3600
	f.Growth = slope * (t[f.N-1] - t[0])
	f.Bound = math.Max(FlatNoiseK*f.Residual, FlatMeanFraction*math.Abs(mv))
	f.Flat = math.Abs(f.Growth) <= f.Bound
	f.Rising = f.Growth > f.Bound
	return f
}

// Buckets is how much counter c grew in each bucket of width w over a run
// of length d: the last sample at or before a bucket's end less the last
// at or before its start (the first sample, for the first bucket).
func Buckets(c Count, w, d float64) []float64 {
	if w <= 0 || len(c.T) == 0 {
		return nil
	}
	n := int(math.Ceil(d/w - 1e-9))
	at := func(x float64) float64 {
		v := c.V[0]
		for i := range c.T {
			if c.T[i] > x+1e-9 {
				break
			}
			v = c.V[i]
		}
		return v
	}
	out := make([]float64, n)
	for k := range out {
		out[k] = at(math.Min(float64(k+1)*w, d)) - at(float64(k)*w)
	}
	return out
}

// Spikes are the indices of the buckets that spike.
func Spikes(buckets []float64) []int {
	var out []int
	if len(buckets) < 2 {
		return nil
	}
	var total float64
	for _, b := range buckets {
		total += b
	}
	for i, b := range buckets {
		m := (total - b) / float64(len(buckets)-1)
		if b > m+SpikeK*math.Sqrt(math.Max(m, 1)) {
			out = append(out, i)
		}
	}
	return out
}

// Retention compares what a Go process's runtime holds from the kernel
// (held: sys less heap_released) with what it would hold if it kept, and
// only kept, the largest heap it has reached: the running maximum of heap
// in use (heap) plus its own structures (other) and stacks, at each sample
// of the fitted window. The Go runtime returns idle heap to the kernel only
// above its heap goal, so a process whose heap in use is flat but reaches
// a new peak now and then holds more after each: its resident set steps
// up with its largest heap, and stays there, without leaking.
type Retention struct {
	// Gap is the largest |held − model| over the fitted window.
	Gap float64
	// PeakGrowth is how much the running maximum of the heap grew over
	// the fitted window.
	PeakGrowth float64
	// Samples is how many samples were compared.
	Samples int
}

// Retained computes the Retention of one process's series.
func Retained(heap, other, stacks, held Series, warmup float64) Retention {
	at := func(s Series) map[float64]float64 {
		m := make(map[float64]float64, len(s.T))
		for i := range s.T {
			if i < len(s.V) {
				m[s.T[i]] = s.V[i]
			}
		}
		return m
	}
	h, o, st := at(heap), at(other), at(stacks)
	var r Retention
	peak, peakAtWarmup, seenWarmup := 0.0, 0.0, false
	for i := range held.T {
		t := held.T[i]
		hv, ok1 := h[t]
		ov, ok2 := o[t]
		sv, ok3 := st[t]
		if !ok1 || !ok2 || !ok3 || i >= len(held.V) {
			continue
		}
		peak = math.Max(peak, hv)
		if t < warmup {
			continue
		}
		if !seenWarmup {
			peakAtWarmup, seenWarmup = peak, true
		}
		r.Samples++
		r.Gap = math.Max(r.Gap, math.Abs(held.V[i]-(peak+ov+sv)))
	}
	if seenWarmup {
		r.PeakGrowth = peak - peakAtWarmup
	}
	return r
}
