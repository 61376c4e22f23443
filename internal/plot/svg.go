package main

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// The charts are plain SVG written here: lines, rectangles and text, no
// fonts embedded, readable without colour (each series has its own dash
// pattern and marker, and a label in the legend).

const (
	width       = 720
	plotLeft    = 80
	plotRight   = 190 // room for the legend
	plotTop     = 50
	plotHeight  = 300
	footLine    = 16
	fontFamily  = "sans-serif"
	gridColour  = "#ddd"
	inkColour   = "#222"
	faintColour = "#666"
)

// styles are the series' looks, in order: colour, dash pattern, marker.
var styles = []struct{ colour, dash, marker string }{
	{"#1f4e9c", "", "circle"},
	{"#b5401a", "6 3", "square"},
	{"#2d7a35", "2 3", "triangle"},
	{"#555", "10 4 2 4", "diamond"},
}

// axis maps values to [0, 1] on a linear or log10 scale.
type axis struct {
	label string
	log   bool
	// at, if set, are the ticks, and the first and last the range (for a
	// parameter such as workers 1, 2, 4, 8).
	at       []float64
	min, max float64
}

// fit sets the axis range to cover vs with round ends: 1, 2 or 5 times a
// power of ten on a log axis, zero to a tick step on a linear one.
func (a *axis) fit(vs []float64) {
	if len(a.at) >= 2 {
		a.min, a.max = a.at[0], a.at[len(a.at)-1]
		return
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range vs {
		if a.log && v <= 0 {
			continue
		}
		lo, hi = min(lo, v), max(hi, v)
	}
	if math.IsInf(lo, 1) {
		lo, hi = 1, 10
	}
	if a.log {
		// ends at 1, 2 or 5 times a power of ten
		a.min, a.max = math.Inf(1), 0
		for k := math.Floor(math.Log10(lo)) - 1; k <= math.Ceil(math.Log10(hi)); k++ {
			for _, m := range []float64{1, 2, 5} {
				v := m * math.Pow(10, k)
				if v <= lo*(1+1e-9) {
					a.min = v
				}
				if v >= hi*(1-1e-9) && a.max == 0 {
					a.max = v
				}
			}
		}
		if a.max <= a.min {
			a.max = a.min * 10
		}
		return
	}
	a.min = min(0, lo)
	step := niceStep((hi - a.min) / 5)
	a.max = math.Ceil(hi/step) * step
	if a.max == a.min {
		a.max = a.min + step
	}
}

func niceStep(raw float64) float64 {
	if raw <= 0 {
		return 1
	}
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5} {
		if raw <= m*mag {
			return m * mag
		}
	}
	return 10 * mag
}

func (a *axis) pos(v float64) float64 {
	if a.log {
		return (math.Log10(v) - math.Log10(a.min)) / (math.Log10(a.max) - math.Log10(a.min))
	}
	return (v - a.min) / (a.max - a.min)
}

func (a *axis) ticks() []float64 {
	if len(a.at) >= 2 {
		return a.at
	}
	var ts []float64
	if a.log {
		ms := []float64{1}
		if math.Log10(a.max/a.min) <= 3 {
			ms = []float64{1, 2, 5}
		}
		for k := math.Floor(math.Log10(a.min)); k <= math.Ceil(math.Log10(a.max)); k++ {
			for _, m := range ms {
				if v := m * math.Pow(10, k); v >= a.min*(1-1e-9) && v <= a.max*(1+1e-9) {
					ts = append(ts, v)
				}
			}
		}
		return ts
	}
	step := niceStep((a.max - a.min) / 5)
	for v := a.min; v <= a.max+step/1000; v += step {
		ts = append(ts, v)
	}
	return ts
}

// number formats a tick or value label: 2 significant digits or more, with
// k and M for thousands and millions.
func number(v float64) string {
	f := func(x float64) string { return strconv.FormatFloat(x, 'g', 3, 64) }
	switch a := math.Abs(v); {
	case a >= 1e6:
		return f(v/1e6) + "M"
	case a >= 1e3:
		return f(v/1e3) + "k"
	}
	return f(v)
}

type point struct {
	x, y float64
	// lo and hi, if hi > lo, are the range of the runs behind y, drawn as
	// a bar through the point.
	lo, hi float64
	label  string // drawn beside the point, if not empty
}

type series struct {
	name   string
	points []point
	// reference series are drawn thin and without markers (an ideal line).
	reference bool
}

// lineChart is a chart of series over two axes.
type lineChart struct {
	title  string
	x, y   axis
	series []series
	notes  []string // provenance lines under the chart
}

// svgWriter accumulates SVG elements.
type svgWriter struct{ bytes.Buffer }

func (w *svgWriter) text(x, y float64, anchor, size, colour, s string) {
	fmt.Fprintf(w, `<text x="%.1f" y="%.1f" text-anchor="%s" font-size="%s" fill="%s">`, x, y, anchor, size, colour)
	_ = xml.EscapeText(w, []byte(s))
	w.WriteString("</text>\n")
}

func (w *svgWriter) line(x1, y1, x2, y2 float64, colour, dash string, widthPx float64) {
	fmt.Fprintf(w, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="%.1f"`, x1, y1, x2, y2, colour, widthPx)
	if dash != "" {
		fmt.Fprintf(w, ` stroke-dasharray="%s"`, dash)
	}
	w.WriteString("/>\n")
}

func (w *svgWriter) marker(kind string, x, y float64, colour string) {
	switch kind {
	case "square":
		fmt.Fprintf(w, `<rect x="%.1f" y="%.1f" width="7" height="7" fill="%s"/>`+"\n", x-3.5, y-3.5, colour)
	case "triangle":
		fmt.Fprintf(w, `<polygon points="%.1f,%.1f %.1f,%.1f %.1f,%.1f" fill="%s"/>`+"\n", x, y-4.5, x-4.5, y+3.5, x+4.5, y+3.5, colour)
	case "diamond":
		fmt.Fprintf(w, `<polygon points="%.1f,%.1f %.1f,%.1f %.1f,%.1f %.1f,%.1f" fill="%s"/>`+"\n", x, y-5, x+4.5, y, x, y+5, x-4.5, y, colour)
	default:
		fmt.Fprintf(w, `<circle cx="%.1f" cy="%.1f" r="3.8" fill="%s"/>`+"\n", x, y, colour)
	}
}

func (w *svgWriter) open(height float64) {
	fmt.Fprintf(w, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%.0f" viewBox="0 0 %d %.0f" font-family="%s">`+"\n",
		width, height, width, height, fontFamily)
	fmt.Fprintf(w, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
}

// noteWidth is the characters of a footnote line that fit the width.
const noteWidth = 115

// wrap breaks notes into lines of at most noteWidth characters, at spaces.
func wrap(notes []string) []string {
	var out []string
	for _, n := range notes {
		for len(n) > noteWidth {
			cut := strings.LastIndexByte(n[:noteWidth], ' ')
			if cut <= 0 {
				cut = noteWidth
			}
			out = append(out, n[:cut])
			n = "    " + strings.TrimLeft(n[cut:], " ")
		}
		out = append(out, n)
	}
	return out
}

func (w *svgWriter) notes(notes []string, y float64) {
	for i, n := range notes {
		w.text(10, y+float64(i)*footLine, "start", "11", faintColour, n)
	}
	w.WriteString("</svg>\n")
}

// svg renders the chart.
func (c *lineChart) svg() []byte {
	var xs, ys []float64
	for _, s := range c.series {
		for _, p := range s.points {
			xs, ys = append(xs, p.x), append(ys, p.y)
			if p.hi > p.lo {
				ys = append(ys, p.lo, p.hi)
			}
		}
	}
	c.x.fit(xs)
	c.y.fit(ys)
	pw := float64(width - plotLeft - plotRight)
	px := func(v float64) float64 { return plotLeft + c.x.pos(v)*pw }
	py := func(v float64) float64 { return plotTop + (1-c.y.pos(v))*plotHeight }
	notes := wrap(c.notes)
	height := plotTop + plotHeight + 50 + float64(len(notes))*footLine + 10

	var w svgWriter
	w.open(height)
	w.text(width/2.0, 26, "middle", "16", inkColour, c.title)
	for _, t := range c.x.ticks() {
		x := px(t)
		w.line(x, plotTop, x, plotTop+plotHeight, gridColour, "", 1)
		w.text(x, plotTop+plotHeight+16, "middle", "11", inkColour, number(t))
	}
	for _, t := range c.y.ticks() {
		y := py(t)
		w.line(plotLeft, y, plotLeft+pw, y, gridColour, "", 1)
		w.text(plotLeft-6, y+4, "end", "11", inkColour, number(t))
	}
	w.line(plotLeft, plotTop+plotHeight, plotLeft+pw, plotTop+plotHeight, inkColour, "", 1)
	w.line(plotLeft, plotTop, plotLeft, plotTop+plotHeight, inkColour, "", 1)
	w.text(plotLeft+pw/2, plotTop+plotHeight+36, "middle", "12", inkColour, c.x.label)
	fmt.Fprintf(&w, `<text transform="translate(18,%.1f) rotate(-90)" text-anchor="middle" font-size="12" fill="%s">`, float64(plotTop)+plotHeight/2, inkColour)
	_ = xml.EscapeText(&w, []byte(c.y.label))
	w.WriteString("</text>\n")

	for i, s := range c.series {
		st := styles[i%len(styles)]
		pts := ""
		for _, p := range s.points {
			pts += fmt.Sprintf("%.1f,%.1f ", px(p.x), py(p.y))
		}
		strokeW := 2.0
		if s.reference {
			strokeW = 1
		}
		fmt.Fprintf(&w, `<polyline fill="none" stroke="%s" stroke-width="%.1f" points="%s"`, st.colour, strokeW, pts[:max(len(pts)-1, 0)])
		if st.dash != "" {
			fmt.Fprintf(&w, ` stroke-dasharray="%s"`, st.dash)
		}
		w.WriteString("><title>")
		_ = xml.EscapeText(&w, []byte(s.name))
		w.WriteString("</title></polyline>\n")
		for _, p := range s.points {
			if p.hi > p.lo {
				x, lo, hi := px(p.x), py(p.lo), py(p.hi)
				w.line(x, lo, x, hi, st.colour, "", 1)
				w.line(x-3, lo, x+3, lo, st.colour, "", 1)
				w.line(x-3, hi, x+3, hi, st.colour, "", 1)
			}
			if !s.reference {
				w.marker(st.marker, px(p.x), py(p.y), st.colour)
			}
			if p.label != "" {
				// right of the point, or left of it near the legend
				if c.x.pos(p.x) > 0.85 {
					w.text(px(p.x)-6, py(p.y)-7, "end", "10", st.colour, p.label)
				} else {
					w.text(px(p.x)+6, py(p.y)-7, "start", "10", st.colour, p.label)
				}
			}
		}
		// legend: a sample of the line, its marker and the name
		ly := plotTop + 10 + float64(i)*22
		lx := plotLeft + pw + 16
		w.line(lx, ly, lx+30, ly, st.colour, st.dash, strokeW)
		if !s.reference {
			w.marker(st.marker, lx+15, ly, st.colour)
		}
		w.text(lx+36, ly+4, "start", "12", inkColour, s.name)
	}
	w.notes(notes, plotTop+plotHeight+62)
	return w.Bytes()
}

// barChart compares two values per category as pairs of horizontal bars,
// each labelled with its value, and the ratio of the first to the second.
type barChart struct {
	title      string
	valueLabel string
	names      [2]string // the two sides, e.g. lanework and C++
	rows       []barRow
	notes      []string
}

type barRow struct {
	name   string
	values [2]float64
}

func (c *barChart) svg() []byte {
	const barH, gap, left = 11.0, 10.0, 190.0
	pw := float64(width-plotRight) - left + 60
	var vs []float64
	for _, r := range c.rows {
		vs = append(vs, r.values[0], r.values[1])
	}
	x := axis{label: c.valueLabel}
	x.fit(vs)
	rowH := 2*barH + gap
	plotH := float64(len(c.rows)) * rowH
	notes := wrap(c.notes)
	height := plotTop + plotH + 50 + float64(len(notes))*footLine + 10

	var w svgWriter
	w.open(height)
	w.text(width/2.0, 26, "middle", "16", inkColour, c.title)
	for _, t := range x.ticks() {
		tx := left + x.pos(t)*pw
		w.line(tx, plotTop, tx, plotTop+plotH, gridColour, "", 1)
		w.text(tx, plotTop+plotH+16, "middle", "11", inkColour, number(t))
	}
	w.text(left+pw/2, plotTop+plotH+36, "middle", "12", inkColour, x.label)
	for i, r := range c.rows {
		y := plotTop + float64(i)*rowH + gap/2
		w.text(left-8, y+barH+4, "end", "12", inkColour, r.name)
		for side := range 2 {
			st := styles[side]
			by := y + float64(side)*barH
			bw := x.pos(r.values[side]) * pw
			fmt.Fprintf(&w, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"`, left, by, bw, barH-1, st.colour)
			if side == 1 {
				w.WriteString(` fill-opacity="0.35" stroke="` + st.colour + `"`)
			}
			w.WriteString("><title>")
			_ = xml.EscapeText(&w, []byte(fmt.Sprintf("%s %s: %s", r.name, c.names[side], number(r.values[side]))))
			w.WriteString("</title></rect>\n")
			label := c.names[side] + " " + number(r.values[side])
			if side == 0 && r.values[1] > 0 {
				label += fmt.Sprintf("  (%.2fx)", r.values[0]/r.values[1])
			}
			w.text(left+bw+4, by+barH-2, "start", "10", inkColour, label)
		}
	}
	w.line(left, plotTop, left, plotTop+plotH, inkColour, "", 1)
	w.notes(notes, plotTop+plotH+58)
	return w.Bytes()
}
