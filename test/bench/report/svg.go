package main

import (
	"fmt"
	"html"
	"math"
	"strconv"
	"strings"
)

// A small line plot written as plain SVG text: panels side by side, each
// with a logarithmic x axis (the catalog sizes) and a logarithmic y axis,
// a line and markers per series, and horizontal reference lines. The
// output depends only on the figures, so that a regenerated plot differs
// only where they do.

type plotPoint struct{ x, y float64 }

type plotSeries struct {
	label, color string
	dashed       bool
	points       []plotPoint
}

// plotRef is a horizontal line at y, such as a target.
type plotRef struct {
	y     float64
	label string
}

type plotPanel struct {
	title  string
	series []plotSeries
	refs   []plotRef
}

// Layout, in SVG user units.
const (
	panelWidth   = 400.0
	panelHeight  = 260.0
	marginLeft   = 60.0
	marginRight  = 20.0
	marginTop    = 56.0
	legendHeight = 60.0
	axisBelow    = 44.0
)

// svgPlot draws panels side by side under title, with one legend of the
// first panel's series below them.
func svgPlot(title string, panels []plotPanel) string {
	width := float64(len(panels)) * (marginLeft + panelWidth + marginRight)
	height := marginTop + panelHeight + axisBelow + legendHeight
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%s" height="%s" viewBox="0 0 %s %s" font-family="sans-serif" font-size="12">`+"\n",
		f(width), f(height), f(width), f(height))
	fmt.Fprintf(&b, `<rect width="%s" height="%s" fill="white"/>`+"\n", f(width), f(height))
	fmt.Fprintf(&b, `<text x="%s" y="22" text-anchor="middle" font-size="15" font-weight="bold">%s</text>`+"\n", f(width/2), esc(title))
	for i, pn := range panels {
		drawPanel(&b, pn, float64(i)*(marginLeft+panelWidth+marginRight)+marginLeft, marginTop)
	}
	if len(panels) > 0 {
		drawLegend(&b, panels[0].series, marginLeft, marginTop+panelHeight+axisBelow+8)
	}
	b.WriteString("</svg>\n")
	return b.String()
}

// logRange is the decades a set of positive values spans, at least one.
func logRange(values []float64) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, v := range values {
		if v > 0 {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	if math.IsInf(lo, 1) {
		return 1, 10
	}
	lo, hi = math.Pow(10, math.Floor(math.Log10(lo))), math.Pow(10, math.Ceil(math.Log10(hi)))
	if hi <= lo {
		hi = lo * 10
	}
	return lo, hi
}

func drawPanel(b *strings.Builder, pn plotPanel, left, top float64) {
	var xs, ys []float64
	for _, s := range pn.series {
		for _, pt := range s.points {
			xs, ys = append(xs, pt.x), append(ys, pt.y)
		}
	}
	for _, r := range pn.refs {
		ys = append(ys, r.y)
	}
	xlo, xhi := logRange(xs)
	ylo, yhi := logRange(ys)
	x := func(v float64) float64 {
		return left + panelWidth*(math.Log10(v)-math.Log10(xlo))/(math.Log10(xhi)-math.Log10(xlo))
	}
	y := func(v float64) float64 {
		return top + panelHeight - panelHeight*(math.Log10(v)-math.Log10(ylo))/(math.Log10(yhi)-math.Log10(ylo))
	}
	fmt.Fprintf(b, `<text x="%s" y="%s" text-anchor="middle" font-size="13">%s</text>`+"\n", f(left+panelWidth/2), f(top-12), esc(pn.title))
	fmt.Fprintf(b, `<rect x="%s" y="%s" width="%s" height="%s" fill="none" stroke="#444"/>`+"\n", f(left), f(top), f(panelWidth), f(panelHeight))
	// Grid and labels at every decade, and at 2 and 5 times it when the
	// axis spans few decades.
	few := math.Log10(yhi/ylo) <= 2.0001
	for v := ylo; v <= yhi*1.0001; v *= 10 {
		fmt.Fprintf(b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#ddd"/>`+"\n", f(left), f(y(v)), f(left+panelWidth), f(y(v)))
		fmt.Fprintf(b, `<text x="%s" y="%s" text-anchor="end" dominant-baseline="middle">%s</text>`+"\n", f(left-6), f(y(v)), tick(v))
		for _, m := range []float64{2, 5} {
			if !few || v*m >= yhi {
				continue
			}
			fmt.Fprintf(b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#eee"/>`+"\n", f(left), f(y(v*m)), f(left+panelWidth), f(y(v*m)))
			fmt.Fprintf(b, `<text x="%s" y="%s" text-anchor="end" dominant-baseline="middle" fill="#666" font-size="11">%s</text>`+"\n", f(left-6), f(y(v*m)), tick(v*m))
		}
	}
	for v := xlo; v <= xhi*1.0001; v *= 10 {
		fmt.Fprintf(b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#ddd"/>`+"\n", f(x(v)), f(top), f(x(v)), f(top+panelHeight))
		fmt.Fprintf(b, `<text x="%s" y="%s" text-anchor="middle">%s</text>`+"\n", f(x(v)), f(top+panelHeight+16), tick(v))
	}
	fmt.Fprintf(b, `<text x="%s" y="%s" text-anchor="middle">tools the caller may call</text>`+"\n", f(left+panelWidth/2), f(top+panelHeight+34))
	for _, r := range pn.refs {
		fmt.Fprintf(b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#888" stroke-dasharray="2,3"/>`+"\n", f(left), f(y(r.y)), f(left+panelWidth), f(y(r.y)))
		fmt.Fprintf(b, `<text x="%s" y="%s" text-anchor="end" fill="#666" font-size="11">%s</text>`+"\n", f(left+panelWidth-4), f(y(r.y)-4), esc(r.label))
	}
	for _, s := range pn.series {
		if len(s.points) == 0 {
			continue
		}
		pts := make([]string, len(s.points))
		for i, pt := range s.points {
			pts[i] = f(x(pt.x)) + "," + f(y(pt.y))
		}
		dash := ""
		if s.dashed {
			dash = ` stroke-dasharray="6,4"`
		}
		fmt.Fprintf(b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"%s/>`+"\n", strings.Join(pts, " "), s.color, dash)
		for _, pt := range s.points {
			fmt.Fprintf(b, `<circle cx="%s" cy="%s" r="3.5" fill="%s"><title>%s: %s at %s tools</title></circle>`+"\n",
				f(x(pt.x)), f(y(pt.y)), s.color, esc(s.label), strconv.FormatFloat(pt.y, 'g', 4, 64), tick(pt.x))
		}
	}
}

func drawLegend(b *strings.Builder, series []plotSeries, left, top float64) {
	const columnWidth = 240.0
	for i, s := range series {
		cx, cy := left+float64(i%2)*columnWidth, top+float64(i/2)*22
		dash := ""
		if s.dashed {
			dash = ` stroke-dasharray="6,4"`
		}
		fmt.Fprintf(b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="2"%s/>`+"\n", f(cx), f(cy), f(cx+28), f(cy), s.color, dash)
		fmt.Fprintf(b, `<text x="%s" y="%s" dominant-baseline="middle">%s</text>`+"\n", f(cx+36), f(cy), esc(s.label))
	}
}

// tick labels a decade: 0.1, 1, 10, 1,000, 10,000.
func tick(v float64) string {
	if v < 1 {
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
	s := strconv.FormatFloat(math.Round(v), 'f', 0, 64)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// f writes a coordinate to a tenth of a unit.
func f(v float64) string { return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64) }

func esc(s string) string { return html.EscapeString(s) }
