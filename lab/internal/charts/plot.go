package charts

import (
	"bytes"
	"fmt"
	"html/template"
	"image/color"
	"math"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// The size every chart is drawn at; the page scales it to its column.
const (
	chartWidth  = 480 * vg.Millimeter / 3
	chartHeight = 270 * vg.Millimeter / 3
)

// palette colours the series, one colour each (Tableau 10: readable on
// white and told apart by most colour-blind readers).
var palette = []color.RGBA{
	{78, 121, 167, 255}, {242, 142, 43, 255}, {225, 87, 89, 255}, {118, 183, 178, 255},
	{89, 161, 79, 255}, {237, 201, 72, 255}, {176, 122, 161, 255}, {255, 157, 167, 255},
	{156, 117, 95, 255}, {186, 176, 172, 255},
}

func colour(i int) color.Color { return palette[i%len(palette)] }

// series is one set of bars or one line: a strategy, a level or a machine.
// A NaN value is a figure the source did not give: no bar, no point. Bars
// are coloured in the order of their series; a line by its colour, so that
// a strategy keeps one colour in every chart of a page.
type series struct {
	name   string
	values []float64
	colour int
}

// newPlot is a plot with a title and axis labels, in a sans-serif face.
// The SVG names the face and does not embed it: the browser draws the
// text with a local font, so the page stays small and fetches nothing.
func newPlot(title, xLabel, yLabel string) *plot.Plot {
	p := plot.New()
	sans := font.Font{Typeface: "Liberation", Variant: "Sans"}
	p.Title.Text = title
	p.Title.TextStyle.Font = font.From(sans, 13)
	p.Title.Padding = vg.Points(6)
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font = font.From(sans, 11)
		a.Tick.Label.Font = font.From(sans, 10)
	}
	p.X.Label.Text, p.Y.Label.Text = xLabel, yLabel
	p.Legend.TextStyle.Font = font.From(sans, 10)
	p.Y.Min = 0
	p.Y.Tick.Marker = plainTicks
	return p
}

// plainTicks are plot's default ticks, written 2500 rather than 2500.00.
var plainTicks = plot.TickerFunc(func(min, max float64) []plot.Tick {
	ticks := plot.DefaultTicks{}.Ticks(min, max)
	for i, t := range ticks {
		if t.Label != "" {
			ticks[i].Label = strconv.FormatFloat(t.Value, 'f', -1, 64)
		}
	}
	return ticks
})

// controlGrey is the colour of a control's bars: it is there to be broken,
// not to be compared.
var controlGrey = color.RGBA{150, 150, 150, 255}

// bars draws one group of bars per category, one bar per series. The
// categories in grey are drawn in controlGrey whatever their series. A
// ceiling that is not NaN is drawn as a dashed line across the chart.
func bars(title, yLabel string, categories []string, ss []series, grey map[int]bool, ceiling float64) (template.HTML, error) {
	p := newPlot(title, "", yLabel)
	p.NominalX(categories...)
	p.Add(plotter.NewGrid())
	// Each category is one unit wide, and its group of bars takes 75% of
	// it (the data area is about 85% of the chart), a bar at most 40pt.
	group := 0.85 * chartWidth / vg.Length(len(categories)) * 0.75
	width := min(group/vg.Length(len(ss)), vg.Points(40))
	for i, s := range ss {
		for _, g := range []bool{false, true} { // its bars, then its grey ones
			if g && len(grey) == 0 {
				continue
			}
			v := make(plotter.Values, len(s.values))
			for j, x := range s.values {
				if !math.IsNaN(x) && grey[j] == g {
					v[j] = x
				}
			}
			b, err := plotter.NewBarChart(v, width)
			if err != nil {
				return "", fmt.Errorf("charts: draw %q: %w", title, err)
			}
			b.Color = colour(i)
			if g {
				b.Color = controlGrey
			}
			b.LineStyle.Width = 0
			b.Offset = (vg.Length(i) - vg.Length(len(ss)-1)/2) * width
			p.Add(b)
			if len(ss) > 1 && !g {
				p.Legend.Add(legendName(s.name), b)
			}
		}
	}
	if !math.IsNaN(ceiling) {
		l, err := plotter.NewLine(plotter.XYs{{X: -0.5, Y: ceiling}, {X: float64(len(categories)) - 0.5, Y: ceiling}})
		if err != nil {
			return "", fmt.Errorf("charts: draw %q: %w", title, err)
		}
		l.Color = color.Black
		l.Width = vg.Points(1.2)
		l.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
		p.Add(l)
		p.Legend.Add("serial ceiling", l)
	}
	p.X.Min, p.X.Max, p.X.Padding = -0.5, float64(len(categories))-0.5, 0
	p.Y.Max *= 1.08 // the tallest bar below the frame
	// Names wider than their group (ten strategies, or long ones) would
	// run into each other: slant them, ending under their bars.
	data := chartWidth - legendWidth(p) - vg.Points(50) // the y axis and its label
	widest := vg.Length(0)
	for _, c := range categories {
		widest = max(widest, p.X.Tick.Label.Width(c))
	}
	if widest > 0.9*data/vg.Length(len(categories)) {
		p.X.Tick.Label.Rotation = math.Pi / 4
		p.X.Tick.Label.XAlign, p.X.Tick.Label.YAlign = draw.XRight, draw.YTop
	}
	return svg(p)
}

// lines draws y against x, one line with points per series, on a log x
// axis with a tick at every x. logY puts y on a log axis too, for figures
// that grow tenfold from the first x to the last. A dashed black line,
// if bound has values, is a limit the other lines are read against.
func lines(title, xLabel, yLabel string, xs []float64, ss []series, logY bool, bound series) (template.HTML, error) {
	p := newPlot(title, xLabel, yLabel)
	p.Add(plotter.NewGrid())
	p.X.Scale = plot.LogScale{}
	var ticks plot.ConstantTicks
	for _, x := range xs {
		ticks = append(ticks, plot.Tick{Value: x, Label: strconv.FormatFloat(x, 'g', -1, 64)})
	}
	p.X.Tick.Marker = ticks
	if logY {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
		p.Y.Min = math.Inf(1) // from the data, not 0
	}
	for i, s := range slices.Concat(ss, []series{bound}) {
		var pts plotter.XYs
		for j, v := range s.values {
			if !math.IsNaN(v) && (!logY || v > 0) {
				pts = append(pts, plotter.XY{X: xs[j], Y: v})
			}
		}
		if len(pts) == 0 {
			continue
		}
		l, sc, err := plotter.NewLinePoints(pts)
		if err != nil {
			return "", fmt.Errorf("charts: draw %q: %w", title, err)
		}
		l.Color, sc.Color = colour(s.colour), colour(s.colour)
		sc.Shape = draw.CircleGlyph{}
		l.Width = vg.Points(1.5)
		if i == len(ss) { // the bound
			l.Color, sc.Color = color.Black, color.Black
			l.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
		}
		p.Add(l, sc)
		p.Legend.Add(legendName(s.name), l, sc)
	}
	switch { // the highest point below the frame
	case math.IsInf(p.Y.Min, 1):
		p.Y.Min, p.Y.Max = 0.1, 1 // nothing was drawn
	case logY:
		p.Y.Max *= 1.5
	default:
		p.Y.Max *= 1.08
	}
	return svg(p)
}

// legendGap is the space between the data and the legend beside it.
const legendGap = 8 * vg.Millimeter / 3

// legendWidth is the width p's legend takes beside the data, gap
// included; 0 when it has no entry.
func legendWidth(p *plot.Plot) vg.Length {
	w := p.Legend.Rectangle(draw.Canvas{}).Size().X
	if w == 0 {
		return 0
	}
	return w + legendGap
}

// legendName shortens a series' name for the legend, which takes the
// chart's width from the data: a long host label would squeeze the bars.
func legendName(name string) string {
	const most = 20
	if r := []rune(name); len(r) > most {
		return string(r[:most-1]) + "…"
	}
	return name
}

// svg renders p as an SVG element to put inline in a page: the XML
// declaration, which only a standalone file may carry, is dropped. The
// legend stands in a column of its own right of the data, level with its
// top, so that it covers no bar, point or line.
func svg(p *plot.Plot) (template.HTML, error) {
	c := vgsvg.New(chartWidth, chartHeight)
	dc := draw.New(c)
	if w := legendWidth(p); w > 0 {
		legend := p.Legend
		legend.Top, legend.Left = true, true
		top := p.Title.TextStyle.Rectangle(p.Title.Text).Size().Y + p.Title.Padding + p.Y.Padding
		legend.Draw(draw.Crop(dc, chartWidth-w+legendGap, 0, 0, -top))
		p.Legend = plot.NewLegend() // drawn: the plot draws none
		dc = draw.Crop(dc, 0, -w, 0, 0)
	}
	p.Draw(dc)
	var b bytes.Buffer
	if _, err := c.WriteTo(&b); err != nil {
		return "", fmt.Errorf("charts: draw %q: %w", p.Title.Text, err)
	}
	out := b.Bytes()
	if i := bytes.Index(out, []byte("<svg")); i >= 0 {
		out = out[i:]
	}
	return template.HTML(out), nil
}
